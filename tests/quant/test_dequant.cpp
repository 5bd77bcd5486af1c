// dequantize_row: bit-identity with ggml's to_float on the golden tensors, hand-built blocks
// for the types the golden file lacks, error handling, the lookup tables' structure, and a
// finiteness sweep over a real model fixture.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "converters/quant/iq_tables.h"
#include "converters/quant/quants.h"
#include "libformat/blocks.h"
#include "libformat/error.h"
#include "libformat/gguf/gguf.h"
#include "libformat/types.h"
#include "tests/support/helpers.h"

namespace oiw {
namespace {

uint32_t bits_of(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

std::string describe(float f) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.9g (0x%08x)", static_cast<double>(f), bits_of(f));
    return buf;
}

// Empty when `got` and `want` are bit-identical; otherwise the first differing index and values.
std::string first_mismatch(const std::vector<float>& got, const std::vector<float>& want) {
    if (got.size() != want.size())
        return "size " + std::to_string(got.size()) + " != expected " + std::to_string(want.size());
    if (std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0) return "";
    size_t n_diff = 0, first = got.size();
    for (size_t i = 0; i < got.size(); ++i)
        if (bits_of(got[i]) != bits_of(want[i])) {
            if (first == got.size()) first = i;
            ++n_diff;
        }
    return "element " + std::to_string(first) + ": got " + describe(got[first]) + ", expected " +
           describe(want[first]) + " (" + std::to_string(n_diff) + " elements differ)";
}

// Tensor i of `f` dequantized in one call over all its bytes.
std::vector<float> dequantize_tensor(const GgufFile& f, size_t i) {
    const GgufTensorInfo& info = f.tensors()[i];
    const auto bytes = f.tensor_data(i);
    EXPECT_EQ(bytes.size(), info.n_bytes);
    std::vector<float> out(static_cast<size_t>(info.n_elements()));
    dequantize_row(info.type, bytes.data(), out.data(), info.n_elements());
    return out;
}

std::vector<float> read_f32(const GgufFile& f, size_t i) {
    EXPECT_EQ(f.tensors()[i].type, GgmlType::F32);
    const auto bytes = f.tensor_data(i);
    std::vector<float> out(bytes.size() / sizeof(float));
    std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
    return out;
}

const GgufFile& golden() { return test::golden().expected; }

// ---------------------------------------------------------------- golden (ggml to_float)

// The types of quant-expected.gguf (ggml's lower-case names, as in its tensor names).
const char* const kGoldenTypes[] = {
    "f16",    "bf16",   "q4_0",    "q4_1",  "q5_0",    "q5_1",   "q8_0",  "q2_K",  "q3_K",  "q4_K",  "q5_K",  "q6_K",
    "iq4_nl", "iq4_xs", "iq3_xxs", "iq3_s", "iq2_xxs", "iq2_xs", "iq2_s", "iq1_s", "iq1_m", "tq1_0", "tq2_0", "mxfp4",
};

class DequantGoldenTest : public ::testing::TestWithParam<const char*> {};

TEST_P(DequantGoldenTest, MatchesGgmlToFloat) {
    const GgufFile& f = golden();
    const std::string type = GetParam();
    int checked = 0;
    for (const char* variant : {".plain", ".imatrix"}) {
        const std::string name = type + variant;
        const int64_t qi = f.find_tensor(name);
        if (qi < 0) continue;
        const int64_t di = f.find_tensor(name + ".dequant");
        ASSERT_GE(di, 0) << name << " has no .dequant partner";
        const GgufTensorInfo& info = f.tensors()[static_cast<size_t>(qi)];
        ASSERT_EQ(type_from_name(type), info.type) << name;
        ASSERT_TRUE(can_dequantize(info.type)) << name;
        const std::vector<float> got = dequantize_tensor(f, static_cast<size_t>(qi));
        const std::vector<float> want = read_f32(f, static_cast<size_t>(di));
        EXPECT_EQ(first_mismatch(got, want), "") << name;
        ++checked;
    }
    EXPECT_GT(checked, 0) << "no golden tensor for " << type;
}

INSTANTIATE_TEST_SUITE_P(DequantGolden, DequantGoldenTest, ::testing::ValuesIn(kGoldenTypes),
                         [](const ::testing::TestParamInfo<const char*>& p) { return std::string(p.param); });

// Every quantized tensor with a .dequant partner, whatever its type, matches bit for bit.
TEST(DequantGolden, EveryPairInFile) {
    const GgufFile& f = golden();
    std::set<GgmlType> types;
    int pairs = 0;
    for (size_t i = 0; i < f.tensors().size(); ++i) {
        const GgufTensorInfo& info = f.tensors()[i];
        const int64_t di = f.find_tensor(info.name + ".dequant");
        if (di < 0) continue;
        ASSERT_TRUE(can_dequantize(info.type)) << info.name;
        EXPECT_EQ(first_mismatch(dequantize_tensor(f, i), read_f32(f, static_cast<size_t>(di))), "") << info.name;
        types.insert(info.type);
        ++pairs;
    }
    EXPECT_EQ(types.size(), std::size(kGoldenTypes));
    EXPECT_GE(pairs, static_cast<int>(std::size(kGoldenTypes)));
}

// Dequantizing block by block (several calls) gives the same bits as one call over the row.
TEST(DequantGolden, PiecewiseEqualsWhole) {
    const GgufFile& f = golden();
    for (const char* name : {"q4_K.plain", "iq2_xxs.imatrix", "tq1_0.plain", "iq1_m.imatrix"}) {
        const int64_t qi = f.find_tensor(name);
        ASSERT_GE(qi, 0) << name;
        const GgufTensorInfo& info = f.tensors()[static_cast<size_t>(qi)];
        const TypeTraits& tt = traits(info.type);
        const auto bytes = f.tensor_data(static_cast<size_t>(qi));
        const std::vector<float> whole = dequantize_tensor(f, static_cast<size_t>(qi));
        std::vector<float> pieces(whole.size());
        for (int64_t b = 0; b < info.n_elements() / tt.block_size; ++b)
            dequantize_row(info.type, bytes.data() + b * tt.type_size, pieces.data() + b * tt.block_size,
                           tt.block_size);
        EXPECT_EQ(first_mismatch(pieces, whole), "") << name;
    }
}

// ---------------------------------------------------------------- hand-built blocks

template <typename T>
std::vector<uint8_t> raw_bytes(const std::vector<T>& v) {
    std::vector<uint8_t> out(v.size() * sizeof(T));
    std::memcpy(out.data(), v.data(), out.size());
    return out;
}

template <typename Block>
std::vector<float> dequant_blocks(GgmlType t, const std::vector<Block>& blocks) {
    std::vector<float> out(blocks.size() * traits(t).block_size);
    dequantize_row(t, blocks.data(), out.data(), static_cast<int64_t>(out.size()));
    return out;
}

std::vector<float> dequant_raw(GgmlType t, const std::vector<uint8_t>& bytes, int64_t n) {
    std::vector<float> out(static_cast<size_t>(n));
    dequantize_row(t, bytes.data(), out.data(), n);
    return out;
}

TEST(DequantHand, F32IsCopy) {
    const std::vector<float> v = {1.0f, -0.0f, std::numeric_limits<float>::infinity(), 3.5e-42f /* subnormal */};
    EXPECT_EQ(first_mismatch(dequant_raw(GgmlType::F32, raw_bytes(v), 4), v), "");
}

TEST(DequantHand, F64RoundsToNearestFloat) {
    const std::vector<double> v = {1.5, -2.25, 0.1, 1e300, -1e-300, 16777217.0};
    const std::vector<float> got = dequant_raw(GgmlType::F64, raw_bytes(v), 6);
    EXPECT_EQ(bits_of(got[0]), 0x3FC00000u);
    EXPECT_EQ(bits_of(got[1]), 0xC0100000u);
    EXPECT_EQ(bits_of(got[2]), 0x3DCCCCCDu);  // 0.1 rounded to nearest float
    EXPECT_EQ(bits_of(got[3]), 0x7F800000u);  // overflow -> +inf
    EXPECT_EQ(bits_of(got[4]), 0x80000000u);  // underflow -> -0
    EXPECT_EQ(got[5], 16777216.0f);           // 2^24 + 1 ties to even
}

TEST(DequantHand, IntegersConvertAsValues) {
    EXPECT_EQ(dequant_raw(GgmlType::I8, raw_bytes(std::vector<int8_t>{-128, -1, 0, 127}), 4),
              (std::vector<float>{-128.f, -1.f, 0.f, 127.f}));
    EXPECT_EQ(dequant_raw(GgmlType::I16, raw_bytes(std::vector<int16_t>{-32768, 300, 32767}), 3),
              (std::vector<float>{-32768.f, 300.f, 32767.f}));
    EXPECT_EQ(dequant_raw(GgmlType::I32, raw_bytes(std::vector<int32_t>{-7, 16777217, 2147483647}), 3),
              (std::vector<float>{-7.f, 16777216.f, 2147483648.f}));
    EXPECT_EQ(dequant_raw(GgmlType::I64, raw_bytes(std::vector<int64_t>{-1, (int64_t{1} << 53) + 1, INT64_MIN}), 3),
              (std::vector<float>{-1.f, 9007199254740992.f, -9223372036854775808.f}));
}

TEST(DequantHand, Q8_1IsDTimesQ) {
    block_q8_1 b{};
    b.d = 0x3800;                                                                // 0.5
    b.s = 0x7C00;                                                                // cached sum: ignored
    for (int j = 0; j < QK8_1; ++j) b.qs[j] = static_cast<int8_t>(j * 8 - 128);  // -128, -120, ..., 120
    const std::vector<float> got = dequant_blocks(GgmlType::Q8_1, std::vector<block_q8_1>{b});
    for (int j = 0; j < QK8_1; ++j) EXPECT_EQ(got[j], static_cast<float>(j * 4 - 64)) << j;
}

TEST(DequantHand, Q8_KIsDTimesQ) {
    block_q8_K b{};
    b.d = -0.25f;
    for (int j = 0; j < QK_K; ++j) b.qs[j] = static_cast<int8_t>(j - 128);
    b.bsums[0] = 12345;  // ignored
    const std::vector<float> got = dequant_blocks(GgmlType::Q8_K, std::vector<block_q8_K>{b});
    EXPECT_EQ(got[0], 32.0f);
    EXPECT_EQ(got[128], -0.0f);
    EXPECT_TRUE(std::signbit(got[128]));  // -0.25 * 0 = -0
    EXPECT_EQ(got[129], -0.25f);
    EXPECT_EQ(got[255], -31.75f);
}

TEST(DequantHand, Q1_0SignBits) {
    block_q1_0 b{};
    b.d = 0x4200;  // 3.0
    for (int k = 0; k < QK1_0 / 8; ++k) b.qs[k] = static_cast<uint8_t>(k == 0 ? 0xA5 : (k == 15 ? 0x80 : 0x00));
    const std::vector<float> got = dequant_blocks(GgmlType::Q1_0, std::vector<block_q1_0>{b});
    // 0xA5 = 1010 0101: bits 0, 2, 5, 7 set (LSB first).
    const float want0[8] = {3.f, -3.f, 3.f, -3.f, -3.f, 3.f, -3.f, 3.f};
    for (int j = 0; j < 8; ++j) EXPECT_EQ(got[j], want0[j]) << j;
    for (int j = 8; j < 127; ++j) EXPECT_EQ(got[j], -3.f) << j;
    EXPECT_EQ(got[127], 3.f);
}

// E2M1 values doubled, written out independently of the library's table.
constexpr float kFp4x2[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

TEST(DequantHand, Nvfp4SubBlockScales) {
    block_nvfp4 b{};
    // UE4M3 scales, decoded halved: 0x38 = 2^0 -> 0.5; 0x01 = subnormal 2^-9 -> 2^-10;
    // 0x7F = NaN code -> 0; 0xBC = bit 7 ignored, exp 7 man 4 = 1.5 -> 0.75.
    b.d[0] = 0x38;
    b.d[1] = 0x01;
    b.d[2] = 0x7F;
    b.d[3] = 0xBC;
    for (int s = 0; s < 4; ++s)
        for (int j = 0; j < 8; ++j) b.qs[s * 8 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
    const float scale[4] = {0.5f, 0x1p-10f, 0.0f, 0.75f};
    const std::vector<float> got = dequant_blocks(GgmlType::NVFP4, std::vector<block_nvfp4>{b});
    for (int s = 0; s < 4; ++s)
        for (int j = 0; j < 8; ++j) {
            EXPECT_EQ(got[16 * s + j], kFp4x2[j] * scale[s]) << s << "," << j;
            EXPECT_EQ(got[16 * s + j + 8], kFp4x2[15 - j] * scale[s]) << s << "," << j;
        }
    EXPECT_EQ(got[0 * 16 + 7], 6.0f);  // code 7 (6.0 doubled = 12) * 0.5
    EXPECT_EQ(got[1 * 16 + 8], -12 * 0x1p-10f);
    EXPECT_EQ(got[3 * 16 + 6], 6.0f);  // code 6 (8) * 0.75
}

TEST(DequantHand, Nvfp4LargestScale) {
    block_nvfp4 b{};
    b.d[0] = 0x7E;                  // exp 15 man 6: 1.75 * 2^8 = 448 -> 224
    b.d[1] = 0x08;                  // exp 1 man 0: 2^-6 -> 2^-7
    b.d[2] = 0x07;                  // subnormal 7 * 2^-9 -> 7 * 2^-10
    b.d[3] = 0x00;                  // zero
    for (auto& q : b.qs) q = 0x7F;  // low code 15 (-12), high code 7 (12)
    const std::vector<float> got = dequant_blocks(GgmlType::NVFP4, std::vector<block_nvfp4>{b});
    EXPECT_EQ(got[0], -12.f * 224.f);
    EXPECT_EQ(got[8], 12.f * 224.f);
    EXPECT_EQ(got[16], -12.f * 0x1p-7f);
    EXPECT_EQ(got[32 + 8], 12.f * 7 * 0x1p-10f);
    EXPECT_EQ(got[48], 0.f);
}

TEST(DequantHand, Mxfp4ExponentExtremes) {
    // E8M0 decoded halved: e -> 2^(e-128); e = 0 and 1 are subnormal floats.
    std::vector<block_mxfp4> blocks(4);
    const uint8_t es[4] = {0, 1, 128, 254};
    const float scale[4] = {0x1p-128f, 0x1p-127f, 1.0f, 0x1p126f};
    for (int k = 0; k < 4; ++k) {
        blocks[k].e = es[k];
        for (int j = 0; j < 16; ++j) blocks[k].qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
    }
    const std::vector<float> got = dequant_blocks(GgmlType::MXFP4, blocks);
    for (int k = 0; k < 4; ++k)
        for (int j = 0; j < 16; ++j) {
            EXPECT_EQ(got[32 * k + j], kFp4x2[j] * scale[k]) << k << "," << j;
            EXPECT_EQ(got[32 * k + j + 16], kFp4x2[15 - j] * scale[k]) << k << "," << j;
        }
}

TEST(DequantHand, Q4_0LayoutAndOffset) {
    block_q4_0 b{};
    b.d = 0xBC00;  // -1.0
    for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | (0xF << 4));
    const std::vector<float> got = dequant_blocks(GgmlType::Q4_0, std::vector<block_q4_0>{b});
    for (int j = 0; j < 16; ++j) {
        EXPECT_EQ(got[j], static_cast<float>(8 - j)) << j;
        EXPECT_EQ(got[j + 16], -7.f) << j;
    }
}

// ---------------------------------------------------------------- errors and coverage

TEST(DequantErrors, UnsupportedTypeAndBadCount) {
    std::vector<uint8_t> buf(1024);
    std::vector<float> out(256);
    try {
        dequantize_row(static_cast<GgmlType>(4), buf.data(), out.data(), 32);  // Q4_2: removed
        FAIL() << "removed type accepted";
    } catch (const FormatError& e) {
        EXPECT_EQ(e.kind(), ErrorKind::Unsupported);
        EXPECT_EQ(e.subject(), "Q4_2");
    }
    try {
        dequantize_row(static_cast<GgmlType>(99), buf.data(), out.data(), 32);
        FAIL() << "unknown type accepted";
    } catch (const FormatError& e) {
        EXPECT_EQ(e.kind(), ErrorKind::Unsupported);
    }
    try {
        dequantize_row(GgmlType::Q4_K, buf.data(), out.data(), 128);
        FAIL() << "partial block accepted";
    } catch (const FormatError& e) {
        EXPECT_EQ(e.kind(), ErrorKind::Unsupported);
        EXPECT_EQ(e.subject(), "Q4_K");
    }
    EXPECT_THROW(dequantize_row(GgmlType::Q8_0, buf.data(), out.data(), -32), FormatError);
    EXPECT_NO_THROW(dequantize_row(GgmlType::Q8_0, buf.data(), out.data(), 0));
}

TEST(DequantErrors, EveryLiveTypeSupported) {
    for (uint32_t id = 0; id < kGgmlTypeCount + 2; ++id)
        EXPECT_EQ(can_dequantize(static_cast<GgmlType>(id)), type_id_valid(id)) << id;
}

// ---------------------------------------------------------------- table structure

// Grid entries decode to a fixed set of byte values, and ggml lists them in strictly increasing
// order of the packed level index (level of element i in bits [b*i, b*i+b)); a transcription
// error almost surely breaks one of the two.
template <typename Word>
void check_grid(const char* name, const Word* grid, int n, std::vector<uint8_t> levels, int bits) {
    constexpr int kBytes = sizeof(Word);
    uint64_t prev = 0;
    for (int k = 0; k < n; ++k) {
        uint64_t pos = 0;
        for (int i = 0; i < kBytes; ++i) {
            const uint8_t byte = static_cast<uint8_t>(grid[k] >> (8 * i));
            size_t level = 0;
            while (level < levels.size() && levels[level] != byte) ++level;
            ASSERT_LT(level, levels.size()) << name << "[" << k << "] byte " << i;
            pos |= static_cast<uint64_t>(level) << (bits * i);
        }
        if (k > 0) {
            ASSERT_GT(pos, prev) << name << "[" << k << "] out of order";
        }
        prev = pos;
    }
}

TEST(DequantTables, GridsWellFormed) {
    check_grid("iq2xxs_grid", iq2xxs_grid, 256, {0x08, 0x19, 0x2b}, 2);
    check_grid("iq2xs_grid", iq2xs_grid, 512, {0x08, 0x19, 0x2b}, 2);
    check_grid("iq2s_grid", iq2s_grid, 1024, {0x08, 0x19, 0x2b}, 2);
    check_grid("iq1s_grid", iq1s_grid, NGRID_IQ1S, {0xff, 0x00, 0x01}, 2);
    check_grid("iq3xxs_grid", iq3xxs_grid, 256, {4, 12, 20, 28, 36, 44, 52, 62}, 3);
    check_grid("iq3s_grid", iq3s_grid, 512, {1, 3, 5, 7, 9, 11, 13, 15}, 3);
}

TEST(DequantTables, SignsMasksAndLevels) {
    for (int j = 0; j < 8; ++j) EXPECT_EQ(kmask_iq2xs[j], 1 << j);
    for (int i = 0; i < 128; ++i) {
        const int parity = __builtin_popcount(static_cast<unsigned>(i)) & 1;
        EXPECT_EQ(ksigns_iq2xs[i], i | (parity << 7)) << i;
    }
    const int8_t iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
    for (int i = 0; i < 16; ++i) {
        EXPECT_EQ(kvalues_iq4nl[i], iq4nl[i]) << i;
        EXPECT_EQ(kvalues_mxfp4[i], static_cast<int8_t>(kFp4x2[i])) << i;
    }
    EXPECT_EQ(IQ1S_DELTA, 0.125f);
    EXPECT_EQ(IQ1M_DELTA, 0.125f);
}

// ---------------------------------------------------------------- fixture sanity

TEST(DequantFixture, TinyLlamaQ4KMAllFinite) {
    OIW_NEED_SHARED("fixtures");
    const GgufFile f = GgufFile::open(test::shared_path("fixtures/tiny-llama-Q4_K_M.gguf"));
    ASSERT_FALSE(f.tensors().empty());
    std::set<GgmlType> seen;
    for (size_t i = 0; i < f.tensors().size(); ++i) {
        const GgufTensorInfo& info = f.tensors()[i];
        ASSERT_TRUE(can_dequantize(info.type)) << info.name;
        const std::vector<float> v = dequantize_tensor(f, i);
        size_t bad = 0;
        for (float x : v) bad += std::isfinite(x) ? 0 : 1;
        EXPECT_EQ(bad, 0u) << info.name << " (" << type_name(info.type) << ")";
        seen.insert(info.type);
    }
    EXPECT_TRUE(seen.count(GgmlType::Q4_K)) << "fixture has no Q4_K tensor";
}

}  // namespace
}  // namespace oiw
