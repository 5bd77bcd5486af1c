// quantize_chunk: byte-identity with ggml's golden outputs, error handling, and an accuracy
// property (quantize -> dequantize RMSE) on synthetic rows.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "converters/quant/quants.h"
#include "libformat/blocks.h"
#include "libformat/error.h"
#include "libformat/gguf/gguf.h"
#include "libformat/types.h"
#include "tests/support/helpers.h"

namespace oiw {
namespace {

// The types quantize_chunk implements, with ggml's lower-case tensor-name prefix.
struct QuantType {
    GgmlType type;
    const char* golden_name;
};

const QuantType kTypes[] = {
    {GgmlType::F16, "f16"},       {GgmlType::BF16, "bf16"},     {GgmlType::Q4_0, "q4_0"}, {GgmlType::Q4_1, "q4_1"},
    {GgmlType::Q5_0, "q5_0"},     {GgmlType::Q5_1, "q5_1"},     {GgmlType::Q8_0, "q8_0"}, {GgmlType::Q2_K, "q2_K"},
    {GgmlType::Q3_K, "q3_K"},     {GgmlType::Q4_K, "q4_K"},     {GgmlType::Q5_K, "q5_K"}, {GgmlType::Q6_K, "q6_K"},
    {GgmlType::IQ4_NL, "iq4_nl"}, {GgmlType::IQ4_XS, "iq4_xs"},
};

std::string hex(const uint8_t* p, size_t n) {
    static const char* digits = "0123456789abcdef";
    std::string s;
    for (size_t i = 0; i < n; ++i) {
        s += digits[p[i] >> 4];
        s += digits[p[i] & 15];
    }
    return s;
}

// Empty when equal; otherwise names the first differing block and shows both in hex.
std::string first_block_mismatch(const std::vector<uint8_t>& got, std::span<const uint8_t> want, size_t block_bytes) {
    if (got.size() != want.size()) {
        return "size " + std::to_string(got.size()) + " != expected " + std::to_string(want.size());
    }
    if (std::memcmp(got.data(), want.data(), got.size()) == 0) return {};
    size_t off = 0;
    while (got[off] == want[off]) ++off;
    const size_t block = off / block_bytes;
    const size_t start = block * block_bytes;
    const size_t n = std::min(block_bytes, got.size() - start);
    size_t n_bad = 0;
    for (size_t b = 0; b < got.size() / block_bytes; ++b) {
        n_bad += std::memcmp(got.data() + b * block_bytes, want.data() + b * block_bytes, block_bytes) != 0;
    }
    return "first mismatching block " + std::to_string(block) + " (byte " + std::to_string(off) + "), " +
           std::to_string(n_bad) + " of " + std::to_string(got.size() / block_bytes) +
           " blocks differ\n  got:  " + hex(got.data() + start, n) + "\n  want: " + hex(want.data() + start, n);
}

struct GoldenCase {
    QuantType qt;
    bool with_imatrix;
};

class GoldenMatch : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(GoldenMatch, BytesIdentical) {
    const auto [qt, with_imatrix] = GetParam();
    const test::Golden& g = test::golden();
    const std::string name = std::string(qt.golden_name) + (with_imatrix ? ".imatrix" : ".plain");
    const int64_t idx = g.expected.find_tensor(name);
    if (idx < 0) GTEST_SKIP() << name << " not in the golden file";
    const auto& info = g.expected.tensors()[static_cast<size_t>(idx)];
    ASSERT_EQ(info.type, qt.type) << name;
    ASSERT_EQ(info.ne[0], g.n_per_row);
    ASSERT_TRUE(can_quantize(qt.type));

    const size_t row_bytes = row_size(qt.type, g.n_per_row);
    std::vector<uint8_t> got(row_bytes * static_cast<size_t>(g.nrows), 0xAA);
    const size_t written = quantize_chunk(qt.type, g.x.data(), got.data(), g.nrows, g.n_per_row,
                                          with_imatrix ? g.importance.data() : nullptr);
    EXPECT_EQ(written, got.size());
    const std::string diff =
        first_block_mismatch(got, g.expected.tensor_data(static_cast<size_t>(idx)), traits(qt.type).type_size);
    EXPECT_TRUE(diff.empty()) << name << ": " << diff;
}

std::vector<GoldenCase> golden_cases() {
    std::vector<GoldenCase> cases;
    for (const auto& qt : kTypes) {
        cases.push_back({qt, false});
        if (traits(qt.type).quantized) cases.push_back({qt, true});  // F16/BF16 have no .imatrix golden
    }
    return cases;
}

INSTANTIATE_TEST_SUITE_P(Quantize, GoldenMatch, ::testing::ValuesIn(golden_cases()),
                         [](const ::testing::TestParamInfo<GoldenCase>& info) {
                             return std::string(info.param.qt.golden_name) +
                                    (info.param.with_imatrix ? "_imatrix" : "_plain");
                         });

// Every variant the golden file holds for our types is exercised (guards against renames).
TEST(QuantizeGolden, AllVariantsPresent) {
    const test::Golden& g = test::golden();
    for (const auto& qt : kTypes) {
        EXPECT_GE(g.expected.find_tensor(std::string(qt.golden_name) + ".plain"), 0) << qt.golden_name;
        // F16/BF16 ignore importance weights, so the golden file has no .imatrix variant for them.
        if (traits(qt.type).quantized) {
            EXPECT_GE(g.expected.find_tensor(std::string(qt.golden_name) + ".imatrix"), 0) << qt.golden_name;
        }
    }
}

// Types whose ggml quantizer ignores importance weights produce the same bytes with and without.
TEST(QuantizeApi, ImatrixIgnoredByF16Bf16Q8_0) {
    const test::Golden& g = test::golden();
    for (const GgmlType t : {GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0}) {
        const size_t n = row_size(t, g.n_per_row) * static_cast<size_t>(g.nrows);
        std::vector<uint8_t> plain(n), weighted(n);
        quantize_chunk(t, g.x.data(), plain.data(), g.nrows, g.n_per_row, nullptr);
        quantize_chunk(t, g.x.data(), weighted.data(), g.nrows, g.n_per_row, g.importance.data());
        EXPECT_EQ(plain, weighted) << type_name(t);
    }
}

TEST(QuantizeApi, SupportAndImatrixRequirement) {
    for (const auto& qt : kTypes) {
        EXPECT_TRUE(can_quantize(qt.type)) << qt.golden_name;
        EXPECT_FALSE(quantize_requires_imatrix(qt.type)) << qt.golden_name;
    }
    EXPECT_FALSE(can_quantize(GgmlType::F32));
    EXPECT_FALSE(can_quantize(GgmlType::Q8_K));
    EXPECT_TRUE(quantize_requires_imatrix(GgmlType::IQ2_XXS));
    EXPECT_TRUE(quantize_requires_imatrix(GgmlType::IQ2_XS));
    EXPECT_TRUE(quantize_requires_imatrix(GgmlType::IQ1_S));
    EXPECT_FALSE(quantize_requires_imatrix(GgmlType::IQ1_M));
}

TEST(QuantizeApi, ThrowsOnUnsupportedTypeAndBadRowLength) {
    std::vector<float> x(512, 1.0f);
    std::vector<uint8_t> out(4096);
    try {
        quantize_chunk(GgmlType::Q8_K, x.data(), out.data(), 1, 256, nullptr);
        FAIL() << "expected FormatError";
    } catch (const FormatError& e) {
        EXPECT_EQ(e.kind(), ErrorKind::Unsupported);
        EXPECT_EQ(e.subject(), "Q8_K");
    }
    EXPECT_THROW(quantize_chunk(GgmlType::Q4_K, x.data(), out.data(), 1, 128, nullptr), FormatError);
    EXPECT_THROW(quantize_chunk(GgmlType::Q4_0, x.data(), out.data(), 1, 48, nullptr), FormatError);
}

// Q1_0 (quantize_row_q1_0_ref): d = mean |x| of the 128-element block, bit j (LSB first) set
// when x[j] >= 0 (-0 counts as positive); importance weights are ignored, as in ggml.
TEST(QuantizeHand, Q1_0MeanScaleAndSignBits) {
    std::vector<float> x(256);
    for (int j = 0; j < 128; ++j) x[static_cast<size_t>(j)] = j % 2 ? -0.5f : 0.5f;
    x[2] = -0.0f;  // 0.5 in the mean: d = (127 * 0.5 + 0) / 128 = 0.49609375
    for (int j = 0; j < 128; ++j) x[static_cast<size_t>(128 + j)] = 0.25f * static_cast<float>(j);  // d = 15.875
    std::vector<uint8_t> q(2 * sizeof(block_q1_0)), weighted(q.size());
    ASSERT_EQ(quantize_chunk(GgmlType::Q1_0, x.data(), q.data(), 1, 256, nullptr), q.size());
    block_q1_0 b[2];
    std::memcpy(b, q.data(), sizeof(b));
    EXPECT_EQ(b[0].d, 0x37F0);    // 0.49609375
    EXPECT_EQ(b[0].qs[0], 0x55);  // elements 0, 2 (-0), 4, 6 non-negative
    for (int k = 1; k < 16; ++k) EXPECT_EQ(b[0].qs[k], 0x55) << k;
    EXPECT_EQ(b[1].d, 0x4BF0);                                      // 15.875
    for (int k = 0; k < 16; ++k) EXPECT_EQ(b[1].qs[k], 0xFF) << k;  // 0 is non-negative too
    const std::vector<float> imatrix(256, 3.0f);
    quantize_chunk(GgmlType::Q1_0, x.data(), weighted.data(), 1, 256, imatrix.data());
    EXPECT_EQ(q, weighted);
    EXPECT_FALSE(quantize_requires_imatrix(GgmlType::Q1_0));
    EXPECT_THROW(quantize_chunk(GgmlType::Q1_0, x.data(), q.data(), 1, 64, nullptr), FormatError);  // 64 % 128
}

// Rows are independent: quantizing a chunk equals quantizing each row on its own, so callers
// may split work across threads at any row boundary.
TEST(QuantizeApi, RowsAreIndependent) {
    const test::Golden& g = test::golden();
    for (const auto& qt : kTypes) {
        for (const float* imatrix : {static_cast<const float*>(nullptr), g.importance.data()}) {
            const size_t rb = row_size(qt.type, g.n_per_row);
            std::vector<uint8_t> whole(rb * static_cast<size_t>(g.nrows)), split(whole.size());
            quantize_chunk(qt.type, g.x.data(), whole.data(), g.nrows, g.n_per_row, imatrix);
            for (int64_t r = 0; r < g.nrows; ++r) {
                quantize_chunk(qt.type, g.x.data() + r * g.n_per_row, split.data() + rb * static_cast<size_t>(r), 1,
                               g.n_per_row, imatrix);
            }
            EXPECT_EQ(whole, split) << qt.golden_name << (imatrix ? " imatrix" : " plain");
        }
    }
}

// ---------------------------------------------------------------- accuracy property

// Largest acceptable RMSE(dequant(quant(x)) - x) / RMS(x) for rows of magnitude >= 1e-2:
// the worst value measured over the kinds and seeds below (ggml's own bytes), plus ~30% margin.
double max_relative_rmse(GgmlType t) {
    switch (t) {
        case GgmlType::F16: return 1e-3;     // measured 3e-4
        case GgmlType::BF16: return 3e-3;    // measured 1.7e-3
        case GgmlType::Q8_0: return 0.016;   // measured 0.0124 (outlier rows)
        case GgmlType::Q6_K: return 0.05;    // 0.037
        case GgmlType::Q5_1: return 0.07;    // 0.052
        case GgmlType::Q5_K: return 0.07;    // 0.052
        case GgmlType::Q5_0: return 0.12;    // 0.092 (outlier rows)
        case GgmlType::Q4_0: return 0.14;    // 0.111
        case GgmlType::IQ4_NL: return 0.14;  // 0.109
        case GgmlType::Q4_1: return 0.15;    // 0.115
        case GgmlType::Q4_K: return 0.15;    // 0.113
        case GgmlType::IQ4_XS: return 0.15;  // 0.113
        case GgmlType::Q3_K: return 0.2;     // 0.157
        case GgmlType::Q2_K: return 0.4;     // 0.319
        default: return 0;
    }
}

// A synthetic row of kind `kind` at magnitude `scale`.
std::vector<float> make_row(int kind, float scale, std::mt19937& rng, int n) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> row(static_cast<size_t>(n));
    switch (kind) {
        case 0:  // gaussian
            for (auto& v : row) v = scale * normal(rng);
            break;
        case 1:  // all zero
            break;
        case 2:  // constant
            for (auto& v : row) v = scale;
            break;
        case 3:  // gaussian with one large outlier
            for (auto& v : row) v = scale * normal(rng);
            row[static_cast<size_t>(rng() % static_cast<uint32_t>(n))] = 50.0f * scale;
            break;
        default:  // uniform, one-sided (exercises the min/offset types)
            for (auto& v : row) v = scale * (1.0f + std::fabs(normal(rng)));
            break;
    }
    return row;
}

TEST(QuantizeProperty, DequantizedErrorIsBounded) {
    constexpr int kN = 1024;
    const float kScales[] = {1e-6f, 1e-4f, 1e-2f, 1.0f, 1e3f};
    for (const auto& qt : kTypes) {
        if (!can_dequantize(qt.type)) continue;
        const size_t rb = row_size(qt.type, kN);
        std::vector<uint8_t> q(rb);
        std::vector<float> back(kN);
        std::vector<float> imatrix(kN);
        for (uint32_t seed = 1; seed <= 3; ++seed) {
            std::mt19937 rng(seed);
            for (auto& w : imatrix) w = 0.1f + static_cast<float>(rng() % 1000) / 100.0f;
            for (const float scale : kScales) {
                for (int kind = 0; kind < 5; ++kind) {
                    const auto row = make_row(kind, scale, rng, kN);
                    for (const float* qw :
                         {static_cast<const float*>(nullptr), static_cast<const float*>(imatrix.data())}) {
                        quantize_chunk(qt.type, row.data(), q.data(), 1, kN, qw);
                        dequantize_row(qt.type, q.data(), back.data(), kN);
                        double se = 0, ss = 0;
                        for (int i = 0; i < kN; ++i) {
                            ASSERT_TRUE(std::isfinite(back[i])) << qt.golden_name;
                            se += (double(back[i]) - row[i]) * (double(back[i]) - row[i]);
                            ss += double(row[i]) * row[i];
                        }
                        const std::string where = std::string(qt.golden_name) + " seed " + std::to_string(seed) +
                                                  " scale " + std::to_string(scale) + " kind " + std::to_string(kind) +
                                                  (qw ? " imatrix" : " plain");
                        if (ss == 0) {
                            EXPECT_EQ(se, 0.0) << where;
                            continue;
                        }
                        // Below ~1e-2 the fp16 (super-)block scales go subnormal or flush to zero,
                        // so ggml's formats lose the row (Q4_K/Q5_K at 1e-6 even exceed 100% error,
                        // byte-identically to ggml): there only finiteness is required.
                        if (scale < 1e-2f) continue;
                        EXPECT_LE(std::sqrt(se / ss), max_relative_rmse(qt.type)) << where;
                    }
                }
            }
        }
    }
}

}  // namespace
}  // namespace oiw
