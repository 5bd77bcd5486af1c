// The tensors gguf-convert computes (converters/hf/rope_freqs.h) against what torch computes for
// them: values and hashes recorded from Debian's python3-torch 1.13 (AVX2 kernels, system SLEEF
// 3.5.1) running convert_hf_to_gguf.py's own expressions.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "converters/hf/rope_freqs.h"
#include "tests/support/helpers.h"

namespace {

using namespace oiw;

float bits(uint32_t u) { return std::bit_cast<float>(u); }

// torch's pow rounds differently from a correctly rounded pow at these points (its SLEEF kernel
// is 1-ULP); the port gives torch's bits, and powf (the tail of a tensor) the other ones.
TEST(RopeFreqs, SleefPowGivesTorchsBitsWhereRoundingDiffers) {
    struct Point {
        float base;
        uint32_t exponent, torch, rounded;
    };
    const Point points[] = {
        {10000.0f, 0x3ed55555, 0x4239a9dd, 0x4239a9de},    // dim 48, i = 10
        {1000000.0f, 0x3f140000, 0x4537eba2, 0x4537eba3},  // dim 128, i = 37
        {2500000.0f, 0x3f780000, 0x49c094d9, 0x49c094da},  // dim 256, i = 124
        {75000.0f, 0x3f755555, 0x4737863a, 0x4737863b},    // dim 96, i = 46
    };
    for (const Point& p : points) {
        SCOPED_TRACE(p.base);
        EXPECT_EQ(std::bit_cast<uint32_t>(hf::sleef_powf_u10(p.base, bits(p.exponent))), p.torch);
        const double exact = std::pow(static_cast<double>(p.base), static_cast<double>(bits(p.exponent)));
        EXPECT_EQ(std::bit_cast<uint32_t>(static_cast<float>(exact)), p.rounded);
    }
    EXPECT_EQ(hf::sleef_powf_u10(5.0f, 0.0f), 1.0f);
    EXPECT_EQ(hf::sleef_powf_u10(1.0f, 0.3f), 1.0f);
    EXPECT_EQ(hf::sleef_powf_u10(2.0f, 0.5f), std::sqrt(2.0f));
}

// torch.pow over a tensor: whole blocks of 16 through SLEEF, the rest through powf (here the
// element at i = 10 of 24 is in the first block, so it takes SLEEF's bits).
TEST(RopeFreqs, TorchPowSplitsLikeItsKernel) {
    std::vector<float> exps;
    for (int i = 0; i < 48; i += 2) exps.push_back(static_cast<float>(i) / 48.0f);
    const std::vector<float> p = hf::torch_pow(10000.0f, exps);
    ASSERT_EQ(p.size(), 24u);
    EXPECT_EQ(std::bit_cast<uint32_t>(p[10]), 0x4239a9ddu);  // SLEEF's bits
    for (size_t i = 16; i < 24; ++i) EXPECT_EQ(p[i], std::pow(10000.0f, exps[i])) << i;
}

// Llama 3.1 8B / 3.3 70B (head_dim 128, factor 8), Llama 3.2 1B (head_dim 64, factor 32), and a
// head size whose tail goes through powf: the bytes torch writes for rope_freqs.weight.
TEST(RopeFreqs, Llama3FactorsAreTorchsBytes) {
    struct Case {
        double base;
        size_t dim;
        double factor;
        const char* sha256;
        int blended;  // factors strictly between 1 and `factor`
    };
    const Case cases[] = {
        {500000.0, 128, 8.0, "8b516af9cb5db26ed32831eb6f493dd620843d1cd69ca7bbad760c76061cd565", 6},
        {500000.0, 64, 32.0, "d25a6d176d9313062b8f86440c88649f9e568d573ea66bfa4e85e2424cf35633", 3},
        {10000.0, 48, 8.0, "08cc867edde0284ca9b3d724a20a9aa3fcd5719794ebb6c2c5b9bb07dac8fd78", 3},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.dim);
        const std::vector<float> v = hf::llama3_rope_factors(c.base, c.dim, c.factor, 1.0, 4.0, 8192.0);
        ASSERT_EQ(v.size(), c.dim / 2);
        EXPECT_EQ(test::sha256_hex({reinterpret_cast<const uint8_t*>(v.data()), v.size() * 4}), c.sha256);
        EXPECT_EQ(v.front(), 1.0f);
        EXPECT_EQ(v.back(), static_cast<float>(c.factor));
        int blended = 0;
        for (float x : v) blended += x > 1.0f && x < static_cast<float>(c.factor);
        EXPECT_EQ(blended, c.blended);
    }
}

}  // namespace
