// A model as the tools see it: metadata, tensor infos and tensor bytes, whatever files hold them.
// Every tool opens its inputs with open_model; today a model is one GGUF file, and a split model
// (gguf-split shards) plugs in here: its tensors resolve to their shard through tensor_file /
// tensor_data, and files() lists every shard.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "libformat/gguf/gguf.h"

namespace oiw {

class Model {
public:
    // A model backed by one validated file.
    Model(GgufFile file);

    // Metadata of the model (for a split model: of its first file).
    const Metadata& metadata() const { return files_.front().metadata(); }
    // Tensor infos in file order; offsets are relative to the data section of tensor_file(i).
    const std::vector<GgufTensorInfo>& tensors() const { return files_.front().tensors(); }
    // Index of the tensor or -1.
    int64_t find_tensor(std::string_view name) const { return files_.front().find_tensor(name); }
    // Zero-copy view of tensor i's bytes; valid while the Model (or a copy) lives.
    std::span<const uint8_t> tensor_data(size_t i) const;
    // Path of the file that holds tensor i.
    const std::string& tensor_file(size_t i) const;
    // Tells the kernel tensor i's pages are no longer needed (streaming converters).
    void release_tensor_pages(size_t i) const;

    // Path the model was opened from.
    const std::string& path() const { return files_.front().path(); }
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
    std::vector<GgufFile> files_;  // one today; a split model's shards later
};

// Opens and validates the model at `path`. Throws FormatError naming the file and what was wrong.
Model open_model(const std::string& path);

}  // namespace oiw
