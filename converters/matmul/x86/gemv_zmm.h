// The 512-bit GEMV kernels, shared by gemv_avx512.cpp (-mavx512f -mavx512bw -mavx512vl, with AVX2
// and F16C) and gemv_avx512vnni.cpp (the same plus -mavx512vnni). The including file's flags choose
// the integer dot: with __AVX512VNNI__ vpdpbusd / vpdpwssd, else maddubs + madd; integer sums are
// exact either way.
//
// Float lanes: the reference's 8 lanes of a row (w4a8.h) are one half of a zmm register; the
// other half holds a second row (oiw4, Q4_0: rows paired, see zmm_pairs) or,
// for Q4_Kx8, other rows' lanes. Each float lane sees the reference's operations in its order, so
// results are its bits. No FMA (the project builds with -ffp-contract=off; AVX-512F's FMA
// instructions are never asked for).
// Internal linkage on purpose (see row_split.h): each ISA file instantiates its own copy.
#pragma once
// GCC 12's _mm512_undefined_* (self-initialized) trip -W(maybe-)uninitialized wherever an AVX-512
// intrinsic using them is inlined; the warning is about the intrinsics' headers, not this code.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstdlib>
#include <cstring>
#include <new>

#include "converters/matmul/x86/gemv_x86.h"
#include "converters/matmul/x86/row_split.h"

namespace oiw::matmul {
namespace {  // NOLINT(google-build-namespaces): see above

// ggml's hsum_float_8 of each 256-bit half: the results of the two rows of a register.
inline void zmm_hsum2(__m512 x, float* lo, float* hi) {
    const __m256 h[2] = {_mm512_castps512_ps256(x), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1))};
    float out[2];
    for (int i = 0; i < 2; ++i) {
        __m128 r = _mm_add_ps(_mm256_extractf128_ps(h[i], 1), _mm256_castps256_ps128(h[i]));
        r = _mm_add_ps(r, _mm_movehl_ps(r, r));
        r = _mm_add_ss(r, _mm_movehdup_ps(r));
        out[i] = _mm_cvtss_f32(r);
    }
    *lo = out[0];
    *hi = out[1];
}

// 16 int32 lanes: lane k = sum of w[4k..4k+3] (unsigned) * x[4k..4k+3] (signed), exact.
inline __m512i zmm_dot4(__m512i w, __m512i x) {
#if defined(__AVX512VNNI__)
    return _mm512_dpbusd_epi32(_mm512_setzero_si512(), w, x);
#else
    return _mm512_madd_epi16(_mm512_maddubs_epi16(w, x), _mm512_set1_epi16(1));
#endif
}

// acc + pairwise products of int16 a and b (madd), exact.
inline __m512i zmm_add_madd(__m512i acc, __m512i a, __m512i b) {
#if defined(__AVX512VNNI__)
    return _mm512_dpwssd_epi32(acc, a, b);
#else
    return _mm512_add_epi32(acc, _mm512_madd_epi16(a, b));
#endif
}

// The 32 unsigned nibbles of block qa (bytes 0..31) and of block qb (bytes 32..63), element order.
inline __m512i zmm_nibbles2(const uint8_t* qa, const uint8_t* qb) {
    const __m256i ab =
        _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qa))),
                                _mm_loadu_si128(reinterpret_cast<const __m128i*>(qb)), 1);
    // [a, a, b, b] by 128-bit lanes, then the high nibbles in lanes 1 and 3.
    const __m512i w = _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 1, 0, 1, 2, 3, 2, 3), _mm512_castsi256_si512(ab));
    return _mm512_and_si512(_mm512_mask_srli_epi16(w, 0xFF00FF00u, w, 4), _mm512_set1_epi8(0x0F));
}

// Two rows (A: lanes 0..7, B: lanes 8..15; A may be B) with NV vectors. Row X's block b: nibbles
// at qX(b), scale dX(b) (fp32).
template <int NV, typename QA, typename DA, typename QB, typename DB>
inline void zmm_pair_nv(QA qa, DA da, QB qb, DB db, const ActView* acts, int64_t nb, float* outa, float* outb) {
    __m512 acc[NV];
    for (int v = 0; v < NV; ++v) acc[v] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const __m512i w = zmm_nibbles2(qa(b), qb(b));
        const __m512 dw = _mm512_mask_broadcastss_ps(_mm512_set1_ps(da(b)), 0xFF00, _mm_set_ss(db(b)));
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) {
            const ActView& a = acts[v];
            const __m512i x =
                _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.qs + b * 32)));
            const __m512i c =
                _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.c8 + b * 8)));
            const __m512 f = _mm512_cvtepi32_ps(_mm512_sub_epi32(zmm_dot4(w, x), c));
            acc[v] = _mm512_add_ps(acc[v], _mm512_mul_ps(f, _mm512_mul_ps(dw, _mm512_set1_ps(a.d[b]))));
        }
    }
    for (int v = 0; v < NV; ++v) zmm_hsum2(acc[v], &outa[v], &outb[v]);
}

// oiw4 rows i and j (may be equal) with NV vectors into y.
template <int NV>
inline void zmm_oiw4_pair(const Oiw4Planes& w, const ActView* acts, float* y, int64_t i, int64_t j) {
    const int64_t nb = w.cols / 32;
    const uint8_t* qi = w.qs + i * nb * 16;
    const uint8_t* qj = w.qs + j * nb * 16;
    const float* di = w.d + i * nb;
    const float* dj = w.d + j * nb;
    float oi[NV], oj[NV];
    zmm_pair_nv<NV>([qi](int64_t b) { return qi + b * 16; }, [di](int64_t b) { return di[b]; },
                    [qj](int64_t b) { return qj + b * 16; }, [dj](int64_t b) { return dj[b]; }, acts, nb, oi, oj);
    for (int v = 0; v < NV; ++v) {
        y[v * w.rows + i] = oi[v];
        y[v * w.rows + j] = oj[v];
    }
}

// Calls pair(i, j) over rows [r0, r1) in pairs: row i of the first half with row i of the second,
// two sequential streams in different pages as row_split.h's two_row (adjacent rows share a
// 4 KiB page, which defeats the L2 streamer: paired adjacent rows ran at a third of the speed);
// an odd last row is paired with itself.
template <typename PairFn>
inline void zmm_pairs(int64_t r0, int64_t r1, PairFn&& pair) {
    const int64_t h = (r1 - r0) / 2;
    for (int64_t i = r0; i < r0 + h; ++i) pair(i, i + h);
    if (r0 + 2 * h < r1) pair(r1 - 1, r1 - 1);
}

// oiw4 rows [r0, r1) (gemv_x86.h's oiw4_rows): always two rows per register, paired as
// zmm_pairs does, so the 1-row and 2-row variants are one kernel here.
void zmm_oiw4_rows(const Oiw4Planes& w, const ActView* acts, int nvec, float* y, int64_t r0, int64_t r1, bool two_row) {
    split_rows(
        nvec, two_row, r0, r1,
        [&](auto nv, int64_t a, int64_t b) {
            zmm_pairs(a, b, [&](int64_t i, int64_t j) { zmm_oiw4_pair<decltype(nv)::value>(w, acts, y, i, j); });
        },
        [&](int64_t i, int64_t j) { zmm_oiw4_pair<1>(w, acts, y, i, j); });
}

// Q4_0 rows [r0, r1) (gemv_x86.h's q4_0_rows), paired as zmm_pairs does.
void zmm_q4_0_rows(const block_q4_0* w, int64_t cols, const ActView& a, float* y, int64_t r0, int64_t r1) {
    const int64_t nb = cols / 32;
    zmm_pairs(r0, r1, [&](int64_t i, int64_t j) {
        const block_q4_0* ra = w + i * nb;
        const block_q4_0* rb = w + j * nb;
        zmm_pair_nv<1>([ra](int64_t b) { return ra[b].qs; }, [ra](int64_t b) { return _cvtsh_ss(ra[b].d); },
                       [rb](int64_t b) { return rb[b].qs; }, [rb](int64_t b) { return _cvtsh_ss(rb[b].d); }, &a, nb,
                       &y[i], &y[j]);
    });
}

// ---- Q4_Kx8 (see docs/matmul.md): per row, 8 int32 lanes by position class (element index mod
// 8) exactly as ggml's aux32[8], then sums[l] += d * aux32[l]; the min term per row in fp32. One
// 64-byte chunk holds all 8 rows: 128-bit lane L holds rows 2L and 2L + 1. Accumulators: S0 lane
// L = sums[2L][0..3], S1 = sums[2L][4..7], S2 = sums[2L+1][0..3], S3 = sums[2L+1][4..7].

// Activation patterns of one super-block (16 bytes each, broadcast to every lane when used): for
// chunk c (0..15, j = c/4, k = c%4), lo[c] = [a(64j+8k+p), 0] pairs and hi[c] = [0, a(64j+32+8k+p)]
// pairs, p = 0..7.
struct ZmmKActs {
    alignas(16) int8_t lo[16][16];
    alignas(16) int8_t hi[16][16];
};

void zmm_make_kacts(const block_q8_K& y, ZmmKActs& k) {
    for (int c = 0; c < 16; ++c) {
        const int j = c / 4, kk = c % 4;
        for (int p = 0; p < 8; ++p) {
            k.lo[c][2 * p] = y.qs[64 * j + 8 * kk + p];
            k.lo[c][2 * p + 1] = 0;
            k.hi[c][2 * p] = 0;
            k.hi[c][2 * p + 1] = y.qs[64 * j + 32 + 8 * kk + p];
        }
    }
}

// Six-bit scales (sc) and mins (mn) of one block_q4_Kx8: byte r of sc[sb] is row r's scale.
inline void zmm_decode_scales(const uint8_t* scales, uint64_t sc[8], uint64_t mn[8]) {
    for (int sb = 0; sb < 8; ++sb) {
        uint32_t g0, g4, g8;
        std::memcpy(&g0, scales + sb * 12, 4);
        std::memcpy(&g4, scales + sb * 12 + 4, 4);
        std::memcpy(&g8, scales + sb * 12 + 8, 4);
        const uint32_t s_lo = g0 & 0x3f3f3f3fu, m_lo = g4 & 0x3f3f3f3fu;
        const uint32_t s_hi = (g8 & 0x0f0f0f0fu) | ((g0 >> 2) & 0x30303030u);
        const uint32_t m_hi = ((g8 >> 4) & 0x0f0f0f0fu) | ((g4 >> 2) & 0x30303030u);
        sc[sb] = s_lo | (static_cast<uint64_t>(s_hi) << 32);
        mn[sb] = m_lo | (static_cast<uint64_t>(m_hi) << 32);
    }
}

// Bytes r of a and b as int16 pairs: 32-bit element r = (a[r], b[r]).
inline __m256i zmm_byte_pairs(uint64_t a, uint64_t b) {
    return _mm256_cvtepu8_epi16(
        _mm_unpacklo_epi8(_mm_cvtsi64_si128(static_cast<long long>(a)), _mm_cvtsi64_si128(static_cast<long long>(b))));
}

// Min term, lanes = rows: sumi[r] = sum_s msum[s] * mn[s][r] (exact).
inline __m256i zmm_min_term(const uint64_t mn[8], const int32_t* msum) {
    __m256i sumi = _mm256_setzero_si256();
    for (int t = 0; t < 4; ++t) {
        const uint32_t ms =
            static_cast<uint16_t>(msum[2 * t]) | (static_cast<uint32_t>(static_cast<uint16_t>(msum[2 * t + 1])) << 16);
        const __m256i m = zmm_byte_pairs(mn[2 * t], mn[2 * t + 1]);
        const __m256i s = _mm256_set1_epi32(static_cast<int>(ms));
#if defined(__AVX512VNNI__)
        sumi = _mm256_dpwssd_epi32(sumi, m, s);
#else
        sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(m, s));
#endif
    }
    return sumi;
}

// The four aux32 accumulators of one super-block (layout above), exact.
inline void zmm_q4kx8_aux(const block_q4_Kx8& B, const ZmmKActs& ka, const uint64_t sc[8], __m512i p[4]) {
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    const __m512i even = _mm512_setr_epi32(0, 0, 0, 0, 2, 2, 2, 2, 4, 4, 4, 4, 6, 6, 6, 6);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    for (int i = 0; i < 4; ++i) p[i] = _mm512_setzero_si512();
    for (int j = 0; j < 4; ++j) {
        __m512i l02 = _mm512_setzero_si512(), h02 = l02, l13 = l02, h13 = l02;
        for (int k = 0; k < 4; ++k) {
            const int c = 4 * j + k;
            const __m512i v = _mm512_loadu_si512(B.qs + c * 64);
            const __m512i lo = _mm512_and_si512(v, m4);
            const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
            const __m512i u02 = _mm512_unpacklo_epi8(lo, hi), u13 = _mm512_unpackhi_epi8(lo, hi);
            const __m512i kl = _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(ka.lo[c])));
            const __m512i kh = _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(ka.hi[c])));
            l02 = _mm512_add_epi16(l02, _mm512_maddubs_epi16(u02, kl));
            h02 = _mm512_add_epi16(h02, _mm512_maddubs_epi16(u02, kh));
            l13 = _mm512_add_epi16(l13, _mm512_maddubs_epi16(u13, kl));
            h13 = _mm512_add_epi16(h13, _mm512_maddubs_epi16(u13, kh));
        }
        // Scale pairs: 32-bit element r = (sc[2j][r], sc[2j+1][r]); lane L gets row 2L's (even) or 2L+1's.
        const __m512i sp = _mm512_castsi256_si512(zmm_byte_pairs(sc[2 * j], sc[2 * j + 1]));
        const __m512i s02 = _mm512_permutexvar_epi32(even, sp), s13 = _mm512_permutexvar_epi32(odd, sp);
        p[0] = zmm_add_madd(p[0], _mm512_unpacklo_epi16(l02, h02), s02);
        p[1] = zmm_add_madd(p[1], _mm512_unpackhi_epi16(l02, h02), s02);
        p[2] = zmm_add_madd(p[2], _mm512_unpacklo_epi16(l13, h13), s13);
        p[3] = zmm_add_madd(p[3], _mm512_unpackhi_epi16(l13, h13), s13);
    }
}

// Rows [8 * g0, 8 * g1) of a Q4_Kx8 view (gemv_x86.h's q4kx8_groups).
void zmm_q4kx8_groups(const Q4Kx8View& w, const KActView& a, float* y, int64_t g0, int64_t g1) {
    const int64_t nb = w.cols / 256;
    if (nb == 0) {  // empty rows: the reference's sum of nothing
        for (int64_t r = g0 * 8; r < g1 * 8; ++r) y[r] = 0.f;
        return;
    }
    // Raw buffer: no library template is instantiated under ISA flags (see gemv_x86.h).
    auto* ka = static_cast<ZmmKActs*>(std::aligned_alloc(64, static_cast<size_t>(nb) * sizeof(ZmmKActs)));
    if (!ka) throw std::bad_alloc();
    for (int64_t x = 0; x < nb; ++x) zmm_make_kacts(a.blocks[x], ka[x]);
    const __m512i even = _mm512_setr_epi32(0, 0, 0, 0, 2, 2, 2, 2, 4, 4, 4, 4, 6, 6, 6, 6);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    for (int64_t g = g0; g < g1; ++g) {
        __m512 S[4];
        for (auto& s : S) s = _mm512_setzero_ps();
        __m256 sumf = _mm256_setzero_ps();
        for (int64_t x = 0; x < nb; ++x) {
            const block_q4_Kx8& B = w.blocks[g * nb + x];
            uint64_t sc[8], mn[8];
            zmm_decode_scales(B.scales, sc, mn);
            const __m256i sumi = zmm_min_term(mn, a.msum + x * 8);
            const __m256 yd = _mm256_set1_ps(a.blocks[x].d);
            const __m256 dv =
                _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(B.d))), yd);
            const __m256 dmv =
                _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(B.dmin))), yd);
            sumf = _mm256_sub_ps(sumf, _mm256_mul_ps(dmv, _mm256_cvtepi32_ps(sumi)));
            __m512i p[4];
            zmm_q4kx8_aux(B, ka[x], sc, p);
            const __m512 d02 = _mm512_permutexvar_ps(even, _mm512_castps256_ps512(dv));
            const __m512 d13 = _mm512_permutexvar_ps(odd, _mm512_castps256_ps512(dv));
            S[0] = _mm512_add_ps(S[0], _mm512_mul_ps(d02, _mm512_cvtepi32_ps(p[0])));
            S[1] = _mm512_add_ps(S[1], _mm512_mul_ps(d02, _mm512_cvtepi32_ps(p[1])));
            S[2] = _mm512_add_ps(S[2], _mm512_mul_ps(d13, _mm512_cvtepi32_ps(p[2])));
            S[3] = _mm512_add_ps(S[3], _mm512_mul_ps(d13, _mm512_cvtepi32_ps(p[3])));
        }
        alignas(64) float s[4][16];
        for (int i = 0; i < 4; ++i) _mm512_store_ps(s[i], S[i]);
        alignas(32) float sf[8];
        _mm256_store_ps(sf, sumf);
        for (int r = 0; r < 8; ++r) {
            const int lane = r / 2, odd_row = r % 2;
            float t = sf[r];
            for (int l = 0; l < 8; ++l) t += s[2 * odd_row + l / 4][4 * lane + l % 4];
            y[g * 8 + r] = t;
        }
    }
    std::free(ka);
}

}  // namespace
}  // namespace oiw::matmul

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
