// The AVX-512 (F, BW, VL) scale searches of the K-quants, byte-identical to the reference and laid
// out as the AVX2 ones (quantize_avx2.cpp, whose comment gives the rules every lane follows) with
// 16 lanes: make_qkx2/3_quants (Q2_K, Q4_K, Q5_K) and make_qx_quants (Q3_K with weights, Q6_K) run
// for 16 sub-blocks per vector, the 16 of one Q2_K / Q3_K / Q6_K super-block or the 8 of two Q4_K /
// Q5_K ones, two such vectors interleaved (G = 2: faster than 1 and no slower than 3 in
// bench_quantize). The rest of each block (scales, levels, packing) is AVX2's (quantize_avx2.h),
// and so is Q3_K without weights (its greedy search, not make_qx_quants). Compiled
// with AVX-512 flags (CMakeLists.txt) and reached only through dispatch.cpp once the CPU was found
// to run them. No FMA (-ffp-contract=off); masks replace the AVX2 code's all-ones lanes.
// GCC 12's _mm512_undefined_* (self-initialized) trip -W(maybe-)uninitialized wherever an AVX-512
// intrinsic using them is inlined; the warning is about the intrinsics' headers, not this code.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstdint>
#include <span>

#include "converters/quant/quantize_impl.h"
#include "converters/quant/x86/quantize_avx2.h"
#include "converters/quant/x86/quantize_avx512.h"
#include "libformat/blocks.h"

namespace oiw::avx512 {
namespace {

using avx2::QkxSearch;
using avx2::QxSearch;
using quant::kGroupMaxEps;
using quant::sum_squares;

alignas(64) const float kZeros[QK_K] = {};

using V = __m512;
using VI = __m512i;
using M = __mmask16;
#define OIW_INLINE inline __attribute__((always_inline))

OIW_INLINE V vset(float f) { return _mm512_set1_ps(f); }
OIW_INLINE VI iset(int i) { return _mm512_set1_epi32(i); }
OIW_INLINE V vzero() { return _mm512_setzero_ps(); }
OIW_INLINE V vadd(V a, V b) { return _mm512_add_ps(a, b); }
OIW_INLINE V vsub(V a, V b) { return _mm512_sub_ps(a, b); }
OIW_INLINE V vmul(V a, V b) { return _mm512_mul_ps(a, b); }
OIW_INLINE V vdiv(V a, V b) { return _mm512_div_ps(a, b); }
OIW_INLINE V vabs(V a) { return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(a), iset(0x7fffffff))); }
OIW_INLINE V vneg(V a) { return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(a), iset(INT32_MIN))); }
OIW_INLINE M gt(V a, V b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
OIW_INLINE M lt(V a, V b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
// m ? b : a
OIW_INLINE V sel(V a, V b, M m) { return _mm512_mask_blend_ps(m, a, b); }
// m ? 0 : a (the AVX2 code's andnot with an all-ones mask)
OIW_INLINE V zero_if(M m, V a) { return _mm512_maskz_mov_ps(static_cast<M>(~m), a); }

// quant::nearest_int per lane, bit for bit (magic number, then the low mantissa bits).
OIW_INLINE VI nearest_int_v(V f) {
    const VI i = _mm512_castps_si512(_mm512_add_ps(f, vset(12582912.f)));
    return _mm512_sub_epi32(_mm512_and_si512(i, iset(0x007fffff)), iset(0x00400000));
}
// MAX(lo, MIN(hi, v)) for lo <= hi.
OIW_INLINE VI clampi(VI v, VI lo, VI hi) { return _mm512_min_epi32(_mm512_max_epi32(v, lo), hi); }

// Transposes 8 rows of 8 floats at column c into out[0..7] (out[i] = {row0[c + i], ...}).
OIW_INLINE void transpose8(const float* const* rows, int c, __m256* out) {
    __m256 r[8], t[8];
    for (int k = 0; k < 8; ++k) r[k] = _mm256_loadu_ps(rows[k] + c);
    for (int k = 0; k < 8; k += 2) {
        t[k] = _mm256_unpacklo_ps(r[k], r[k + 1]);
        t[k + 1] = _mm256_unpackhi_ps(r[k], r[k + 1]);
    }
    for (int h = 0; h < 2; ++h) {
        const __m256 u0 = _mm256_shuffle_ps(t[4 * h], t[4 * h + 2], _MM_SHUFFLE(1, 0, 1, 0));
        const __m256 u1 = _mm256_shuffle_ps(t[4 * h], t[4 * h + 2], _MM_SHUFFLE(3, 2, 3, 2));
        const __m256 u2 = _mm256_shuffle_ps(t[4 * h + 1], t[4 * h + 3], _MM_SHUFFLE(1, 0, 1, 0));
        const __m256 u3 = _mm256_shuffle_ps(t[4 * h + 1], t[4 * h + 3], _MM_SHUFFLE(3, 2, 3, 2));
        r[4 * h] = u0;
        r[4 * h + 1] = u1;
        r[4 * h + 2] = u2;
        r[4 * h + 3] = u3;
    }
    for (int i = 0; i < 4; ++i) {
        out[i] = _mm256_permute2f128_ps(r[i], r[4 + i], 0x20);
        out[i + 4] = _mm256_permute2f128_ps(r[i], r[4 + i], 0x31);
    }
}

// {lo, hi} as one vector (lanes 0-7, 8-15).
OIW_INLINE V join(__m256 lo, __m256 hi) {
    return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(lo)), _mm256_castps_pd(hi), 1));
}

// Transposes 16 rows of n floats (n a multiple of 8) into out[i] = {row0[i], ..., row15[i]}.
OIW_INLINE void load_t(const float* const* rows, int n, V* out) {
    for (int c = 0; c < n; c += 8) {
        __m256 lo[8], hi[8];
        transpose8(rows, c, lo);
        transpose8(rows + 8, c, hi);
        for (int i = 0; i < 8; ++i) out[c + i] = join(lo[i], hi[i]);
    }
}

// Stores lanes 0-7 of v at lo and lanes 8-15 at hi.
OIW_INLINE void store_halves(float* lo, float* hi, V v) {
    _mm256_storeu_ps(lo, _mm512_castps512_ps256(v));
    _mm256_storeu_ps(hi, _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
}

// The all-ones float of the AVX2 code's masks where m is set, else 0.
OIW_INLINE V mask_bits(M m) { return _mm512_castsi512_ps(_mm512_maskz_set1_epi32(m, -1)); }

// Per lane: sequential sum of w[i] over N elements (the reference's weight sums).
template <int N>
OIW_INLINE V lane_sum(const V* w) {
    V s = vzero();
    for (int i = 0; i < N; ++i) s = vadd(s, w[i]);
    return s;
}

// w[i] = w[i] * sqrt(s2 + x[i] * x[i]) for N elements (the reference's sigma2 weights).
template <int N>
OIW_INLINE void sigma_weights(const V* xt, V s2, V* wt) {
    for (int i = 0; i < N; ++i) wt[i] = vmul(wt[i], _mm512_sqrt_ps(vadd(s2, vmul(xt[i], xt[i]))));
}

// ---------------------------------------------------------------- make_qx_quants, 16 lanes

// Result of make_qx_quants for 16 runs (see QxOut in quantize_avx2.cpp).
struct QxOut {
    V scale, iscale;
    M zero;
};

// Per group g of G (runs xt[g * N + i]): sum w*x*l into slx[g] and sum w*l*l into sl2[g] over N
// elements with l = clamp(round(isc[g] * x), lo, hi).
template <int G, int N>
OIW_INLINE void qx_sums(const V* xt, const V* wt, const V* wx, const V* isc, VI lo, VI hi, V* slx, V* sl2) {
    V a[G], b[G];
    for (int g = 0; g < G; ++g) a[g] = b[g] = vzero();
    for (int i = 0; i < N; ++i) {
        for (int g = 0; g < G; ++g) {
            const int k = g * N + i;
            // |isc * x| <= nmax + 1 here, so the hardware rounding equals nearest_int.
            const V fl = _mm512_cvtepi32_ps(clampi(_mm512_cvtps_epi32(vmul(isc[g], xt[k])), lo, hi));
            a[g] = vadd(a[g], vmul(wx[k], fl));
            b[g] = vadd(b[g], vmul(vmul(wt[k], fl), fl));
        }
    }
    for (int g = 0; g < G; ++g) {
        slx[g] = a[g];
        sl2[g] = b[g];
    }
}

// The largest |x| of each run (as its x, the reference's max) and the all-zero mask, per group.
template <int G, int N>
OIW_INLINE void qx_max(const V* xt, V* mx, QxOut* out) {
    for (int g = 0; g < G; ++g) {
        V amax = vzero(), m = vzero();
        for (int i = 0; i < N; ++i) {
            const V x = xt[g * N + i];
            const V ax = vabs(x);
            const M bigger = gt(ax, amax);
            amax = sel(amax, ax, bigger);
            m = sel(m, x, bigger);
        }
        mx[g] = m;
        out[g].zero = lt(amax, vset(kGroupMaxEps));
    }
}

// make_qx_quants(N, nmax, x, L, rmse_type = 1, w) per lane for G groups of 16 runs interleaved
// (xt[g * N + i], out[g]); xt/wt transposed.
template <int G, int N>
void qx_lanes(const V* xt, const V* wt, int nmax, QxOut* out) {
    V mx[G], wx[G * N], iscale[G], sumlx[G], suml2[G], scale[G], best[G], best_is[G];
    qx_max<G, N>(xt, mx, out);
    for (int k = 0; k < G * N; ++k) wx[k] = vmul(wt[k], xt[k]);
    const VI lo = iset(-nmax), hi = iset(nmax - 1);
    for (int g = 0; g < G; ++g) iscale[g] = vdiv(vset(static_cast<float>(-nmax)), mx[g]);
    qx_sums<G, N>(xt, wt, wx, iscale, lo, hi, sumlx, suml2);
    for (int g = 0; g < G; ++g) {
        scale[g] = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(suml2[g], vzero(), _CMP_NEQ_UQ), vdiv(sumlx[g], suml2[g]));
        best[g] = vmul(scale[g], sumlx[g]);
        best_is[g] = iscale[g];
    }
    for (int is = -9; is <= 9; ++is) {
        if (is == 0) continue;
        const float c = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(is));
        for (int g = 0; g < G; ++g) iscale[g] = vdiv(vset(c), mx[g]);
        qx_sums<G, N>(xt, wt, wx, iscale, lo, hi, sumlx, suml2);
        for (int g = 0; g < G; ++g) {
            const M upd = gt(suml2[g], vzero()) & gt(vmul(sumlx[g], sumlx[g]), vmul(best[g], suml2[g]));
            const V ns = vdiv(sumlx[g], suml2[g]);
            scale[g] = sel(scale[g], ns, upd);
            best[g] = sel(best[g], vmul(ns, sumlx[g]), upd);
            best_is[g] = sel(best_is[g], iscale[g], upd);
        }
    }
    for (int g = 0; g < G; ++g) {
        out[g].scale = zero_if(out[g].zero, scale[g]);
        out[g].iscale = best_is[g];
    }
}

// Stores a qx_lanes result into s (16 sub-blocks of one super-block).
OIW_INLINE void store_qx(const QxOut& o, QxSearch& s) {
    _mm512_storeu_ps(s.scales, o.scale);
    _mm512_storeu_ps(s.iscl, o.iscale);
    _mm512_storeu_ps(s.zero, mask_bits(o.zero));
}

// ---------------------------------------------------------------- make_qkx2/3_quants, 16 lanes

// Result of make_qkx{2,3}_quants for 16 runs (see QkxOut in quantize_avx2.cpp).
struct QkxOut {
    V scale, the_min, l_iscale, l_min;
};

// The state of G groups of 16 runs through qkx_lanes: min, max, the weight and weighted x sums,
// the degenerate mask, the initial min, and the best so far with its (iscale, min).
template <int G>
struct QkxState {
    V mn[G], mx[G], sum_w[G], sum_x[G], mn0[G], scale[G], best[G], l_is[G], l_mn[G];
    M degen[G];
};

// The part of make_qkx{2,3}_quants before its step loop: min, max, sums and the first error.
template <int G, int N, bool kX3, bool kMad>
OIW_INLINE void qkx_start(const V* xt, const V* wt, int nmax, QkxState<G>& st) {
    const VI lo = _mm512_setzero_si512(), hi = iset(nmax);
    for (int g = 0; g < G; ++g) {
        const V* x = xt + g * N;
        st.mn[g] = st.mx[g] = x[0];
        st.sum_w[g] = wt[g * N];
        st.sum_x[g] = vmul(st.sum_w[g], x[0]);
    }
    for (int i = 1; i < N; ++i) {
        for (int g = 0; g < G; ++g) {
            const V x = xt[g * N + i], w = wt[g * N + i];
            st.mn[g] = _mm512_min_ps(x, st.mn[g]);  // if (x < min) min = x
            st.mx[g] = _mm512_max_ps(x, st.mx[g]);  // if (x > max) max = x
            st.sum_w[g] = vadd(st.sum_w[g], w);
            st.sum_x[g] = vadd(st.sum_x[g], vmul(w, x));
        }
    }
    V iscale[G];
    for (int g = 0; g < G; ++g) {
        st.mn[g] = zero_if(gt(st.mn[g], vzero()), st.mn[g]);  // if (min > 0) min = 0
        st.degen[g] = _mm512_cmp_ps_mask(st.mx[g], st.mn[g], kX3 ? _CMP_LE_OQ : _CMP_EQ_OQ);
        st.mn0[g] = st.mn[g];
        iscale[g] = vdiv(vset(static_cast<float>(nmax)), vsub(st.mx[g], st.mn[g]));
        st.scale[g] = vdiv(vset(1.0f), iscale[g]);
        st.best[g] = vzero();
        st.l_is[g] = iscale[g];
        st.l_mn[g] = st.mn[g];
    }
    for (int i = 0; i < N; ++i) {
        for (int g = 0; g < G; ++g) {
            const V x = xt[g * N + i];
            const V fl = _mm512_cvtepi32_ps(clampi(nearest_int_v(vmul(iscale[g], vsub(x, st.mn[g]))), lo, hi));
            V diff = vsub(vadd(vmul(st.scale[g], fl), st.mn[g]), x);
            diff = kMad ? vabs(diff) : vmul(diff, diff);
            st.best[g] = vadd(st.best[g], vmul(wt[g * N + i], diff));
        }
    }
}

// One step (iscale numerator num) of make_qkx{2,3}_quants' search, keeping the better fit in st.
template <int G, int N, bool kMad>
OIW_INLINE void qkx_step(const V* xt, const V* wt, int nmax, float num, QkxState<G>& st) {
    const VI lo = _mm512_setzero_si512(), hi = iset(nmax);
    V fl[G * N];
    V isc[G], sum_l[G], sum_l2[G], sum_xl[G];
    for (int g = 0; g < G; ++g) {
        isc[g] = vdiv(vset(num), vsub(st.mx[g], st.mn[g]));
        sum_l[g] = sum_l2[g] = sum_xl[g] = vzero();
    }
    for (int i = 0; i < N; ++i) {
        for (int g = 0; g < G; ++g) {
            const int k = g * N + i;
            fl[k] = _mm512_cvtepi32_ps(clampi(nearest_int_v(vmul(isc[g], vsub(xt[k], st.mn[g]))), lo, hi));
            const V wl = vmul(wt[k], fl[k]);
            sum_l[g] = vadd(sum_l[g], wl);
            sum_l2[g] = vadd(sum_l2[g], vmul(wl, fl[k]));
            sum_xl[g] = vadd(sum_xl[g], vmul(wl, xt[k]));
        }
    }
    M dpos[G];
    V this_scale[G], this_min[G], err[G];
    for (int g = 0; g < G; ++g) {
        const V D = vsub(vmul(st.sum_w[g], sum_l2[g]), vmul(sum_l[g], sum_l[g]));
        dpos[g] = gt(D, vzero());
        this_scale[g] = vdiv(vsub(vmul(st.sum_w[g], sum_xl[g]), vmul(st.sum_x[g], sum_l[g])), D);
        this_min[g] = vdiv(vsub(vmul(sum_l2[g], st.sum_x[g]), vmul(sum_l[g], sum_xl[g])), D);
        const M mpos = gt(this_min[g], vzero());
        this_min[g] = zero_if(mpos, this_min[g]);
        this_scale[g] = sel(this_scale[g], vdiv(sum_xl[g], sum_l2[g]), mpos);
        err[g] = vzero();
    }
    for (int i = 0; i < N; ++i) {
        for (int g = 0; g < G; ++g) {
            const int k = g * N + i;
            V diff = vsub(vadd(vmul(this_scale[g], fl[k]), this_min[g]), xt[k]);
            diff = kMad ? vabs(diff) : vmul(diff, diff);
            err[g] = vadd(err[g], vmul(wt[k], diff));
        }
    }
    for (int g = 0; g < G; ++g) {
        const M upd = dpos[g] & lt(err[g], st.best[g]);
        st.l_is[g] = sel(st.l_is[g], isc[g], upd);
        st.l_mn[g] = sel(st.l_mn[g], st.mn[g], upd);
        st.best[g] = sel(st.best[g], err[g], upd);
        st.scale[g] = sel(st.scale[g], this_scale[g], upd);
        st.mn[g] = sel(st.mn[g], this_min[g], upd);
    }
}

// make_qkx2_quants / make_qkx3_quants (kX3) per lane, |err| with kMad; G groups of 16 runs
// interleaved (xt[g * N + i], out[g]) as qkx_lanes in quantize_avx2.cpp. nstep >= 1.
template <int G, int N, bool kX3, bool kMad>
void qkx_lanes(const V* xt, const V* wt, int nmax, float rmin, float rdelta, int nstep, QkxOut* out) {
    QkxState<G> st;
    qkx_start<G, N, kX3, kMad>(xt, wt, nmax, st);
    for (int is = 0; is <= nstep; ++is) {
        const float num = rmin + rdelta * static_cast<float>(is) + static_cast<float>(nmax);
        qkx_step<G, N, kMad>(xt, wt, nmax, num, st);
    }
    for (int g = 0; g < G; ++g) {
        out[g].scale = zero_if(st.degen[g], st.scale[g]);
        out[g].the_min = vneg(sel(st.mn[g], st.mn0[g], st.degen[g]));
        out[g].l_iscale = zero_if(st.degen[g], st.l_is[g]);
        out[g].l_min = zero_if(st.degen[g], st.l_mn[g]);
    }
}

// ---------------------------------------------------------------- Q2_K

// The scale search of quantize_row_q2_K_ref (qw null) or _impl for G blocks at x (16 sub-blocks
// of 16 each, one group per block).
template <int G>
void q2_K_search(const float* x, const float* qw, QkxSearch* s) {
    V xt[G * 16], wt[G * 16];
    QkxOut o[G];
    for (int g = 0; g < G; ++g) {
        const float* xg = x + QK_K * g;
        const float* rows[16];
        for (int k = 0; k < 16; ++k) rows[k] = xg + 16 * k;
        load_t(rows, 16, xt + 16 * g);
        if (!qw) {
            for (int i = 0; i < 16; ++i) wt[16 * g + i] = vabs(xt[16 * g + i]);
            continue;
        }
        for (int k = 0; k < 16; ++k) rows[k] = qw + QK_K * g + 16 * k;
        load_t(rows, 16, wt + 16 * g);
        const float sigma2 = sum_squares(xg, QK_K) / QK_K;
        sigma_weights<16>(xt + 16 * g, vset(sigma2), wt + 16 * g);
        _mm512_storeu_ps(s[g].sw, lane_sum<16>(wt + 16 * g));
    }
    if (qw)
        qkx_lanes<G, 16, true, false>(xt, wt, 3, -0.9f, 0.05f, 36, o);
    else
        qkx_lanes<G, 16, false, true>(xt, wt, 3, -0.5f, 0.1f, 15, o);
    for (int g = 0; g < G; ++g) {
        _mm512_storeu_ps(s[g].scales, o[g].scale);
        _mm512_storeu_ps(s[g].mins, o[g].the_min);
        _mm512_storeu_ps(s[g].lis, o[g].l_iscale);
        _mm512_storeu_ps(s[g].lmn, o[g].l_min);
    }
}

// G blocks of a Q2_K row: the 16-lane search, then AVX2's rest of each block.
template <int G>
void q2_K_blocks(const float* x, const float* qw, block_q2_K* y) {
    QkxSearch s[G];
    q2_K_search<G>(x, qw, s);
    for (int g = 0; g < G; ++g) avx2::q2_K_finish(x + QK_K * g, qw != nullptr, s[g], y[g]);
}

// ---------------------------------------------------------------- Q4_K / Q5_K

// Pointers to the 16 sub-blocks of the Q4_K/Q5_K blocks b and b + 1 of base (kZeros past nb).
OIW_INLINE void pair_rows(const float* base, int64_t b, int64_t nb, const float** rows) {
    for (int k = 0; k < 16; ++k) {
        const int64_t blk = b + k / 8;
        rows[k] = blk < nb ? base + QK_K * blk + 32 * (k % 8) : kZeros;
    }
}

// Loads the pair of blocks b, b + 1 (both < nb, or only b) transposed into xt and their
// weights into wt as quantize_row_q{4,5}_K_{ref,impl} computes them; weight sums into s.
OIW_INLINE void k4_load_pair(const float* x, const float* qw, int64_t b, int64_t nb, V* xt, V* wt, QkxSearch* s) {
    const float* rows[16];
    pair_rows(x, b, nb, rows);
    load_t(rows, 32, xt);
    if (!qw) {
        V sq = vzero();
        for (int i = 0; i < 32; ++i) sq = vadd(sq, vmul(xt[i], xt[i]));
        const V av_x = _mm512_sqrt_ps(vdiv(sq, vset(32.f)));
        for (int i = 0; i < 32; ++i) wt[i] = vadd(av_x, vabs(xt[i]));
        return;
    }
    pair_rows(qw, b, nb, rows);
    load_t(rows, 32, wt);
    const float s0 = 2 * sum_squares(x + QK_K * b, QK_K) / QK_K;
    const float s1 = b + 1 < nb ? 2 * sum_squares(x + QK_K * (b + 1), QK_K) / QK_K : 0.f;
    sigma_weights<32>(xt, _mm512_mask_blend_ps(0xFF00, vset(s0), vset(s1)), wt);
    store_halves(s[0].sw, s[1].sw, lane_sum<32>(wt));
}

// The Q4_K (kNmax 15) / Q5_K (kNmax 31) scale search of the 2G blocks b.. of a row of nb (G pairs;
// blocks past nb read zeros and their results are not used).
template <int kNmax, int G>
void k4_search(const float* x, const float* qw, int64_t b, int64_t nb, QkxSearch* s) {
    V xt[G * 32], wt[G * 32];
    QkxOut o[G];
    for (int g = 0; g < G; ++g) k4_load_pair(x, qw, b + 2 * g, nb, xt + 32 * g, wt + 32 * g, s + 2 * g);
    if (qw)
        qkx_lanes<G, 32, true, false>(xt, wt, kNmax, -0.9f, 0.05f, 36, o);
    else if (kNmax == 15)
        qkx_lanes<G, 32, false, false>(xt, wt, kNmax, -1.f, 0.1f, 20, o);
    else
        qkx_lanes<G, 32, false, false>(xt, wt, kNmax, -0.5f, 0.1f, 15, o);
    for (int g = 0; g < G; ++g) {
        QkxSearch& a = s[2 * g];
        QkxSearch& c = s[2 * g + 1];
        store_halves(a.scales, c.scales, o[g].scale);
        store_halves(a.mins, c.mins, o[g].the_min);
        store_halves(a.lis, c.lis, o[g].l_iscale);
        store_halves(a.lmn, c.lmn, o[g].l_min);
    }
}

void finish_k4(const float* x, bool with_qw, const QkxSearch& s, block_q4_K& y) { avx2::q4_K_finish(x, with_qw, s, y); }
void finish_k4(const float* x, bool with_qw, const QkxSearch& s, block_q5_K& y) { avx2::q5_K_finish(x, with_qw, s, y); }

// The blocks b .. min(b + 2G, nb) - 1 of a Q4_K / Q5_K row: the 16-lane search, then AVX2's rest.
template <int kNmax, int G, typename Block>
void k4_blocks(const float* x, const float* qw, int64_t b, int64_t nb, Block* y) {
    QkxSearch s[2 * G];
    k4_search<kNmax, G>(x, qw, b, nb, s);
    for (int k = 0; k < 2 * G && b + k < nb; ++k) finish_k4(x + QK_K * (b + k), qw != nullptr, s[k], y[b + k]);
}

// ---------------------------------------------------------------- Q3_K / Q6_K

// The 16 sub-blocks of 16 of the block at x transposed into xt.
OIW_INLINE void load_16x16(const float* x, V* xt) {
    const float* rows[16];
    for (int k = 0; k < 16; ++k) rows[k] = x + 16 * k;
    load_t(rows, 16, xt);
}

// The scale search of quantize_row_q3_K_impl (qw = 256 weights per block) for G blocks at x.
template <int G>
void q3_K_search(const float* x, const float* qw, QxSearch* s) {
    V xt[G * 16], wt[G * 16];
    QxOut o[G];
    for (int g = 0; g < G; ++g) {
        load_16x16(x + QK_K * g, xt + 16 * g);
        load_16x16(qw + QK_K * g, wt + 16 * g);
        const float sumx2 = sum_squares(x + QK_K * g, QK_K);
        sigma_weights<16>(xt + 16 * g, vset(2 * sumx2 / QK_K), wt + 16 * g);
        _mm512_storeu_ps(s[g].sw, lane_sum<16>(wt + 16 * g));
    }
    qx_lanes<G, 16>(xt, wt, 4, o);
    for (int g = 0; g < G; ++g) store_qx(o[g], s[g]);
}

// The scale search of quantize_row_q6_K_ref (qw null) or _impl for G blocks at x.
template <int G>
void q6_K_search(const float* x, const float* qw, QxSearch* s) {
    V xt[G * 16], wt[G * 16];
    QxOut o[G];
    for (int g = 0; g < G; ++g) {
        load_16x16(x + QK_K * g, xt + 16 * g);
        if (qw)
            load_16x16(qw + QK_K * g, wt + 16 * g);
        else
            for (int i = 16 * g; i < 16 * g + 16; ++i) wt[i] = vmul(xt[i], xt[i]);
    }
    qx_lanes<G, 16>(xt, wt, 32, o);
    for (int g = 0; g < G; ++g) store_qx(o[g], s[g]);
}

// G blocks of a Q3_K row with weights: the 16-lane search, then AVX2's rest of each block.
template <int G>
void q3_K_blocks(const float* x, const float* qw, block_q3_K* y) {
    QxSearch s[G];
    q3_K_search<G>(x, qw, s);
    for (int g = 0; g < G; ++g) avx2::q3_K_finish_weighted(x + QK_K * g, s[g], y[g]);
}

// G blocks of a Q6_K row: the 16-lane search, then AVX2's rest of each block.
template <int G>
void q6_K_blocks(const float* x, const float* qw, block_q6_K* y) {
    QxSearch s[G];
    q6_K_search<G>(x, qw, s);
    for (int g = 0; g < G; ++g) avx2::q6_K_finish(x + QK_K * g, s[g], y[g]);
}

// ---------------------------------------------------------------- rows

// A Q2_K / Q3_K / Q6_K row: kBlocks<kG> over kG blocks at a time, then kBlocks<1> (Q3_K: weights only).
template <typename Block, int kG, void (*kBlocks)(const float*, const float*, Block*),
          void (*kOne)(const float*, const float*, Block*)>
void row_blocks(const float* x, void* dst, int64_t n, const float* imatrix) {
    Block* y = static_cast<Block*>(dst);
    const int64_t nb = n / QK_K;
    int64_t i = 0;
    for (; i + kG <= nb; i += kG) kBlocks(x + QK_K * i, imatrix ? imatrix + QK_K * i : nullptr, y + i);
    for (; i < nb; ++i) kOne(x + QK_K * i, imatrix ? imatrix + QK_K * i : nullptr, y + i);
}

// Q4_K / Q5_K rows: 2G blocks per search, then pairs, the last odd block padded with zeros.
template <int kNmax, int G, typename Block>
void row_k4(const float* x, void* dst, int64_t n, const float* imatrix) {
    Block* y = static_cast<Block*>(dst);
    const int64_t nb = n / QK_K;
    int64_t i = 0;
    for (; i + 2 * G <= nb; i += 2 * G) k4_blocks<kNmax, G>(x, imatrix, i, nb, y);
    for (; i < nb; i += 2) k4_blocks<kNmax, 1>(x, imatrix, i, nb, y);
}

// A row kernel of this file, checked: refuses (returns false) rows or weights outside the range
// the kernels are exact on (avx2::in_fast_range).
using RowFn = void (*)(const float* x, void* dst, int64_t n, const float* imatrix);
template <RowFn kRow>
bool checked(const float* x, void* dst, int64_t n, const float* imatrix) {
    if (!avx2::in_fast_range(x, n) || (imatrix && !avx2::in_fast_range(imatrix, n))) return false;
    kRow(x, dst, n, imatrix);
    return true;
}

constexpr RowFn kRowQ2 = row_blocks<block_q2_K, 2, q2_K_blocks<2>, q2_K_blocks<1>>;
constexpr RowFn kRowQ3 = row_blocks<block_q3_K, 2, q3_K_blocks<2>, q3_K_blocks<1>>;
constexpr RowFn kRowQ6 = row_blocks<block_q6_K, 2, q6_K_blocks<2>, q6_K_blocks<1>>;

using T = GgmlType;
// A null entry keeps AVX2's kernel (Q3_K without weights: its greedy search, not make_qx_quants).
constexpr IsaKernel kQuantizers[] = {
    {T::Q2_K, {checked<kRowQ2>, checked<kRowQ2>}},
    {T::Q3_K, {nullptr, checked<kRowQ3>}},
    {T::Q4_K, {checked<row_k4<15, 2, block_q4_K>>, checked<row_k4<15, 2, block_q4_K>>}},
    {T::Q5_K, {checked<row_k4<31, 2, block_q5_K>>, checked<row_k4<31, 2, block_q5_K>>}},
    {T::Q6_K, {checked<kRowQ6>, checked<kRowQ6>}},
};

}  // namespace

std::span<const IsaKernel> k_quantizers() { return kQuantizers; }

}  // namespace oiw::avx512

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
