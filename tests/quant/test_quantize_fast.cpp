// The optimized quantizers of the default ISA (x86/quantize_*_avx2.cpp, x86/quantize_*_avx512.cpp,
// via dispatch.cpp; ctest's oiw_tests_avx2_isa reruns them under OIW_ISA=avx2) against the scalar
// reference: byte-identical on the golden input and on many synthetic rows (scales 1e-6..1e3,
// zeros, constants, outliers, denormals, exact rounding ties, signed zeros, non-finite and huge
// rows), with and without importance weights -- per K-quant type 6,336 super-blocks plain and
// 19,008 with weights; plus the exactness of the f16 -> f32 conversion and of the branchless
// IQ4_NL index. (Checked once exhaustively offline: the IQ4_NL index for all 2^32 floats, F16C
// fp32 -> fp16 for all finite.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "converters/quant/dispatch.h"
#include "converters/quant/iq_tables.h"
#include "converters/quant/quantize_impl.h"
#include "converters/quant/quants.h"
#include "libformat/fp16.h"
#include "libformat/gguf/gguf.h"
#include "libformat/types.h"
#include "tests/support/helpers.h"

#if defined(__x86_64__)
#include "converters/quant/lattice.h"
#include "converters/quant/x86/quantize_avx2.h"
#include "converters/quant/x86/quantize_avx512.h"
#endif

namespace oiw {
namespace {

// Every type that has a fast path (with or without an imatrix).
const GgmlType kFastTypes[] = {
    GgmlType::F16,    GgmlType::BF16,   GgmlType::Q8_0,    GgmlType::Q4_0,   GgmlType::Q4_1,  GgmlType::Q5_0,
    GgmlType::Q5_1,   GgmlType::Q2_K,   GgmlType::Q3_K,    GgmlType::Q4_K,   GgmlType::Q5_K,  GgmlType::Q6_K,
    GgmlType::IQ4_NL, GgmlType::IQ4_XS, GgmlType::IQ2_XXS, GgmlType::IQ2_XS, GgmlType::IQ2_S, GgmlType::IQ3_XXS,
    GgmlType::IQ3_S,  GgmlType::IQ1_S,  GgmlType::IQ1_M};

// The lattice i-quants: their reference throws on rows it cannot quantize (non-finite values)
// where the others write bytes.
bool is_lattice(GgmlType t) {
    for (GgmlType l : {GgmlType::IQ2_XXS, GgmlType::IQ2_XS, GgmlType::IQ2_S, GgmlType::IQ3_XXS, GgmlType::IQ3_S,
                       GgmlType::IQ1_S, GgmlType::IQ1_M})
        if (t == l) return true;
    return false;
}

std::string tname(GgmlType t) { return std::string(type_name(t)); }

// The optimized quantizers are AVX2 kernels: without them quantize_chunk runs the reference and a
// comparison with the reference proves nothing, so the test is skipped, saying why.
#define NEED_FAST_QUANTIZERS()                                                                                  \
    do {                                                                                                        \
        if (!has_avx2(active_isa()))                                                                            \
            GTEST_SKIP() << (cpu_runs(Isa::Avx2) ? "OIW_ISA=scalar: the avx2 quantizers are off"                \
                                                 : "avx2 not on this CPU: its quantizers are not tested here"); \
    } while (0)

// Index of the first differing block of two equally sized buffers, or -1.
int64_t first_diff_block(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b, size_t block_bytes) {
    for (size_t i = 0; i < a.size(); ++i)
        if (a[i] != b[i]) return static_cast<int64_t>(i / block_bytes);
    return -1;
}

// Quantizes with quantize_chunk (fast when available) and with the reference; expects equal bytes.
void expect_same(GgmlType t, const std::vector<float>& x, int64_t n_per_row, const float* imatrix,
                 const std::string& what) {
    const int64_t nrows = static_cast<int64_t>(x.size()) / n_per_row;
    const size_t bytes = row_size(t, n_per_row) * static_cast<size_t>(nrows);
    std::vector<uint8_t> fast(bytes, 0xAA), ref(bytes, 0x55);
    const size_t wf = quantize_chunk(t, x.data(), fast.data(), nrows, n_per_row, imatrix);
    const size_t wr = quantize_chunk_ref(t, x.data(), ref.data(), nrows, n_per_row, imatrix);
    ASSERT_EQ(wf, bytes);
    ASSERT_EQ(wr, bytes);
    const int64_t b = first_diff_block(fast, ref, traits(t).type_size);
    if (b >= 0) {
        const int64_t bs = traits(t).block_size;
        const int64_t elem = b * bs;
        ADD_FAILURE() << tname(t) << (imatrix ? " imatrix" : " plain") << " " << what << ": block " << b << " (row "
                      << elem / n_per_row << ", col " << elem % n_per_row << ") differs from the reference, first x "
                      << x[static_cast<size_t>(elem)];
    }
}

// ---------------------------------------------------------------- conversions and helpers

TEST(QuantizeFast, F16ToF32AllHalves) {
    std::vector<uint16_t> h(65536 + 5);
    for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<uint16_t>(i);
    std::vector<float> got(h.size());
    convert_f16_to_f32(h.data(), got.data(), static_cast<int64_t>(h.size()));
    for (size_t i = 0; i < h.size(); ++i) {
        const uint32_t want = f32_to_bits(fp16_to_fp32(h[i]));
        ASSERT_EQ(f32_to_bits(got[i]), want) << "half 0x" << std::hex << h[i];
    }
    // Odd lengths and offsets (tail handling).
    for (int64_t n = 0; n < 20; ++n) {
        std::vector<float> out(static_cast<size_t>(n) + 1, -1.f);
        convert_f16_to_f32(h.data() + 0x3c00, out.data(), n);
        for (int64_t i = 0; i < n; ++i)
            ASSERT_EQ(f32_to_bits(out[static_cast<size_t>(i)]), f32_to_bits(fp16_to_fp32(h[0x3c00 + i])));
        ASSERT_EQ(out[static_cast<size_t>(n)], -1.f);
    }
}

// ggml's best_index_int8(16, kvalues_iq4nl, x), verbatim.
int iq4nl_index_binary_search(float x) {
    const int8_t* val = kvalues_iq4nl;
    if (x <= val[0]) return 0;
    if (x >= val[15]) return 15;
    int ml = 0, mu = 15;
    while (mu - ml > 1) {
        const int mav = (ml + mu) / 2;
        if (x < val[mav])
            mu = mav;
        else
            ml = mav;
    }
    return x - val[mu - 1] < val[mu] - x ? mu - 1 : mu;
}

TEST(QuantizeFast, Iq4nlBranchlessIndexMatchesBinarySearch) {
    std::vector<float> xs = {0.f,
                             -0.f,
                             std::numeric_limits<float>::infinity(),
                             -std::numeric_limits<float>::infinity(),
                             std::numeric_limits<float>::quiet_NaN(),
                             -std::numeric_limits<float>::quiet_NaN(),
                             std::numeric_limits<float>::denorm_min(),
                             -std::numeric_limits<float>::denorm_min(),
                             FLT_MAX,
                             -FLT_MAX,
                             1e30f,
                             -1e30f};
    // Every level, every midpoint, and 3000 floats on either side of each.
    for (int k = 0; k < 16; ++k) {
        std::vector<float> centers = {static_cast<float>(kvalues_iq4nl[k])};
        if (k < 15) centers.push_back((static_cast<float>(kvalues_iq4nl[k]) + kvalues_iq4nl[k + 1]) / 2);
        for (float c : centers) {
            float up = c, down = c;
            for (int i = 0; i < 3000; ++i) {
                xs.push_back(up);
                xs.push_back(down);
                up = std::nextafter(up, INFINITY);
                down = std::nextafter(down, -INFINITY);
            }
        }
    }
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-140.f, 140.f);
    for (int i = 0; i < 200000; ++i) xs.push_back(u(rng));
    for (float x : xs) {
        // The binary search itself maps NaN to 15.
        ASSERT_EQ(quant::iq4nl_best_index(x), iq4nl_index_binary_search(x)) << "x = " << x;
    }
}

// ---------------------------------------------------------------- golden input

TEST(QuantizeFast, GoldenInputMatchesReference) {
    NEED_FAST_QUANTIZERS();
    const test::Golden& g = test::golden();
    for (GgmlType t : kFastTypes) {
        if (!quantize_requires_imatrix(t)) expect_same(t, g.x, g.n_per_row, nullptr, "golden");
        expect_same(t, g.x, g.n_per_row, g.importance.data(), "golden");
    }
}

TEST(QuantizeFast, FastPathsAreTaken) {
    NEED_FAST_QUANTIZERS();
    for (GgmlType t : {GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q2_K, GgmlType::Q3_K,
                       GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::IQ4_NL, GgmlType::IQ4_XS,
                       GgmlType::IQ2_S, GgmlType::IQ3_XXS, GgmlType::IQ3_S, GgmlType::IQ1_M}) {
        EXPECT_TRUE(has_fast_path(t, false)) << tname(t);
    }
    for (GgmlType t :
         {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q2_K, GgmlType::Q3_K,
          GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::IQ4_NL, GgmlType::IQ4_XS, GgmlType::IQ2_XXS,
          GgmlType::IQ2_XS, GgmlType::IQ2_S, GgmlType::IQ3_XXS, GgmlType::IQ3_S, GgmlType::IQ1_S, GgmlType::IQ1_M}) {
        EXPECT_TRUE(has_fast_path(t, true)) << tname(t);
    }
}

// ---------------------------------------------------------------- synthetic rows

// Fills one row of n values with pattern `kind` (see the switch) at magnitude `scale`.
void fill_row(std::vector<float>& out, int64_t n, int kind, float scale, std::mt19937& rng) {
    std::normal_distribution<float> nd(0.f, 1.f);
    std::uniform_real_distribution<float> ud(-1.f, 1.f);
    std::uniform_int_distribution<int> pos(0, static_cast<int>(n) - 1);
    const size_t base = out.size();
    for (int64_t i = 0; i < n; ++i) out.push_back(scale * nd(rng));
    float* x = out.data() + base;
    switch (kind) {
        case 0: break;  // gaussian
        case 1:         // heavy outliers
            for (int k = 0; k < 6; ++k) x[pos(rng)] *= 300.f;
            break;
        case 2:  // zero sub-blocks of various lengths, and exact zeros scattered
            for (int64_t i = 0; i < n; ++i) {
                if ((i / 16) % 5 == 1 || (i / 32) % 7 == 3 || (i % 13) == 0) x[i] = (i & 1) ? 0.f : -0.f;
            }
            break;
        case 3:  // constants per 16 / 32 values (degenerate scale searches)
            for (int64_t i = 0; i < n; ++i) x[i] = scale * static_cast<float>(((i / 16) % 5) - 2) * 0.5f;
            break;
        case 4:  // small integers times scale: exact rounding ties everywhere
            for (int64_t i = 0; i < n; ++i) x[i] = scale * static_cast<float>(static_cast<int>(ud(rng) * 9.f)) * 0.5f;
            break;
        case 5:  // uniform, all positive in some blocks and all negative in others
            for (int64_t i = 0; i < n; ++i) {
                const float a = std::fabs(ud(rng)) * scale;
                x[i] = ((i / 32) % 3 == 0) ? a : ((i / 32) % 3 == 1 ? -a : ud(rng) * scale);
            }
            break;
        case 6:  // denormals and tiny values around the all-zero threshold (1e-15)
            for (int64_t i = 0; i < n; ++i) {
                const int m = static_cast<int>(i / 32) % 4;
                const float s = m == 0 ? 1e-40f : (m == 1 ? 1e-16f : (m == 2 ? 1e-15f : 3e-38f));
                x[i] = s * nd(rng);
            }
            break;
        case 7:  // one dominant value per block, rest tiny
            for (int64_t i = 0; i < n; ++i) x[i] = (i % 32 == 5) ? scale : scale * 1e-4f * nd(rng);
            break;
        case 8:  // sparse: mostly zero, a few values
            for (int64_t i = 0; i < n; ++i)
                if (i % 9) x[i] = 0.f;
            break;
        case 9:  // huge: up to 2^48 in magnitude (the largest the fast paths take), whatever the scale
            for (int64_t i = 0; i < n; ++i) x[i] = 2.8e14f * ud(rng);
            break;
        case 10:  // an all-zero row
            for (int64_t i = 0; i < n; ++i) x[i] = 0.f;
            break;
        default: break;
    }
}

// Importance weights of pattern `kind`.
std::vector<float> make_imatrix(int64_t n, int kind, std::mt19937& rng) {
    std::uniform_real_distribution<float> ud(0.f, 1.f);
    std::vector<float> w(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
        switch (kind) {
            case 0: w[i] = ud(rng) * 10.f; break;
            case 1: w[i] = (i % 7 == 0) ? 0.f : std::exp(ud(rng) * 20.f - 10.f); break;  // zeros, wide range
            case 2: w[i] = (i / 16) % 3 == 0 ? 0.f : 1.f; break;                         // whole zero-weight sub-blocks
            default: w[i] = 1.f; break;
        }
    }
    return w;
}

struct SynthCase {
    GgmlType type;
    bool imatrix;
};

class FastMatchesReference : public ::testing::TestWithParam<SynthCase> {
protected:
    void SetUp() override { NEED_FAST_QUANTIZERS(); }
};

TEST_P(FastMatchesReference, RandomRows) {
    const auto [t, with_imatrix] = GetParam();
    const int64_t bs = traits(t).block_size;
    // Row lengths: lattice rows of 2 super-blocks; K-quant / IQ4_XS rows of 1, 5 and 6
    // super-blocks (the AVX-512 K-quant searches take 4, 2 or 1 padded with zeros at a time);
    // 32-blocks rows of 11 blocks (a partial group of 8) and of 16 blocks.
    std::vector<int64_t> lengths;
    if (bs == 256)
        lengths = is_lattice(t) ? std::vector<int64_t>{512} : std::vector<int64_t>{256, 1280, 1536};
    else
        lengths = {352, 512};
    const float scales[] = {1e-6f, 1e-3f, 0.02f, 1.f, 30.f, 1e3f};
    for (int64_t n : lengths) {
        for (uint32_t seed = 1; seed <= 8; ++seed) {
            std::mt19937 rng(seed * 7919 + static_cast<uint32_t>(t) * 31 + static_cast<uint32_t>(n));
            std::vector<float> x;
            // Kinds 9 and 10 (huge, all-zero) for the K-quants and the 32-blocks types.
            for (int kind = 0; kind < (is_lattice(t) ? 9 : 11); ++kind)
                for (float s : scales) fill_row(x, n, kind, s, rng);
            if (!with_imatrix) {
                expect_same(t, x, n, nullptr, "seed " + std::to_string(seed));
            } else {
                for (int ik = 0; ik < 3; ++ik) {
                    const auto w = make_imatrix(n, ik, rng);
                    expect_same(t, x, n, w.data(),
                                "seed " + std::to_string(seed) + " imatrix kind " + std::to_string(ik));
                }
            }
        }
    }
}

TEST_P(FastMatchesReference, NonFiniteRowsFallBack) {
    const auto [t, with_imatrix] = GetParam();
    const int64_t n = 512;
    std::mt19937 rng(99);
    std::vector<float> x;
    for (int r = 0; r < 5; ++r) fill_row(x, n, 0, 1.f, rng);
    x[3] = std::numeric_limits<float>::quiet_NaN();
    x[n + 300] = std::numeric_limits<float>::infinity();
    x[3 * n + 17] = -std::numeric_limits<float>::infinity();
    for (int64_t i = 0; i < n; ++i) x[static_cast<size_t>(2 * n + i)] *= 1e30f;  // finite, beyond 2^48
    const auto w = make_imatrix(n, 0, rng);
    if (!is_lattice(t)) {
        expect_same(t, x, n, with_imatrix ? w.data() : nullptr, "non-finite");
        return;
    }
    // The lattice reference refuses rows it finds no grid point for (non-finite values, or finite
    // ones whose squared error overflows; IQ2_XXS and IQ1_S write bytes for some): the fast path
    // hands them to it, so it fails the same way, and writes the same bytes wherever it does.
    const float* qw = with_imatrix ? w.data() : nullptr;
    auto run = [&](bool fast, int64_t row0, int64_t rows, std::string& error) {
        std::vector<uint8_t> out(row_size(t, n) * static_cast<size_t>(rows));
        const float* src = x.data() + row0 * n;
        try {
            fast ? quantize_chunk(t, src, out.data(), rows, n, qw)
                 : quantize_chunk_ref(t, src, out.data(), rows, n, qw);
        } catch (const FormatError& e) {
            error = e.what();
        }
        return out;
    };
    for (auto [row0, rows] : {std::pair<int64_t, int64_t>{0, 5}, {2, 1}, {4, 1}}) {
        std::string fast_error, ref_error;
        const auto fast = run(true, row0, rows, fast_error);
        const auto ref = run(false, row0, rows, ref_error);
        EXPECT_EQ(fast_error, ref_error) << tname(t) << " rows " << row0 << "+" << rows;
        if (ref_error.empty()) {
            EXPECT_EQ(fast, ref) << tname(t) << " rows " << row0 << "+" << rows;
        }
        if (row0 == 4) {
            EXPECT_EQ(ref_error, "") << tname(t) << ": a gaussian row quantizes";
        }
    }
}

// Each ISA's lattice loops, whichever of them the kernel table picks per type, pinned to the
// reference through the shared block drivers (quantize_lattice_row), on every lattice type.
TEST(QuantizeFast, EveryIsaLatticeLoopsMatchReference) {
#if !defined(__x86_64__)
    GTEST_SKIP() << "the lattice loops have x86-64 versions only";
#else
    struct Loops {
        Isa isa;
        const quant::LatticeKernels* k;
    };
    const Loops isas[] = {{Isa::Avx2, &avx2::lattice_kernels()}, {Isa::Avx512, &avx512::lattice_kernels()}};
    const GgmlType types[] = {GgmlType::IQ2_XXS, GgmlType::IQ2_XS, GgmlType::IQ2_S, GgmlType::IQ3_XXS,
                              GgmlType::IQ3_S,   GgmlType::IQ1_S,  GgmlType::IQ1_M};
    const int64_t n = 512;
    int ran = 0;
    for (const Loops& l : isas) {
        if (!cpu_runs(l.isa)) continue;
        ++ran;
        for (GgmlType t : types) {
            std::mt19937 rng(static_cast<uint32_t>(t) * 131);
            std::vector<float> x;
            for (int kind = 0; kind < 9; ++kind)
                for (float scale : {1e-3f, 1.f, 30.f}) fill_row(x, n, kind, scale, rng);
            for (int ik = -1; ik < 3; ++ik) {
                if (ik < 0 && quantize_requires_imatrix(t)) continue;
                const std::vector<float> w = ik < 0 ? std::vector<float>{} : make_imatrix(n, ik, rng);
                const float* qw = ik < 0 ? nullptr : w.data();
                std::vector<uint8_t> ref(row_size(t, n)), fast(row_size(t, n));
                for (size_t r = 0; r < x.size() / static_cast<size_t>(n); ++r) {
                    const float* row = x.data() + r * static_cast<size_t>(n);
                    const bool ok_ref =
                        quant::quantize_lattice_row(t, quant::reference_lattice_kernels(), row, ref.data(), n, qw);
                    const bool ok_fast = quant::quantize_lattice_row(t, *l.k, row, fast.data(), n, qw);
                    ASSERT_EQ(ok_fast, ok_ref) << isa_name(l.isa) << " " << tname(t) << " row " << r;
                    if (ok_ref) {
                        ASSERT_EQ(fast, ref) << isa_name(l.isa) << " " << tname(t) << " row " << r << " imatrix " << ik;
                    }
                }
            }
        }
    }
    if (!ran) GTEST_SKIP() << "no AVX2 on this CPU: no lattice loops to test";
#endif
}

std::vector<SynthCase> synth_cases() {
    std::vector<SynthCase> v;
    for (GgmlType t : kFastTypes) {
        if (!quantize_requires_imatrix(t)) v.push_back({t, false});
        if (traits(t).quantized && t != GgmlType::Q8_0) v.push_back({t, true});
    }
    return v;
}

INSTANTIATE_TEST_SUITE_P(QuantizeFast, FastMatchesReference, ::testing::ValuesIn(synth_cases()),
                         [](const ::testing::TestParamInfo<SynthCase>& info) {
                             return tname(info.param.type) + (info.param.imatrix ? "_imatrix" : "_plain");
                         });

}  // namespace
}  // namespace oiw
