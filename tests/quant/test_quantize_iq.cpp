// quantize_chunk for the ternary, MXFP4 and lattice i-quant types (converters/quant/
// quantize_ternary_fp4.cpp and quantize_lattice.cpp): byte-identity with ggml's golden outputs, race-free lazy grid
// initialization, row independence and the importance-weight requirement.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "converters/quant/quants.h"
#include "libformat/error.h"
#include "libformat/gguf/gguf.h"
#include "libformat/types.h"
#include "tests/support/helpers.h"

namespace oiw {
namespace {

struct IqType {
    GgmlType type;
    const char* golden_name;  // ggml's lower-case type name
};

const IqType kIqTypes[] = {
    {GgmlType::TQ1_0, "tq1_0"},     {GgmlType::TQ2_0, "tq2_0"}, {GgmlType::MXFP4, "mxfp4"},
    {GgmlType::IQ3_XXS, "iq3_xxs"}, {GgmlType::IQ3_S, "iq3_s"}, {GgmlType::IQ2_XXS, "iq2_xxs"},
    {GgmlType::IQ2_XS, "iq2_xs"},   {GgmlType::IQ2_S, "iq2_s"}, {GgmlType::IQ1_S, "iq1_s"},
    {GgmlType::IQ1_M, "iq1_m"},
};

// The types whose grids are built lazily on first use.
const GgmlType kLatticeTypes[] = {GgmlType::IQ3_XXS, GgmlType::IQ3_S, GgmlType::IQ2_XXS, GgmlType::IQ2_XS,
                                  GgmlType::IQ2_S,   GgmlType::IQ1_S, GgmlType::IQ1_M};

// quantize_chunk of the whole golden input.
std::vector<uint8_t> quantize_golden(GgmlType t, const float* imatrix) {
    const test::Golden& g = test::golden();
    std::vector<uint8_t> out(row_size(t, g.n_per_row) * static_cast<size_t>(g.nrows), 0xAA);
    const size_t written = quantize_chunk(t, g.x.data(), out.data(), g.nrows, g.n_per_row, imatrix);
    if (written != out.size()) throw std::runtime_error("quantize_chunk wrote " + std::to_string(written) + " bytes");
    return out;
}

// Empty when equal; otherwise the first differing block and how many blocks differ.
std::string mismatch(const std::vector<uint8_t>& got, std::span<const uint8_t> want, size_t block_bytes) {
    if (got.size() != want.size()) return "size " + std::to_string(got.size()) + " != " + std::to_string(want.size());
    size_t first = SIZE_MAX, n_bad = 0;
    for (size_t b = 0; b < got.size() / block_bytes; ++b) {
        if (std::memcmp(got.data() + b * block_bytes, want.data() + b * block_bytes, block_bytes) != 0) {
            if (first == SIZE_MAX) first = b;
            ++n_bad;
        }
    }
    if (!n_bad) return {};
    return std::to_string(n_bad) + " of " + std::to_string(got.size() / block_bytes) + " blocks differ, first " +
           std::to_string(first);
}

// First thing in this suite: two threads race to build every lattice grid; both must get the
// golden bytes (run under TSan/ASan to catch a racy lazy init).
TEST(QuantizeIqInit, ConcurrentFirstUseIsRaceFree) {
    const test::Golden& g = test::golden();
    std::vector<std::vector<uint8_t>> results[2];
    auto work = [&](int t) {
        for (const GgmlType type : kLatticeTypes) results[t].push_back(quantize_golden(type, g.importance.data()));
    };
    std::thread a(work, 0), b(work, 1);
    a.join();
    b.join();
    for (size_t i = 0; i < std::size(kLatticeTypes); ++i) {
        EXPECT_EQ(results[0][i], results[1][i]) << type_name(kLatticeTypes[i]);
    }
}

struct IqCase {
    IqType qt;
    bool with_imatrix;
};

class QuantizeIqGolden : public ::testing::TestWithParam<IqCase> {};

TEST_P(QuantizeIqGolden, BytesIdentical) {
    const auto [qt, with_imatrix] = GetParam();
    const test::Golden& g = test::golden();
    const std::string name = std::string(qt.golden_name) + (with_imatrix ? ".imatrix" : ".plain");
    const int64_t idx = g.expected.find_tensor(name);
    ASSERT_GE(idx, 0) << name << " not in the golden file";
    ASSERT_EQ(g.expected.tensors()[static_cast<size_t>(idx)].type, qt.type) << name;
    ASSERT_TRUE(can_quantize(qt.type));
    const auto got = quantize_golden(qt.type, with_imatrix ? g.importance.data() : nullptr);
    const std::string diff = mismatch(got, g.expected.tensor_data(static_cast<size_t>(idx)), traits(qt.type).type_size);
    EXPECT_TRUE(diff.empty()) << name << ": " << diff;
}

std::vector<IqCase> iq_cases() {
    std::vector<IqCase> cases;
    for (const auto& qt : kIqTypes) {
        if (!quantize_requires_imatrix(qt.type)) cases.push_back({qt, false});
        cases.push_back({qt, true});
    }
    return cases;
}

INSTANTIATE_TEST_SUITE_P(QuantizeIq, QuantizeIqGolden, ::testing::ValuesIn(iq_cases()),
                         [](const ::testing::TestParamInfo<IqCase>& info) {
                             return std::string(info.param.qt.golden_name) +
                                    (info.param.with_imatrix ? "_imatrix" : "_plain");
                         });

// Types that need an imatrix have no .plain golden; the others have both variants.
TEST(QuantizeIqApi, GoldenVariantsMatchImatrixRequirement) {
    const test::Golden& g = test::golden();
    for (const auto& qt : kIqTypes) {
        EXPECT_GE(g.expected.find_tensor(std::string(qt.golden_name) + ".imatrix"), 0) << qt.golden_name;
        EXPECT_EQ(g.expected.find_tensor(std::string(qt.golden_name) + ".plain") >= 0,
                  !quantize_requires_imatrix(qt.type))
            << qt.golden_name;
    }
}

TEST(QuantizeIqApi, MissingImatrixThrowsUsage) {
    std::vector<float> x(256, 1.0f);
    std::vector<uint8_t> out(1024);
    for (const GgmlType t : {GgmlType::IQ2_XXS, GgmlType::IQ2_XS, GgmlType::IQ1_S}) {
        ASSERT_TRUE(quantize_requires_imatrix(t));
        try {
            quantize_chunk(t, x.data(), out.data(), 1, 256, nullptr);
            ADD_FAILURE() << type_name(t) << ": expected FormatError";
        } catch (const FormatError& e) {
            EXPECT_EQ(e.kind(), ErrorKind::Usage) << type_name(t);
        }
    }
    EXPECT_THROW(quantize_chunk(GgmlType::IQ3_S, x.data(), out.data(), 1, 128, nullptr), FormatError);
}

// TQ1_0, TQ2_0 and MXFP4 ignore importance weights, as in ggml.
TEST(QuantizeIqApi, ImatrixIgnoredByTernaryAndMxfp4) {
    const test::Golden& g = test::golden();
    for (const GgmlType t : {GgmlType::TQ1_0, GgmlType::TQ2_0, GgmlType::MXFP4}) {
        EXPECT_EQ(quantize_golden(t, nullptr), quantize_golden(t, g.importance.data())) << type_name(t);
    }
}

// A chunk quantizes exactly like its rows one by one.
TEST(QuantizeIqApi, ChunkEqualsRowByRow) {
    const test::Golden& g = test::golden();
    for (const auto& qt : kIqTypes) {
        for (const float* imatrix : {static_cast<const float*>(nullptr), g.importance.data()}) {
            if (!imatrix && quantize_requires_imatrix(qt.type)) continue;
            const size_t rb = row_size(qt.type, g.n_per_row);
            const auto whole = quantize_golden(qt.type, imatrix);
            std::vector<uint8_t> split(whole.size());
            for (int64_t r = 0; r < g.nrows; ++r) {
                quantize_chunk(qt.type, g.x.data() + r * g.n_per_row, split.data() + rb * static_cast<size_t>(r), 1,
                               g.n_per_row, imatrix);
            }
            EXPECT_EQ(whole, split) << qt.golden_name << (imatrix ? " imatrix" : " plain");
        }
    }
}

}  // namespace
}  // namespace oiw
