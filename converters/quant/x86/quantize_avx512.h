// The AVX-512 (F, BW, VL) quantizers (quantize_iq_avx512.cpp, quantize_k_avx512.cpp, built only
// for x86-64 with those flags): some lattice i-quants and K-quants; every other type keeps its
// AVX2 kernel. Call them only when dispatch.cpp found the features on the CPU.
#pragma once
#include <span>

#include "converters/quant/kernels.h"
#include "converters/quant/lattice.h"

namespace oiw::avx512 {

// The lattice i-quant loops (quantize_iq_avx512.cpp), byte-identical to reference_lattice_kernels().
const quant::LatticeKernels& lattice_kernels();
// The optimized quantizers of this ISA that replace AVX2 ones, by type (each byte-identical to
// the reference).
std::span<const IsaKernel> quantizers();
// The K-quant quantizers of this ISA (quantize_k_avx512.cpp) that replace AVX2 ones, by type; a
// null plain or weighted entry keeps the AVX2 kernel for that variant.
std::span<const IsaKernel> k_quantizers();

}  // namespace oiw::avx512
