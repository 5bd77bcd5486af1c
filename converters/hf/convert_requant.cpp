#include "converters/hf/convert_requant.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <utility>

namespace oiw::hf {

ConvertedInput::ConvertedInput(const ConvertPlan& plan, std::string dir, unsigned threads)
    : plan_(plan), dir_(std::move(dir)), threads_(threads) {
    for (const PlannedTensor& t : plan.tensors) {
        GgufTensorInfo info;  // offset 0: there is no file (only --keep-split reads offsets; one shard here)
        info.name = t.name;
        info.n_dims = static_cast<uint32_t>(t.ne.size());
        std::copy(t.ne.begin(), t.ne.end(), info.ne.begin());
        info.type = t.type;
        info.n_bytes = row_size(t.type, info.ne[0]) * static_cast<uint64_t>(info.n_rows());
        infos_.push_back(std::move(info));
    }
}

std::vector<std::string> ConvertedInput::files() const {
    std::vector<std::string> v;
    for (const PlannedTensor& t : plan_.tensors)
        for (const TensorRef& r : t.sources())
            if (std::find(v.begin(), v.end(), r.part->path()) == v.end()) v.push_back(r.part->path());
    return v;
}

std::span<const uint8_t> ConvertedInput::tensor_data(size_t i) const {
    if (held_ != i) {
        if (!pool_) pool_ = std::make_unique<ThreadPool>(thread_count(threads_, UINT32_MAX));
        held_ = SIZE_MAX;
        convert_tensor_into(*pool_, plan_.tensors.at(i), buf_);
        held_ = i;
    }
    return buf_;
}

}  // namespace oiw::hf
