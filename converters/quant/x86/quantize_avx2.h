// The AVX2 + F16C kernels (quantize_avx2.cpp, built only for x86-64 with -mavx2 -mf16c). Call
// them only when dispatch.cpp found both features on the CPU.
#pragma once
#include <cstdint>
#include <span>

#include "converters/quant/kernels.h"
#include "converters/quant/lattice.h"

namespace oiw::avx2 {

// The optimized quantizers of this ISA, by type (each byte-identical to the reference).
std::span<const IsaKernel> quantizers();
// The lattice i-quant loops (quantize_iq_avx2.cpp), byte-identical to reference_lattice_kernels().
const quant::LatticeKernels& lattice_kernels();
// A lattice i-quant row (quant::quantize_lattice_row) with loops k, refusing (false) the rows and
// importance weights the AVX2 kernels refuse (non-finite, or beyond 2^48 in magnitude).
bool lattice_row(GgmlType t, const quant::LatticeKernels& k, const float* x, void* dst, int64_t n,
                 const float* imatrix);
// Converts n IEEE halves to floats with F16C, bit-exact with fp16_to_fp32.
void f16_to_f32(const uint16_t* src, float* dst, int64_t n);

}  // namespace oiw::avx2
