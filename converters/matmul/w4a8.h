// W4A8 operands: the oiw4 encoding's planes, Q8_0 activations unpacked for the W4A8 kernels, and
// Q4_Kx8 views; with the scalar integer reference every optimized kernel is pinned to.
//
// The 8-lane order (oiw4 and Q4_0, docs/matmul.md): block b of 32 weights contributes, to lane
// k = 0..7, the integer L[b][k] = sum over e in 4k..4k+3 of (q_e - 8) * a_e, computed as
// sum(q_e * a_e) - 8 * sum(a_e) (exact in int32); lane k accumulates acc[k] += float(L) * s_b
// with s_b = d_w[b] * d_a[b] (each product rounded to fp32, no FMA), blocks in order; the row's
// result is hsum8(acc). SIMD kernels hold acc in one 8-lane register and give the same bits.
#pragma once
#include <cstdint>
#include <vector>

#include "converters/matmul/reference.h"
#include "libformat/blocks.h"

namespace oiw::matmul {

// The oiw4 encoding at the level of its raw planes: qs = rows x (cols/32) x 16 bytes, row-major,
// byte j of a block holds weight j (low nibble) and weight j+16 (high nibble), unsigned 0..15,
// zero point 8; d = rows x (cols/32) fp32 scales; w = d * (q - 8).
struct Oiw4Planes {
    const uint8_t* qs = nullptr;
    const float* d = nullptr;
    int64_t rows = 0, cols = 0;  // cols a multiple of 32
    int64_t blocks_per_row() const { return cols / 32; }
};

// Q8_0 activations (ggml's quantize_row_q8_0_ref) unpacked for the W4A8 kernels.
struct Q8Act {
    int64_t n = 0;
    std::vector<int8_t> qs;   // n values
    std::vector<float> d;     // n/32 block scales (the Q8_0 fp16 scale, as fp32)
    std::vector<int32_t> c8;  // n/32 x 8: 8 * (a_4k + ... + a_4k+3), the zero-point correction per lane
};
// Unpacks a Q8_0 QuantizedVector; computes the per-lane sums once.
Q8Act unpack_q8_0(const QuantizedVector& q8);
// quantize_activation(Q8_0) + unpack_q8_0.
Q8Act make_q8_act(const float* x, int64_t n);

// Integer-path dot of one oiw4 row (16 * cols/32 bytes of qs, cols/32 scales) with a, lane order.
float oiw4_dot_ref(const uint8_t* qs, const float* d, const Q8Act& a);
// Exact dot of one oiw4 row with x (f64).
double oiw4_dot_exact(const uint8_t* qs, const float* d, const float* x, int64_t n);

// Q4_Kx8 (ggml's block_q4_Kx8, 8-byte interleave): rows/8 groups x cols/256 blocks, row-major.
struct Q4Kx8View {
    const block_q4_Kx8* blocks = nullptr;
    int64_t rows = 0, cols = 0;  // rows % 8 == 0, cols % 256 == 0
};
// Row r (0..7) of a Q4_Kx8 block as the block_q4_K it was packed from (inverse of ggml's
// make_block_q4_Kx8 with interleave 8).
block_q4_K q4kx8_extract(const block_q4_Kx8& b, int r);
// Q4_K's integer path (ggml's vec_dot_q4_K_q8_K_generic) for row `row` of the view.
float q4kx8_dot_ref(const Q4Kx8View& w, int64_t row, const QuantizedVector& q8k);
// Six-bit scale and min of sub-block sb (0..7) of row r (0..7) from a block_q4_Kx8 scales field.
void q4kx8_scale_min(const uint8_t* scales, int r, int sb, uint8_t* sc, uint8_t* m);

}  // namespace oiw::matmul

namespace oiw::matmul {

// Q8_K activations for the Q4_Kx8 kernels: the blocks plus per super-block sub-block sums
// msum[8 * x + s] = bsums[2s] + bsums[2s+1] (exact; Q4_K's min term is sum_s msum[s] * min_s).
struct Q8KAct {
    int64_t n = 0;
    std::vector<block_q8_K> blocks;
    std::vector<int32_t> msum;
};
// Unpacks a Q8_K QuantizedVector.
Q8KAct unpack_q8_K(const QuantizedVector& q8k);

}  // namespace oiw::matmul
