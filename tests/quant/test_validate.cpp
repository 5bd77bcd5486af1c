// Tensor data validation (converters/quant/validate.h), pinned against ggml_validate_row_data's
// rules: float values, the fp16 scales of block types, IQ1_M's packed scale, MXFP4's exponent.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "converters/quant/quants.h"
#include "converters/quant/validate.h"
#include "libformat/blocks.h"
#include "libformat/error.h"
#include "libformat/fp16.h"

namespace oiw {
namespace {

std::vector<uint8_t> bytes_of(const auto& values) {
    std::vector<uint8_t> b(values.size() * sizeof(values[0]));
    std::memcpy(b.data(), values.data(), b.size());
    return b;
}

constexpr uint16_t kHalfInf = 0x7c00, kHalfNaN = 0x7e00;

TEST(Validate, FloatValuesNameTheFirstBadElement) {
    std::vector<float> v(600, 0.5f);
    EXPECT_EQ(find_invalid_data(GgmlType::F32, bytes_of(v)), "");
    v[517] = -std::numeric_limits<float>::infinity();
    v[599] = std::nanf("");
    EXPECT_EQ(find_invalid_data(GgmlType::F32, bytes_of(v)), "inf at element 517");
    v[3] = std::nanf("");
    EXPECT_EQ(find_invalid_data(GgmlType::F32, bytes_of(v)), "NaN at element 3");
    // Huge but finite values are valid input.
    std::vector<float> big(64, 3e38f);
    EXPECT_EQ(find_invalid_data(GgmlType::F32, bytes_of(big)), "");

    std::vector<double> d(5, 1.0);
    d[4] = std::numeric_limits<double>::infinity();
    EXPECT_EQ(find_invalid_data(GgmlType::F64, bytes_of(d)), "inf at element 4");

    std::vector<uint16_t> h(40, fp32_to_fp16(1.0f));
    EXPECT_EQ(find_invalid_data(GgmlType::F16, bytes_of(h)), "");
    h[39] = kHalfNaN;
    EXPECT_EQ(find_invalid_data(GgmlType::F16, bytes_of(h)), "NaN at element 39");
    h[2] = 0xfc00;  // -inf
    EXPECT_EQ(find_invalid_data(GgmlType::F16, bytes_of(h)), "inf at element 2");

    std::vector<uint16_t> bf(8, 0x3f80);  // 1.0
    EXPECT_EQ(find_invalid_data(GgmlType::BF16, bytes_of(bf)), "");
    bf[1] = 0x7f80;
    EXPECT_EQ(find_invalid_data(GgmlType::BF16, bytes_of(bf)), "inf at element 1");
    bf[1] = 0x7fc1;
    EXPECT_EQ(find_invalid_data(GgmlType::BF16, bytes_of(bf)), "NaN at element 1");
}

TEST(Validate, BlockScales) {
    std::vector<block_q4_0> q4(3, block_q4_0{fp32_to_fp16(0.25f), {}});
    EXPECT_EQ(find_invalid_data(GgmlType::Q4_0, bytes_of(q4)), "");
    q4[2].d = kHalfInf;
    EXPECT_EQ(find_invalid_data(GgmlType::Q4_0, bytes_of(q4)), "inf scale d in block 2");

    std::vector<block_q4_1> q41(2, block_q4_1{fp32_to_fp16(0.25f), 0, {}});
    q41[1].m = kHalfNaN;
    EXPECT_EQ(find_invalid_data(GgmlType::Q4_1, bytes_of(q41)), "NaN scale m in block 1");

    std::vector<block_q2_K> q2(2, block_q2_K{});
    EXPECT_EQ(find_invalid_data(GgmlType::Q2_K, bytes_of(q2)), "");
    q2[0].dmin = kHalfInf;
    EXPECT_EQ(find_invalid_data(GgmlType::Q2_K, bytes_of(q2)), "inf scale dmin in block 0");

    std::vector<block_q6_K> q6(1, block_q6_K{});
    q6[0].d = kHalfNaN;
    EXPECT_EQ(find_invalid_data(GgmlType::Q6_K, bytes_of(q6)), "NaN scale d in block 0");

    std::vector<block_q8_K> q8k(1, block_q8_K{});
    q8k[0].d = std::numeric_limits<float>::infinity();
    EXPECT_EQ(find_invalid_data(GgmlType::Q8_K, bytes_of(q8k)), "inf scale d in block 0");

    // IQ1_M: the fp16 scale is the top nibbles of the four 16-bit scale words (0x7c00 = inf).
    std::vector<block_iq1_m> iq(2, block_iq1_m{});
    EXPECT_EQ(find_invalid_data(GgmlType::IQ1_M, bytes_of(iq)), "");
    const uint16_t words[4] = {0x0000, 0x0000, 0xc000, 0x7000};  // top nibbles 0, 0, c, 7 -> 0x7c00
    std::memcpy(iq[1].scales, words, sizeof words);
    EXPECT_EQ(find_invalid_data(GgmlType::IQ1_M, bytes_of(iq)), "inf scale in block 1");

    std::vector<block_mxfp4> mx(2, block_mxfp4{});
    mx[1].e = 0xff;
    EXPECT_EQ(find_invalid_data(GgmlType::MXFP4, bytes_of(mx)), "invalid exponent 0xff in block 1");

    // Integer types and NVFP4 have nothing to validate.
    std::vector<uint8_t> any(64, 0xff);
    for (GgmlType t : {GgmlType::I8, GgmlType::I16, GgmlType::I32, GgmlType::I64, GgmlType::NVFP4})
        EXPECT_EQ(find_invalid_data(t, any), "") << type_name(t);
}

// Huge finite input (1e38) makes the fp16 scale of these types overflow, and validation catches
// it; ordinary input passes. (Q3_K and IQ4_XS clamp: their output stays finite, as in ggml.)
TEST(Validate, QuantizedOutputOfOverflowingInput) {
    const int64_t n = 256;
    std::vector<float> ok(n), huge(n, 1e38f);
    for (int64_t i = 0; i < n; ++i) ok[static_cast<size_t>(i)] = std::sin(static_cast<float>(i));
    std::vector<float> imat(n, 1.0f);
    for (GgmlType t : {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0, GgmlType::Q2_K,
                       GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::IQ4_NL, GgmlType::F16}) {
        SCOPED_TRACE(std::string(type_name(t)));
        ASSERT_TRUE(can_quantize(t));
        std::vector<uint8_t> out(row_size(t, n));
        quantize_chunk(t, ok.data(), out.data(), 1, n, imat.data());
        EXPECT_EQ(find_invalid_data(t, out), "");
        quantize_chunk(t, huge.data(), out.data(), 1, n, imat.data());
        EXPECT_NE(find_invalid_data(t, out), "");
    }
}

TEST(Validate, ValidateRowsNamesFileTensorAndRow) {
    std::vector<float> v(4 * 8, 1.0f);
    v[2 * 8 + 5] = std::nanf("");
    v[3 * 8] = std::nanf("");
    auto b = bytes_of(v);
    try {
        validate_rows(GgmlType::F32, b, 8 * sizeof(float), 10, "m.gguf", "blk.0.ffn_up.weight", "input");
        FAIL() << "no error";
    } catch (const FormatError& e) {
        EXPECT_EQ(e.kind(), ErrorKind::BadData);
        EXPECT_STREQ(e.what(), "m.gguf: tensor 'blk.0.ffn_up.weight': row 12: input F32 data: NaN at element 5");
    }
    v[2 * 8 + 5] = v[3 * 8] = 2.0f;
    b = bytes_of(v);
    EXPECT_NO_THROW(validate_rows(GgmlType::F32, b, 8 * sizeof(float), 0, "m.gguf", "t", "input"));
}

}  // namespace
}  // namespace oiw
