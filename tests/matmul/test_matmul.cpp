// The reference matmul (hand-computed cases, every integer-path type against the exact
// semantics on losslessly quantized activations) and the optimized kernels (bit-identical to the
// scalar reference on odd sizes, every ISA, batched, many threads).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include <nlohmann/json.hpp>

#include "converters/matmul/kernels.h"
#include "converters/matmul/reference.h"
#include "converters/matmul/w4a8.h"
#include "converters/quant/quantize_impl.h"
#include "converters/quant/quants.h"
#include "converters/repack/repack.h"
#include "libformat/fp16.h"
#include "tests/support/helpers.h"

namespace oiw::matmul {
namespace {

std::vector<float> normal(std::mt19937_64& rng, size_t n) {
    std::normal_distribution<float> z;
    std::vector<float> v(n);
    for (auto& x : v) x = z(rng);
    return v;
}

// Integers in [-126, 126] with -127 at the first element of every 256-block (and 127 in every
// other 32-block): Q8_0, Q8_1 and Q8_K all represent them exactly with scale 1.
std::vector<float> exact_activations(std::mt19937_64& rng, int64_t n) {
    std::vector<float> x(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(static_cast<int>(rng() % 253) - 126);
    for (int64_t i = 0; i < n; i += 32) x[i] = (i % 256 == 0) ? -127.f : 127.f;
    return x;
}

TEST(MatmulReference, Oiw4HandComputedBlock) {
    // One block: low nibbles 10 -> w = 0.5 * 2 = 1, high nibbles 9 -> w = 0.5.
    // x = 127 at 0, 1 elsewhere: y = 127 + 15 + 16 * 0.5 = 150.
    std::vector<uint8_t> qs(16, 0x9A);
    const float d = 0.5f;
    std::vector<float> x(32, 1.f);
    x[0] = 127.f;
    const Q8Act a = make_q8_act(x.data(), 32);
    EXPECT_EQ(a.d[0], 1.f);
    EXPECT_EQ(a.c8[0], 8 * 130);
    EXPECT_EQ(oiw4_dot_ref(qs.data(), &d, a), 150.f);
    EXPECT_EQ(oiw4_dot_exact(qs.data(), &d, x.data(), 32), 150.0);
    // The same block as Q4_0 (fp16 0.5 = 0x3800) gives the same integer path.
    block_q4_0 b{0x3800, {}};
    std::memset(b.qs, 0x9A, 16);
    EXPECT_EQ(dot_integer(GgmlType::Q4_0, &b, quantize_activation(GgmlType::Q8_0, x.data(), 32)), 150.f);
}

TEST(MatmulReference, LaneOrderIsHsum8) {
    // Lane k of one block collects elements 4k..4k+3; lanes reduce as ((l0+l4)+(l2+l6))+((l1+l5)+(l3+l7)).
    const float l[8] = {1e8f, 1.f, -1e8f, 1.f, 3.f, 1.f, 5.f, 1.f};
    EXPECT_EQ(hsum8(l), ((1e8f + 3.f) + (-1e8f + 5.f)) + ((1.f + 1.f) + (1.f + 1.f)));
}

TEST(MatmulReference, Q8_0HandComputed) {
    block_q8_0 w{0x3C00, {}};  // d = 1
    for (int i = 0; i < 32; ++i) w.qs[i] = static_cast<int8_t>(i - 16);
    std::vector<float> x(32, 2.f);
    x[5] = 127.f;  // Q8_0 of x: d = 1, q = x
    double expect = 0;
    for (int i = 0; i < 32; ++i) expect += (i - 16) * x[i];
    EXPECT_EQ(dot_integer(GgmlType::Q8_0, &w, quantize_activation(GgmlType::Q8_0, x.data(), 32)),
              static_cast<float>(expect));
}

TEST(MatmulReference, Q4_KHandComputed) {
    // All scales 1, all mins 1, d = 1, dmin = 1, every quant 3: w = 3 - 1 = 2; x = -127 then 1s.
    block_q4_K w{};
    w.d = 0x3C00;
    w.dmin = 0x3C00;
    for (int j = 0; j < 8; ++j) quant::set_scale_min_k4(w.scales, j, 1, 1);
    std::memset(w.qs, 0x33, sizeof(w.qs));
    std::vector<float> x(256, 1.f);
    x[0] = -127.f;
    const float y = dot_integer(GgmlType::Q4_K, &w, quantize_activation(GgmlType::Q8_K, x.data(), 256));
    EXPECT_EQ(y, 2.f * (255 - 127));
}

TEST(MatmulReference, Q1_0AndNvfp4HandComputed) {
    // Q1_0: d = 0.5, bit j set for even j (+1), clear for odd j (-1); x = 1..128 scaled so that each
    // Q8_0 block's max is 127 (d_a = 1): y = 0.5 * sum(sign_j * x_j).
    block_q1_0 q1{0x3800, {}};
    std::memset(q1.qs, 0x55, sizeof(q1.qs));
    std::vector<float> x(128);
    double expect = 0;
    for (int j = 0; j < 128; ++j) {
        x[j] = (j % 32 == 31) ? 127.f : static_cast<float>(j % 32 - 10);
        expect += (j % 2 == 0 ? 1 : -1) * x[j];
    }
    EXPECT_EQ(dot_integer(GgmlType::Q1_0, &q1, quantize_activation(GgmlType::Q8_0, x.data(), 128)),
              static_cast<float>(0.5 * expect));
    // NVFP4: sub-block scales UE4M3 0x38 (2^0, halved: 0.5) and 0x40 (2^1 -> 1); every nibble 2
    // (kvalues_mxfp4[2] = 2, so w = 2 * scale): w = 1 in sub-blocks 0, 2 and 2 in sub-blocks 1, 3.
    block_nvfp4 nv{};
    nv.d[0] = nv.d[2] = 0x38;
    nv.d[1] = nv.d[3] = 0x40;
    std::memset(nv.qs, 0x22, sizeof(nv.qs));
    std::vector<float> xn(64);
    double expect_nv = 0;
    for (int j = 0; j < 64; ++j) {
        xn[j] = (j % 32 == 0) ? 127.f : static_cast<float>(j % 7 - 3);
        expect_nv += ((j / 16) % 2 == 0 ? 1 : 2) * xn[j];
    }
    std::vector<float> deq(64);
    dequantize_row(GgmlType::NVFP4, reinterpret_cast<const uint8_t*>(&nv), deq.data(), 64);
    ASSERT_EQ(deq[0], 1.f);
    ASSERT_EQ(deq[16], 2.f);
    EXPECT_EQ(dot_integer(GgmlType::NVFP4, &nv, quantize_activation(GgmlType::Q8_0, xn.data(), 64)),
              static_cast<float>(expect_nv));
}

// Activation quantization of non-integer input, by hand. ggml rounds Q8_K with nearest_int (half
// to even: the 1.5 * 2^23 trick) and Q8_0 / Q8_1 with roundf (half away from zero), so the two
// differ exactly on ties. x[0] = -254 is the largest magnitude:
//   Q8_K: iscale = -127 / -254 = 0.5, d = 1 / 0.5 = 2;  Q8_0: d = 254 / 127 = 2, id = 0.5.
//   x      x * 0.5   Q8_K (half even)   Q8_0 (half away)
//   -254   -127      -127               -127
//    5      2.5       2                  3
//   -5     -2.5      -2                 -3
//    7      3.5       4                  4
//    3.3    1.65      2                  2
//    1.6    0.8       1                  1
//   -0.9   -0.45      0                  0
//    1      0.5       0                  1
//   -3     -1.5      -2                 -2
// Q8_K bsums[0] = -127 + 2 - 2 + 4 + 2 + 1 + 0 + 0 - 2 = -122 (the other 15 groups are 0).
// Truncation would give 1 for 1.65 and 0 for 0.8; a 128-based scale would give -128 for x[0].
TEST(MatmulReference, ActivationQuantizationRoundsFractionsByHand) {
    std::vector<float> x(256, 0.f);
    const float head[] = {-254.f, 5.f, -5.f, 7.f, 3.3f, 1.6f, -0.9f, 1.f, -3.f};
    std::copy(std::begin(head), std::end(head), x.begin());
    const QuantizedVector k = quantize_activation(GgmlType::Q8_K, x.data(), 256);
    block_q8_K bk;
    ASSERT_EQ(k.bytes.size(), sizeof(bk));
    std::memcpy(&bk, k.bytes.data(), sizeof(bk));
    EXPECT_EQ(bk.d, 2.f);
    const int8_t want_k[] = {-127, 2, -2, 4, 2, 1, 0, 0, -2};
    for (int j = 0; j < 9; ++j) EXPECT_EQ(bk.qs[j], want_k[j]) << "Q8_K element " << j << " x " << x[j];
    for (int j = 9; j < 256; ++j) ASSERT_EQ(bk.qs[j], 0) << j;
    EXPECT_EQ(bk.bsums[0], -122);
    for (int j = 1; j < 16; ++j) EXPECT_EQ(bk.bsums[j], 0);

    const QuantizedVector q = quantize_activation(GgmlType::Q8_0, x.data(), 32);
    block_q8_0 b0;
    ASSERT_EQ(q.bytes.size(), sizeof(b0));
    std::memcpy(&b0, q.bytes.data(), sizeof(b0));
    EXPECT_EQ(b0.d, 0x4000);  // fp16 2.0
    const int8_t want_0[] = {-127, 3, -3, 4, 2, 1, 0, 1, -2};
    for (int j = 0; j < 9; ++j) EXPECT_EQ(b0.qs[j], want_0[j]) << "Q8_0 element " << j << " x " << x[j];
    // The same through the integer dot: Q8_0 weights all 1 (d = 1) sum the activation's quants:
    // d_x * sum(q) = 2 * (-127 + 3 - 3 + 4 + 2 + 1 + 0 + 1 - 2) = -242.
    block_q8_0 ones{0x3C00, {}};
    std::memset(ones.qs, 1, sizeof(ones.qs));
    EXPECT_EQ(dot_integer(GgmlType::Q8_0, &ones, q), -242.f);

    // A positive maximum flips Q8_K's sign: x = {127, 2.5, -2.5, 0.5}: iscale = -1, d = -1,
    // q = {-127, -2, 2, 0} (-2.5 and 2.5 to even, -0.5 to -0 = 0).
    std::vector<float> y(256, 0.f);
    y[0] = 127.f, y[1] = 2.5f, y[2] = -2.5f, y[3] = 0.5f;
    const QuantizedVector k2 = quantize_activation(GgmlType::Q8_K, y.data(), 256);
    std::memcpy(&bk, k2.bytes.data(), sizeof(bk));
    EXPECT_EQ(bk.d, -1.f);
    EXPECT_EQ(bk.qs[0], -127);
    EXPECT_EQ(bk.qs[1], -2);
    EXPECT_EQ(bk.qs[2], 2);
    EXPECT_EQ(bk.qs[3], 0);
    EXPECT_EQ(bk.bsums[0], -127);
}

// ggml's own activation quantizers on non-integer input (tests/data/golden/q8-activations.json,
// written by scripts/make-q8-goldens from ggml's quantize_row_q8_0_ref / q8_1_ref / q8_K_ref):
// exact .5 ties after scaling, values one ulp beside them, fractions, tiny values and denormals,
// signed zeros, positive and negative block maxima, one large outlier per block, zero blocks.
TEST(MatmulReference, ActivationQuantizationMatchesGgmlOnFractions) {
    const auto text = test::read_file(test::data_path("golden/q8-activations.json"));
    const auto j = nlohmann::json::parse(text.begin(), text.end());
    auto unhex = [](const std::string& h) {
        std::vector<uint8_t> b(h.size() / 2);
        for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>(std::stoul(h.substr(2 * i, 2), nullptr, 16));
        return b;
    };
    const int64_t n = j.at("n").get<int64_t>();
    const std::vector<uint8_t> in = unhex(j.at("input_f32le").get<std::string>());
    ASSERT_EQ(in.size(), static_cast<size_t>(n) * 4);
    std::vector<float> x(static_cast<size_t>(n));
    std::memcpy(x.data(), in.data(), in.size());
    for (const auto& [key, type] : {std::pair<const char*, GgmlType>{"q8_0", GgmlType::Q8_0},
                                    {"q8_1", GgmlType::Q8_1},
                                    {"q8_K", GgmlType::Q8_K}}) {
        const std::vector<uint8_t> want = unhex(j.at(key).get<std::string>());
        const QuantizedVector got = quantize_activation(type, x.data(), n);
        ASSERT_EQ(got.bytes.size(), want.size()) << key;
        const size_t bs = traits(type).type_size;
        for (size_t i = 0; i < want.size(); ++i) {
            if (got.bytes[i] == want[i]) continue;
            const size_t block = i / bs, first = block * static_cast<size_t>(traits(type).block_size);
            ADD_FAILURE() << key << ": byte " << i % bs << " of block " << block << " (elements from " << first
                          << ", first x " << x[first] << ") is " << int(got.bytes[i]) << ", ggml wrote "
                          << int(want[i]);
            break;
        }
    }
}

// Every type with an integer path: with activations the partner represents exactly, the integer
// path equals the exact semantics up to fp32 rounding of the scaled sums (a wrong nibble order,
// scale or sign would be off by far more).
// Random blocks of a type without a quantizer here: random quants, scales in a sane range.
void random_blocks(GgmlType t, std::vector<uint8_t>& row, std::mt19937_64& rng) {
    for (auto& b : row) b = static_cast<uint8_t>(rng());
    const size_t bs = traits(t).type_size;
    for (size_t off = 0; off < row.size(); off += bs) {
        if (t == GgmlType::NVFP4) {  // four UE4M3 scales: exponent 5..8, any mantissa
            for (int s = 0; s < 4; ++s) row[off + s] = static_cast<uint8_t>(((5 + rng() % 4) << 3) | (rng() % 8));
        } else if (t == GgmlType::Q1_0) {  // fp16 scale 0.01..0.1
            const uint16_t d = fp32_to_fp16(0.01f + 0.09f * static_cast<float>(rng() % 1000) / 1000.f);
            std::memcpy(&row[off], &d, 2);
        } else {
            FAIL() << "no quantizer and no random block recipe for " << type_name(t);
        }
    }
}

TEST(MatmulReference, IntegerPathMatchesExactForEveryType) {
    std::mt19937_64 rng(7);
    const int64_t n = 512;
    const std::vector<float> x = exact_activations(rng, n);
    int types = 0;
    for (uint32_t id = 0; id < kGgmlTypeCount; ++id) {
        if (!type_id_valid(id)) continue;
        const auto t = static_cast<GgmlType>(id);
        if (!dot_partner(t)) continue;
        const std::vector<float> wf = normal(rng, static_cast<size_t>(n)), ones(static_cast<size_t>(n), 1.f);
        std::vector<uint8_t> row(row_size(t, n));
        if (t == GgmlType::F32)
            std::memcpy(row.data(), wf.data(), row.size());
        else if (can_quantize(t))
            quantize_chunk_ref(t, wf.data(), row.data(), 1, n, quantize_requires_imatrix(t) ? ones.data() : nullptr);
        else
            random_blocks(t, row, rng);
        std::vector<float> scratch;
        const double exact = dot_exact(t, row.data(), x.data(), n, scratch);
        const float integer = dot_integer(t, row.data(), quantize_activation(*dot_partner(t), x.data(), n));
        double scale = 0;
        for (int64_t i = 0; i < n; ++i) scale += std::fabs(scratch[i] * x[i]);
        EXPECT_NEAR(integer, exact,
                    2e-6 * scale + 1e-3 * std::fabs(exact) * (t == GgmlType::Q4_1 || t == GgmlType::Q5_1))
            << type_name(t);
        ++types;
    }
    EXPECT_EQ(types, 27);  // every type with a vec_dot in ggml 0.11.1
}

// The integer-dot column (reference.cpp's kIntegerDot) against the type table: a dot exactly
// where ggml-cpu names a vec_dot_type, but for Q8_1 (an activation type without a vec_dot).
TEST(MatmulReference, IntegerDotColumnMatchesTheTypeTable) {
    for (uint32_t id = 0; id < kGgmlTypeCount; ++id) {
        const auto t = static_cast<GgmlType>(id);
        SCOPED_TRACE(kTypeTraits[id].name);
        const auto want = t == GgmlType::Q8_1 ? std::nullopt : kTypeTraits[id].vec_dot_type;
        EXPECT_EQ(dot_partner(t), want);
    }
}

TEST(MatmulReference, PartnersAreGgmlVecDotTypes) {
    EXPECT_EQ(dot_partner(GgmlType::Q4_0), GgmlType::Q8_0);
    EXPECT_EQ(dot_partner(GgmlType::IQ4_NL), GgmlType::Q8_0);
    EXPECT_EQ(dot_partner(GgmlType::Q5_1), GgmlType::Q8_1);
    EXPECT_EQ(dot_partner(GgmlType::Q4_K), GgmlType::Q8_K);
    EXPECT_EQ(dot_partner(GgmlType::IQ4_XS), GgmlType::Q8_K);
    EXPECT_EQ(dot_partner(GgmlType::F16), GgmlType::F16);
    EXPECT_EQ(dot_partner(GgmlType::IQ2_XXS), GgmlType::Q8_K);
    EXPECT_EQ(dot_partner(GgmlType::MXFP4), GgmlType::Q8_0);
    EXPECT_EQ(dot_partner(GgmlType::NVFP4), GgmlType::Q8_0);
    EXPECT_EQ(dot_partner(GgmlType::Q1_0), GgmlType::Q8_0);
    EXPECT_FALSE(dot_partner(GgmlType::Q8_K).has_value());
    EXPECT_FALSE(dot_partner(GgmlType::Q8_1).has_value());
    EXPECT_FALSE(dot_partner(GgmlType::I32).has_value());
}

TEST(MatmulReference, Q4_0AndOiw4AreOneIntegerPath) {
    std::mt19937_64 rng(3);
    const int64_t n = 1024;
    const auto wf = normal(rng, n), x = normal(rng, n);
    std::vector<block_q4_0> b(n / 32);
    quantize_chunk_ref(GgmlType::Q4_0, wf.data(), b.data(), 1, n, nullptr);
    std::vector<uint8_t> qs(n / 2);
    std::vector<float> d(n / 32);
    for (int64_t i = 0; i < n / 32; ++i) {
        std::memcpy(&qs[i * 16], b[i].qs, 16);
        d[i] = fp16_to_fp32(b[i].d);
    }
    std::vector<float> scratch;
    const float yi = dot_integer(GgmlType::Q4_0, b.data(), quantize_activation(GgmlType::Q8_0, x.data(), n));
    const float yo = oiw4_dot_ref(qs.data(), d.data(), make_q8_act(x.data(), n));
    EXPECT_EQ(std::memcmp(&yi, &yo, 4), 0);
    const double ei = dot_exact(GgmlType::Q4_0, b.data(), x.data(), n, scratch);
    const double eo = oiw4_dot_exact(qs.data(), d.data(), x.data(), n);
    EXPECT_EQ(std::memcmp(&ei, &eo, 8), 0);
}

// ---- kernels

struct Oiw4Fixture {
    std::vector<uint8_t> qs;
    std::vector<float> d;
    Oiw4Planes w;
    Oiw4Fixture(std::mt19937_64& rng, int64_t rows, int64_t cols) {
        qs.resize(static_cast<size_t>(rows * cols / 2));
        for (auto& b : qs) b = static_cast<uint8_t>(rng());
        d = normal(rng, static_cast<size_t>(rows * cols / 32));
        w = {qs.data(), d.data(), rows, cols};
    }
};

// The GEMV kernel tests run once per instruction set; an instance whose ISA this CPU lacks is
// skipped with a message naming it (in the test output and ctest's list of skipped tests).
class MatmulKernels : public ::testing::TestWithParam<Isa> {
protected:
    void SetUp() override {
        if (!cpu_runs(GetParam()))
            GTEST_SKIP() << isa_name(GetParam()) << " not on this CPU: its kernels are not tested here";
    }
};

INSTANTIATE_TEST_SUITE_P(Isa, MatmulKernels,
                         ::testing::Values(Isa::Scalar, Isa::Avx1, Isa::Avx2, Isa::AvxVnni, Isa::Avx512,
                                           Isa::Avx512Vnni),
                         [](const ::testing::TestParamInfo<Isa>& i) { return std::string(isa_name(i.param)); });

TEST_P(MatmulKernels, Oiw4BitIdenticalToReferenceOnOddSizes) {
    const Isa isa = GetParam();
    std::mt19937_64 rng(11);
    // Odd row counts (AVX-512 pairs rows: an odd last row runs paired with itself), cols of 1..128 blocks.
    for (const auto& [rows, cols] :
         {std::pair<int64_t, int64_t>{1, 32}, {3, 32}, {3, 96}, {17, 160}, {33, 352}, {65, 2048}, {8, 4096}}) {
        Oiw4Fixture f(rng, rows, cols);
        std::vector<Q8Act> acts;
        std::vector<const Q8Act*> ap;
        for (int v = 0; v < kMaxBatch; ++v) {
            std::vector<float> x = normal(rng, static_cast<size_t>(cols));
            for (auto& e : x) e *= std::exp(normal(rng, 1)[0]);
            acts.push_back(make_q8_act(x.data(), cols));
        }
        for (auto& a : acts) ap.push_back(&a);
        std::vector<float> ref(static_cast<size_t>(rows * kMaxBatch));
        for (int v = 0; v < kMaxBatch; ++v)
            for (int64_t r = 0; r < rows; ++r)
                ref[v * rows + r] = oiw4_dot_ref(f.qs.data() + r * cols / 2, f.d.data() + r * cols / 32, acts[v]);
        for (const int threads : {1, 2, 3, 7}) {
            for (int b = 1; b <= kMaxBatch; ++b) {
                for (const bool two : {false, true}) {
                    if (two && b > 1) continue;
                    std::vector<float> y(static_cast<size_t>(rows * b), -1.f);
                    oiw4_gemv(isa, f.w, ap.data(), b, y.data(), threads, two);
                    EXPECT_EQ(std::memcmp(y.data(), ref.data(), y.size() * 4), 0)
                        << isa_name(isa) << " rows " << rows << " cols " << cols << " threads " << threads << " batch "
                        << b << (two ? " 2-row" : "");
                }
            }
        }
    }
}

TEST_P(MatmulKernels, Q4_0BaselineMatchesReference) {
    const Isa isa = GetParam();
    std::mt19937_64 rng(5);
    for (const auto& [rows, cols] : {std::pair<int64_t, int64_t>{5, 256}, {1, 32}, {17, 352}, {16, 96}}) {
        const auto wf = normal(rng, rows * cols), x = normal(rng, cols);
        std::vector<block_q4_0> b(rows * cols / 32);
        quantize_chunk_ref(GgmlType::Q4_0, wf.data(), b.data(), rows, cols, nullptr);
        const QuantizedVector q = quantize_activation(GgmlType::Q8_0, x.data(), cols);
        for (const int threads : {1, 2, 3}) {
            std::vector<float> y(rows);
            q4_0_gemv(isa, b.data(), rows, cols, unpack_q8_0(q), y.data(), threads);
            for (int64_t r = 0; r < rows; ++r) {
                const float ref = dot_integer(GgmlType::Q4_0, &b[r * cols / 32], q);
                EXPECT_EQ(std::memcmp(&y[r], &ref, 4), 0)
                    << isa_name(isa) << " rows " << rows << " cols " << cols << " threads " << threads << " row " << r;
            }
        }
    }
}

TEST_P(MatmulKernels, Q4Kx8PackRoundTripsAndMatchesQ4_K) {
    const Isa isa = GetParam();
    std::mt19937_64 rng(9);
    for (const auto& [rows, cols] : {std::pair<int64_t, int64_t>{8, 256}, {24, 768}, {40, 1280}}) {
        const auto wf = normal(rng, rows * cols);
        const int64_t kb = cols / 256;
        std::vector<block_q4_K> src(rows * kb);
        quantize_chunk_ref(GgmlType::Q4_K, wf.data(), src.data(), rows, cols, nullptr);
        std::vector<block_q4_Kx8> x8(rows / 8 * kb);
        repack_q4_k_to_q4_kx8(src.data(), x8.data(), rows, kb, 8);
        for (int64_t g = 0; g < rows / 8; ++g)
            for (int64_t b = 0; b < kb; ++b) {
                for (int r = 0; r < 8; ++r) {
                    const block_q4_K back = q4kx8_extract(x8[g * kb + b], r);
                    EXPECT_EQ(std::memcmp(&back, &src[(g * 8 + r) * kb + b], sizeof(back)), 0);
                }
            }
        std::vector<float> x = normal(rng, cols);
        for (auto& e : x) e *= std::exp(normal(rng, 1)[0]);
        const QuantizedVector q = quantize_activation(GgmlType::Q8_K, x.data(), cols);
        for (const int threads : {1, 2, 3}) {
            std::vector<float> y(rows);
            q4kx8_gemv(isa, Q4Kx8View{x8.data(), rows, cols}, unpack_q8_K(q), y.data(), threads);
            for (int64_t r = 0; r < rows; ++r) {
                const float ref = dot_integer(GgmlType::Q4_K, &src[r * kb], q);
                EXPECT_EQ(std::memcmp(&y[r], &ref, 4), 0) << isa_name(isa) << " row " << r;
            }
        }
    }
}

}  // namespace
}  // namespace oiw::matmul

namespace oiw::matmul {
namespace {

TEST_P(MatmulKernels, EmptyRowsGiveZero) {
    const Q8KAct a = unpack_q8_K(quantize_activation(GgmlType::Q8_K, nullptr, 0));
    std::vector<float> y(8, -1.f);
    q4kx8_gemv(GetParam(), Q4Kx8View{nullptr, 8, 0}, a, y.data(), 2);
    EXPECT_EQ(y, std::vector<float>(8, 0.f)) << isa_name(GetParam());
}

}  // namespace
}  // namespace oiw::matmul
