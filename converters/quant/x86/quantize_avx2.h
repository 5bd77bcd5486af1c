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
// lattice_kernels()'s best_neighbour, iq1_s_split, iq1_m_split and sort_indices by name, so that
// another ISA's table can name them in a constant initializer.
int lattice_best_neighbour(const quant::LatticeView& g, int32_t list, const float* level_value, const float* xval,
                           const float* weight, float scale);
void lattice_iq1_s_split(const float* sumx, const float* sumw, const float* x_p, const float* x_m, quant::Iq1Split& s);
void lattice_iq1_m_split(const float* xb, const float* weight, const int* idx, const float* x_p, const float* x_m,
                         quant::Iq1Split& s);
void lattice_sort_indices(const float* xb, int n, int* idx);
// A lattice i-quant row (quant::quantize_lattice_row) with loops k, refusing (false) the rows and
// importance weights the AVX2 kernels refuse (non-finite, or beyond 2^48 in magnitude).
bool lattice_row(GgmlType t, const quant::LatticeKernels& k, const float* x, void* dst, int64_t n,
                 const float* imatrix);
// Converts n IEEE halves to floats with F16C, bit-exact with fp16_to_fp32.
void f16_to_f32(const uint16_t* src, float* dst, int64_t n);

}  // namespace oiw::avx2
