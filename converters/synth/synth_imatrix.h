// Deterministic synthetic importance matrices (benchmarks and tests of the presets that need one:
// IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S), in llama-imatrix's GGUF format (converters/requant/imatrix.h).
#pragma once
#include <cstdint>
#include <string>

#include "libformat/model.h"

namespace oiw {

// Writes to `path` (atomically) an importance matrix for `model`: one entry per tensor
// llama-imatrix stores by default, i.e. every blk.* tensor of two or more dimensions (not
// token_embd, not output), as "<name>.in_sum2" (F32, ne0 x n_mat) and "<name>.counts" (F32,
// 1 x n_mat), entries sorted by name; keys general.type "imatrix", imatrix.datasets ["synthetic"],
// imatrix.chunk_count 1, imatrix.chunk_size 512. Each count is 512 and each value (in_sum2 / count)
// is positive, drawn from `seed`: same model and seed give the same bytes. Returns the number of
// entries; throws FormatError (Usage) when the model has none.
size_t write_synth_imatrix(const std::string& path, const Model& model, uint64_t seed);

}  // namespace oiw
