// The 256-bit GEMV kernels, shared by gemv_avx2.cpp (-mavx2 -mf16c) and gemv_avxvnni.cpp (the same
// plus -mavxvnni). The including file's flags choose the integer dot: with __AVXVNNI__ the
// VEX-encoded vpdpbusd / vpdpwssd, else maddubs + madd; the integer sums are exact either way and
// the float lanes are the scalar reference's (w4a8.h), so both give its bits. No FMA.
// Internal linkage on purpose (see row_split.h): each ISA file instantiates its own copy.
#pragma once
#include <immintrin.h>

#include <cstdlib>
#include <cstring>
#include <new>

#include "converters/matmul/x86/gemv_x86.h"
#include "converters/matmul/x86/row_split.h"

namespace oiw::matmul {
namespace {  // NOLINT(google-build-namespaces): see above

// ggml's hsum_float_8: ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)), as hsum8().
inline float ymm_hsum(__m256 x) {
    __m128 r = _mm_add_ps(_mm256_extractf128_ps(x, 1), _mm256_castps256_ps128(x));
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    r = _mm_add_ss(r, _mm_movehdup_ps(r));
    return _mm_cvtss_f32(r);
}

// 32 unsigned nibbles of one block in element order (low nibbles, then high nibbles).
inline __m256i ymm_nibbles(const uint8_t* q) {
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
    const __m256i both = _mm256_set_m128i(_mm_srli_epi16(raw, 4), raw);
    return _mm256_and_si256(both, _mm256_set1_epi8(0x0F));
}

// 8 int32 lanes: lane k = sum of w[4k..4k+3] (unsigned) * x[4k..4k+3] (signed), exact.
inline __m256i ymm_dot4(__m256i w, __m256i x) {
#if defined(__AVXVNNI__)
    return _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), w, x);
#else
    return _mm256_madd_epi16(_mm256_maddubs_epi16(w, x), _mm256_set1_epi16(1));
#endif
}

// acc + pairwise products of int16 a and b (madd), exact.
inline __m256i ymm_add_madd(__m256i acc, __m256i a, __m256i b) {
#if defined(__AVXVNNI__)
    return _mm256_dpwssd_avx_epi32(acc, a, b);
#else
    return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b));
#endif
}

// The block's 8 lane integers: sum(q * a) - 8 * sum(a) per 4 elements.
inline __m256 ymm_lanes(__m256i w, const int8_t* x, const int32_t* c8) {
    const __m256i s = ymm_dot4(w, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x)));
    return _mm256_cvtepi32_ps(_mm256_sub_epi32(s, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c8))));
}

// One oiw4-like row (qs at 16 bytes per block, scale of block b from dscale(b)) with NV vectors.
template <int NV, typename DScale>
inline void ymm_row_nv(const uint8_t* qs, DScale dscale, const ActView* acts, int64_t nb, float* out) {
    __m256 acc[NV];
    for (int v = 0; v < NV; ++v) acc[v] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const __m256i w = ymm_nibbles(qs + b * 16);
        const __m256 dw = _mm256_set1_ps(dscale(b));
#pragma GCC unroll 8  // fully unrolled: NV = 2 otherwise ran at 60% of NV = 1's speed
        for (int v = 0; v < NV; ++v) {
            const ActView& a = acts[v];
            const __m256 s = _mm256_mul_ps(dw, _mm256_broadcast_ss(a.d + b));
            acc[v] = _mm256_add_ps(acc[v], _mm256_mul_ps(ymm_lanes(w, a.qs + b * 32, a.c8 + b * 8), s));
        }
    }
    for (int v = 0; v < NV; ++v) out[v] = ymm_hsum(acc[v]);
}

// Two oiw4 rows sharing each activation load.
inline void ymm_rows2(const uint8_t* q0, const float* d0, const uint8_t* q1, const float* d1, const ActView& a,
                      int64_t nb, float* y0, float* y1) {
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.qs + b * 32));
        const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.c8 + b * 8));
        const __m256 da = _mm256_broadcast_ss(a.d + b);
        const __m256i s0 = ymm_dot4(ymm_nibbles(q0 + b * 16), x);
        const __m256i s1 = ymm_dot4(ymm_nibbles(q1 + b * 16), x);
        const __m256 f0 = _mm256_cvtepi32_ps(_mm256_sub_epi32(s0, c));
        const __m256 f1 = _mm256_cvtepi32_ps(_mm256_sub_epi32(s1, c));
        acc0 = _mm256_add_ps(acc0, _mm256_mul_ps(f0, _mm256_mul_ps(_mm256_broadcast_ss(d0 + b), da)));
        acc1 = _mm256_add_ps(acc1, _mm256_mul_ps(f1, _mm256_mul_ps(_mm256_broadcast_ss(d1 + b), da)));
    }
    *y0 = ymm_hsum(acc0);
    *y1 = ymm_hsum(acc1);
}

template <int NV>
void ymm_oiw4_rows_nv(const Oiw4Planes& w, const ActView* acts, float* y, int64_t r0, int64_t r1) {
    const int64_t nb = (w.cols / 32);
    for (int64_t r = r0; r < r1; ++r) {
        const float* d = w.d + r * nb;
        float out[NV];
        ymm_row_nv<NV>(
            w.qs + r * nb * 16, [d](int64_t b) { return d[b]; }, acts, nb, out);
        for (int v = 0; v < NV; ++v) y[v * w.rows + r] = out[v];
    }
}

// oiw4 rows [r0, r1) (gemv_x86.h's oiw4_rows).
void ymm_oiw4_rows(const Oiw4Planes& w, const ActView* acts, int nvec, float* y, int64_t r0, int64_t r1, bool two_row) {
    const int64_t nb = (w.cols / 32);
    split_rows(
        nvec, two_row, r0, r1,
        [&](auto nv, int64_t a, int64_t b) { ymm_oiw4_rows_nv<decltype(nv)::value>(w, acts, y, a, b); },
        [&](int64_t i, int64_t j) {
            ymm_rows2(w.qs + i * nb * 16, w.d + i * nb, w.qs + j * nb * 16, w.d + j * nb, acts[0], nb, &y[i], &y[j]);
        });
}

// Q4_0 rows [r0, r1) (gemv_x86.h's q4_0_rows).
void ymm_q4_0_rows(const block_q4_0* w, int64_t cols, const ActView& a, float* y, int64_t r0, int64_t r1) {
    const int64_t nb = cols / 32;
    for (int64_t r = r0; r < r1; ++r) {
        const block_q4_0* row = w + r * nb;
        __m256 acc = _mm256_setzero_ps();
        for (int64_t b = 0; b < nb; ++b) {
            const __m256i q = ymm_nibbles(row[b].qs);
            const __m256 s = _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(row[b].d)), _mm256_broadcast_ss(a.d + b));
            acc = _mm256_add_ps(acc, _mm256_mul_ps(ymm_lanes(q, a.qs + b * 32, a.c8 + b * 8), s));
        }
        y[r] = ymm_hsum(acc);
    }
}

// ---- Q4_Kx8 (see docs/matmul.md): per row, 8 int32 lanes by position class (element index mod
// 8) exactly as ggml's aux32[8], then sums[l] += d * aux32[l]; the min term per row in fp32.

// Activation patterns of one super-block: for chunk c (0..15, j = c/4, k = c%4),
// lo[c] = [a(64j+8k+p), 0] pairs and hi[c] = [0, a(64j+32+8k+p)] pairs, p = 0..7, both lanes.
struct YmmKActs {
    __m256i lo[16], hi[16];
};

void ymm_make_kacts(const block_q8_K& y, YmmKActs& k) {
    for (int c = 0; c < 16; ++c) {
        const int j = c / 4, kk = c % 4;
        alignas(16) int8_t l[16], h[16];
        for (int p = 0; p < 8; ++p) {
            l[2 * p] = y.qs[64 * j + 8 * kk + p];
            l[2 * p + 1] = 0;
            h[2 * p] = 0;
            h[2 * p + 1] = y.qs[64 * j + 32 + 8 * kk + p];
        }
        const __m128i lv = _mm_load_si128(reinterpret_cast<const __m128i*>(l));
        const __m128i hv = _mm_load_si128(reinterpret_cast<const __m128i*>(h));
        k.lo[c] = _mm256_set_m128i(lv, lv);
        k.hi[c] = _mm256_set_m128i(hv, hv);
    }
}

// Six-bit scales (sc) and mins (mn) of one block_q4_Kx8: byte r of sc[sb] is row r's scale.
inline void ymm_decode_scales(const uint8_t* scales, uint64_t sc[8], uint64_t mn[8]) {
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
inline __m256i ymm_byte_pairs(uint64_t a, uint64_t b) {
    return _mm256_cvtepu8_epi16(
        _mm_unpacklo_epi8(_mm_cvtsi64_si128(static_cast<long long>(a)), _mm_cvtsi64_si128(static_cast<long long>(b))));
}

// Min term, lanes = rows: sumi[r] = sum_s msum[s] * mn[s][r] (exact).
inline __m256i ymm_min_term(const uint64_t mn[8], const int32_t* msum) {
    __m256i sumi = _mm256_setzero_si256();
    for (int t = 0; t < 4; ++t) {
        const uint32_t ms =
            static_cast<uint16_t>(msum[2 * t]) | (static_cast<uint32_t>(static_cast<uint16_t>(msum[2 * t + 1])) << 16);
        sumi = ymm_add_madd(sumi, ymm_byte_pairs(mn[2 * t], mn[2 * t + 1]), _mm256_set1_epi32(static_cast<int>(ms)));
    }
    return sumi;
}

// Rows 4h..4h+3 of one super-block: sums[r][l] += d_r * aux32_r[l].
inline void ymm_q4kx8_half(const block_q4_Kx8& B, const YmmKActs& ka, const __m256i spair[4], const float dr[8], int h,
                           float sums[8][8]) {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256i pa02 = _mm256_setzero_si256(), pb02 = pa02, pa13 = pa02, pb13 = pa02;
    const __m256i idx02 = _mm256_setr_epi32(4 * h, 4 * h, 4 * h, 4 * h, 4 * h + 2, 4 * h + 2, 4 * h + 2, 4 * h + 2);
    const __m256i idx13 = _mm256_add_epi32(idx02, _mm256_set1_epi32(1));
    for (int j = 0; j < 4; ++j) {
        __m256i l02 = _mm256_setzero_si256(), h02 = l02, l13 = l02, h13 = l02;
        for (int k = 0; k < 4; ++k) {
            const int c = 4 * j + k;
            const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(B.qs + c * 64 + h * 32));
            const __m256i lo = _mm256_and_si256(v, m4);
            const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
            const __m256i u02 = _mm256_unpacklo_epi8(lo, hi), u13 = _mm256_unpackhi_epi8(lo, hi);
            l02 = _mm256_add_epi16(l02, _mm256_maddubs_epi16(u02, ka.lo[c]));
            h02 = _mm256_add_epi16(h02, _mm256_maddubs_epi16(u02, ka.hi[c]));
            l13 = _mm256_add_epi16(l13, _mm256_maddubs_epi16(u13, ka.lo[c]));
            h13 = _mm256_add_epi16(h13, _mm256_maddubs_epi16(u13, ka.hi[c]));
        }
        const __m256i s02 = _mm256_permutevar8x32_epi32(spair[j], idx02);
        const __m256i s13 = _mm256_permutevar8x32_epi32(spair[j], idx13);
        pa02 = ymm_add_madd(pa02, _mm256_unpacklo_epi16(l02, h02), s02);
        pb02 = ymm_add_madd(pb02, _mm256_unpackhi_epi16(l02, h02), s02);
        pa13 = ymm_add_madd(pa13, _mm256_unpacklo_epi16(l13, h13), s13);
        pb13 = ymm_add_madd(pb13, _mm256_unpackhi_epi16(l13, h13), s13);
    }
    const __m256i rows[4] = {_mm256_permute2x128_si256(pa02, pb02, 0x20), _mm256_permute2x128_si256(pa13, pb13, 0x20),
                             _mm256_permute2x128_si256(pa02, pb02, 0x31), _mm256_permute2x128_si256(pa13, pb13, 0x31)};
    for (int i = 0; i < 4; ++i) {
        const int r = 4 * h + i;
        const __m256 s = _mm256_load_ps(sums[r]);
        _mm256_store_ps(sums[r], _mm256_add_ps(s, _mm256_mul_ps(_mm256_set1_ps(dr[r]), _mm256_cvtepi32_ps(rows[i]))));
    }
}

// Rows [8 * g0, 8 * g1) of a Q4_Kx8 view (gemv_x86.h's q4kx8_groups).
void ymm_q4kx8_groups(const Q4Kx8View& w, const KActView& a, float* y, int64_t g0, int64_t g1) {
    const int64_t nb = w.cols / 256;
    if (nb == 0) {  // empty rows: the reference's sum of nothing
        for (int64_t r = g0 * 8; r < g1 * 8; ++r) y[r] = 0.f;
        return;
    }
    // Raw aligned buffer: no library template is instantiated under ISA flags (see gemv_x86.h).
    auto* ka = static_cast<YmmKActs*>(std::aligned_alloc(32, static_cast<size_t>(nb) * sizeof(YmmKActs)));
    if (!ka) throw std::bad_alloc();
    for (int64_t x = 0; x < nb; ++x) ymm_make_kacts(a.blocks[x], ka[x]);
    for (int64_t g = g0; g < g1; ++g) {
        alignas(32) float sums[8][8] = {};
        __m256 sumf = _mm256_setzero_ps();
        for (int64_t x = 0; x < nb; ++x) {
            const block_q4_Kx8& B = w.blocks[g * nb + x];
            uint64_t sc[8], mn[8];
            ymm_decode_scales(B.scales, sc, mn);
            const __m256i sumi = ymm_min_term(mn, a.msum + x * 8);
            const __m256 yd = _mm256_set1_ps(a.blocks[x].d);
            const __m256 dv =
                _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(B.d))), yd);
            const __m256 dmv =
                _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(B.dmin))), yd);
            sumf = _mm256_sub_ps(sumf, _mm256_mul_ps(dmv, _mm256_cvtepi32_ps(sumi)));
            alignas(32) float dr[8];
            _mm256_store_ps(dr, dv);
            // Scale pairs per j: 32-bit element r = (sc[2j][r], sc[2j+1][r]) as int16.
            __m256i spair[4];
            for (int j = 0; j < 4; ++j) spair[j] = ymm_byte_pairs(sc[2 * j], sc[2 * j + 1]);
            for (int h = 0; h < 2; ++h) ymm_q4kx8_half(B, ka[x], spair, dr, h, sums);  // h: 32-byte slot of a chunk
        }
        alignas(32) float sf[8];
        _mm256_store_ps(sf, sumf);
        for (int r = 0; r < 8; ++r) {
            float s = sf[r];
            for (int l = 0; l < 8; ++l) s += sums[r][l];
            y[g * 8 + r] = s;
        }
    }
    std::free(ka);
}

}  // namespace
}  // namespace oiw::matmul
