// A model as the tools see it: metadata, tensor infos and tensor bytes, whatever files hold them.
// Every tool opens its inputs with open_model: one GGUF file, or a split model (gguf-split
// shards, libformat/gguf/split.h) opened from any of its shards, whose tensors resolve to their
// shard through tensor_file / tensor_data and whose files() lists every shard.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "libformat/gguf/gguf.h"

namespace oiw {

class Model {
public:
    // A model backed by one validated file.
    Model(GgufFile file);
    // A split model from its validated shards, in order (split keys checked by open_model).
    explicit Model(std::vector<GgufFile> shards);

    // Metadata of the model. For a split model: its first shard's keys without split.no,
    // split.count and split.tensors.count (shards().front().metadata() has them).
    const Metadata& metadata() const { return is_split() ? kvs_ : files_.front().metadata(); }
    // Tensor infos in model order; offsets are relative to the data section of tensor_file(i).
    const std::vector<GgufTensorInfo>& tensors() const { return is_split() ? tensors_ : files_.front().tensors(); }
    // Index of the tensor or -1.
    int64_t find_tensor(std::string_view name) const;
    // Zero-copy view of tensor i's bytes; valid while the Model (or a copy) lives.
    std::span<const uint8_t> tensor_data(size_t i) const;
    // Path of the file that holds tensor i.
    const std::string& tensor_file(size_t i) const { return files_[shard_of(i)].path(); }
    // Index of the file (shard) that holds tensor i.
    size_t shard_of(size_t i) const;
    // Tells the kernel tensor i's pages are no longer needed (streaming converters).
    void release_tensor_pages(size_t i) const;

    // Path of the model: the file, or the first shard of a split model.
    const std::string& path() const { return files_.front().path(); }
    // True for a model of more than one shard.
    bool is_split() const { return files_.size() > 1; }
    // The files in order (one, or the shards).
    const std::vector<GgufFile>& shards() const { return files_; }
    // Every file the model reads (writers refuse to overwrite any of them).
    std::vector<std::string> files() const;
    // Layout of the (first) file: GGUF version, alignment, end of the tensor infos, start of the data.
    uint32_t version() const { return files_.front().version(); }
    uint64_t alignment() const { return files_.front().alignment(); }
    uint64_t header_size() const { return files_.front().header_size(); }
    uint64_t data_offset() const { return files_.front().data_offset(); }
    // Total bytes of all files.
    uint64_t file_size() const;
    // True when re-writing every file with GgufWriter reproduces it byte for byte.
    bool canonical_layout() const;

private:
    std::vector<GgufFile> files_;
    // Split models only: the model's keys, tensors of all shards, where each lives, the name index.
    Metadata kvs_;
    std::vector<GgufTensorInfo> tensors_;
    std::vector<std::pair<uint32_t, uint32_t>> where_;  // (shard, index in the shard)
    std::unordered_map<std::string, size_t> index_;
};

// Opens and validates the model at `path`: a GGUF file, or any shard of a split model, which then
// opens every shard (named PREFIX-0000K-of-0000N.gguf beside it) and checks that split.no,
// split.count and split.tensors.count agree and that each tensor is in exactly one shard.
// Throws FormatError naming the file (the shard) and what was wrong.
Model open_model(const std::string& path);

}  // namespace oiw
