// Quantize / dequantize kernels for ggml block types: the public entry points.
// Every kernel has a plain scalar reference (ggml-quants.c semantics, bit-exact) and, where it
// pays, an optimized path that tests pin byte-identical to the reference.
#pragma once
#include <cstddef>
#include <cstdint>

#include "libformat/types.h"

namespace oiw {

// True when dequantize_row supports `t`.
bool can_dequantize(GgmlType t);
// Converts `n` elements (a multiple of t's block size) of type `t` at `src` to f32 at `dst`.
// Integer types (I8..I64) convert as values. Bit-exact with ggml's to_float. Throws on unsupported t.
void dequantize_row(GgmlType t, const void* src, float* dst, int64_t n);

// True when quantize_chunk supports `t`.
bool can_quantize(GgmlType t);
// True when ggml refuses to quantize `t` without importance weights (IQ2_XXS, IQ2_XS, IQ1_S, ...).
bool quantize_requires_imatrix(GgmlType t);
// Quantizes `nrows` rows of `n_per_row` floats into `dst` (nrows * row_size bytes), optionally
// with per-column importance weights `imatrix` (n_per_row floats, may be null).
// Byte-identical to ggml_quantize_chunk. Returns bytes written. Throws on unsupported t.
size_t quantize_chunk(GgmlType t, const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);
// The scalar reference quantize_chunk is pinned to (same contract): quantize_chunk runs the
// optimized kernels of quantize_fast.cpp when the CPU allows and falls back to this.
size_t quantize_chunk_ref(GgmlType t, const float* src, void* dst, int64_t nrows, int64_t n_per_row,
                          const float* imatrix);

}  // namespace oiw
