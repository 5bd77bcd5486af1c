// AVX1-only oiw4 GEMV (Sandy Bridge): built with -mavx and nothing newer. Integer work stays on
// 128-bit registers (SSSE3 maddubs, VEX-encoded); 256-bit registers only carry floats
// (vcvtdq2ps, vmulps, vaddps; vinsertf128 to join halves). No FMA. A test disassembles this
// object and fails on any vfmadd* or integer instruction on a %ymm register.
#include <immintrin.h>

#include "converters/matmul/x86/gemv_x86.h"
#include "converters/matmul/x86/row_split.h"

namespace oiw::matmul::avx1 {
namespace {

inline float hsum(__m256 x) {
    __m128 r = _mm_add_ps(_mm256_extractf128_ps(x, 1), _mm256_castps256_ps128(x));
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    r = _mm_add_ss(r, _mm_movehdup_ps(r));
    return _mm_cvtss_f32(r);
}

// Block nibbles: lo = weights 0..15, hi = weights 16..31.
struct Nibbles {
    __m128i lo, hi;
};
inline Nibbles nibbles(const uint8_t* q) {
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
    const __m128i m4 = _mm_set1_epi8(0x0F);
    return {_mm_and_si128(raw, m4), _mm_and_si128(_mm_srli_epi16(raw, 4), m4)};
}

// The block's 8 lane integers (sum(q * a) - 8 * sum(a) per 4 elements) as 8 floats.
inline __m256 lanes(const Nibbles& w, const int8_t* x, const int32_t* c8) {
    const __m128i ones = _mm_set1_epi16(1);
    const __m128i xl = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x));
    const __m128i xh = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + 16));
    const __m128i sl = _mm_sub_epi32(_mm_madd_epi16(_mm_maddubs_epi16(w.lo, xl), ones),
                                     _mm_loadu_si128(reinterpret_cast<const __m128i*>(c8)));
    const __m128i sh = _mm_sub_epi32(_mm_madd_epi16(_mm_maddubs_epi16(w.hi, xh), ones),
                                     _mm_loadu_si128(reinterpret_cast<const __m128i*>(c8 + 4)));
    return _mm256_cvtepi32_ps(_mm256_insertf128_si256(_mm256_castsi128_si256(sl), sh, 1));
}

template <int NV>
void rows_nv(const Oiw4Planes& w, const ActView* acts, float* y, int64_t r0, int64_t r1) {
    const int64_t nb = w.cols / 32;
    for (int64_t r = r0; r < r1; ++r) {
        const uint8_t* qs = w.qs + r * nb * 16;
        const float* d = w.d + r * nb;
        __m256 acc[NV];
        for (int v = 0; v < NV; ++v) acc[v] = _mm256_setzero_ps();
        for (int64_t b = 0; b < nb; ++b) {
            const Nibbles q = nibbles(qs + b * 16);
            const __m256 dw = _mm256_broadcast_ss(d + b);
#pragma GCC unroll 8
            for (int v = 0; v < NV; ++v) {
                const ActView& a = acts[v];
                const __m256 s = _mm256_mul_ps(dw, _mm256_broadcast_ss(a.d + b));
                acc[v] = _mm256_add_ps(acc[v], _mm256_mul_ps(lanes(q, a.qs + b * 32, a.c8 + b * 8), s));
            }
        }
        for (int v = 0; v < NV; ++v) y[v * w.rows + r] = hsum(acc[v]);
    }
}

// Rows r and s sharing the activation loads (the compiler keeps x and c8 in registers).
void rows2(const Oiw4Planes& w, const ActView& a, float* y, int64_t r, int64_t s) {
    const int64_t nb = w.cols / 32;
    const uint8_t* q0 = w.qs + r * nb * 16;
    const uint8_t* q1 = w.qs + s * nb * 16;
    const float* d0 = w.d + r * nb;
    const float* d1 = w.d + s * nb;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const __m256 da = _mm256_broadcast_ss(a.d + b);
        const __m256 f0 = lanes(nibbles(q0 + b * 16), a.qs + b * 32, a.c8 + b * 8);
        const __m256 f1 = lanes(nibbles(q1 + b * 16), a.qs + b * 32, a.c8 + b * 8);
        acc0 = _mm256_add_ps(acc0, _mm256_mul_ps(f0, _mm256_mul_ps(_mm256_broadcast_ss(d0 + b), da)));
        acc1 = _mm256_add_ps(acc1, _mm256_mul_ps(f1, _mm256_mul_ps(_mm256_broadcast_ss(d1 + b), da)));
    }
    y[r] = hsum(acc0);
    y[s] = hsum(acc1);
}

}  // namespace

void oiw4_rows(const Oiw4Planes& w, const ActView* acts, int nvec, float* y, int64_t r0, int64_t r1, bool two_row) {
    split_rows(
        nvec, two_row, r0, r1, [&](auto nv, int64_t a, int64_t b) { rows_nv<decltype(nv)::value>(w, acts, y, a, b); },
        [&](int64_t i, int64_t j) { rows2(w, acts[0], y, i, j); });
}

}  // namespace oiw::matmul::avx1
