#include "libformat/model.h"

#include <algorithm>

namespace oiw {

Model::Model(GgufFile file) { files_.push_back(std::move(file)); }

std::span<const uint8_t> Model::tensor_data(size_t i) const { return files_.front().tensor_data(i); }

const std::string& Model::tensor_file(size_t i) const {
    (void)tensors().at(i);  // bounds check, as tensor_data does
    return files_.front().path();
}

void Model::release_tensor_pages(size_t i) const { files_.front().release_tensor_pages(i); }

std::vector<std::string> Model::files() const {
    std::vector<std::string> paths;
    for (const auto& f : files_) paths.push_back(f.path());
    return paths;
}

uint64_t Model::file_size() const {
    uint64_t n = 0;
    for (const auto& f : files_) n += f.file_size();
    return n;
}

bool Model::canonical_layout() const {
    return std::all_of(files_.begin(), files_.end(), [](const GgufFile& f) { return f.canonical_layout(); });
}

Model open_model(const std::string& path) { return Model(GgufFile::open(path)); }

}  // namespace oiw
