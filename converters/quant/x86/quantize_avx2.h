// The AVX2 + F16C kernels (quantize_avx2.cpp, built only for x86-64 with -mavx2 -mf16c). Call
// them only when dispatch.cpp found both features on the CPU.
#pragma once
#include <cstdint>
#include <span>

#include "converters/quant/kernels.h"
#include "converters/quant/lattice.h"
#include "libformat/blocks.h"

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
// True when every one of the n floats is finite with |x| <= 2^48 (the range the fast kernels are
// exact on; rows or weights outside it go to the reference).
bool in_fast_range(const float* x, int64_t n);

// What the make_qkx2/3_quants search of a K-quant super-block's sub-blocks leaves for the rest of
// the block, per sub-block: the scale, the negated min, the (iscale, min) whose levels the
// reference leaves in L when the stored scale is 0, and the weight sum (with weights only).
// Q4_K / Q5_K use the first 8 entries, Q2_K all 16.
struct QkxSearch {
    alignas(64) float scales[16], mins[16], lis[16], lmn[16], sw[16];
};
// What make_qx_quants leaves per sub-block of a Q3_K (with weights) / Q6_K super-block: the scale,
// the iscale whose levels it left in L, the all-zero mask; sw: weight sums (Q3_K).
struct QxSearch {
    alignas(64) float scales[16], iscl[16], zero[16], sw[16];
};
// The rest of a super-block at x after its scale search (s): scales, d, dmin and the levels,
// byte-identical to the reference (with_qw: the search had importance weights).
void q2_K_finish(const float* x, bool with_qw, const QkxSearch& s, block_q2_K& y);
void q4_K_finish(const float* x, bool with_qw, const QkxSearch& s, block_q4_K& y);
void q5_K_finish(const float* x, bool with_qw, const QkxSearch& s, block_q5_K& y);
// Q3_K with importance weights (quantize_row_q3_K_impl) and Q6_K.
void q3_K_finish_weighted(const float* x, const QxSearch& s, block_q3_K& y);
void q6_K_finish(const float* x, const QxSearch& s, block_q6_K& y);

// Converts n IEEE halves to floats with F16C, bit-exact with fp16_to_fp32.
void f16_to_f32(const uint16_t* src, float* dst, int64_t n);

}  // namespace oiw::avx2
