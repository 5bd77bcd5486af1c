#include "libformat/model.h"

#include <algorithm>
#include <cerrno>
#include <filesystem>

#include <fmt/format.h>

#include "libformat/gguf/split.h"

namespace oiw {

Model::Model(GgufFile file) { files_.push_back(std::move(file)); }

Model::Model(std::vector<GgufFile> shards) : files_(std::move(shards)) {
    if (!is_split()) return;
    kvs_ = files_.front().metadata();
    for (std::string_view key : {kSplitNo, kSplitCount, kSplitTensors}) kvs_.erase(key);
    for (uint32_t k = 0; k < files_.size(); ++k)
        for (uint32_t j = 0; j < files_[k].tensors().size(); ++j) {
            const GgufTensorInfo& t = files_[k].tensors()[j];
            if (auto [it, fresh] = index_.emplace(t.name, tensors_.size()); !fresh)
                throw FormatError(ErrorKind::DuplicateTensor, files_[k].path(), "tensor '" + t.name + "'",
                                  fmt::format("also in shard {} of {}", where_[it->second].first + 1, files_.size()));
            tensors_.push_back(t);
            where_.emplace_back(k, j);
        }
}

int64_t Model::find_tensor(std::string_view name) const {
    if (!is_split()) return files_.front().find_tensor(name);
    auto it = index_.find(std::string(name));
    return it == index_.end() ? -1 : static_cast<int64_t>(it->second);
}

size_t Model::shard_of(size_t i) const {
    (void)tensors().at(i);  // bounds check, as tensor_data does
    return is_split() ? where_[i].first : 0;
}

std::span<const uint8_t> Model::tensor_data(size_t i) const {
    if (!is_split()) return files_.front().tensor_data(i);
    const auto [k, j] = where_.at(i);
    return files_[k].tensor_data(j);
}

void Model::release_tensor_pages(size_t i) const {
    if (!is_split()) return files_.front().release_tensor_pages(i);
    const auto [k, j] = where_.at(i);
    files_[k].release_tensor_pages(j);
}

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

namespace {

// A split key of `f` of the type llama.cpp reads it as; nullopt when absent.
std::optional<int64_t> split_key(const GgufFile& f, std::string_view key, GgufType type) {
    const GgufValue* v = f.metadata().find(key);
    if (!v) return std::nullopt;
    if (v->type() != type)
        throw FormatError(ErrorKind::BadKey, f.path(), "key '" + std::string(key) + "'",
                          fmt::format("is {}, must be {}", gguf_type_name(v->type()), gguf_type_name(type)));
    return v->as_int();
}

int64_t required_split_key(const GgufFile& f, std::string_view key, GgufType type) {
    if (auto v = split_key(f, key, type)) return *v;
    throw FormatError(ErrorKind::BadSplit, f.path(), "key '" + std::string(key) + "'",
                      "missing: not a shard of a split model");
}

}  // namespace

Model open_model(const std::string& path) {
    GgufFile given = GgufFile::open(path);
    const auto count = split_key(given, kSplitCount, GgufType::U16);
    if (!count || *count <= 1) return Model(std::move(given));  // one file (a merged file has split.count 0)
    const auto n = static_cast<unsigned>(*count);
    const int64_t no = required_split_key(given, kSplitNo, GgufType::U16);
    const int64_t n_tensors = required_split_key(given, kSplitTensors, GgufType::I32);
    if (no >= n)
        throw FormatError(ErrorKind::BadSplit, path, "key 'split.no'",
                          fmt::format("is {}, but split.count is {}", no, n));
    const auto prefix = split_prefix(path, static_cast<unsigned>(no), n);
    if (!prefix)
        throw FormatError(
            ErrorKind::BadSplit, path, "",
            fmt::format(
                "shard {} of {} (split keys), but the name does not end in '{}': the other shards cannot be found",
                no + 1, n, split_path("", static_cast<unsigned>(no), n)));
    std::vector<GgufFile> shards;
    shards.reserve(n);
    for (unsigned k = 0; k < n; ++k) {
        if (k == no) {
            shards.push_back(std::move(given));  // NOLINT(bugprone-use-after-move): k == no once
            continue;
        }
        const std::string p = split_path(*prefix, k, n);
        std::error_code ec;
        if (!std::filesystem::exists(p, ec)) {
            // exists() is false for a dangling link and sets ELOOP for a loop: say which.
            const bool link = std::filesystem::is_symlink(std::filesystem::symlink_status(p));
            const std::string what = ec.value() == ELOOP ? "a symlink loop" : link ? "a dangling symlink" : "missing";
            throw FormatError(ErrorKind::BadSplit, p, "",
                              fmt::format("{}: shard {} of {} of the split model {}", what, k + 1, n, path));
        }
        shards.push_back(GgufFile::open(p));
        const GgufFile& s = shards.back();
        const auto what = [&](std::string_view key, int64_t got, int64_t want) {
            return FormatError(
                ErrorKind::BadSplit, s.path(), "key '" + std::string(key) + "'",
                fmt::format("is {}, expected {} (from {}): a shard of another split model?", got, want, path));
        };
        if (int64_t v = required_split_key(s, kSplitCount, GgufType::U16); v != n) throw what(kSplitCount, v, n);
        if (int64_t v = required_split_key(s, kSplitNo, GgufType::U16); v != k) throw what(kSplitNo, v, k);
        if (int64_t v = required_split_key(s, kSplitTensors, GgufType::I32); v != n_tensors)
            throw what(kSplitTensors, v, n_tensors);
    }
    Model m(std::move(shards));
    if (static_cast<int64_t>(m.tensors().size()) != n_tensors)
        throw FormatError(ErrorKind::BadSplit, m.path(), "key 'split.tensors.count'",
                          fmt::format("is {}, but the {} shards hold {} tensors", n_tensors, n, m.tensors().size()));
    return m;
}

}  // namespace oiw
