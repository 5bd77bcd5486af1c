// The reference matmul (hand-computed cases, every integer-path type against the exact
// semantics on losslessly quantized activations) and the optimized kernels (bit-identical to the
// scalar reference on odd sizes, every ISA, batched, many threads).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "converters/matmul/kernels.h"
#include "converters/repack/repack.h"
#include "converters/matmul/reference.h"
#include "converters/matmul/w4a8.h"
#include "converters/quant/quantize_impl.h"
#include "converters/quant/quants.h"
#include "libformat/fp16.h"

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
    EXPECT_EQ(dot_integer(GgmlType::Q8_0, &w, quantize_activation(GgmlType::Q8_0, x.data(), 32)), static_cast<float>(expect));
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
    EXPECT_EQ(dot_integer(GgmlType::Q1_0, &q1, quantize_activation(GgmlType::Q8_0, x.data(), 128)), static_cast<float>(0.5 * expect));
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
    EXPECT_EQ(dot_integer(GgmlType::NVFP4, &nv, quantize_activation(GgmlType::Q8_0, xn.data(), 64)), static_cast<float>(expect_nv));
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
        if (t == GgmlType::F32) std::memcpy(row.data(), wf.data(), row.size());
        else if (can_quantize(t)) quantize_chunk_ref(t, wf.data(), row.data(), 1, n, quantize_requires_imatrix(t) ? ones.data() : nullptr);
        else random_blocks(t, row, rng);
        std::vector<float> scratch;
        const double exact = dot_exact(t, row.data(), x.data(), n, scratch);
        const float integer = dot_integer(t, row.data(), quantize_activation(*dot_partner(t), x.data(), n));
        double scale = 0;
        for (int64_t i = 0; i < n; ++i) scale += std::fabs(scratch[i] * x[i]);
        EXPECT_NEAR(integer, exact, 2e-6 * scale + 1e-3 * std::fabs(exact) * (t == GgmlType::Q4_1 || t == GgmlType::Q5_1))
            << type_name(t);
        ++types;
    }
    EXPECT_EQ(types, 27);  // every type with a vec_dot in ggml 0.11.1
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

std::vector<Isa> isas() {
    std::vector<Isa> out;
    for (const Isa i : {Isa::Scalar, Isa::Avx1, Isa::Avx2})
        if (cpu_runs(i)) out.push_back(i);
    return out;
}

TEST(MatmulKernels, Oiw4BitIdenticalToReferenceOnOddSizes) {
    std::mt19937_64 rng(11);
    for (const auto& [rows, cols] : {std::pair<int64_t, int64_t>{1, 32}, {3, 32}, {3, 96}, {65, 2048}, {8, 4096}}) {
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
        for (const Isa isa : isas()) {
            for (const int threads : {1, 2, 7}) {
                for (int b = 1; b <= kMaxBatch; ++b) {
                    for (const bool two : {false, true}) {
                        if (two && b > 1) continue;
                        std::vector<float> y(static_cast<size_t>(rows * b), -1.f);
                        oiw4_gemv(isa, f.w, ap.data(), b, y.data(), threads, two);
                        EXPECT_EQ(std::memcmp(y.data(), ref.data(), y.size() * 4), 0)
                            << isa_name(isa) << " rows " << rows << " cols " << cols << " threads " << threads
                            << " batch " << b << (two ? " 2-row" : "");
                    }
                }
            }
        }
    }
}

TEST(MatmulKernels, Q4_0BaselineMatchesReference) {
    std::mt19937_64 rng(5);
    const int64_t rows = 5, cols = 256;
    const auto wf = normal(rng, rows * cols), x = normal(rng, cols);
    std::vector<block_q4_0> b(rows * cols / 32);
    quantize_chunk_ref(GgmlType::Q4_0, wf.data(), b.data(), rows, cols, nullptr);
    const QuantizedVector q = quantize_activation(GgmlType::Q8_0, x.data(), cols);
    for (const Isa isa : isas()) {
        std::vector<float> y(rows);
        q4_0_gemv(isa, b.data(), rows, cols, unpack_q8_0(q), y.data(), 2);
        for (int64_t r = 0; r < rows; ++r) {
            const float ref = dot_integer(GgmlType::Q4_0, &b[r * cols / 32], q);
            EXPECT_EQ(std::memcmp(&y[r], &ref, 4), 0) << isa_name(isa) << " row " << r;
        }
    }
}

TEST(MatmulKernels, Q4Kx8PackRoundTripsAndMatchesQ4_K) {
    std::mt19937_64 rng(9);
    for (const auto& [rows, cols] : {std::pair<int64_t, int64_t>{8, 256}, {24, 768}}) {
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
        for (const Isa isa : isas()) {
            for (const int threads : {1, 3}) {
                std::vector<float> y(rows);
                q4kx8_gemv(isa, Q4Kx8View{x8.data(), rows, cols}, unpack_q8_K(q), y.data(), threads);
                for (int64_t r = 0; r < rows; ++r) {
                    const float ref = dot_integer(GgmlType::Q4_K, &src[r * kb], q);
                    EXPECT_EQ(std::memcmp(&y[r], &ref, 4), 0) << isa_name(isa) << " row " << r;
                }
            }
        }
    }
}

}  // namespace
}  // namespace oiw::matmul

namespace oiw::matmul {
namespace {

TEST(MatmulKernels, EmptyRowsGiveZero) {
    const Q8KAct a = unpack_q8_K(quantize_activation(GgmlType::Q8_K, nullptr, 0));
    for (const Isa isa : isas()) {
        std::vector<float> y(8, -1.f);
        q4kx8_gemv(isa, Q4Kx8View{nullptr, 8, 0}, a, y.data(), 2);
        EXPECT_EQ(y, std::vector<float>(8, 0.f)) << isa_name(isa);
    }
}

}  // namespace
}  // namespace oiw::matmul
