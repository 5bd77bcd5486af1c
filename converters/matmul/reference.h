// The bundled reference matmul (scalar, deterministic; semantics in docs/matmul.md).
//
// y = W x for one row of W at a time, in two semantics:
//  - exact:   W dequantized to f32 (bit-exact with ggml's to_float), products and sums in f64.
//  - integer: what ggml's CPU backend computes. x is quantized per block to the type's
//             dot-product partner (ggml's vec_dot_type) with ggml's reference quantizer, then
//             the integer dot per block and the fp32 scaling follow ggml's scalar
//             ggml_vec_dot_*_generic operation for operation. Q4_0 (and the oiw4 encoding, which
//             shares its integer path) use the documented 8-lane order of the W4A8 kernels.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "libformat/types.h"

namespace oiw::matmul {

// ggml's vec_dot_type of `t` (type_traits_cpu, ggml 0.11.1): Q8_0 for Q4_0/Q5_0/Q8_0/IQ4_NL/MXFP4,
// Q8_1 for Q4_1/Q5_1, Q8_K for K-quants, i-quants and TQ1_0/TQ2_0, F16/BF16/F32 for themselves.
// nullopt when the reference has no integer path for `t` (then only the exact semantics exist).
std::optional<GgmlType> dot_partner(GgmlType t);

// One activation vector quantized to a partner type: the partner's ggml blocks, byte for byte
// what ggml's quantize_row_<partner>_ref writes (F16/BF16: ggml's conversions; F32: the floats).
struct QuantizedVector {
    GgmlType type = GgmlType::F32;
    int64_t n = 0;
    std::vector<uint8_t> bytes;
};

// Quantizes x[0..n) to `partner`; n must be a multiple of the partner's block size.
QuantizedVector quantize_activation(GgmlType partner, const float* x, int64_t n);

// Integer-path dot product of one row of `t` (n elements, ggml bytes at `row`) with `act`
// (quantized to dot_partner(t)). Throws FormatError(Unsupported) without an integer path.
float dot_integer(GgmlType t, const void* row, const QuantizedVector& act);

// Exact dot product of one row of `t` with x: dequantize to f32, multiply and sum in f64,
// left to right. `scratch` is resized to n.
double dot_exact(GgmlType t, const void* row, const float* x, int64_t n, std::vector<float>& scratch);

// ggml's AVX reduction of 8 fp32 lanes (hsum_float_8): ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)).
inline float hsum8(const float l[8]) {
    const float r0 = l[4] + l[0], r1 = l[5] + l[1], r2 = l[6] + l[2], r3 = l[7] + l[3];
    return (r0 + r2) + (r1 + r3);
}

}  // namespace oiw::matmul
