// The kernel table: one row per ggml type id with that type's entry points -- ggml's type_traits
// to_float / from_float_ref, whether the quantizer uses importance weights, the optimized
// quantizers of the CPU's instruction set (ggml-cpu's from_float), the data validation of
// ggml_validate_row_data and oiw4-check's error limit -- replacing per-type switches. Format facts
// (name, block size, bytes, dot-product partner) are in libformat/types.h; the integer-path dot
// products are the one per-type column kept in converters/matmul (reference.cpp's kIntegerDot,
// ggml-cpu's vec_dot), because Q4_0's follows the W4A8 kernels' lane order.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "libformat/types.h"

namespace oiw {

// Converts n elements of a type (n a multiple of its block size) at src to f32.
using ToFloatFn = void (*)(const uint8_t* src, float* dst, int64_t n);
// ggml_quantize_chunk of one type: nrows rows of n_per_row floats (a multiple of the block size,
// checked by the caller) into dst, with per-column importance weights or null. Returns bytes written.
using QuantizeFn = size_t (*)(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);
// An optimized quantizer of one row: writes exactly the reference's bytes and returns true, or
// returns false (dst unspecified) for a row or imatrix outside its exact range; the caller then
// runs the reference on that row.
using FastRowFn = bool (*)(const float* x, void* dst, int64_t n_per_row, const float* imatrix);

// Describes the first invalid value in whole blocks of a type ("NaN at element 5", "inf scale d
// in block 2"); empty when all are valid (validate.h's find_invalid_data).
using FindInvalidFn = std::string (*)(std::span<const uint8_t> bytes);

// How ggml's quantizer of a type uses importance weights.
enum class Imatrix : uint8_t {
    Ignored,   // never reads them (F16, Q8_0, TQ1_0, MXFP4, ...)
    Optional,  // weighted search when given
    Required,  // ggml refuses to quantize without them (IQ2_XXS, IQ2_XS, IQ1_S)
};

// Optimized quantizers of one type on one ISA: without and with importance weights (either may be null).
struct FastQuantize {
    FastRowFn plain = nullptr;
    FastRowFn weighted = nullptr;
};

struct TypeKernels {
    ToFloatFn to_float = nullptr;          // null only for removed ids
    QuantizeFn quantize = nullptr;         // the scalar reference; null: cannot quantize to the type
    Imatrix imatrix = Imatrix::Ignored;    // meaningful when quantize is set
    FastQuantize fast;                     // optimized quantizers of the table's ISA (none in the reference table)
    FindInvalidFn find_invalid = nullptr;  // null only for removed ids
    // oiw4-check's limit on the relative RMS error of y = W x (exact semantics) when a tensor is
    // converted to this type from another (docs/matmul.md gives each one's reason); negative only
    // for removed ids.
    double max_rel_rms = -1;
};

using KernelTable = std::array<TypeKernels, kGgmlTypeCount>;

// What one ISA's kernel file contributes to the table for one type.
struct IsaKernel {
    GgmlType type;
    FastQuantize fast;
};

// The scalar reference kernels of every type id (fast fields null). Always available.
const KernelTable& reference_kernels();

// oiw4-check's default relative RMS limit for a tensor converted to `t` (the table's max_rel_rms).
// Throws FormatError(Unsupported) for a type without one (removed ids).
double max_rel_rms(GgmlType t);

}  // namespace oiw
