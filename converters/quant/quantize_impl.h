// Internal declarations shared by quantize.cpp (chunk driver, legacy, Q1_0 and IQ4 quants),
// quantize_k.cpp (k-quants and the shared scale-search helpers), quantize_ternary_fp4.cpp (TQ1_0,
// TQ2_0, MXFP4), quantize_lattice.cpp (lattice i-quants), kernels.cpp (the kernel table) and
// x86/quantize_avx2.cpp (the AVX2 kernels).
//
// Everything here transcribes ggml-quants.c (ggml 0.11.1) operation for operation: the same
// float expressions in the same order, the same integer narrowing, the same tie-breaking.
// Builds use -fno-fast-math -ffp-contract=off, so each C expression rounds exactly as in ggml.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "libformat/fp16.h"

namespace oiw::quant {

// Blocks whose largest |x| is below this count as all-zero (ggml's GROUP_MAX_EPS).
inline constexpr float kGroupMaxEps = 1e-15f;

// Round to nearest, ties to even, via the 1.5 * 2^23 magic number; valid for |f| <= 4194303
// (outside that range the result is garbage exactly as in ggml's nearest_int).
inline int nearest_int(float f) {
    const float v = f + 12582912.f;
    int32_t i;
    std::memcpy(&i, &v, sizeof(i));
    return (i & 0x007fffff) - 0x00400000;
}

// ggml's MAX macro for floats: `a > b ? a : b` (differs from std::max on signed zeros and NaN).
inline float max_f(float a, float b) { return a > b ? a : b; }
// Clamp an int to [lo, hi] as MAX(lo, MIN(hi, v)).
inline int clamp_i(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

// Value of largest magnitude among n floats (the first on ties; 0 if all are 0) as ggml's
// `if (ax > amax) { amax = ax; max = x[i]; }` scan; amax gets its magnitude.
inline float signed_absmax(const float* x, int n, float& amax) {
    float max = 0;
    amax = 0;
    for (int i = 0; i < n; ++i) {
        const float ax = std::fabs(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    return max;
}

// Sum of squares of n floats, accumulated left to right.
inline float sum_squares(const float* x, int64_t n) {
    float s = 0;
    for (int64_t i = 0; i < n; ++i) s += x[i] * x[i];
    return s;
}

// Packs six-bit scale ls and min lm of sub-block j into the 12-byte Q4_K/Q5_K layout
// (call for j = 0..7 in order, on pre-zeroed bytes).
inline void set_scale_min_k4(uint8_t* scales, int j, uint8_t ls, uint8_t lm) {
    if (j < 4) {
        scales[j] = ls;
        scales[j + 4] = lm;
    } else {
        scales[j + 4] = static_cast<uint8_t>((ls & 0xF) | ((lm & 0xF) << 4));
        scales[j - 4] |= static_cast<uint8_t>((ls >> 4) << 6);
        scales[j - 0] |= static_cast<uint8_t>((lm >> 4) << 6);
    }
}

// E8M0 scale halved (ggml_e8m0_to_fp32_half, MXFP4's kvalues are doubled): 2^(e-128), built
// directly from bits.
inline float e8m0_to_fp32_half(uint8_t e) {
    const uint32_t bits = e < 2 ? (0x00200000u << e) : (static_cast<uint32_t>(e - 1) << 23);
    return f32_from_bits(bits);
}

// Unsigned E4M3 scale halved (ggml_ue4m3_to_fp32: NVFP4's kvalues are doubled); 0x00 and 0x7F
// (NaN) decode to 0.
//   bit 7 ignored | bits 6..3 exponent (bias 7) | bits 2..0 mantissa
inline float ue4m3_to_fp32_half(uint8_t x) {
    if (x == 0 || x == 0x7F) return 0.0f;
    const int exp = (x >> 3) & 0xF;
    const int man = x & 0x7;
    const float raw =
        exp == 0 ? std::ldexp(static_cast<float>(man), -9) : std::ldexp(1.0f + static_cast<float>(man) / 8.0f, exp - 7);
    return raw * 0.5f;
}

// quantize_row_q{4,5}_K_ref: the six-bit scales and mins of the 8 sub-blocks,
// min(nearest_int(63 / max * v), 63), packed into the 12-byte layout.
inline void pack_k4_scales_ref(const float* scales, const float* mins, float max_scale, float max_min,
                               uint8_t* packed) {
    const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    for (int j = 0; j < 8; ++j) {
        uint8_t ls = static_cast<uint8_t>(nearest_int(inv_scale * scales[j]));
        uint8_t lm = static_cast<uint8_t>(nearest_int(inv_min * mins[j]));
        ls = ls < 63 ? ls : 63;
        lm = lm < 63 ? lm : 63;
        set_scale_min_k4(packed, j, ls, lm);
    }
}

// Stores Q3_K six-bit scale `l` (0..63) of sub-block j into the 12 packed bytes (pre-zeroed).
inline void set_q3_scale(uint8_t* scales, int j, int l) {
    if (j < 8) {
        scales[j] = static_cast<uint8_t>(l & 0xF);
    } else {
        scales[j - 8] |= static_cast<uint8_t>((l & 0xF) << 4);
    }
    l >>= 4;
    scales[j % 4 + 8] |= static_cast<uint8_t>(l << (2 * (j / 4)));
}

// Signed Q3_K scale of sub-block j (-32..31).
inline int8_t get_q3_scale(const uint8_t* scales, int j) {
    int8_t sc = static_cast<int8_t>(j < 8 ? scales[j] & 0xF : scales[j - 8] >> 4);
    sc = static_cast<int8_t>((sc | (((scales[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32);
    return sc;
}

// Runs `fn(x, y, qw)` over every block of `block_size` floats of every row, qw being the
// row-relative slice of imatrix for that block (or null). Returns bytes written.
template <typename Block, typename Fn>
size_t for_each_block(const float* src, void* dst, int64_t nrows, int64_t n_per_row, int block_size,
                      const float* imatrix, Fn fn) {
    const int64_t nb = n_per_row / block_size;
    Block* y = static_cast<Block*>(dst);
    for (int64_t row = 0; row < nrows; ++row) {
        for (int64_t i = 0; i < nb; ++i) {
            fn(src + row * n_per_row + i * block_size, y[row * nb + i], imatrix ? imatrix + block_size * i : nullptr);
        }
    }
    return static_cast<size_t>(nrows * nb) * sizeof(Block);
}

// Symmetric search of a scale for n values into levels [-nmax, nmax-1]; L gets level + nmax.
// rmse_type 0: plain max scaling; 1: x^2 weights; 2: unit; 3: |x|; 4+: sqrt|x|; negative: one
// refinement step only. qw (if non-null) replaces the weights. Returns the scale.
float make_qx_quants(int n, int nmax, const float* x, int8_t* L, int rmse_type, const float* qw);
// Q3_K reference scale search over levels [-nmax, nmax-1]; L gets level + nmax.
float make_q3_quants(int n, int nmax, const float* x, int8_t* L, bool do_rmse);
// Weighted asymmetric (scale, min) fit over levels [0, nmax], trying nstep+1 scale offsets
// rmin + rdelta*is; use_mad selects |err| over err^2. *the_min gets -min. Laux: n scratch bytes.
float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* the_min, uint8_t* Laux,
                       float rmin, float rdelta, int nstep, bool use_mad);
// As make_qkx2_quants but weights may be null (then x^2) and degenerate ranges are handled.
float make_qkx3_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* the_min, uint8_t* Laux,
                       float rmin, float rdelta, int nstep, bool use_mad);
// Weighted positive-only scale for n non-negative values into levels [0, nmax]. Returns the scale.
float make_qp_quants(int n, int nmax, const float* x, uint8_t* L, const float* quant_weights);

// Chunk quantizers, the kernel table's reference `quantize` entries (QuantizeFn): `nrows` rows of
// `n_per_row` floats (a multiple of the block size, checked by the caller) into dst, mirroring
// ggml's quantize_<type>(src, dst, nrows, n_per_row, imatrix). Return bytes written.
// quantize.cpp:
size_t quantize_f16(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);
size_t quantize_bf16(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);
size_t quantize_q4_0(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);
size_t quantize_q4_1(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);
size_t quantize_q5_0(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);
size_t quantize_q5_1(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);
size_t quantize_q8_0(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);
size_t quantize_q1_0(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);
size_t quantize_iq4_nl(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);
size_t quantize_iq4_xs(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);
// quantize_k.cpp:
size_t quantize_q2_K(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);
size_t quantize_q3_K(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);
size_t quantize_q4_K(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);
size_t quantize_q5_K(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);
size_t quantize_q6_K(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);
// quantize_ternary_fp4.cpp:
size_t quantize_tq1_0(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);
size_t quantize_tq2_0(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);
size_t quantize_mxfp4(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);
// quantize_lattice.cpp (IQ2_XXS, IQ2_XS and IQ1_S expect a non-null imatrix):
size_t quantize_iq3_xxs(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);
size_t quantize_iq3_s(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);
size_t quantize_iq2_xxs(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);
size_t quantize_iq2_xs(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);
size_t quantize_iq2_s(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);
size_t quantize_iq1_s(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);
size_t quantize_iq1_m(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);

// Decision thresholds of the IQ4_NL levels: the reference's best_index_int8(16, kvalues_iq4nl, x)
// equals the number of k in 0..14 with !(x < t[k]).
const float* iq4nl_thresholds();
// Index of the IQ4_NL level nearest to x (best_index_int8 on kvalues_iq4nl) from the thresholds.
int iq4nl_best_index(float x);

}  // namespace oiw::quant
