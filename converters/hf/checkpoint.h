// A Hugging Face checkpoint directory's weights: model.safetensors, or the shards that
// model.safetensors.index.json names, opened and cross-checked before any tensor is read.
//
//   index := { "metadata": { ... }, "weight_map": { "<tensor>": "<shard file>", ... } }
//
// Parts, as convert_hf_to_gguf.py (llama.cpp 1348f67, ModelBase.index_tensors) lists them: with an
// index, its shard names sorted; without, the directory's "model*.safetensors" files sorted.
// Tensors: part by part, each part's by name. With an index, the names in the shards and in the
// weight map must be the same set, each in the shard the map names; a name in two parts is refused
// (the Python converter would keep the last silently); shard names must be plain file names.
#pragma once
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "converters/hf/safetensors.h"

namespace oiw::hf {

inline constexpr const char* kIndexName = "model.safetensors.index.json";
// Largest index file read (a 1000-shard index of a large MoE model is a few MB).
inline constexpr uint64_t kMaxIndexBytes = 64ull << 20;

// The weight map of an index document: tensor name -> shard file name. Throws FormatError naming
// `file` when it is not a JSON object with a "weight_map" object of strings, or a shard name is not
// a plain file name (empty, "." or "..", or holding '/' or a NUL byte).
std::map<std::string, std::string> parse_index(std::string_view json, const std::string& file);

struct Scale;  // converters/hf/dequant.h

struct TensorRef {
    const File* part;
    const Tensor* tensor;
    // Set by the converter's plan for a quantized checkpoint's weight: each element is multiplied by it.
    std::shared_ptr<const Scale> scale = nullptr;
};

class Checkpoint {
public:
    // Opens and validates every part of the checkpoint in `dir` (see above); throws FormatError
    // naming the file and tensor.
    explicit Checkpoint(const std::string& dir);
    const std::string& dir() const { return dir_; }
    const std::vector<std::unique_ptr<File>>& parts() const { return parts_; }
    // Every tensor, in the converter's order (parts in order, by name within a part).
    const std::vector<TensorRef>& tensors() const { return order_; }
    // The tensor called `name`, or {nullptr, nullptr}.
    TensorRef find(std::string_view name) const;

private:
    std::string dir_;
    std::vector<std::unique_ptr<File>> parts_;
    std::vector<TensorRef> order_;
    std::map<std::string, TensorRef, std::less<>> by_name_;
};

}  // namespace oiw::hf
