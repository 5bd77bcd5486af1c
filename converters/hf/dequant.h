// Quantized Hugging Face checkpoints decoded to float as convert_hf_to_gguf.py (llama.cpp 1348f67,
// ModelBase.dequant_model's dequant_simple) decodes them: each weight element as float times its
// block's scale as float, one f32 multiply, before any permutation or output type.
//
//   quantization_config.quant_method "fp8":   W = <name>.weight (F8_E4M3 ...), S = <name>.weight_scale_inv
//   compressed-tensors "float-quantized" ...:  S = <name>.weight_scale
//
//   W [R, C], S [ceil(R / b0), ceil(C / b1)] with weight_block_size [b0, b1] (block_structure):
//
//        C columns
//     +-----b1-----+-----b1-----+--+       element (r, c) = float(W[r][c]) * float(S[r / b0][c / b1])
//  R  | S[0][0]    | S[0][1]    |  |b0     (the last block row/column cut to the weight, as
//     +------------+------------+--+         Python cuts the repeated scale)
//     | S[1][0]    | S[1][1]    |  |
//
// Without a block size the scale broadcasts as torch does after unsqueezing it to the weight's
// rank: [] or [1] per tensor, [R] or [R, 1] per row, [1, C] per column.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "converters/hf/safetensors.h"

namespace oiw::hf {

// True for the dtypes decode_element reads: F32, F16, BF16, F8_E4M3 (E4M3FN: bias 7, no
// infinities, S.1111.111 NaN), F8_E5M2 (F16's top byte) and I8.
bool decodable(Dtype d);

// Element i of the tensor bytes at p (dtype d, decodable) as float; exact for every dtype.
float decode_element(const uint8_t* p, Dtype d, uint64_t i);

// n elements starting at p as floats at f (d decodable).
void decode_run(const uint8_t* p, Dtype d, float* f, size_t n);

// One weight's scale: where element (row, col) finds its factor in the scale tensor.
struct Scale {
    const File* part = nullptr;
    const Tensor* tensor = nullptr;  // F32, F16 or BF16
    uint64_t div[2] = {1, 1};        // rows, columns per scale element in each dimension
    uint64_t stride[2] = {0, 0};     // scale elements per step of row / div[0], col / div[1]; 0 broadcasts

    // The factor of weight element (row, col).
    float at(uint64_t row, uint64_t col) const;
    // f[j] *= the factor of the weight's element first + j (row-major, `cols` per row), j < n.
    void apply(float* f, size_t n, uint64_t first, uint64_t cols) const;

private:
    // The scale element of weight element (row, col).
    uint64_t index(uint64_t row, uint64_t col) const { return row / div[0] * stride[0] + col / div[1] * stride[1]; }
};

// The scale of `weight` (a matrix [R, C]) from `scale` with the configured block size (`block`
// empty: none), laid out as dequant_simple broadcasts it. Throws FormatError(BadDims) naming the
// scale tensor's file and both names when Python's broadcast would fail or the scale is not F32,
// F16 or BF16; a scale larger than ceil(R / b0) x ceil(C / b1) (Python cuts it silently) is
// refused too.
Scale plan_scale(const File& part, const Tensor& scale, const Tensor& weight, const std::vector<uint64_t>& block);

}  // namespace oiw::hf
