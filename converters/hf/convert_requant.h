// gguf-convert --preset / --plan: a checkpoint straight to a llama-quantize preset, writing the bytes
// of `gguf-convert --outtype T` followed by `gguf-requant --preset P` without the intermediate file.
// The requantizer (converters/requant) reads the planned GGUF's keys and tensor infos from the
// ConvertPlan, and each tensor as this class converts it into memory when its turn comes:
//
//   safetensors --convert_tensor_into--> one tensor of type T in memory --requantizer--> OUT.gguf
//
// so memory is the largest converted tensor plus the engines' buffers, never the model.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "converters/hf/convert.h"
#include "converters/requant/requant.h"

namespace oiw::hf {

// The GGUF file write_convert(plan, ...) would write as one file, as the requantizer reads it.
class ConvertedInput final : public RequantInput {
public:
    // `plan` must outlive this. `dir` names the input in errors; `threads` converting threads (0:
    // every core).
    ConvertedInput(const ConvertPlan& plan, std::string dir, unsigned threads);

    const Metadata& metadata() const override { return plan_.kvs; }
    const std::vector<GgufTensorInfo>& tensors() const override { return infos_; }
    const std::string& path() const override { return dir_; }
    std::vector<std::string> files() const override;  // the safetensors shards
    // Converts tensor i (the previous one's bytes are dropped). Throws FormatError(BadData) for a
    // NaN or infinite weight, naming the source tensor.
    std::span<const uint8_t> tensor_data(size_t i) const override;
    void release_pages(size_t) const override {}  // the source's pages went as it was converted
    void done(size_t) const override {}           // the buffer is reused for the next tensor
    size_t shard_of(size_t) const override { return 0; }
    size_t shard_count() const override { return 1; }

private:
    const ConvertPlan& plan_;
    std::string dir_;
    unsigned threads_;
    std::vector<GgufTensorInfo> infos_;
    mutable std::unique_ptr<ThreadPool> pool_;  // made on the first tensor
    mutable std::vector<uint8_t> buf_;
    mutable size_t held_ = SIZE_MAX;  // the tensor buf_ holds
};

}  // namespace oiw::hf
