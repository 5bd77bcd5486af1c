// AVX2 versions of the lattice i-quant loops (LatticeKernels, converters/quant/lattice.h),
// byte-identical to the reference ones in quantize_lattice.cpp; the block drivers are shared.
// Compiled with -mavx2 -mf16c and reached only through dispatch.cpp after the CPU check. The rules
// of quantize_avx2.cpp hold: a lane runs the reference's float operations for one independent
// unit (one neighbour, one trial scale) in the reference's order; no FMA (-ffp-contract=off).
//
// Where the time goes and what is done about it:
//  - Neighbour search (the reference spends ~2/3 of its time here): per coordinate i and level l
//    the reference's term weight[i] * (scale*v_l - x[i])^2 depends only on (i, l), so it is built
//    once per call into a register E_i (8 levels) and each neighbour's error is
//    ((0 + E_0[l_0]) + E_1[l_1]) + ..., the reference's sum term for term. Eight neighbours run
//    per step, each lane looking its levels up with vpermps straight from the point's key:
//
//      key (bits 3):  .. | l2 | l1 | l0 |      lane index = key >> (3*i); vpermps reads bits 0-2
//      key (bits 2):  .. | l2 | l1 | l0 |      key >> (2*i): bit 2 is l_{i+1}'s low bit, so E_i
//                                              holds levels 0-3 twice (entries 4-7 = 0-3)
//
//  - Trial scales: levels and grid keys of a whole block per trial in vectors; the fit sums
//    sum w*x*q and sum w*q*q run with one trial scale per lane (each lane sums the elements in
//    the reference's order), their terms looked up from per-element tables of the 8 levels.
//    The choice among trials stays a scalar scan in trial order, as the reference decides it.
#include <immintrin.h>

#include <cfloat>
#include <cstdint>

#include "converters/quant/lattice.h"
#include "converters/quant/x86/quantize_avx2.h"

namespace oiw::avx2 {
namespace {

using quant::GridSearch;
using quant::kMaxTrials;
using quant::kOddLevels;
using quant::LatticeKernels;
using quant::LatticeView;

// The smallest of 8 floats, in every lane (no NaN among them).
inline __m256 hmin8(__m256 v) {
    v = _mm256_min_ps(v, _mm256_permute2f128_ps(v, v, 1));
    v = _mm256_min_ps(v, _mm256_shuffle_ps(v, v, _MM_SHUFFLE(1, 0, 3, 2)));
    return _mm256_min_ps(v, _mm256_shuffle_ps(v, v, _MM_SHUFFLE(2, 3, 0, 1)));
}

// LatticeKernels::best_neighbour with sq = scale * level_value (levels 0-3 repeated in lanes 4-7
// when kBits == 2). kDims/kBits: 8/2 (iq1, iq2) or 4/3 (iq3).
template <int kDims, int kBits>
inline __attribute__((always_inline)) int best_neighbour_sq(const LatticeView& g, int32_t list, __m256 sq,
                                                            const float* xval, const float* weight) {
    const int num = g.neighbours[list];
    const uint16_t* keys = g.list_keys + list + 1;
    __m256 e[kDims];  // e[i][l]: the reference's term weight[i] * diff * diff for level l
    for (int i = 0; i < kDims; ++i) {
        const __m256 diff = _mm256_sub_ps(sq, _mm256_set1_ps(xval[i]));
        e[i] = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(weight[i]), diff), diff);
    }
    // Errors of the 8 neighbours from position j, each summed in coordinate order from 0.
    auto errors = [&](int j) {
        const __m256i kv = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(keys + j)));
        __m256 d = _mm256_setzero_ps();
        for (int i = 0; i < kDims; ++i)
            d = _mm256_add_ps(d, _mm256_permutevar8x32_ps(e[i], _mm256_srli_epi32(kv, kBits * i)));
        return d;
    };
    // Lanes past the list, NaN and errors not below FLT_MAX never win, as in the reference; each
    // lane keeps its first minimum (strict <), so the reference's choice, the first position of the
    // smallest error, is the smallest position among the lanes holding the smallest.
    const __m256 big = _mm256_set1_ps(FLT_MAX);
    const __m256i count = _mm256_set1_epi32(num);
    __m256i pos = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256 d0 = errors(0);
    const __m256 ok =
        _mm256_and_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(count, pos)), _mm256_cmp_ps(d0, big, _CMP_LT_OQ));
    __m256 best = _mm256_blendv_ps(big, d0, ok);
    __m256i best_pos = pos;
    for (int j = 8; j < num; j += 8) {  // most lists have at most 8 points
        pos = _mm256_add_epi32(pos, _mm256_set1_epi32(8));
        const __m256 d = errors(j);
        const __m256 lt =
            _mm256_and_ps(_mm256_cmp_ps(d, best, _CMP_LT_OQ), _mm256_castsi256_ps(_mm256_cmpgt_epi32(count, pos)));
        best = _mm256_blendv_ps(best, d, lt);
        best_pos = _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(best_pos), _mm256_castsi256_ps(pos), lt));
    }
    const __m256 m = hmin8(best);
    const __m256 win = _mm256_and_ps(_mm256_cmp_ps(best, m, _CMP_EQ_OQ), _mm256_cmp_ps(best, big, _CMP_LT_OQ));
    __m256i p = _mm256_castps_si256(
        _mm256_blendv_ps(_mm256_castsi256_ps(_mm256_set1_epi32(INT32_MAX)), _mm256_castsi256_ps(best_pos), win));
    p = _mm256_min_epi32(p, _mm256_permute2x128_si256(p, p, 1));
    p = _mm256_min_epi32(p, _mm256_shuffle_epi32(p, _MM_SHUFFLE(1, 0, 3, 2)));
    p = _mm256_min_epi32(p, _mm256_shuffle_epi32(p, _MM_SHUFFLE(2, 3, 0, 1)));
    const int res = _mm256_cvtsi256_si32(p);
    return res == INT32_MAX ? -1 : res;
}

// scale * level_value for kBits (see best_neighbour_sq).
template <int kBits>
__m256 scaled_levels(const float* level_value, float scale) {
    const __m256 lv =
        kBits == 2 ? _mm256_broadcast_ps(reinterpret_cast<const __m128*>(level_value)) : _mm256_loadu_ps(level_value);
    return _mm256_mul_ps(_mm256_set1_ps(scale), lv);
}

int best_neighbour(const LatticeView& g, int32_t list, const float* level_value, const float* xval, const float* weight,
                   float scale) {
    return g.dims == 4 ? best_neighbour_sq<4, 3>(g, list, scaled_levels<3>(level_value, scale), xval, weight)
                       : best_neighbour_sq<8, 2>(g, list, scaled_levels<2>(level_value, scale), xval, weight);
}

// See LatticeKernels::search; the reference is ref_search in quantize_lattice.cpp.
template <int kDims, int kBits>
bool search_t(const LatticeView& g, const GridSearch& p, int n, const float* xval, const float* weight,
              const float* waux, float max, float& scale, int8_t* L) {
    const int groups = n / kDims;
    const int trials = 2 * p.nsteps + 1;
    // Per element i and level l: the reference's terms (w*x)*q and (w*q)*q, q = 2l+1.
    __m256 tqx[32], tq2[32];
    const __m256 q = _mm256_load_ps(kOddLevels);
    for (int i = 0; i < n; ++i) {
        const __m256 w = _mm256_set1_ps(weight[i]);
        tqx[i] = _mm256_mul_ps(_mm256_set1_ps(weight[i] * xval[i]), q);
        tq2[i] = _mm256_mul_ps(_mm256_mul_ps(w, q), q);
    }
    // Per trial c: the reference's inverse scale id and scale 1/id (unused lanes repeat the last).
    alignas(32) float ids[kMaxTrials];
    __m256 sq[kMaxTrials];  // scale * kOddLevels (scaled_levels)
    for (int c = 0; c < kMaxTrials; ++c) {
        const int is = (c < trials ? c : trials - 1) - p.nsteps;
        ids[c] = (static_cast<float>(2 * p.max_q - 1) + static_cast<float>(is) * p.step) / max;
        sq[c] = scaled_levels<kBits>(kOddLevels, 1 / ids[c]);
    }
    // Keys of every group (rows) at every trial (columns), one trial per lane: each element's level
    // clamp(nearest_int(0.5f * (id*x - 1)), 0, max_q - 1) as odd_levels computes it (nearest_int's
    // magic-number trick bit for bit), shifted into its group's key.
    alignas(32) uint32_t tkeys[8][kMaxTrials];
    const __m256 half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.f), magic = _mm256_set1_ps(12582912.f);
    const __m256i top = _mm256_set1_epi32(p.max_q - 1);
    for (int c0 = 0; c0 < trials; c0 += 8) {
        const __m256 vid = _mm256_load_ps(ids + c0);
        for (int j = 0; j < groups; ++j) {
            __m256i key = _mm256_setzero_si256();
            for (int i = 0; i < kDims; ++i) {
                const __m256 t =
                    _mm256_mul_ps(half, _mm256_sub_ps(_mm256_mul_ps(vid, _mm256_set1_ps(xval[kDims * j + i])), one));
                const __m256i r = _mm256_castps_si256(_mm256_add_ps(t, magic));
                __m256i l =
                    _mm256_sub_epi32(_mm256_and_si256(r, _mm256_set1_epi32(0x007fffff)), _mm256_set1_epi32(0x00400000));
                l = _mm256_min_epi32(_mm256_max_epi32(l, _mm256_setzero_si256()), top);
                key = _mm256_or_si256(key, _mm256_slli_epi32(l, kBits * i));
            }
            _mm256_store_si256(reinterpret_cast<__m256i*>(&tkeys[j][c0]), key);
        }
    }
    // Off-grid keys replaced by their best neighbour's at the trial's scale; on-grid flags as bits.
    uint32_t on_bits[8];
    alignas(32) int32_t tmap[kMaxTrials];
    const uint32_t all_trials = trials >= 32 ? ~0u : (1u << trials) - 1;
    for (int j = 0; j < groups; ++j) {
        uint32_t off = 0;
        for (int c0 = 0; c0 < trials; c0 += 8) {
            const __m256i kv = _mm256_load_si256(reinterpret_cast<const __m256i*>(&tkeys[j][c0]));
            const __m256i m = _mm256_i32gather_epi32(g.map, kv, 4);
            _mm256_store_si256(reinterpret_cast<__m256i*>(tmap + c0), m);
            off |= static_cast<uint32_t>(_mm256_movemask_ps(_mm256_castsi256_ps(m))) << c0;
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
    // The fit sums of every trial, one trial per lane, elements in the reference's order.
    alignas(32) float sx[kMaxTrials], s2[kMaxTrials];
    const __m256i mask = _mm256_set1_epi32((1 << kBits) - 1);
    for (int c0 = 0; c0 < trials; c0 += 8) {
        __m256 ax = _mm256_setzero_ps(), a2 = _mm256_setzero_ps();
        for (int i = 0; i < n; ++i) {
            const __m256i kv = _mm256_load_si256(reinterpret_cast<const __m256i*>(&tkeys[i / kDims][c0]));
            const __m256i lvl = _mm256_and_si256(_mm256_srli_epi32(kv, kBits * (i % kDims)), mask);
            ax = _mm256_add_ps(ax, _mm256_permutevar8x32_ps(tqx[i], lvl));
            a2 = _mm256_add_ps(a2, _mm256_permutevar8x32_ps(tq2[i], lvl));
        }
        _mm256_store_ps(sx + c0, ax);
        _mm256_store_ps(s2 + c0, a2);
    }
    return quant::finish_grid_search(lattice_kernels(), g, p, n, trials, xval, weight, waux, sx, s2, tkeys, on_bits,
                                     scale, L);
}

bool search(const LatticeView& g, const GridSearch& p, int n, const float* xval, const float* weight, const float* waux,
            float max, float& scale, int8_t* L) {
    return g.dims == 4 ? search_t<4, 3>(g, p, n, xval, weight, waux, max, scale, L)
                       : search_t<8, 2>(g, p, n, xval, weight, waux, max, scale, L);
}

// The running choice of the IQ1 split searches: candidate (sumqx, sumq2) replaces the best when
// sumq2 > 0 && sumqx * sumqx > best * sumq2, in the reference's candidate order.
struct RunningBest {
    float best = -FLT_MAX;
    float scale;
    // True when some lane of (qx, q2) would replace the current best: lanes that would not, with
    // the best as it is, cannot once the earlier ones did not either, so a chunk where none would
    // is skipped whole.
    bool any(__m256 qx, __m256 q2) const {
        const __m256 gt = _mm256_cmp_ps(_mm256_mul_ps(qx, qx), _mm256_mul_ps(_mm256_set1_ps(best), q2), _CMP_GT_OQ);
        return _mm256_movemask_ps(_mm256_and_ps(_mm256_cmp_ps(q2, _mm256_setzero_ps(), _CMP_GT_OQ), gt)) != 0;
    }
    bool take(float sumqx, float sumq2) {
        if (!(sumq2 > 0 && sumqx * sumqx > best * sumq2)) return false;
        scale = sumqx / sumq2;
        best = scale * sumqx;
        return true;
    }
};

// See LatticeKernels::iq1_s_split: one i2 per lane for each i1, the three-term sums formed as the
// reference forms them.
void iq1_s_split(const float* sumx, const float* sumw, const float* x_p, const float* x_m, quant::Iq1Split& s) {
    constexpr int kBlock = 32;
    RunningBest rb{-FLT_MAX, s.scale};
    int besti1 = -1, besti2 = -1, best_shift = 0;
    const float* xs[2] = {x_p, x_m};
    for (int i1 = 0; i1 <= kBlock; ++i1) {
        for (int i2 = i1; i2 <= kBlock; i2 += 8) {
            const __m256 x2 = _mm256_loadu_ps(sumx + i2), w2 = _mm256_loadu_ps(sumw + i2);
            const __m256 bx = _mm256_sub_ps(x2, _mm256_set1_ps(sumx[i1]));
            const __m256 cx = _mm256_sub_ps(_mm256_set1_ps(sumx[kBlock]), x2);
            const __m256 bw = _mm256_sub_ps(w2, _mm256_set1_ps(sumw[i1]));
            const __m256 cw = _mm256_sub_ps(_mm256_set1_ps(sumw[kBlock]), w2);
            const float ax = sumx[i1] - sumx[0], aw = sumw[i1] - sumw[0];
            __m256 vqx[2], vq2[2];
            bool any = false;
            for (int m = 0; m < 2; ++m) {
                const float* xv = xs[m];
                vqx[m] =
                    _mm256_add_ps(_mm256_add_ps(_mm256_set1_ps(ax * xv[0]), _mm256_mul_ps(bx, _mm256_set1_ps(xv[1]))),
                                  _mm256_mul_ps(cx, _mm256_set1_ps(xv[2])));
                vq2[m] = _mm256_add_ps(
                    _mm256_add_ps(_mm256_set1_ps(aw * xv[0] * xv[0]),
                                  _mm256_mul_ps(_mm256_mul_ps(bw, _mm256_set1_ps(xv[1])), _mm256_set1_ps(xv[1]))),
                    _mm256_mul_ps(_mm256_mul_ps(cw, _mm256_set1_ps(xv[2])), _mm256_set1_ps(xv[2])));
                any = any || rb.any(vqx[m], vq2[m]);
            }
            if (!any) continue;
            alignas(32) float qx[2][8], q2[2][8];
            for (int m = 0; m < 2; ++m) {
                _mm256_store_ps(qx[m], vqx[m]);
                _mm256_store_ps(q2[m], vq2[m]);
            }
            for (int l = 0; l < 8 && i2 + l <= kBlock; ++l) {
                for (int m = 0; m < 2; ++m) {
                    if (rb.take(qx[m][l], q2[m][l])) {
                        besti1 = i1;
                        besti2 = i2 + l;
                        best_shift = m == 0 ? 1 : -1;
                    }
                }
            }
        }
    }
    s = quant::Iq1Split{rb.scale, besti1, besti2, best_shift};
}

// See LatticeKernels::iq1_m_split: for each i1, one i2 per lane; every lane accumulates its four
// (sumqx, sumq2) pairs over the sorted elements in the reference's order, picking each element's
// level per lane (0 below i1, 1 below its i2, else 2), from the shared level-0 prefix.
void iq1_m_split(const float* xb, const float* weight, const int* idx, const float* x_p, const float* x_m,
                 quant::Iq1Split& s) {
    constexpr int kBlock = 16;
    // Per sorted position j and level c: the reference's terms w*x_p[c]*xb, w*x_m[c]*xb,
    // w*x_p[c]*x_p[c], w*x_m[c]*x_m[c].
    float tpx[kBlock][3], tmx[kBlock][3], tp2[kBlock][3], tm2[kBlock][3];
    bool first[kBlock];
    for (int j = 0; j < kBlock; ++j) {
        const int i = idx[j];
        const float w = weight[i];
        first[j] = i < kBlock / 2;
        for (int c = 0; c < 3; ++c) {
            tpx[j][c] = w * x_p[c] * xb[i];
            tmx[j][c] = w * x_m[c] * xb[i];
            tp2[j][c] = w * x_p[c] * x_p[c];
            tm2[j][c] = w * x_m[c] * x_m[c];
        }
    }
    // The sums after the first i1 sorted elements, all at level 0: the same for every split with
    // that i1, so each split's lanes start from them (the reference adds the same terms from 0).
    float p0x[kBlock + 1][4], p02[kBlock + 1][4];
    for (int k = 0; k < 4; ++k) p0x[0][k] = p02[0][k] = 0;
    for (int j = 0; j < kBlock; ++j) {
        const int kp = first[j] ? 1 : 2, km = first[j] ? 2 : 1;
        p0x[j + 1][0] = p0x[j][0] + tpx[j][0];
        p0x[j + 1][kp] = p0x[j][kp] + tpx[j][0];
        p0x[j + 1][km] = p0x[j][km] + tmx[j][0];
        p0x[j + 1][3] = p0x[j][3] + tmx[j][0];
        p02[j + 1][0] = p02[j][0] + tp2[j][0];
        p02[j + 1][kp] = p02[j][kp] + tp2[j][0];
        p02[j + 1][km] = p02[j][km] + tm2[j][0];
        p02[j + 1][3] = p02[j][3] + tm2[j][0];
    }
    RunningBest rb{-FLT_MAX, s.scale};
    int besti1 = -1, besti2 = -1, best_k = -1;
    for (int i1 = 0; i1 <= kBlock; ++i1) {
        for (int i2 = i1; i2 <= kBlock; i2 += 8) {
            const __m256i i2v = _mm256_add_epi32(_mm256_set1_epi32(i2), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
            __m256 sx[4], sq[4];
            for (int k = 0; k < 4; ++k) {
                sx[k] = _mm256_set1_ps(p0x[i1][k]);
                sq[k] = _mm256_set1_ps(p02[i1][k]);
            }
            for (int j = i1; j < kBlock; ++j) {
                // Level 1 in the lanes whose i2 is past j, else 2.
                const __m256 one = _mm256_castsi256_ps(_mm256_cmpgt_epi32(i2v, _mm256_set1_epi32(j)));
                const __m256 px = _mm256_blendv_ps(_mm256_set1_ps(tpx[j][2]), _mm256_set1_ps(tpx[j][1]), one);
                const __m256 mx = _mm256_blendv_ps(_mm256_set1_ps(tmx[j][2]), _mm256_set1_ps(tmx[j][1]), one);
                const __m256 p2 = _mm256_blendv_ps(_mm256_set1_ps(tp2[j][2]), _mm256_set1_ps(tp2[j][1]), one);
                const __m256 m2 = _mm256_blendv_ps(_mm256_set1_ps(tm2[j][2]), _mm256_set1_ps(tm2[j][1]), one);
                // k = 1 follows x_p in the first half and x_m in the second; k = 2 the reverse.
                const int kp = first[j] ? 1 : 2, km = first[j] ? 2 : 1;
                sx[0] = _mm256_add_ps(sx[0], px);
                sx[kp] = _mm256_add_ps(sx[kp], px);
                sx[km] = _mm256_add_ps(sx[km], mx);
                sx[3] = _mm256_add_ps(sx[3], mx);
                sq[0] = _mm256_add_ps(sq[0], p2);
                sq[kp] = _mm256_add_ps(sq[kp], p2);
                sq[km] = _mm256_add_ps(sq[km], m2);
                sq[3] = _mm256_add_ps(sq[3], m2);
            }
            bool any = false;
            for (int k = 0; k < 4; ++k) any = any || rb.any(sx[k], sq[k]);
            if (!any) continue;
            alignas(32) float qx[4][8], q2[4][8];
            for (int k = 0; k < 4; ++k) {
                _mm256_store_ps(qx[k], sx[k]);
                _mm256_store_ps(q2[k], sq[k]);
            }
            for (int l = 0; l < 8 && i2 + l <= kBlock; ++l) {
                for (int k = 0; k < 4; ++k) {
                    if (rb.take(qx[k][l], q2[k][l])) {
                        besti1 = i1;
                        besti2 = i2 + l;
                        best_k = k;
                    }
                }
            }
        }
    }
    s = quant::Iq1Split{rb.scale, besti1, besti2, best_k};
}

// See LatticeKernels::sort_indices. For finite values `<` is a strict weak order, under which
// the stable order is unique: value i goes to position #{j : x_j < x_i} + #{j < i : x_j == x_i}
// (== is "neither is less" there), counted here 8 values per vector without branches. With a
// NaN it is not a strict weak order, and the reference's sort keeps the order it gives.
void sort_indices(const float* xb, int n, int* idx) {
    bool finite = true;
    for (int i = 0; i < n; ++i) finite = finite && __builtin_isfinite(xb[i]);
    if (!finite || n % 8 != 0 || n > 32) return quant::reference_lattice_kernels().sort_indices(xb, n, idx);
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (int i = 0; i < n; ++i) {
        const __m256 xi = _mm256_set1_ps(xb[i]);
        const __m256i vi = _mm256_set1_epi32(i);
        __m256i rank = _mm256_setzero_si256();  // minus the count (compares give -1)
        for (int j0 = 0; j0 < n; j0 += 8) {
            const __m256 xj = _mm256_loadu_ps(xb + j0);
            const __m256i before = _mm256_cmpgt_epi32(vi, _mm256_add_epi32(lane, _mm256_set1_epi32(j0)));
            const __m256 lt = _mm256_cmp_ps(xj, xi, _CMP_LT_OQ);
            const __m256 eq = _mm256_and_ps(_mm256_cmp_ps(xj, xi, _CMP_EQ_OQ), _mm256_castsi256_ps(before));
            rank = _mm256_add_epi32(rank, _mm256_castps_si256(_mm256_or_ps(lt, eq)));
        }
        rank = _mm256_add_epi32(rank, _mm256_permute2x128_si256(rank, rank, 1));
        rank = _mm256_add_epi32(rank, _mm256_shuffle_epi32(rank, _MM_SHUFFLE(1, 0, 3, 2)));
        rank = _mm256_add_epi32(rank, _mm256_shuffle_epi32(rank, _MM_SHUFFLE(2, 3, 0, 1)));
        idx[-_mm256_cvtsi256_si32(rank)] = i;
    }
}

constexpr LatticeKernels kLattice{search, best_neighbour, iq1_s_split, iq1_m_split, sort_indices};

}  // namespace

int lattice_best_neighbour(const LatticeView& g, int32_t list, const float* level_value, const float* xval,
                           const float* weight, float scale) {
    return best_neighbour(g, list, level_value, xval, weight, scale);
}
void lattice_iq1_s_split(const float* sumx, const float* sumw, const float* x_p, const float* x_m, quant::Iq1Split& s) {
    iq1_s_split(sumx, sumw, x_p, x_m, s);
}
void lattice_iq1_m_split(const float* xb, const float* weight, const int* idx, const float* x_p, const float* x_m,
                         quant::Iq1Split& s) {
    iq1_m_split(xb, weight, idx, x_p, x_m, s);
}
void lattice_sort_indices(const float* xb, int n, int* idx) { sort_indices(xb, n, idx); }

const quant::LatticeKernels& lattice_kernels() { return kLattice; }

}  // namespace oiw::avx2
