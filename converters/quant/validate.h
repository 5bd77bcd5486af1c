// Tensor data validation as ggml's ggml_validate_row_data (ggml-quants.c), which llama-quantize
// applies to every input tensor and every quantized row: F32/F64/F16/BF16 values and the fp16
// scales of block types (d, and m/dmin where the type has one; IQ1_M's packed scale; Q8_K's f32 d)
// must be finite, and MXFP4's E8M0 exponent must not be 0xFF. Integer types and NVFP4 have
// nothing to check. Each type's scanner is the `find_invalid` column of the kernel table (kernels.h).
#pragma once
#include <cstdint>
#include <span>
#include <string>

#include "libformat/types.h"

namespace oiw {

// Describes the first invalid value in `bytes` of type `t` ("NaN at element 5", "inf scale d in
// block 2"); empty when every value is valid. bytes.size() must be a multiple of t's type size;
// a removed or unknown type id throws FormatError(Unsupported).
std::string find_invalid_data(GgmlType t, std::span<const uint8_t> bytes);

// Checks `rows` (whole rows of `row_bytes` bytes each, of type `t`) and throws
// FormatError(BadData) naming `file`, tensor `tensor` and the first bad row (numbered from
// `first_row`), with `what` ("input", "quantized output") saying which data it was.
void validate_rows(GgmlType t, std::span<const uint8_t> rows, uint64_t row_bytes, int64_t first_row,
                   const std::string& file, const std::string& tensor, const char* what);

}  // namespace oiw
