// Internal declarations shared by quantize.cpp (dispatcher, legacy and i-quants) and
// quantize_k.cpp (k-quants and the shared scale-search helpers).
//
// Everything here transcribes ggml-quants.c (ggml 0.11.1) operation for operation: the same
// float expressions in the same order, the same integer narrowing, the same tie-breaking.
// Builds use -fno-fast-math -ffp-contract=off, so each C expression rounds exactly as in ggml.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

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

// Symmetric search of a scale for n values into levels [-nmax, nmax-1]; L gets level + nmax.
// rmse_type 0: plain max scaling; 1: x^2 weights; 2: unit; 3: |x|; 4+: sqrt|x|; negative: one
// refinement step only. qw (if non-null) replaces the weights. Returns the scale.
float make_qx_quants(int n, int nmax, const float* x, int8_t* L, int rmse_type, const float* qw);
// Q3_K reference scale search over levels [-nmax, nmax-1]; L gets level + nmax.
float make_q3_quants(int n, int nmax, const float* x, int8_t* L, bool do_rmse);
// Iterative asymmetric (scale, min) fit with ntry rounds; *the_min gets -min. Unused by
// ggml_quantize_chunk, kept for completeness.
float make_qkx1_quants(int n, int nmax, const float* x, uint8_t* L, float* the_min, int ntry, float alpha);
// Weighted asymmetric (scale, min) fit over levels [0, nmax], trying nstep+1 scale offsets
// rmin + rdelta*is; use_mad selects |err| over err^2. *the_min gets -min. Laux: n scratch bytes.
float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* the_min,
                       uint8_t* Laux, float rmin, float rdelta, int nstep, bool use_mad);
// As make_qkx2_quants but weights may be null (then x^2) and degenerate ranges are handled.
float make_qkx3_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* the_min,
                       uint8_t* Laux, float rmin, float rdelta, int nstep, bool use_mad);
// Weighted positive-only scale for n non-negative values into levels [0, nmax]. Returns the scale.
float make_qp_quants(int n, int nmax, const float* x, uint8_t* L, const float* quant_weights);

// Chunk quantizers: `nrows` rows of `n_per_row` floats (a multiple of the block size) into dst,
// mirroring ggml's quantize_<type>(src, dst, nrows, n_per_row, imatrix). Return bytes written.
size_t quantize_q2_K(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);
size_t quantize_q3_K(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);
size_t quantize_q4_K(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);
size_t quantize_q5_K(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);
size_t quantize_q6_K(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);

}  // namespace oiw::quant
