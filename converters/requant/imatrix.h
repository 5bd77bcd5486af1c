// Importance matrices as llama-quantize reads them (tools/quantize/quantize.cpp load_imatrix):
//   GGUF   (llama-imatrix >= 2025): tensors "<name>.in_sum2" (F32, ne0 x n_mat) and
//          "<name>.counts" (F32, n_mat); keys imatrix.datasets, imatrix.chunk_count, imatrix.chunk_size.
//          value = in_sum2 / count per matrix row.
//   legacy .dat: i32 n_entries, then per entry i32 name_len, name, i32 ncall, i32 nval, f32[nval]
//          (value = sum / ncall); optionally i32 chunk count, i32 len, dataset name.
// Stricter than llama-quantize, which lets bad statistics zero or poison the quantized weights:
// a count (or ncall) that is not positive, a NaN, infinite or negative value, and a matrix whose
// values are all zero are errors naming the entry.
#pragma once
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace oiw {

struct Imatrix {
    std::map<std::string, std::vector<float>> entries;  // tensor name -> ne0 * n_mat importance weights
    std::vector<std::string> datasets;                  // calibration data set names
    int64_t chunk_count = 0;                            // chunks the statistics were collected on
};

// Loads `path` (GGUF detected by its magic, otherwise the legacy format). Throws FormatError
// naming the file and the entry for malformed data or refused values (see above).
Imatrix load_imatrix(const std::string& path);
// The same, from the file's bytes (`path` names it in errors).
Imatrix parse_imatrix(std::span<const uint8_t> bytes, const std::string& path);

// llama-quantize --include-weights / --exclude-weights: keeps only the entries whose name contains
// one of `include` (when non-empty), then drops those containing one of `exclude`.
void filter_imatrix(Imatrix& m, const std::vector<std::string>& include, const std::vector<std::string>& exclude);

}  // namespace oiw
