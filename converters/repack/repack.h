// Lossless block re-layouts between GGUF types and OIW4 encodings (scalar; memory-bound):
//   Q4_K <-> block_q4_Kx8 (ggml-cpu repack.cpp make_block_q4_Kx8, interleave 8 or 4),
//   Q4_0 <-> oiw4 planes (qs: 16 bytes per 32 weights as in Q4_0; d: fp32 scale per block),
// and the oiw4 quantizer (Q4_0's rounding with the fp32 scale kept).
#pragma once
#include <cstdint>

#include "libformat/blocks.h"

namespace oiw {

// Repacks `rows` Q4_K rows of `blocks_per_row` blocks (rows % 8 == 0, row-major) into
// rows/8 x blocks_per_row block_q4_Kx8, in (row group, block column) order. `interleave` is 8
// (x86 AVX2, candle) or 4 (ARM dotprod); any other value means 8. Byte-identical to ggml's
// repack_q4_K_to_q4_K_8_bl.
void repack_q4_k_to_q4_kx8(const block_q4_K* src, block_q4_Kx8* dst, int64_t rows, int64_t blocks_per_row,
                           int interleave);
// Exact inverse of repack_q4_k_to_q4_kx8 (same arguments, directions swapped).
void unpack_q4_kx8_to_q4_k(const block_q4_Kx8* src, block_q4_K* dst, int64_t rows, int64_t blocks_per_row,
                           int interleave);

// Splits `n` Q4_0 blocks into the oiw4 planes: qs[16*i..] = src[i].qs, d[i] = fp32(src[i].d) (exact).
void q4_0_to_oiw4(const block_q4_0* src, uint8_t* qs, float* d, int64_t n);
// Joins oiw4 planes into Q4_0 blocks (d rounded to fp16). Returns the largest |d - fp32(fp16(d))|
// over the blocks: 0 when every scale is exact in fp16 (then the inverse of q4_0_to_oiw4).
float oiw4_to_q4_0(const uint8_t* qs, const float* d, block_q4_0* dst, int64_t n);

// Quantizes `n` blocks of 32 floats to oiw4 with Q4_0's rounding (d = signed absmax / -8,
// q = min(15, int(x/d + 8.5))), keeping d in fp32: the qs bytes equal quantize_chunk(Q4_0)'s and
// fp16(d) equals its scale.
void quantize_oiw4(const float* x, uint8_t* qs, float* d, int64_t n);

}  // namespace oiw
