// Optimized (AVX2 + F16C) quantizers, byte-identical to the scalar reference in quantize.cpp /
// quantize_k.cpp. quantize_chunk routes here first; tests pin every fast path to
// quantize_chunk_ref byte for byte.
//
// How the exactness is kept: every SIMD lane runs the reference's float operation sequence for
// one independent unit (a K-quant sub-block, a 32-element block), so each lane rounds exactly as
// the scalar code; sequential sums stay sequential per lane; comparisons use the predicates whose
// NaN behaviour matches the C operators; no fused multiply-add is ever used. Rows holding a
// non-finite value or one beyond 2^48 in magnitude (and chunks whose importance weights do) go
// to the reference unchanged.
#pragma once
#include <cstddef>
#include <cstdint>

#include "libformat/types.h"

namespace oiw {

// Converts n IEEE halves to floats, bit-exact with fp16_to_fp32 (NaN payloads included);
// uses F16C when the CPU has it.
void convert_f16_to_f32(const uint16_t* src, float* dst, int64_t n);

namespace fast {

// True when the CPU runs the AVX2/F16C kernels (otherwise nothing here is used).
bool available();
// True when quantize_chunk(t, ..., imatrix) takes an optimized path on this CPU.
bool has_fast_path(GgmlType t, bool with_imatrix);
// Quantizes like quantize_chunk_ref when (t, imatrix) has a fast path and the shape is valid:
// stores the bytes written in *written and returns true. Otherwise writes nothing and returns
// false (the caller runs the reference, which also reports shape errors).
bool try_quantize_chunk(GgmlType t, const float* src, void* dst, int64_t nrows, int64_t n_per_row,
                        const float* imatrix, size_t* written);

// Index of the IQ4_NL level nearest to x (the reference's best_index_int8 on kvalues_iq4nl),
// computed branchlessly; exposed for tests.
int iq4nl_best_index(float x);

}  // namespace fast
}  // namespace oiw
