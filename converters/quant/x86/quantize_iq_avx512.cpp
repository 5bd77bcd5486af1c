// The AVX-512 (F, BW, VL) trial-scale search of the lattice i-quants (LatticeKernels::search,
// converters/quant/lattice.h), byte-identical to the reference in quantize_lattice.cpp and laid
// out as the AVX2 one (quantize_iq_avx2.cpp, whose comment explains the method) with 16 lanes: 16
// neighbours or trial scales per step; the other loops are AVX2's. Compiled with AVX-512 flags
// (CMakeLists.txt) and reached only through dispatch.cpp once the CPU was found to run them. Same
// rules: a lane runs the reference's float operations for one unit in the reference's order; no
// FMA (-ffp-contract=off).
//
// Level lookups use vpermps over 16 entries, which reads bits 0-3 of the index: the tables hold
// their levels repeated (8 levels twice for 3-bit keys, 4 levels four times for 2-bit keys), so a
// key shifted to a coordinate indexes it without masking off the next coordinate's bits.
// GCC 12's _mm512_undefined_* (self-initialized) trip -W(maybe-)uninitialized wherever an AVX-512
// intrinsic using them is inlined; the warning is about the intrinsics' headers, not this code.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cfloat>
#include <cstdint>
#include <span>

#include "converters/quant/lattice.h"
#include "converters/quant/x86/quantize_avx2.h"
#include "converters/quant/x86/quantize_avx512.h"

namespace oiw::avx512 {
namespace {

using quant::GridSearch;
using quant::kMaxTrials;
using quant::kOddLevels;
using quant::LatticeKernels;
using quant::LatticeView;

const LatticeKernels& kernels();

// 16 lanes of level values for kBits-bit keys: levels 0-7 twice (kBits 3) or 0-3 four times.
template <int kBits>
__m512 level_table(const float* level_value) {
    return kBits == 2 ? _mm512_broadcast_f32x4(_mm_loadu_ps(level_value))
                      : _mm512_shuffle_f32x4(_mm512_castps256_ps512(_mm256_loadu_ps(level_value)),
                                             _mm512_castps256_ps512(_mm256_loadu_ps(level_value)), 0x44);
}

// LatticeKernels::best_neighbour with sq = scale * level_table (see best_neighbour_sq in
// quantize_iq_avx2.cpp for the choice of the winner).
template <int kDims, int kBits>
inline __attribute__((always_inline)) int best_neighbour_sq(const LatticeView& g, int32_t list, __m512 sq,
                                                            const float* xval, const float* weight) {
    const int num = g.neighbours[list];
    const uint16_t* keys = g.list_keys + list + 1;
    __m512 e[kDims];  // e[i][l]: the reference's term weight[i] * diff * diff for level l
    for (int i = 0; i < kDims; ++i) {
        const __m512 diff = _mm512_sub_ps(sq, _mm512_set1_ps(xval[i]));
        e[i] = _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(weight[i]), diff), diff);
    }
    auto errors = [&](int j) {
        const __m512i kv = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(keys + j)));
        __m512 d = _mm512_setzero_ps();
        for (int i = 0; i < kDims; ++i)
            d = _mm512_add_ps(d, _mm512_permutexvar_ps(_mm512_srli_epi32(kv, kBits * i), e[i]));
        return d;
    };
    const __m512 big = _mm512_set1_ps(FLT_MAX);
    const __m512i count = _mm512_set1_epi32(num);
    __m512i pos = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512 d0 = errors(0);
    __m512 best =
        _mm512_mask_blend_ps(_mm512_cmplt_epi32_mask(pos, count) & _mm512_cmp_ps_mask(d0, big, _CMP_LT_OQ), big, d0);
    __m512i best_pos = pos;
    for (int j = 16; j < num; j += 16) {  // most lists have at most 16 points
        pos = _mm512_add_epi32(pos, _mm512_set1_epi32(16));
        const __m512 d = errors(j);
        const __mmask16 lt = _mm512_cmp_ps_mask(d, best, _CMP_LT_OQ) & _mm512_cmplt_epi32_mask(pos, count);
        best = _mm512_mask_blend_ps(lt, best, d);
        best_pos = _mm512_mask_blend_epi32(lt, best_pos, pos);
    }
    const float m = _mm512_reduce_min_ps(best);
    if (!(m < FLT_MAX)) return -1;
    const __mmask16 win = _mm512_cmp_ps_mask(best, _mm512_set1_ps(m), _CMP_EQ_OQ);
    return _mm512_mask_reduce_min_epi32(win, best_pos);
}

template <int kBits>
__m512 scaled_levels(const float* level_value, float scale) {
    return _mm512_mul_ps(_mm512_set1_ps(scale), level_table<kBits>(level_value));
}

// See LatticeKernels::search and search_t in quantize_iq_avx2.cpp: 16 trial scales per lane set.
template <int kDims, int kBits>
bool search_t(const LatticeView& g, const GridSearch& p, int n, const float* xval, const float* weight,
              const float* waux, float max, float& scale, int8_t* L) {
    const int groups = n / kDims;
    const int trials = 2 * p.nsteps + 1;
    // Per element i and level l: the reference's terms (w*x)*q and (w*q)*q, q = 2l+1 (levels
    // repeated as in level_table<3>, which covers the 2-bit levels too once masked).
    __m512 tqx[32], tq2[32];
    const __m512 q = level_table<3>(kOddLevels);
    for (int i = 0; i < n; ++i) {
        const __m512 w = _mm512_set1_ps(weight[i]);
        tqx[i] = _mm512_mul_ps(_mm512_set1_ps(weight[i] * xval[i]), q);
        tq2[i] = _mm512_mul_ps(_mm512_mul_ps(w, q), q);
    }
    alignas(64) float ids[kMaxTrials];
    __m512 sq[kMaxTrials];
    for (int c = 0; c < kMaxTrials; ++c) {
        const int is = (c < trials ? c : trials - 1) - p.nsteps;
        ids[c] = (static_cast<float>(2 * p.max_q - 1) + static_cast<float>(is) * p.step) / max;
        sq[c] = scaled_levels<kBits>(kOddLevels, 1 / ids[c]);
    }
    alignas(64) uint32_t tkeys[8][kMaxTrials];
    const __m512 half = _mm512_set1_ps(0.5f), one = _mm512_set1_ps(1.f), magic = _mm512_set1_ps(12582912.f);
    const __m512i top = _mm512_set1_epi32(p.max_q - 1);
    for (int c0 = 0; c0 < trials; c0 += 16) {
        const __m512 vid = _mm512_load_ps(ids + c0);
        for (int j = 0; j < groups; ++j) {
            __m512i key = _mm512_setzero_si512();
            for (int i = 0; i < kDims; ++i) {
                const __m512 t =
                    _mm512_mul_ps(half, _mm512_sub_ps(_mm512_mul_ps(vid, _mm512_set1_ps(xval[kDims * j + i])), one));
                const __m512i r = _mm512_castps_si512(_mm512_add_ps(t, magic));
                __m512i l =
                    _mm512_sub_epi32(_mm512_and_si512(r, _mm512_set1_epi32(0x007fffff)), _mm512_set1_epi32(0x00400000));
                l = _mm512_min_epi32(_mm512_max_epi32(l, _mm512_setzero_si512()), top);
                key = _mm512_or_si512(key, _mm512_slli_epi32(l, kBits * i));
            }
            _mm512_store_si512(&tkeys[j][c0], key);
        }
    }
    uint32_t on_bits[8];
    alignas(64) int32_t tmap[kMaxTrials];
    const uint32_t all_trials = trials >= 32 ? ~0u : (1u << trials) - 1;
    for (int j = 0; j < groups; ++j) {
        uint32_t off = 0;
        for (int c0 = 0; c0 < trials; c0 += 16) {
            const __m512i m = _mm512_i32gather_epi32(_mm512_load_si512(&tkeys[j][c0]), g.map, 4);
            _mm512_store_si512(tmap + c0, m);
            off |= static_cast<uint32_t>(_mm512_cmplt_epi32_mask(m, _mm512_setzero_si512())) << c0;
        }
        off &= all_trials;
        on_bits[j] = ~off & all_trials;
        for (; off; off &= off - 1) {
            const int c = __builtin_ctz(off);
            const int32_t list = -tmap[c] - 1;
            const int pos = best_neighbour_sq<kDims, kBits>(g, list, sq[c], xval + kDims * j, waux + kDims * j);
            if (pos < 0) return false;
            tkeys[j][c] = g.list_keys[list + 1 + pos];
        }
    }
    alignas(64) float sx[kMaxTrials], s2[kMaxTrials];
    const __m512i mask = _mm512_set1_epi32((1 << kBits) - 1);
    for (int c0 = 0; c0 < trials; c0 += 16) {
        __m512 ax = _mm512_setzero_ps(), a2 = _mm512_setzero_ps();
        for (int i = 0; i < n; ++i) {
            const __m512i kv = _mm512_load_si512(&tkeys[i / kDims][c0]);
            const __m512i lvl = _mm512_and_si512(_mm512_srli_epi32(kv, kBits * (i % kDims)), mask);
            ax = _mm512_add_ps(ax, _mm512_permutexvar_ps(lvl, tqx[i]));
            a2 = _mm512_add_ps(a2, _mm512_permutexvar_ps(lvl, tq2[i]));
        }
        _mm512_store_ps(sx + c0, ax);
        _mm512_store_ps(s2 + c0, a2);
    }
    return quant::finish_grid_search(kernels(), g, p, n, trials, xval, weight, waux, sx, s2, tkeys, on_bits, scale, L);
}

bool search(const LatticeView& g, const GridSearch& p, int n, const float* xval, const float* weight, const float* waux,
            float max, float& scale, int8_t* L) {
    return g.dims == 4 ? search_t<4, 3>(g, p, n, xval, weight, waux, max, scale, L)
                       : search_t<8, 2>(g, p, n, xval, weight, waux, max, scale, L);
}

// The trial-scale search with 16 lanes; the IQ1 loops and the neighbour search they call are
// AVX2's (constant-initialized: no guard, no weak symbol in this object).
constexpr LatticeKernels kLattice{search, avx2::lattice_best_neighbour, avx2::lattice_iq1_s_split,
                                  avx2::lattice_iq1_m_split, avx2::lattice_sort_indices};

const LatticeKernels& kernels() { return kLattice; }

// A lattice i-quant row with these loops; refuses what the AVX2 kernels refuse (avx2::lattice_row).
template <GgmlType kType>
bool row_lattice(const float* x, void* dst, int64_t n, const float* imatrix) {
    return avx2::lattice_row(kType, kernels(), x, dst, n, imatrix);
}

using T = GgmlType;
// Only where 16 lanes paid (bench_quantize, both ISAs alternately on the measuring AMD EPYC): the
// long neighbour lists of the IQ2_XXS and IQ2_XS grids (1.0-1.45x over AVX2 in three runs). IQ3's
// lists (8 points on average) and IQ2_S's (nearest distance only) fill one 8-lane step, where this
// search was no faster. Both require importance weights.
constexpr IsaKernel kQuantizers[] = {
    {T::IQ2_XXS, {nullptr, row_lattice<T::IQ2_XXS>}},
    {T::IQ2_XS, {nullptr, row_lattice<T::IQ2_XS>}},
};

}  // namespace

const quant::LatticeKernels& lattice_kernels() { return kernels(); }
std::span<const IsaKernel> quantizers() { return kQuantizers; }

}  // namespace oiw::avx512

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
