#include "converters/hf/checkpoint.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <system_error>

#include <fmt/format.h>

#include "converters/hf/json_doc.h"
#include "libformat/error.h"
#include "libformat/io/text_file.h"

namespace oiw::hf {
namespace fs = std::filesystem;
namespace {

bool plain_file_name(const std::string& s) {
    return !s.empty() && s != "." && s != ".." && s.find('/') == std::string::npos && s.find('\0') == std::string::npos;
}

// The directory's "model*.safetensors" entries, sorted (ModelBase.get_model_part_names).
std::vector<std::string> listed_parts(const std::string& dir) {
    std::vector<std::string> names;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string n = it->path().filename().string();
        if (n.starts_with("model") && n.ends_with(".safetensors")) names.push_back(n);
    }
    if (ec) throw FormatError(ErrorKind::Io, dir, "", "cannot list the directory: " + ec.message());
    std::sort(names.begin(), names.end());
    return names;
}

}  // namespace

std::map<std::string, std::string> parse_index(std::string_view json, const std::string& file) {
    const Json doc = parse_json(json, file, kMaxJsonDepth);
    const Json* map = member(doc, "weight_map");
    if (!map || !map->is_object()) throw FormatError(ErrorKind::BadJson, file, "", "no 'weight_map' object");
    std::map<std::string, std::string> out;
    for (const auto& [name, shard] : map->items()) {
        const std::string subject = "tensor '" + name + "'";
        if (!shard.is_string()) throw FormatError(ErrorKind::BadJson, file, subject, "shard name is not a string");
        const std::string s = shard.get<std::string>();
        if (!plain_file_name(s))
            throw FormatError(ErrorKind::BadSplit, file, subject, "shard name '" + s + "' is not a plain file name");
        out.emplace(name, s);
    }
    return out;
}

Checkpoint::Checkpoint(const std::string& dir) : dir_(dir) {
    const std::string index_path = (fs::path(dir) / kIndexName).string();
    std::error_code ec;
    const bool indexed = fs::is_regular_file(index_path, ec);
    std::map<std::string, std::string> weight_map;
    std::vector<std::string> names;
    if (indexed) {
        weight_map = parse_index(read_text_file(index_path, kMaxIndexBytes), index_path);
        std::set<std::string> shards;
        for (const auto& [t, s] : weight_map) shards.insert(s);
        names.assign(shards.begin(), shards.end());
    } else {
        names = listed_parts(dir);
    }
    if (names.empty())
        throw FormatError(ErrorKind::Io, dir, "", fmt::format("no model*.safetensors file and no {}", kIndexName));
    for (const std::string& n : names) {
        parts_.push_back(std::make_unique<File>((fs::path(dir) / n).string()));
        const File& part = *parts_.back();
        for (const Tensor& t : part.tensors()) {
            const TensorRef ref{&part, &t};
            const auto [it, fresh] = by_name_.emplace(t.name, ref);
            if (!fresh)
                throw FormatError(ErrorKind::DuplicateTensor, part.path(), "tensor '" + t.name + "'",
                                  "also in " + it->second.part->path());
            if (indexed) {
                const auto w = weight_map.find(t.name);
                if (w == weight_map.end())
                    throw FormatError(ErrorKind::BadSplit, part.path(), "tensor '" + t.name + "'",
                                      std::string("not in the weight map of ") + kIndexName);
                if (w->second != n)
                    throw FormatError(ErrorKind::BadSplit, part.path(), "tensor '" + t.name + "'",
                                      fmt::format("{} places it in '{}'", kIndexName, w->second));
            }
            order_.push_back(ref);
        }
    }
    for (const auto& [t, s] : weight_map)
        if (!by_name_.contains(t))
            throw FormatError(ErrorKind::BadSplit, index_path, "tensor '" + t + "'", "not in its shard '" + s + "'");
}

TensorRef Checkpoint::find(std::string_view name) const {
    const auto it = by_name_.find(name);
    return it == by_name_.end() ? TensorRef{nullptr, nullptr} : it->second;
}

}  // namespace oiw::hf
