// AVX2 + F16C quantizers, byte-identical to the scalar reference. Compiled with -mavx2 -mf16c
// (CMakeLists.txt) and reached only through dispatch.cpp after the CPU was checked, so nothing
// here may run before that check.
//
// Rules every kernel here follows (each one is needed for byte identity):
//  - A SIMD lane executes exactly the reference's sequence of IEEE float operations for one
//    independent unit (a K-quant sub-block, a 32-element block): add/sub/mul/div/sqrt are
//    correctly rounded, so a lane rounds exactly as the scalar code. No FMA anywhere (built with
//    -ffp-contract=off and never with -mfma).
//  - Sums the reference accumulates sequentially stay sequential (per lane, same order). Only
//    max-of-|x| reductions, which are order-free for finite values, are reassociated.
//  - Comparisons use the predicate matching the C operator on NaN (a > b -> _CMP_GT_OQ,
//    a != 0 -> _CMP_NEQ_UQ); min/max use _mm256_min_ps(x, m) == (x < m ? x : m).
//  - nearest_int is the reference's magic-number trick, bit for bit (also for huge inputs),
//    except in make_qx_quants' search loop where |value| <= nmax + 1 is proven and the
//    hardware round-to-nearest-even conversion gives the same integer.
//  - Rows containing a non-finite value or one beyond 2^48 in magnitude (or whose importance
//    weights do) are refused (the row function returns false) and go to the reference.
#include "converters/quant/x86/quantize_avx2.h"

#include <immintrin.h>

#include <cfloat>
#include <cmath>
#include <cstring>

#include "converters/quant/iq_tables.h"
#include "converters/quant/quantize_impl.h"
#include "libformat/blocks.h"
#include "libformat/fp16.h"

namespace oiw::avx2 {
namespace {

using quant::get_q3_scale;
using quant::kGroupMaxEps;
using quant::nearest_int;
using quant::set_q3_scale;
using quant::set_scale_min_k4;
using quant::sum_squares;

alignas(32) const float kZeros[256] = {};

using V = __m256;
using VI = __m256i;
#define OIW_INLINE inline __attribute__((always_inline))

OIW_INLINE V vset(float f) { return _mm256_set1_ps(f); }
OIW_INLINE VI iset(int i) { return _mm256_set1_epi32(i); }
OIW_INLINE V vzero() { return _mm256_setzero_ps(); }
OIW_INLINE V vadd(V a, V b) { return _mm256_add_ps(a, b); }
OIW_INLINE V vsub(V a, V b) { return _mm256_sub_ps(a, b); }
OIW_INLINE V vmul(V a, V b) { return _mm256_mul_ps(a, b); }
OIW_INLINE V vdiv(V a, V b) { return _mm256_div_ps(a, b); }
OIW_INLINE V vabs(V a) { return _mm256_castsi256_ps(_mm256_and_si256(_mm256_castps_si256(a), iset(0x7fffffff))); }
OIW_INLINE V vneg(V a) { return _mm256_xor_ps(a, vset(-0.0f)); }
OIW_INLINE V gt(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_GT_OQ); }
OIW_INLINE V lt(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
// m ? b : a
OIW_INLINE V sel(V a, V b, V m) { return _mm256_blendv_ps(a, b, m); }

// quant::nearest_int per lane, bit for bit (magic number, then the low mantissa bits).
OIW_INLINE VI nearest_int_v(V f) {
    const VI i = _mm256_castps_si256(_mm256_add_ps(f, vset(12582912.f)));
    return _mm256_sub_epi32(_mm256_and_si256(i, iset(0x007fffff)), iset(0x00400000));
}
// MAX(lo, MIN(hi, v)) for lo <= hi.
OIW_INLINE VI clampi(VI v, VI lo, VI hi) { return _mm256_min_epi32(_mm256_max_epi32(v, lo), hi); }

// Transposes 8 rows of n floats (n a multiple of 8) into out[i] = {row0[i], ..., row7[i]}.
OIW_INLINE void load_t(const float* const* rows, int n, V* out) {
    for (int c = 0; c < n; c += 8) {
        const V r0 = _mm256_loadu_ps(rows[0] + c), r1 = _mm256_loadu_ps(rows[1] + c);
        const V r2 = _mm256_loadu_ps(rows[2] + c), r3 = _mm256_loadu_ps(rows[3] + c);
        const V r4 = _mm256_loadu_ps(rows[4] + c), r5 = _mm256_loadu_ps(rows[5] + c);
        const V r6 = _mm256_loadu_ps(rows[6] + c), r7 = _mm256_loadu_ps(rows[7] + c);
        const V t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
        const V t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
        const V t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
        const V t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
        const V u0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
        const V u1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
        const V u2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
        const V u3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
        const V u4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0));
        const V u5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2));
        const V u6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0));
        const V u7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
        out[c + 0] = _mm256_permute2f128_ps(u0, u4, 0x20);
        out[c + 1] = _mm256_permute2f128_ps(u1, u5, 0x20);
        out[c + 2] = _mm256_permute2f128_ps(u2, u6, 0x20);
        out[c + 3] = _mm256_permute2f128_ps(u3, u7, 0x20);
        out[c + 4] = _mm256_permute2f128_ps(u0, u4, 0x31);
        out[c + 5] = _mm256_permute2f128_ps(u1, u5, 0x31);
        out[c + 6] = _mm256_permute2f128_ps(u2, u6, 0x31);
        out[c + 7] = _mm256_permute2f128_ps(u3, u7, 0x31);
    }
}

// Transposes 8 consecutive runs of n floats starting at x.
OIW_INLINE void load_t_contig(const float* x, int n, V* out) {
    const float* rows[8];
    for (int k = 0; k < 8; ++k) rows[k] = x + k * n;
    load_t(rows, n, out);
}

// 16 int32 values in [0, 255] (8 per vector) -> 16 bytes, in order.
OIW_INLINE __m128i pack_u8(VI a, VI b) {
    const __m128i p = _mm_packs_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
    const __m128i q = _mm_packs_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1));
    return _mm_packus_epi16(p, q);
}
OIW_INLINE void store_u8(uint8_t* dst, VI a, VI b) { _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), pack_u8(a, b)); }

// Largest of 8 floats (finite, so the order does not matter).
OIW_INLINE float hmax(V v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

template <typename T>
OIW_INLINE void store8(T* dst, V v) {
    static_assert(sizeof(T) == 4);
    _mm256_storeu_ps(reinterpret_cast<float*>(dst), v);
}

// Largest |x| the fast kernels accept (2^48): squares, sums of squares and weighted sums stay
// finite, so no intermediate inf/NaN (whose payload could depend on operand order) can arise.
constexpr uint32_t kMaxAbsBits = 0x57800000u;

}  // namespace

bool in_fast_range(const float* x, int64_t n) {
    VI acc = _mm256_setzero_si256();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const VI b = _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const VI*>(x + i)), iset(0x7fffffff));
        acc = _mm256_max_epi32(acc, b);
    }
    alignas(32) int32_t m[8];
    _mm256_store_si256(reinterpret_cast<VI*>(m), acc);
    int32_t mx = 0;
    for (int k = 0; k < 8; ++k) mx = m[k] > mx ? m[k] : mx;
    for (; i < n; ++i) {
        uint32_t b;
        std::memcpy(&b, x + i, 4);
        const int32_t v = static_cast<int32_t>(b & 0x7fffffffu);
        mx = v > mx ? v : mx;
    }
    return static_cast<uint32_t>(mx) <= kMaxAbsBits;
}

namespace {

// ---------------------------------------------------------------- conversions

// F16 rows (finite input: hardware round-to-nearest-even equals ggml's fp32_to_fp16).
void row_f16(const float* x, void* dst, int64_t n, const float*) {
    uint16_t* y = static_cast<uint16_t*>(dst);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
    }
    for (; i < n; ++i) y[i] = fp32_to_fp16(x[i]);
}

void row_bf16(const float* x, void* dst, int64_t n, const float*) {
    uint16_t* y = static_cast<uint16_t*>(dst);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        VI r[2];
        for (int h = 0; h < 2; ++h) {
            const VI u = _mm256_loadu_si256(reinterpret_cast<const VI*>(x + i + 8 * h));
            const VI bias = _mm256_add_epi32(iset(0x7fff), _mm256_and_si256(_mm256_srli_epi32(u, 16), iset(1)));
            r[h] = _mm256_srli_epi32(_mm256_add_epi32(u, bias), 16);
        }
        const VI p = _mm256_permute4x64_epi64(_mm256_packus_epi32(r[0], r[1]), 0xD8);
        _mm256_storeu_si256(reinterpret_cast<VI*>(y + i), p);
    }
    for (; i < n; ++i) y[i] = fp32_to_bf16(x[i]);
}

// ---------------------------------------------------------------- Q8_0 / Q4_0 (no imatrix)

// roundf per lane (half away from zero), exact: t = trunc(v); step away when |v - t| >= 0.5.
OIW_INLINE V round_away(V v) {
    const V t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const V r = vabs(vsub(v, t));
    const V one = _mm256_or_ps(_mm256_and_ps(v, vset(-0.0f)), vset(1.0f));
    return vadd(t, _mm256_and_ps(one, _mm256_cmp_ps(r, vset(0.5f), _CMP_GE_OQ)));
}

// Low byte of each int32 (a C narrowing to int8/uint8), 32 lanes -> 32 bytes.
OIW_INLINE void store_low_bytes(uint8_t* dst, VI a, VI b, VI c, VI d) {
    const VI m = iset(0xFF);
    a = _mm256_and_si256(a, m);
    b = _mm256_and_si256(b, m);
    c = _mm256_and_si256(c, m);
    d = _mm256_and_si256(d, m);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), pack_u8(a, b));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 16), pack_u8(c, d));
}

void row_q8_0(const float* x, void* dst, int64_t n, const float*) {
    block_q8_0* y = static_cast<block_q8_0*>(dst);
    for (int64_t ib = 0; ib < n / 32; ++ib) {
        const float* xb = x + 32 * ib;
        V v[4];
        for (int k = 0; k < 4; ++k) v[k] = _mm256_loadu_ps(xb + 8 * k);
        const float amax =
            hmax(_mm256_max_ps(_mm256_max_ps(vabs(v[0]), vabs(v[1])), _mm256_max_ps(vabs(v[2]), vabs(v[3]))));
        const float d = amax / 127;
        const float id = d ? 1.0f / d : 0.0f;
        y[ib].d = fp32_to_fp16(d);
        const V vid = vset(id);
        VI q[4];
        for (int k = 0; k < 4; ++k) q[k] = _mm256_cvttps_epi32(round_away(vmul(v[k], vid)));
        store_low_bytes(reinterpret_cast<uint8_t*>(y[ib].qs), q[0], q[1], q[2], q[3]);
    }
}

void row_q4_0(const float* x, void* dst, int64_t n, const float*) {
    block_q4_0* y = static_cast<block_q4_0*>(dst);
    for (int64_t ib = 0; ib < n / 32; ++ib) {
        const float* xb = x + 32 * ib;
        V v[4], a[4];
        for (int k = 0; k < 4; ++k) {
            v[k] = _mm256_loadu_ps(xb + 8 * k);
            a[k] = vabs(v[k]);
        }
        const float amax = hmax(_mm256_max_ps(_mm256_max_ps(a[0], a[1]), _mm256_max_ps(a[2], a[3])));
        // The reference keeps the first element of largest magnitude (and +0 when all are zero).
        float max = 0.0f;
        if (amax > 0) {
            const V va = vset(amax);
            uint32_t mask = 0;
            for (int k = 0; k < 4; ++k) {
                mask |= static_cast<uint32_t>(_mm256_movemask_ps(_mm256_cmp_ps(a[k], va, _CMP_EQ_OQ))) << (8 * k);
            }
            max = xb[__builtin_ctz(mask)];
        }
        const float d = max / -8;
        const float id = d ? 1.0f / d : 0.0f;
        y[ib].d = fp32_to_fp16(d);
        const V vid = vset(id);
        VI q[4];
        for (int k = 0; k < 4; ++k) {
            // (int8_t)(x*id + 8.5f): truncate, keep the low byte signed, then MIN(15, .).
            VI t = _mm256_cvttps_epi32(vadd(vmul(v[k], vid), vset(8.5f)));
            t = _mm256_srai_epi32(_mm256_slli_epi32(t, 24), 24);
            q[k] = _mm256_and_si256(_mm256_min_epi32(t, iset(15)), iset(0xFF));
        }
        const __m128i lo = pack_u8(q[0], q[1]);
        const __m128i hi = pack_u8(q[2], q[3]);
        const __m128i r =
            _mm_or_si128(lo, _mm_and_si128(_mm_slli_epi16(hi, 4), _mm_set1_epi8(static_cast<char>(0xF0))));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(y[ib].qs), r);
    }
}

// ---------------------------------------------------------------- make_qx_quants, 8 lanes

// Result of make_qx_quants for 8 independent runs: the returned scale, the iscale whose levels
// the reference leaves in L (L = nmax + clamp(nearest_int(iscale * x))), and the all-zero mask
// (there L = 0 and the scale is 0).
struct QxOut {
    V scale, iscale, zero;
};

template <int N>
OIW_INLINE void qx_sums(const V* xt, const V* wt, const V* wx, V isc, VI lo, VI hi, V& slx, V& sl2) {
    V a = vzero(), b = vzero();
    for (int i = 0; i < N; ++i) {
        // |isc * x| <= nmax + 1 here, so the hardware rounding equals nearest_int.
        const V fl = _mm256_cvtepi32_ps(clampi(_mm256_cvtps_epi32(vmul(isc, xt[i])), lo, hi));
        a = vadd(a, vmul(wx[i], fl));
        b = vadd(b, vmul(vmul(wt[i], fl), fl));
    }
    slx = a;
    sl2 = b;
}

// make_qx_quants(N, nmax, x, L, rmse_type = 1, w) per lane; xt/wt transposed (xt[i] = element i
// of the 8 runs).
template <int N>
QxOut qx_lanes(const V* xt, const V* wt, int nmax) {
    V amax = vzero(), mx = vzero();
    for (int i = 0; i < N; ++i) {
        const V ax = vabs(xt[i]);
        const V m = gt(ax, amax);
        amax = sel(amax, ax, m);
        mx = sel(mx, xt[i], m);
    }
    QxOut out;
    out.zero = lt(amax, vset(kGroupMaxEps));
    // In all-zero lanes the values below are garbage (mx may be 0); they are masked at the end.
    V wx[N];
    for (int i = 0; i < N; ++i) wx[i] = vmul(wt[i], xt[i]);
    const VI lo = iset(-nmax), hi = iset(nmax - 1);
    V iscale = vdiv(vset(static_cast<float>(-nmax)), mx);
    V sumlx, suml2;
    qx_sums<N>(xt, wt, wx, iscale, lo, hi, sumlx, suml2);
    V scale = _mm256_and_ps(_mm256_cmp_ps(suml2, vzero(), _CMP_NEQ_UQ), vdiv(sumlx, suml2));
    V best = vmul(scale, sumlx);
    V best_is = iscale;
    for (int is = -9; is <= 9; ++is) {
        if (is == 0) continue;
        const float c = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(is));
        iscale = vdiv(vset(c), mx);
        qx_sums<N>(xt, wt, wx, iscale, lo, hi, sumlx, suml2);
        const V upd = _mm256_and_ps(gt(suml2, vzero()), gt(vmul(sumlx, sumlx), vmul(best, suml2)));
        const V ns = vdiv(sumlx, suml2);
        scale = sel(scale, ns, upd);
        best = sel(best, vmul(ns, sumlx), upd);
        best_is = sel(best_is, iscale, upd);
    }
    out.scale = _mm256_andnot_ps(out.zero, scale);
    out.iscale = best_is;
    return out;
}

// Levels nmax + clamp(nearest_int(iscale * x), -nmax, nmax - 1) of 8 consecutive values.
OIW_INLINE VI qx_levels(const float* x, float iscale, int nmax) {
    const VI l = clampi(nearest_int_v(vmul(vset(iscale), _mm256_loadu_ps(x))), iset(-nmax), iset(nmax - 1));
    return _mm256_add_epi32(l, iset(nmax));
}

// Final levels of a 16-element Q3_K / Q6_K sub-block into L[0..15]: with the stored scale
// d != 0, nmax + clamp(nearest_int(x / d), -nmax, nmax - 1); with d == 0 the levels that
// sub-block's make_qx_quants left (qx_lanes' iscale, or all 0 in a zero lane).
OIW_INLINE void qx_final_levels(const float* xj, float d, float iscl, const float& zero, int nmax, uint8_t* L) {
    VI a, b;
    if (!d) {
        uint32_t zbits;
        std::memcpy(&zbits, &zero, 4);
        if (zbits) {
            a = b = _mm256_setzero_si256();
        } else {
            a = qx_levels(xj, iscl, nmax);
            b = qx_levels(xj + 8, iscl, nmax);
        }
    } else {
        const V vd = vset(d);
        const VI lo = iset(-nmax), hi = iset(nmax - 1), off = iset(nmax);
        a = _mm256_add_epi32(clampi(nearest_int_v(vdiv(_mm256_loadu_ps(xj), vd)), lo, hi), off);
        b = _mm256_add_epi32(clampi(nearest_int_v(vdiv(_mm256_loadu_ps(xj + 8), vd)), lo, hi), off);
    }
    store_u8(L, a, b);
}

// ---------------------------------------------------------------- make_qkx2/3_quants, 8 lanes

// Result of make_qkx{2,3}_quants for 8 runs: the returned scale, *the_min, and the (iscale, min)
// pair whose levels the reference leaves in L: clamp(nearest_int(iscale * (x - min)), 0, nmax)
// (both 0 in degenerate lanes, which yields L = 0 for finite x).
struct QkxOut {
    V scale, the_min, l_iscale, l_min;
};

// kX3: make_qkx3_quants (degenerate when max <= min) rather than make_qkx2_quants (max == min);
// kMad: |err| instead of err^2. nstep >= 1. G independent groups of 8 runs are interleaved
// (xt[g * N + i], out[g]) so one group's serial sums overlap the other's.
template <int G, int N, bool kX3, bool kMad>
void qkx_lanes(const V* xt, const V* wt, int nmax, float rmin, float rdelta, int nstep, QkxOut* out) {
    V mn[G], mx[G], sum_w[G], sum_x[G], degen[G], mn0[G], scale[G], best[G], l_is[G], l_mn[G];
    const VI lo = _mm256_setzero_si256(), hi = iset(nmax);
    for (int g = 0; g < G; ++g) {
        const V* x = xt + g * N;
        mn[g] = mx[g] = x[0];
        sum_w[g] = wt[g * N];
        sum_x[g] = vmul(sum_w[g], x[0]);
    }
    for (int i = 1; i < N; ++i) {
        for (int g = 0; g < G; ++g) {
            const V x = xt[g * N + i], w = wt[g * N + i];
            mn[g] = _mm256_min_ps(x, mn[g]);  // if (x < min) min = x
            mx[g] = _mm256_max_ps(x, mx[g]);  // if (x > max) max = x
            sum_w[g] = vadd(sum_w[g], w);
            sum_x[g] = vadd(sum_x[g], vmul(w, x));
        }
    }
    V iscale[G];
    for (int g = 0; g < G; ++g) {
        mn[g] = _mm256_andnot_ps(gt(mn[g], vzero()), mn[g]);  // if (min > 0) min = 0
        degen[g] = _mm256_cmp_ps(mx[g], mn[g], kX3 ? _CMP_LE_OQ : _CMP_EQ_OQ);
        mn0[g] = mn[g];
        iscale[g] = vdiv(vset(static_cast<float>(nmax)), vsub(mx[g], mn[g]));
        scale[g] = vdiv(vset(1.0f), iscale[g]);
        best[g] = vzero();
        l_is[g] = iscale[g];
        l_mn[g] = mn[g];
    }
    for (int i = 0; i < N; ++i) {
        for (int g = 0; g < G; ++g) {
            const V x = xt[g * N + i];
            const V fl = _mm256_cvtepi32_ps(clampi(nearest_int_v(vmul(iscale[g], vsub(x, mn[g]))), lo, hi));
            V diff = vsub(vadd(vmul(scale[g], fl), mn[g]), x);
            diff = kMad ? vabs(diff) : vmul(diff, diff);
            best[g] = vadd(best[g], vmul(wt[g * N + i], diff));
        }
    }
    V fl[G * N];
    for (int is = 0; is <= nstep; ++is) {
        const float num = rmin + rdelta * static_cast<float>(is) + static_cast<float>(nmax);
        V isc[G], sum_l[G], sum_l2[G], sum_xl[G];
        for (int g = 0; g < G; ++g) {
            isc[g] = vdiv(vset(num), vsub(mx[g], mn[g]));
            sum_l[g] = sum_l2[g] = sum_xl[g] = vzero();
        }
        for (int i = 0; i < N; ++i) {
            for (int g = 0; g < G; ++g) {
                const int k = g * N + i;
                fl[k] = _mm256_cvtepi32_ps(clampi(nearest_int_v(vmul(isc[g], vsub(xt[k], mn[g]))), lo, hi));
                const V wl = vmul(wt[k], fl[k]);
                sum_l[g] = vadd(sum_l[g], wl);
                sum_l2[g] = vadd(sum_l2[g], vmul(wl, fl[k]));
                sum_xl[g] = vadd(sum_xl[g], vmul(wl, xt[k]));
            }
        }
        V dpos[G], this_scale[G], this_min[G], err[G];
        for (int g = 0; g < G; ++g) {
            const V D = vsub(vmul(sum_w[g], sum_l2[g]), vmul(sum_l[g], sum_l[g]));
            dpos[g] = gt(D, vzero());
            this_scale[g] = vdiv(vsub(vmul(sum_w[g], sum_xl[g]), vmul(sum_x[g], sum_l[g])), D);
            this_min[g] = vdiv(vsub(vmul(sum_l2[g], sum_x[g]), vmul(sum_l[g], sum_xl[g])), D);
            const V mpos = gt(this_min[g], vzero());
            this_min[g] = _mm256_andnot_ps(mpos, this_min[g]);
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
            const V upd = _mm256_and_ps(dpos[g], lt(err[g], best[g]));
            l_is[g] = sel(l_is[g], isc[g], upd);
            l_mn[g] = sel(l_mn[g], mn[g], upd);
            best[g] = sel(best[g], err[g], upd);
            scale[g] = sel(scale[g], this_scale[g], upd);
            mn[g] = sel(mn[g], this_min[g], upd);
        }
    }
    for (int g = 0; g < G; ++g) {
        out[g].scale = _mm256_andnot_ps(degen[g], scale[g]);
        out[g].the_min = vneg(sel(mn[g], mn0[g], degen[g]));
        out[g].l_iscale = _mm256_andnot_ps(degen[g], l_is[g]);
        out[g].l_min = _mm256_andnot_ps(degen[g], l_mn[g]);
    }
}

// clamp(nearest_int(iscale * (x - min)), 0, nmax) for 8 consecutive values.
OIW_INLINE VI qkx_levels(const float* x, float iscale, float min, int nmax) {
    const V v = vmul(vset(iscale), vsub(_mm256_loadu_ps(x), vset(min)));
    return clampi(nearest_int_v(v), _mm256_setzero_si256(), iset(nmax));
}

// clamp(nearest_int((x + dm) / d), 0, nmax) for 8 consecutive values.
OIW_INLINE VI affine_levels(const float* x, float dm, float d, int nmax) {
    const V v = vdiv(vadd(_mm256_loadu_ps(x), vset(dm)), vset(d));
    return clampi(nearest_int_v(v), _mm256_setzero_si256(), iset(nmax));
}

// 2-bit packing of 256 levels: byte l of each 32-byte group = elements l, l+32, l+64, l+96.
OIW_INLINE void pack_2bit(const uint8_t* L, uint8_t* qs) {
    for (int j = 0; j < QK_K; j += 128) {
        const VI a = _mm256_loadu_si256(reinterpret_cast<const VI*>(L + j));
        const VI b = _mm256_loadu_si256(reinterpret_cast<const VI*>(L + j + 32));
        const VI c = _mm256_loadu_si256(reinterpret_cast<const VI*>(L + j + 64));
        const VI d = _mm256_loadu_si256(reinterpret_cast<const VI*>(L + j + 96));
        // Levels are <= 3, so 16-bit shifts never carry across bytes.
        const VI r = _mm256_or_si256(_mm256_or_si256(a, _mm256_slli_epi16(b, 2)),
                                     _mm256_or_si256(_mm256_slli_epi16(c, 4), _mm256_slli_epi16(d, 6)));
        _mm256_storeu_si256(reinterpret_cast<VI*>(qs + j / 4), r);
    }
}

// ---------------------------------------------------------------- Q2_K

// The scale search of quantize_row_q2_K_ref (qw null) or _impl (qw = 256 weights) for one block.
void q2_K_search(const float* x, const float* qw, QkxSearch& s) {
    float sigma2 = 0;
    if (qw) sigma2 = sum_squares(x, QK_K) / QK_K;
    V xt[32], wt[32];
    load_t_contig(x, 16, xt);  // xt[16 * h + i]: element i of sub-blocks 8h..8h+7
    load_t_contig(x + 128, 16, xt + 16);
    QkxOut o[2];
    if (qw) {
        load_t_contig(qw, 16, wt);
        load_t_contig(qw + 128, 16, wt + 16);
        const V s2 = vset(sigma2);
        for (int h = 0; h < 2; ++h) {
            V sum = vzero();
            for (int i = 16 * h; i < 16 * h + 16; ++i) {
                wt[i] = vmul(wt[i], _mm256_sqrt_ps(vadd(s2, vmul(xt[i], xt[i]))));
                sum = vadd(sum, wt[i]);
            }
            store8(s.sw + 8 * h, sum);
        }
        qkx_lanes<2, 16, true, false>(xt, wt, 3, -0.9f, 0.05f, 36, o);
    } else {
        for (int i = 0; i < 32; ++i) wt[i] = vabs(xt[i]);
        qkx_lanes<2, 16, false, true>(xt, wt, 3, -0.5f, 0.1f, 15, o);
    }
    for (int h = 0; h < 2; ++h) {
        store8(s.scales + 8 * h, o[h].scale);
        store8(s.mins + 8 * h, o[h].the_min);
        store8(s.lis + 8 * h, o[h].l_iscale);
        store8(s.lmn + 8 * h, o[h].l_min);
    }
}

// The rest of a Q2_K block after its search (QkxSearch): the 4-bit scales and mins, d, dmin, levels.
void q2_K_rest(const float* x, bool with_qw, const QkxSearch& s, block_q2_K& y) {
    const float* scales = s.scales;
    const float* mins = s.mins;
    const float* lis = s.lis;
    const float* lmn = s.lmn;
    const float q4scale = 15.f;
    float dm_f, mm_f;
    if (with_qw) {
        uint8_t Ls[16], Lm[16];
        const float dm = quant::make_qp_quants(QK_K / 16, 15, scales, Ls, s.sw);
        const float mm = quant::make_qp_quants(QK_K / 16, 15, mins, Lm, s.sw);
        y.d = fp32_to_fp16(dm);
        y.dmin = fp32_to_fp16(mm);
        for (int j = 0; j < 16; ++j) y.scales[j] = static_cast<uint8_t>(Ls[j] | (Lm[j] << 4));
    } else {
        float max_scale = 0, max_min = 0;
        for (int j = 0; j < 16; ++j) {
            if (scales[j] > max_scale) max_scale = scales[j];
            if (mins[j] > max_min) max_min = mins[j];
        }
        if (max_scale > 0) {
            const float iscale = q4scale / max_scale;
            for (int j = 0; j < 16; ++j) y.scales[j] = static_cast<uint8_t>(nearest_int(iscale * scales[j]));
            y.d = fp32_to_fp16(max_scale / q4scale);
        } else {
            for (int j = 0; j < 16; ++j) y.scales[j] = 0;
            y.d = fp32_to_fp16(0.f);
        }
        if (max_min > 0) {
            const float iscale = q4scale / max_min;
            for (int j = 0; j < 16; ++j) {
                const int l = nearest_int(iscale * mins[j]);
                y.scales[j] |= static_cast<uint8_t>(l << 4);
            }
            y.dmin = fp32_to_fp16(max_min / q4scale);
        } else {
            y.dmin = fp32_to_fp16(0.f);
        }
    }
    dm_f = fp16_to_fp32(y.d);
    mm_f = fp16_to_fp32(y.dmin);

    alignas(32) uint8_t L[QK_K];
    for (int j = 0; j < 16; ++j) {
        const float* xj = x + 16 * j;
        const float d = dm_f * (y.scales[j] & 0xF);
        VI a, b;
        if (!d) {
            a = qkx_levels(xj, lis[j], lmn[j], 3);
            b = qkx_levels(xj + 8, lis[j], lmn[j], 3);
        } else {
            const float m = mm_f * (y.scales[j] >> 4);
            a = affine_levels(xj, m, d, 3);
            b = affine_levels(xj + 8, m, d, 3);
        }
        store_u8(L + 16 * j, a, b);
    }
    pack_2bit(L, y.qs);
}

void q2_K_block(const float* x, block_q2_K& y, const float* qw) {
    QkxSearch s;
    q2_K_search(x, qw, s);
    q2_K_rest(x, qw != nullptr, s, y);
}

// ---------------------------------------------------------------- Q3_K

// make_q3_quants(16, 4, x, L, do_rmse = true) for 8 sub-blocks (xt transposed). The greedy
// refinement runs per lane in the reference's element order; a lane stops after its first pass
// without a change (the reference's break), the loop after every lane has. Lt[i] gets the final
// levels (level + 4, as floats; 0 in all-zero lanes). Returns the scales.
V q3_lanes(const V* xt, V* Lt) {
    V amax = vzero(), mx = vzero();
    for (int i = 0; i < 16; ++i) {
        const V ax = vabs(xt[i]);
        const V m = gt(ax, amax);
        amax = sel(amax, ax, m);
        mx = sel(mx, xt[i], m);
    }
    const V zero = lt(amax, vset(kGroupMaxEps));
    const V iscale = vdiv(vset(-4.f), mx);
    const VI lo = iset(-4), hi = iset(3);
    V w[16], wx[16];
    V sumlx = vzero(), suml2 = vzero();
    for (int i = 0; i < 16; ++i) {
        Lt[i] = _mm256_cvtepi32_ps(clampi(nearest_int_v(vmul(iscale, xt[i])), lo, hi));
        w[i] = vmul(xt[i], xt[i]);
        wx[i] = vmul(w[i], xt[i]);
        sumlx = vadd(sumlx, vmul(wx[i], Lt[i]));
        suml2 = vadd(suml2, vmul(vmul(w[i], Lt[i]), Lt[i]));
    }
    V active = _mm256_castsi256_ps(_mm256_set1_epi32(-1));
    for (int itry = 0; itry < 5; ++itry) {
        V changed = vzero();
        for (int i = 0; i < 16; ++i) {
            V slx = vsub(sumlx, vmul(wx[i], Lt[i]));
            const V m1 = _mm256_and_ps(active, gt(slx, vzero()));
            V sl2 = vsub(suml2, vmul(vmul(w[i], Lt[i]), Lt[i]));
            const V nl = _mm256_cvtepi32_ps(clampi(nearest_int_v(vdiv(vmul(xt[i], sl2), slx)), lo, hi));
            const V m2 = _mm256_and_ps(m1, _mm256_cmp_ps(nl, Lt[i], _CMP_NEQ_OQ));
            slx = vadd(slx, vmul(wx[i], nl));
            sl2 = vadd(sl2, vmul(vmul(w[i], nl), nl));
            const V better =
                _mm256_and_ps(gt(sl2, vzero()), gt(vmul(vmul(slx, slx), suml2), vmul(vmul(sumlx, sumlx), sl2)));
            const V upd = _mm256_and_ps(m2, better);
            Lt[i] = sel(Lt[i], nl, upd);
            sumlx = sel(sumlx, slx, upd);
            suml2 = sel(suml2, sl2, upd);
            changed = _mm256_or_ps(changed, upd);
        }
        active = _mm256_and_ps(active, changed);
        if (_mm256_movemask_ps(active) == 0) break;
    }
    for (int i = 0; i < 16; ++i) Lt[i] = _mm256_andnot_ps(zero, vadd(Lt[i], vset(4.f)));
    return _mm256_andnot_ps(zero, _mm256_and_ps(gt(suml2, vzero()), vdiv(sumlx, suml2)));
}

// quantize_row_q3_K_ref (qw null) or quantize_row_q3_K_impl (qw = 256 weights) for one block.
// The scale search of quantize_row_q3_K_ref (qw null: into s.scales and the levels Ls_t,
// [half][element][lane]) or quantize_row_q3_K_impl (qw = 256 weights: into s) for one block.
void q3_K_search(const float* x, const float* qw, QxSearch& s, float (*Ls_t)[16][8]) {
    V xt[32];
    load_t_contig(x, 16, xt);
    load_t_contig(x + 128, 16, xt + 16);
    if (!qw) {
        for (int h = 0; h < 2; ++h) {
            V Lt[16];
            store8(s.scales + 8 * h, q3_lanes(xt + 16 * h, Lt));
            for (int i = 0; i < 16; ++i) store8(Ls_t[h][i], Lt[i]);
        }
        return;
    }
    const float sumx2 = sum_squares(x, QK_K);
    const V s2 = vset(2 * sumx2 / QK_K);
    V wt[32];
    load_t_contig(qw, 16, wt);
    load_t_contig(qw + 128, 16, wt + 16);
    for (int h = 0; h < 2; ++h) {
        V sum = vzero();
        for (int i = 16 * h; i < 16 * h + 16; ++i) {
            wt[i] = vmul(wt[i], _mm256_sqrt_ps(vadd(s2, vmul(xt[i], xt[i]))));
            sum = vadd(sum, wt[i]);
        }
        store8(s.sw + 8 * h, sum);
        const QxOut o = qx_lanes<16>(xt + 16 * h, wt + 16 * h, 4);
        store8(s.scales + 8 * h, o.scale);
        store8(s.iscl + 8 * h, o.iscale);
        store8(s.zero + 8 * h, o.zero);
    }
}

// The rest of a Q3_K block after q3_K_search: scales, d, the levels, hmask and qs (Ls_t: the
// plain search's levels, read only without weights).
void q3_K_rest(const float* x, bool with_qw, const QxSearch& s, const float (*Ls_t)[16][8], block_q3_K& y) {
    const float* scales = s.scales;
    std::memset(y.scales, 0, 12);
    if (!with_qw) {
        float max_scale = 0, amax = 0;
        for (int j = 0; j < 16; ++j) {
            const float scale = std::fabs(scales[j]);
            if (scale > amax) {
                amax = scale;
                max_scale = scales[j];
            }
        }
        if (max_scale) {
            const float iscale = -32.f / max_scale;
            for (int j = 0; j < 16; ++j) {
                int8_t l = static_cast<int8_t>(nearest_int(iscale * scales[j]));
                l = static_cast<int8_t>((l < -32 ? -32 : (l > 31 ? 31 : l)) + 32);
                set_q3_scale(y.scales, j, l);
            }
            y.d = fp32_to_fp16(1 / iscale);
        } else {
            y.d = fp32_to_fp16(0.f);
        }
    } else {
        int8_t Ls[16];
        const float d_block = quant::make_qx_quants(16, 32, scales, Ls, 1, s.sw);
        for (int j = 0; j < 16; ++j) set_q3_scale(y.scales, j, Ls[j]);
        y.d = fp32_to_fp16(d_block);
    }

    alignas(32) uint8_t L[QK_K];
    const float yd = fp16_to_fp32(y.d);
    for (int j = 0; j < 16; ++j) {
        const int8_t sc = get_q3_scale(y.scales, j);
        const float d = yd * sc;
        if (!d && !with_qw) {
            for (int i = 0; i < 16; ++i) L[16 * j + i] = static_cast<uint8_t>(Ls_t[j / 8][i][j % 8]);
            continue;
        }
        qx_final_levels(x + 16 * j, d, s.iscl[j], s.zero[j], 4, L + 16 * j);
    }
    // hmask bit k of byte m <- bit 2 of level 32k + m; qs <- the low two bits.
    const VI one = _mm256_set1_epi8(1), three = _mm256_set1_epi8(3);
    VI hm = _mm256_setzero_si256();
    for (int k = 0; k < 8; ++k) {
        VI c = _mm256_load_si256(reinterpret_cast<const VI*>(L + 32 * k));
        const VI bit = _mm256_and_si256(_mm256_srli_epi16(c, 2), one);
        hm = _mm256_or_si256(hm, _mm256_sll_epi16(bit, _mm_cvtsi32_si128(k)));
        _mm256_store_si256(reinterpret_cast<VI*>(L + 32 * k), _mm256_and_si256(c, three));
    }
    _mm256_storeu_si256(reinterpret_cast<VI*>(y.hmask), hm);
    pack_2bit(L, y.qs);
}

void q3_K_block(const float* x, block_q3_K& y, const float* qw) {
    QxSearch s;
    alignas(32) float Ls_t[2][16][8];
    q3_K_search(x, qw, s, Ls_t);
    q3_K_rest(x, qw != nullptr, s, Ls_t, y);
}

// ---------------------------------------------------------------- Q4_K / Q5_K

// Shared d, dmin, scales[12] of Q4_K/Q5_K plus the 256 levels.
struct K4Result {
    uint16_t d, dmin;
    uint8_t scales[K_SCALE_SIZE];
    alignas(32) uint8_t L[QK_K];
};

// The scale search of quantize_row_q{4,5}_K_ref (qw null) or _impl (qw = 256 importance
// weights per block) for G consecutive blocks at x, interleaved.
template <int kNmax, int G>
void k4_search(const float* x, const float* qw, QkxSearch* out) {
    V xt[G * 32], wt[G * 32];
    QkxOut o[G];
    for (int g = 0; g < G; ++g) {
        const float* xg = x + QK_K * g;
        V* xtg = xt + 32 * g;
        V* wtg = wt + 32 * g;
        load_t_contig(xg, 32, xtg);
        if (qw) {
            const float sum_x2 = sum_squares(xg, QK_K);
            const V s2 = vset(2 * sum_x2 / QK_K);
            load_t_contig(qw + QK_K * g, 32, wtg);
            V s = vzero();
            for (int i = 0; i < 32; ++i) {
                wtg[i] = vmul(wtg[i], _mm256_sqrt_ps(vadd(s2, vmul(xtg[i], xtg[i]))));
                s = vadd(s, wtg[i]);
            }
            store8(out[g].sw, s);
        } else {
            V s = vzero();
            for (int i = 0; i < 32; ++i) s = vadd(s, vmul(xtg[i], xtg[i]));
            const V av_x = _mm256_sqrt_ps(vdiv(s, vset(32.f)));
            for (int i = 0; i < 32; ++i) wtg[i] = vadd(av_x, vabs(xtg[i]));
        }
    }
    if (qw)
        qkx_lanes<G, 32, true, false>(xt, wt, kNmax, -0.9f, 0.05f, 36, o);
    else if (kNmax == 15)
        qkx_lanes<G, 32, false, false>(xt, wt, kNmax, -1.f, 0.1f, 20, o);
    else
        qkx_lanes<G, 32, false, false>(xt, wt, kNmax, -0.5f, 0.1f, 15, o);
    for (int g = 0; g < G; ++g) {
        store8(out[g].scales, o[g].scale);
        store8(out[g].mins, o[g].the_min);
        store8(out[g].lis, o[g].l_iscale);
        store8(out[g].lmn, o[g].l_min);
    }
}

// The rest of the block after the search: six-bit scales and mins, then the final levels.
template <int kNmax>
void k4_finish(const float* x, bool with_qw, const QkxSearch& srch, K4Result& r) {
    const float* scales = srch.scales;
    const float* mins = srch.mins;
    const float* lis = srch.lis;
    const float* lmn = srch.lmn;
    const float* sw = srch.sw;
    if (with_qw) {
        uint8_t Ls[8], Lm[8];
        const float d_block = quant::make_qp_quants(8, 63, scales, Ls, sw);
        const float m_block = quant::make_qp_quants(8, 63, mins, Lm, sw);
        for (int j = 0; j < 8; ++j) set_scale_min_k4(r.scales, j, Ls[j], Lm[j]);
        r.d = fp32_to_fp16(d_block);
        r.dmin = fp32_to_fp16(m_block);
    } else {
        float max_scale = 0, max_min = 0;
        for (int j = 0; j < 8; ++j) {
            if (scales[j] > max_scale) max_scale = scales[j];
            if (mins[j] > max_min) max_min = mins[j];
        }
        quant::pack_k4_scales_ref(scales, mins, max_scale, max_min, r.scales);
        r.d = fp32_to_fp16(max_scale / 63.f);
        r.dmin = fp32_to_fp16(max_min / 63.f);
    }

    const float dd = fp16_to_fp32(r.d), dmin = fp16_to_fp32(r.dmin);
    for (int j = 0; j < 8; ++j) {
        uint8_t sc, m;
        get_scale_min_k4(j, r.scales, &sc, &m);
        const float d = dd * sc;
        const float* xj = x + 32 * j;
        VI l[4];
        if (!d) {
            for (int k = 0; k < 4; ++k) l[k] = qkx_levels(xj + 8 * k, lis[j], lmn[j], kNmax);
        } else {
            const float dm = dmin * m;
            for (int k = 0; k < 4; ++k) l[k] = affine_levels(xj + 8 * k, dm, d, kNmax);
        }
        store_u8(r.L + 32 * j, l[0], l[1]);
        store_u8(r.L + 32 * j + 16, l[2], l[3]);
    }
}

void store_k4(const K4Result& r, block_q4_K& y) {
    y.d = r.d;
    y.dmin = r.dmin;
    std::memcpy(y.scales, r.scales, K_SCALE_SIZE);
    for (int j = 0; j < QK_K; j += 64) {
        const VI a = _mm256_load_si256(reinterpret_cast<const VI*>(r.L + j));
        const VI b = _mm256_load_si256(reinterpret_cast<const VI*>(r.L + j + 32));
        _mm256_storeu_si256(reinterpret_cast<VI*>(y.qs + j / 2), _mm256_or_si256(a, _mm256_slli_epi16(b, 4)));
    }
}

void store_k4(const K4Result& r, block_q5_K& y) {
    y.d = r.d;
    y.dmin = r.dmin;
    std::memcpy(y.scales, r.scales, K_SCALE_SIZE);
    VI qh = _mm256_setzero_si256();
    const VI lo4 = _mm256_set1_epi8(0x0F), bit4 = _mm256_set1_epi8(0x10);
    for (int n = 0, s = 0; n < QK_K; n += 64, s += 2) {
        const VI a = _mm256_load_si256(reinterpret_cast<const VI*>(r.L + n));
        const VI b = _mm256_load_si256(reinterpret_cast<const VI*>(r.L + n + 32));
        const VI q = _mm256_or_si256(_mm256_and_si256(a, lo4), _mm256_slli_epi16(_mm256_and_si256(b, lo4), 4));
        _mm256_storeu_si256(reinterpret_cast<VI*>(y.qs + n / 2), q);
        // Bit 4 of each level -> bit s (element j) / s + 1 (element j + 32) of qh[j].
        const VI ha = _mm256_min_epu8(_mm256_and_si256(a, bit4), _mm256_set1_epi8(1));
        const VI hb = _mm256_min_epu8(_mm256_and_si256(b, bit4), _mm256_set1_epi8(1));
        const VI bits = _mm256_or_si256(ha, _mm256_add_epi8(hb, hb));
        // Shift left by s within bytes (bits <= 3 and s <= 6: no carry across bytes).
        qh = _mm256_or_si256(qh, _mm256_sll_epi16(bits, _mm_cvtsi32_si128(s)));
    }
    _mm256_storeu_si256(reinterpret_cast<VI*>(y.qh), qh);
}

// ---------------------------------------------------------------- Q6_K

// The scale search of quantize_row_q6_K_ref (qw null) or _impl (qw = 256 weights) for one block.
void q6_K_search(const float* x, const float* qw, QxSearch& s) {
    for (int h = 0; h < 2; ++h) {
        V xt[16], wt[16];
        load_t_contig(x + 128 * h, 16, xt);
        if (qw)
            load_t_contig(qw + 128 * h, 16, wt);
        else
            for (int i = 0; i < 16; ++i) wt[i] = vmul(xt[i], xt[i]);
        const QxOut o = qx_lanes<16>(xt, wt, 32);
        store8(s.scales + 8 * h, o.scale);
        store8(s.iscl + 8 * h, o.iscale);
        store8(s.zero + 8 * h, o.zero);
    }
}

// The rest of a Q6_K block after q6_K_search: d, the 8-bit scales, the levels in ql and qh.
void q6_K_rest(const float* x, const QxSearch& s, block_q6_K& y) {
    const float* scales = s.scales;
    float max_scale = 0, max_abs_scale = 0;
    for (int ib = 0; ib < 16; ++ib) {
        const float abs_scale = std::fabs(scales[ib]);
        if (abs_scale > max_abs_scale) {
            max_abs_scale = abs_scale;
            max_scale = scales[ib];
        }
    }
    if (max_abs_scale < kGroupMaxEps) {
        std::memset(&y, 0, sizeof(block_q6_K));
        y.d = fp32_to_fp16(0.f);
        return;
    }
    const float iscale = -128.f / max_scale;
    y.d = fp32_to_fp16(1 / iscale);
    for (int ib = 0; ib < 16; ++ib) {
        const int l = nearest_int(iscale * scales[ib]);
        y.scales[ib] = static_cast<int8_t>(l < 127 ? l : 127);
    }

    alignas(32) uint8_t L[QK_K];
    const float yd = fp16_to_fp32(y.d);
    for (int j = 0; j < 16; ++j) qx_final_levels(x + 16 * j, yd * y.scales[j], s.iscl[j], s.zero[j], 32, L + 16 * j);
    const VI m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(0x03);
    for (int j = 0; j < QK_K; j += 128) {
        const VI A = _mm256_load_si256(reinterpret_cast<const VI*>(L + j));
        const VI B = _mm256_load_si256(reinterpret_cast<const VI*>(L + j + 32));
        const VI C = _mm256_load_si256(reinterpret_cast<const VI*>(L + j + 64));
        const VI D = _mm256_load_si256(reinterpret_cast<const VI*>(L + j + 96));
        const VI ql0 = _mm256_or_si256(_mm256_and_si256(A, m4), _mm256_slli_epi16(_mm256_and_si256(C, m4), 4));
        const VI ql1 = _mm256_or_si256(_mm256_and_si256(B, m4), _mm256_slli_epi16(_mm256_and_si256(D, m4), 4));
        const VI ha = _mm256_and_si256(_mm256_srli_epi16(A, 4), m2);
        const VI hb = _mm256_and_si256(_mm256_srli_epi16(B, 4), m2);
        const VI hc = _mm256_and_si256(_mm256_srli_epi16(C, 4), m2);
        const VI hd = _mm256_and_si256(_mm256_srli_epi16(D, 4), m2);
        const VI qh = _mm256_or_si256(_mm256_or_si256(ha, _mm256_slli_epi16(hb, 2)),
                                      _mm256_or_si256(_mm256_slli_epi16(hc, 4), _mm256_slli_epi16(hd, 6)));
        _mm256_storeu_si256(reinterpret_cast<VI*>(y.ql + j / 2), ql0);
        _mm256_storeu_si256(reinterpret_cast<VI*>(y.ql + j / 2 + 32), ql1);
        _mm256_storeu_si256(reinterpret_cast<VI*>(y.qh + j / 4), qh);
    }
}

void q6_K_block(const float* x, block_q6_K& y, const float* qw) {
    QxSearch s;
    q6_K_search(x, qw, s);
    q6_K_rest(x, s, y);
}

// ---------------------------------------------------------------- legacy types with imatrix

// Pointers to the 32-element blocks b0..b0+7 of a row (missing ones read zeros).
OIW_INLINE void block_rows(const float* base, int64_t b0, int64_t nb, const float** rows) {
    for (int k = 0; k < 8; ++k) rows[k] = b0 + k < nb ? base + 32 * (b0 + k) : kZeros;
}

// Row-sigma2 weights qw * sqrt(sigma2 + x^2) of 8 blocks (transposed).
OIW_INLINE void block_weights_t(const V* xt, const float* imatrix, int64_t b0, int64_t nb, float sigma2, V* wt) {
    const float* rows[8];
    block_rows(imatrix, b0, nb, rows);
    load_t(rows, 32, wt);
    const V s2 = vset(sigma2);
    for (int i = 0; i < 32; ++i) wt[i] = vmul(wt[i], _mm256_sqrt_ps(vadd(s2, vmul(xt[i], xt[i]))));
}

// Packs 32 five-bit levels (bytes) into Q5_0/Q5_1 qs and qh.
OIW_INLINE void pack_5bit(VI L, uint8_t* qs, uint8_t* qh) {
    const __m128i lo = _mm256_castsi256_si128(L), hi = _mm256_extracti128_si256(L, 1);
    const __m128i m4 = _mm_set1_epi8(0x0F);
    const __m128i q = _mm_or_si128(_mm_and_si128(lo, m4), _mm_slli_epi16(_mm_and_si128(hi, m4), 4));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(qs), q);
    const uint32_t h = static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_slli_epi16(L, 3)));
    std::memcpy(qh, &h, 4);
}

// Q4_0/Q4_1 qs of one block's levels l[0..3] (elements 0..31): byte j = element j | element j+16 << 4.
OIW_INLINE void pack_q4_qs(const VI* l, uint8_t* qs) {
    const __m128i r = _mm_or_si128(pack_u8(l[0], l[1]), _mm_slli_epi16(pack_u8(l[2], l[3]), 4));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(qs), r);
}

// Q5_0/Q5_1 qs and qh of one block's levels l[0..3] (elements 0..31).
OIW_INLINE void pack_q5_qs(const VI* l, uint8_t* qs, uint8_t* qh) {
    pack_5bit(_mm256_set_m128i(pack_u8(l[2], l[3]), pack_u8(l[0], l[1])), qs, qh);
}

// The 32-blocks b0..b0+7 of a row for quantize_row_q{4,5}_{0,1}_impl: their pointers (missing
// ones read zeros), transposed into xt, with their importance weights (row sigma2) in wt.
OIW_INLINE void load_weighted_blocks(const float* x, const float* imatrix, int64_t b0, int64_t nb, float sigma2,
                                     const float** rows, V* xt, V* wt) {
    block_rows(x, b0, nb, rows);
    load_t(rows, 32, xt);
    block_weights_t(xt, imatrix, b0, nb, sigma2, wt);
}

// quantize_row_q4_0_impl (kNmax 8) / quantize_row_q5_0_impl (kNmax 16) for one row.
template <int kNmax>
void row_q_0_imat(const float* x, void* dst, int64_t n, const float* imatrix) {
    const float sigma2 = sum_squares(x, n) / static_cast<float>(n);
    const int64_t nb = n / 32;
    for (int64_t b0 = 0; b0 < nb; b0 += 8) {
        const float* rows[8];
        V xt[32], wt[32];
        load_weighted_blocks(x, imatrix, b0, nb, sigma2, rows, xt, wt);
        const QxOut o = qx_lanes<32>(xt, wt, kNmax);
        alignas(32) float sc[8], isc[8], zr[8];
        store8(sc, o.scale);
        store8(isc, o.iscale);
        store8(zr, o.zero);
        for (int k = 0; k < 8 && b0 + k < nb; ++k) {
            const float* xb = rows[k];
            uint32_t zbits;
            std::memcpy(&zbits, &zr[k], 4);
            VI l[4];
            for (int q = 0; q < 4; ++q) l[q] = zbits ? _mm256_setzero_si256() : qx_levels(xb + 8 * q, isc[k], kNmax);
            if constexpr (kNmax == 8) {
                block_q4_0& y = static_cast<block_q4_0*>(dst)[b0 + k];
                y.d = fp32_to_fp16(sc[k]);
                pack_q4_qs(l, y.qs);
            } else {
                block_q5_0& y = static_cast<block_q5_0*>(dst)[b0 + k];
                y.d = fp32_to_fp16(sc[k]);
                pack_q5_qs(l, y.qs, y.qh);
            }
        }
    }
}

// quantize_row_q4_1_impl (kNmax 15) / quantize_row_q5_1_impl (kNmax 31) for one row.
template <int kNmax>
void row_q_1_imat(const float* x, void* dst, int64_t n, const float* imatrix) {
    const float sigma2 = sum_squares(x, n) / static_cast<float>(n);
    const int64_t nb = n / 32;
    for (int64_t b0 = 0; b0 < nb; b0 += 8) {
        const float* rows[8];
        V xt[32], wt[32];
        load_weighted_blocks(x, imatrix, b0, nb, sigma2, rows, xt, wt);
        QkxOut o;
        qkx_lanes<1, 32, true, false>(xt, wt, kNmax, -0.9f, 0.05f, 36, &o);
        alignas(32) float sc[8], mn[8], lis[8], lmn[8];
        store8(sc, o.scale);
        store8(mn, o.the_min);
        store8(lis, o.l_iscale);
        store8(lmn, o.l_min);
        for (int k = 0; k < 8 && b0 + k < nb; ++k) {
            const float* xb = rows[k];
            VI l[4];
            for (int q = 0; q < 4; ++q) l[q] = qkx_levels(xb + 8 * q, lis[k], lmn[k], kNmax);
            if constexpr (kNmax == 15) {
                block_q4_1& y = static_cast<block_q4_1*>(dst)[b0 + k];
                y.d = fp32_to_fp16(sc[k]);
                y.m = fp32_to_fp16(-mn[k]);
                pack_q4_qs(l, y.qs);
            } else {
                block_q5_1& y = static_cast<block_q5_1*>(dst)[b0 + k];
                y.d = fp32_to_fp16(sc[k]);
                y.m = fp32_to_fp16(-mn[k]);
                pack_q5_qs(l, y.qs, y.qh);
            }
        }
    }
}

// ---------------------------------------------------------------- IQ4_NL / IQ4_XS

struct Iq4Tab {
    V t3, t7, t11, ta, tb, vlo, vhi;
};

Iq4Tab iq4_tab() {
    const float* t = quant::iq4nl_thresholds();
    const int8_t* v = kvalues_iq4nl;
    Iq4Tab T;
    T.t3 = vset(t[3]);
    T.t7 = vset(t[7]);
    T.t11 = vset(t[11]);
    T.ta = _mm256_setr_ps(t[1], t[5], t[9], t[13], t[13], t[13], t[13], t[13]);
    T.tb = _mm256_setr_ps(t[0], t[2], t[4], t[6], t[8], t[10], t[12], t[14]);
    T.vlo = _mm256_setr_ps(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]);
    T.vhi = _mm256_setr_ps(v[8], v[9], v[10], v[11], v[12], v[13], v[14], v[15]);
    return T;
}

// best_index_int8(16, kvalues_iq4nl, x) per lane: a 4-step search over the thresholds
// (x >= t or unordered, so NaN -> 15 as in the reference). *q gets the level value.
OIW_INLINE VI iq4_index(V x, const Iq4Tab& T, V* q) {
    const V m1 = _mm256_cmp_ps(x, T.t7, _CMP_NLT_UQ);
    VI b = _mm256_and_si256(_mm256_castps_si256(m1), iset(8));
    const V m2 = _mm256_cmp_ps(x, sel(T.t3, T.t11, m1), _CMP_NLT_UQ);
    b = _mm256_add_epi32(b, _mm256_and_si256(_mm256_castps_si256(m2), iset(4)));
    const V m3 = _mm256_cmp_ps(x, _mm256_permutevar8x32_ps(T.ta, _mm256_srli_epi32(b, 2)), _CMP_NLT_UQ);
    b = _mm256_add_epi32(b, _mm256_and_si256(_mm256_castps_si256(m3), iset(2)));
    const V m4 = _mm256_cmp_ps(x, _mm256_permutevar8x32_ps(T.tb, _mm256_srli_epi32(b, 1)), _CMP_NLT_UQ);
    b = _mm256_add_epi32(b, _mm256_and_si256(_mm256_castps_si256(m4), iset(1)));
    if (q) *q = sel(_mm256_permutevar8x32_ps(T.vlo, b), _mm256_permutevar8x32_ps(T.vhi, b), m1);
    return b;
}

OIW_INLINE void iq4_sums(const V* xt, const V* wt, V id, const Iq4Tab& T, V& sqx, V& sq2) {
    V a = vzero(), b = vzero();
    for (int j = 0; j < 32; ++j) {
        V q;
        iq4_index(vmul(id, xt[j]), T, &q);
        const V wq = vmul(wt[j], q);
        a = vadd(a, vmul(wq, xt[j]));
        b = vadd(b, vmul(wq, q));
    }
    sqx = a;
    sq2 = b;
}

// The per-block scale search of quantize_row_iq4_nl_impl (ntry 7) for 8 blocks of 32.
V iq4_lanes(const V* xt, const V* wt, const Iq4Tab& T) {
    V amax = vzero(), mx = vzero();
    for (int j = 0; j < 32; ++j) {
        const V ax = vabs(xt[j]);
        const V m = gt(ax, amax);
        amax = sel(amax, ax, m);
        mx = sel(mx, xt[j], m);
    }
    const V skip = lt(amax, vset(kGroupMaxEps));
    V d = vdiv(vneg(mx), vset(static_cast<float>(kvalues_iq4nl[0])));
    V id = vdiv(vset(1.0f), d);
    V sqx, sq2;
    iq4_sums(xt, wt, id, T, sqx, sq2);
    d = _mm256_and_ps(gt(sq2, vzero()), vdiv(sqx, sq2));
    V best = vmul(d, sqx);
    for (int itry = -7; itry <= 7; ++itry) {
        id = vdiv(vset(static_cast<float>(itry + kvalues_iq4nl[0])), mx);
        iq4_sums(xt, wt, id, T, sqx, sq2);
        const V upd = _mm256_and_ps(gt(sq2, vzero()), gt(vmul(sqx, sqx), vmul(best, sq2)));
        const V nd = vdiv(sqx, sq2);
        d = sel(d, nd, upd);
        best = sel(best, vmul(nd, sqx), upd);
    }
    return _mm256_andnot_ps(skip, d);
}

// 32 indices for id * x (x: 32 consecutive values) packed into 16 bytes of nibbles.
OIW_INLINE void iq4_pack(const float* x, float id, const Iq4Tab& T, uint8_t* q4) {
    const V vid = vset(id);
    VI l[4];
    for (int k = 0; k < 4; ++k) l[k] = iq4_index(vmul(vid, _mm256_loadu_ps(x + 8 * k)), T, nullptr);
    const __m128i r = _mm_or_si128(pack_u8(l[0], l[1]), _mm_slli_epi16(pack_u8(l[2], l[3]), 4));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q4), r);
}

void row_iq4_nl(const float* x, void* dst, int64_t n, const float* imatrix) {
    const Iq4Tab T = iq4_tab();
    block_iq4_nl* y = static_cast<block_iq4_nl*>(dst);
    const int64_t nb = n / 32;
    for (int64_t b0 = 0; b0 < nb; b0 += 8) {
        const float* rows[8];
        block_rows(x, b0, nb, rows);
        V xt[32], wt[32];
        load_t(rows, 32, xt);
        if (imatrix) {
            V s = vzero();
            for (int j = 0; j < 32; ++j) s = vadd(s, vmul(xt[j], xt[j]));
            s = vmul(s, vset(2.f / 32.f));
            const float* qrows[8];
            block_rows(imatrix, b0, nb, qrows);
            load_t(qrows, 32, wt);
            for (int j = 0; j < 32; ++j) wt[j] = vmul(wt[j], _mm256_sqrt_ps(vadd(s, vmul(xt[j], xt[j]))));
        } else {
            for (int j = 0; j < 32; ++j) wt[j] = vmul(xt[j], xt[j]);
        }
        alignas(32) float sc[8];
        store8(sc, iq4_lanes(xt, wt, T));
        for (int k = 0; k < 8 && b0 + k < nb; ++k) {
            y[b0 + k].d = fp32_to_fp16(sc[k]);
            const float id = sc[k] ? 1 / sc[k] : 0;
            iq4_pack(rows[k], id, T, y[b0 + k].qs);
        }
    }
}

void iq4_xs_block(const float* x, block_iq4_xs& y, const float* qw, const Iq4Tab& T) {
    float sigma2 = sum_squares(x, QK_K);
    sigma2 *= 2.f / static_cast<float>(QK_K);
    V xt[32], wt[32];
    load_t_contig(x, 32, xt);
    if (qw) {
        load_t_contig(qw, 32, wt);
        const V s2 = vset(sigma2);
        for (int j = 0; j < 32; ++j) wt[j] = vmul(wt[j], _mm256_sqrt_ps(vadd(s2, vmul(xt[j], xt[j]))));
    } else {
        for (int j = 0; j < 32; ++j) wt[j] = vmul(xt[j], xt[j]);
    }
    alignas(32) float scales[8];
    store8(scales, iq4_lanes(xt, wt, T));
    float max_scale = 0, amax_scale = 0;
    for (int ib = 0; ib < 8; ++ib) {
        const float abs_d = std::fabs(scales[ib]);
        if (abs_d > amax_scale) {
            amax_scale = abs_d;
            max_scale = scales[ib];
        }
    }
    y.scales_h = 0;
    const float d = -max_scale / 32;
    y.d = fp32_to_fp16(d);
    const float id = d ? 1 / d : 0.f;
    for (int ib = 0; ib < 8; ++ib) {
        int l = nearest_int(id * scales[ib]);
        l = l < -32 ? -32 : (l > 31 ? 31 : l);
        const float dl = d * static_cast<float>(l);
        const float idl = dl ? 1 / dl : 0.f;
        iq4_pack(x + 32 * ib, idl, T, y.qs + 16 * ib);
        l += 32;
        const uint8_t l_l = static_cast<uint8_t>(l & 0xf);
        const uint8_t l_h = static_cast<uint8_t>(l >> 4);
        if (ib % 2 == 0)
            y.scales_l[ib / 2] = l_l;
        else
            y.scales_l[ib / 2] |= static_cast<uint8_t>(l_l << 4);
        y.scales_h |= static_cast<uint16_t>(l_h << 2 * (ib % 8));
    }
}

void row_iq4_xs(const float* x, void* dst, int64_t n, const float* imatrix) {
    const Iq4Tab T = iq4_tab();
    block_iq4_xs* y = static_cast<block_iq4_xs*>(dst);
    for (int64_t i = 0; i < n / QK_K; ++i) iq4_xs_block(x + QK_K * i, y[i], imatrix ? imatrix + QK_K * i : nullptr, T);
}

// ---------------------------------------------------------------- K-quant rows

template <typename Block, void (*kBlock)(const float*, Block&, const float*)>
void row_k(const float* x, void* dst, int64_t n, const float* imatrix) {
    Block* y = static_cast<Block*>(dst);
    for (int64_t i = 0; i < n / QK_K; ++i) kBlock(x + QK_K * i, y[i], imatrix ? imatrix + QK_K * i : nullptr);
}

// Q4_K (kNmax 15) / Q5_K (kNmax 31) rows, blocks searched two at a time.
template <int kNmax, int G, typename Block>
void k4_blocks(const float* x, const float* qw, Block* y) {
    QkxSearch srch[G];
    k4_search<kNmax, G>(x, qw, srch);
    for (int g = 0; g < G; ++g) {
        K4Result r;
        k4_finish<kNmax>(x + QK_K * g, qw != nullptr, srch[g], r);
        store_k4(r, y[g]);
    }
}

template <int kNmax, typename Block>
void row_k4(const float* x, void* dst, int64_t n, const float* imatrix) {
    Block* y = static_cast<Block*>(dst);
    const int64_t nb = n / QK_K;
    int64_t i = 0;
    for (; i + 2 <= nb; i += 2) k4_blocks<kNmax, 2>(x + QK_K * i, imatrix ? imatrix + QK_K * i : nullptr, y + i);
    for (; i < nb; ++i) k4_blocks<kNmax, 1>(x + QK_K * i, imatrix ? imatrix + QK_K * i : nullptr, y + i);
}

// A row kernel of this file, checked: refuses (returns false) rows or weights outside the range
// the kernels are exact on.
using RowFn = void (*)(const float* x, void* dst, int64_t n, const float* imatrix);
template <RowFn kRow>
bool checked(const float* x, void* dst, int64_t n, const float* imatrix) {
    if (!in_fast_range(x, n) || (imatrix && !in_fast_range(imatrix, n))) return false;
    kRow(x, dst, n, imatrix);
    return true;
}

// A lattice i-quant row (IQ1_S .. IQ3_S) through the block drivers of quantize_lattice.cpp with
// this ISA's loops (quantize_iq_avx2.cpp).
template <GgmlType kType>
bool row_lattice(const float* x, void* dst, int64_t n, const float* imatrix) {
    return lattice_row(kType, lattice_kernels(), x, dst, n, imatrix);
}

using T = GgmlType;
// F16, BF16 and Q8_0 ignore importance weights (their rows never get any).
constexpr IsaKernel kQuantizers[] = {
    {T::F16, {checked<row_f16>, nullptr}},
    {T::BF16, {checked<row_bf16>, nullptr}},
    {T::Q8_0, {checked<row_q8_0>, nullptr}},
    {T::Q4_0, {checked<row_q4_0>, checked<row_q_0_imat<8>>}},
    {T::Q5_0, {nullptr, checked<row_q_0_imat<16>>}},
    {T::Q4_1, {nullptr, checked<row_q_1_imat<15>>}},
    {T::Q5_1, {nullptr, checked<row_q_1_imat<31>>}},
    {T::Q2_K, {checked<row_k<block_q2_K, q2_K_block>>, checked<row_k<block_q2_K, q2_K_block>>}},
    {T::Q3_K, {checked<row_k<block_q3_K, q3_K_block>>, checked<row_k<block_q3_K, q3_K_block>>}},
    {T::Q4_K, {checked<row_k4<15, block_q4_K>>, checked<row_k4<15, block_q4_K>>}},
    {T::Q5_K, {checked<row_k4<31, block_q5_K>>, checked<row_k4<31, block_q5_K>>}},
    {T::Q6_K, {checked<row_k<block_q6_K, q6_K_block>>, checked<row_k<block_q6_K, q6_K_block>>}},
    {T::IQ4_NL, {checked<row_iq4_nl>, checked<row_iq4_nl>}},
    {T::IQ4_XS, {checked<row_iq4_xs>, checked<row_iq4_xs>}},
    // IQ2_XXS, IQ2_XS and IQ1_S require importance weights.
    {T::IQ2_XXS, {nullptr, row_lattice<T::IQ2_XXS>}},
    {T::IQ2_XS, {nullptr, row_lattice<T::IQ2_XS>}},
    {T::IQ2_S, {row_lattice<T::IQ2_S>, row_lattice<T::IQ2_S>}},
    {T::IQ3_XXS, {row_lattice<T::IQ3_XXS>, row_lattice<T::IQ3_XXS>}},
    {T::IQ3_S, {row_lattice<T::IQ3_S>, row_lattice<T::IQ3_S>}},
    {T::IQ1_S, {nullptr, row_lattice<T::IQ1_S>}},
    {T::IQ1_M, {row_lattice<T::IQ1_M>, row_lattice<T::IQ1_M>}},
};

}  // namespace

bool lattice_row(GgmlType t, const quant::LatticeKernels& k, const float* x, void* dst, int64_t n,
                 const float* imatrix) {
    if (!in_fast_range(x, n) || (imatrix && !in_fast_range(imatrix, n))) return false;
    return quant::quantize_lattice_row(t, k, x, dst, n, imatrix);
}

std::span<const IsaKernel> quantizers() { return kQuantizers; }

void q2_K_finish(const float* x, bool with_qw, const QkxSearch& s, block_q2_K& y) { q2_K_rest(x, with_qw, s, y); }

void q4_K_finish(const float* x, bool with_qw, const QkxSearch& s, block_q4_K& y) {
    K4Result r;
    k4_finish<15>(x, with_qw, s, r);
    store_k4(r, y);
}

void q5_K_finish(const float* x, bool with_qw, const QkxSearch& s, block_q5_K& y) {
    K4Result r;
    k4_finish<31>(x, with_qw, s, r);
    store_k4(r, y);
}

void q3_K_finish_weighted(const float* x, const QxSearch& s, block_q3_K& y) { q3_K_rest(x, true, s, nullptr, y); }

void q6_K_finish(const float* x, const QxSearch& s, block_q6_K& y) { q6_K_rest(x, s, y); }

void f16_to_f32(const uint16_t* src, float* dst, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
    }
    for (; i < n; ++i) dst[i] = fp16_to_fp32(src[i]);
}

}  // namespace oiw::avx2
