// Internal entry points of quantize_iq.cpp, called by the quantize_chunk dispatcher (quantize.cpp):
// the ternary quants (TQ1_0, TQ2_0), MXFP4, and the lattice i-quants (IQ3_XXS, IQ3_S, IQ2_XXS,
// IQ2_XS, IQ2_S, IQ1_S, IQ1_M), byte-identical to ggml_quantize_chunk (ggml 0.11.1).
#pragma once
#include <cstddef>
#include <cstdint>

#include "libformat/types.h"

namespace oiw::quant {

// True when quantize_iq implements `t`.
bool iq_can_quantize(GgmlType t);

// quantize_chunk for a type iq_can_quantize accepts. The caller has checked the shape
// (n_per_row a multiple of the block size). Throws FormatError(Usage) when ggml requires
// importance weights for `t` (IQ2_XXS, IQ2_XS, IQ1_S) and imatrix is null. Returns bytes written.
size_t quantize_iq(GgmlType t, const float* src, void* dst, int64_t nrows, int64_t n_per_row,
                   const float* imatrix);

}  // namespace oiw::quant
