#include "converters/hf/safetensors.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "converters/hf/json_doc.h"
#include "libformat/error.h"
#include "libformat/io/cursor.h"

namespace oiw::hf {
namespace {

struct DtypeInfo {
    Dtype dtype;
    const char* name;
    uint64_t size;
};

// Every dtype safetensors 0.4 writes (its own Dtype enum, minus the sub-byte F4/F6 and E8M0 forms).
constexpr DtypeInfo kDtypes[] = {
    {Dtype::Bool, "BOOL", 1}, {Dtype::U8, "U8", 1},          {Dtype::I8, "I8", 1},          {Dtype::I16, "I16", 2},
    {Dtype::U16, "U16", 2},   {Dtype::I32, "I32", 4},        {Dtype::U32, "U32", 4},        {Dtype::I64, "I64", 8},
    {Dtype::U64, "U64", 8},   {Dtype::F16, "F16", 2},        {Dtype::BF16, "BF16", 2},      {Dtype::F32, "F32", 4},
    {Dtype::F64, "F64", 8},   {Dtype::F8E4M3, "F8_E4M3", 1}, {Dtype::F8E5M2, "F8_E5M2", 1},
};

const DtypeInfo& info(Dtype d) {
    return *std::find_if(std::begin(kDtypes), std::end(kDtypes), [d](const DtypeInfo& i) { return i.dtype == d; });
}

std::string known_dtypes() {
    std::string s;
    for (const DtypeInfo& i : kDtypes) s += (s.empty() ? "" : ", ") + std::string(i.name);
    return s;
}

// One tensor entry of the header, checked field by field; offsets still relative to the data.
Tensor parse_entry(const std::string& name, const Json& e, uint64_t data_size, const std::string& file) {
    const std::string subject = "tensor '" + name + "'";
    auto bad = [&](ErrorKind k, const std::string& what) { return FormatError(k, file, subject, what); };
    if (!e.is_object()) throw bad(ErrorKind::BadJson, "entry is not a JSON object");
    Tensor t;
    t.name = name;
    const Json* dt = member(e, "dtype");
    if (!dt || !dt->is_string()) throw bad(ErrorKind::BadJson, "'dtype' is missing or not a string");
    const std::string dts = dt->get<std::string>();
    const auto it =
        std::find_if(std::begin(kDtypes), std::end(kDtypes), [&](const DtypeInfo& i) { return dts == i.name; });
    if (it == std::end(kDtypes))
        throw bad(ErrorKind::BadType, "unknown dtype '" + dts + "' (known: " + known_dtypes() + ")");
    t.dtype = it->dtype;
    const Json* shape = member(e, "shape");
    if (!shape || !shape->is_array()) throw bad(ErrorKind::BadJson, "'shape' is missing or not an array");
    if (shape->size() > kMaxRank)
        throw bad(ErrorKind::BadDims, fmt::format("{} dimensions (at most {})", shape->size(), kMaxRank));
    for (const Json& d : *shape) {
        if (!d.is_number_unsigned()) throw bad(ErrorKind::BadJson, "a 'shape' entry is not an unsigned integer");
        const uint64_t v = d.get<uint64_t>();
        if (v != 0 && t.elements > UINT64_MAX / v) throw bad(ErrorKind::TooLarge, "element count overflows 64 bits");
        t.elements *= v;
        t.shape.push_back(v);
    }
    if (t.elements > UINT64_MAX / it->size) throw bad(ErrorKind::TooLarge, "byte size overflows 64 bits");
    const Json* off = member(e, "data_offsets");
    if (!off || !off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() ||
        !(*off)[1].is_number_unsigned())
        throw bad(ErrorKind::BadJson, "'data_offsets' is not [begin, end] of unsigned integers");
    const uint64_t begin = (*off)[0].get<uint64_t>(), end = (*off)[1].get<uint64_t>();
    if (begin > end) throw bad(ErrorKind::OutOfBounds, fmt::format("data_offsets [{}, {}] run backwards", begin, end));
    if (end > data_size)
        throw bad(ErrorKind::OutOfBounds,
                  fmt::format("data_offsets [{}, {}] end past the {}-byte data section", begin, end, data_size));
    t.size = end - begin;
    if (t.size != t.elements * it->size)
        throw bad(ErrorKind::BadDims, fmt::format("shape [{}] of {} needs {} bytes but data_offsets span {}",
                                                  fmt::join(t.shape, ", "), dts, t.elements * it->size, t.size));
    t.offset = begin;
    return t;
}

// Throws unless the spans, in offset order, cover [0, data_size) exactly once.
void check_tiling(const std::vector<Tensor>& ts, uint64_t data_size, const std::string& file) {
    std::vector<size_t> order(ts.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return std::pair(ts[a].offset, ts[a].offset + ts[a].size) < std::pair(ts[b].offset, ts[b].offset + ts[b].size);
    });
    uint64_t covered = 0;
    const Tensor* prev = nullptr;
    for (size_t i : order) {
        const Tensor& t = ts[i];
        if (t.offset < covered)
            throw FormatError(ErrorKind::Overlap, file, "tensor '" + t.name + "'",
                              fmt::format("bytes from {} overlap tensor '{}'", t.offset, prev->name));
        if (t.offset > covered)
            throw FormatError(ErrorKind::OutOfBounds, file, "tensor '" + t.name + "'",
                              fmt::format("data bytes [{}, {}) before it belong to no tensor", covered, t.offset));
        covered = t.offset + t.size;
        prev = &t;
    }
    if (covered != data_size)
        throw FormatError(
            ErrorKind::OutOfBounds, file, "",
            fmt::format("data bytes [{}, {}) after the last tensor belong to no tensor", covered, data_size));
}

}  // namespace

const char* dtype_name(Dtype d) { return info(d).name; }
uint64_t dtype_size(Dtype d) { return info(d).size; }

Header parse_header(std::string_view json, uint64_t data_size, const std::string& file) {
    if (json.empty() || json.front() != '{')
        throw FormatError(ErrorKind::BadJson, file, "", "header does not start with '{'");
    const Json doc = parse_json(json, file, kMaxJsonDepth);
    Header h;
    for (const auto& [name, entry] : doc.items()) {  // std::map order: by name, bytewise
        if (name != "__metadata__") {
            h.tensors.push_back(parse_entry(name, entry, data_size, file));
            continue;
        }
        if (!entry.is_object()) throw FormatError(ErrorKind::BadJson, file, "__metadata__", "not a JSON object");
        for (const auto& [k, v] : entry.items()) {
            if (!v.is_string())
                throw FormatError(ErrorKind::BadJson, file, "__metadata__ '" + k + "'", "value is not a string");
            h.metadata.emplace(k, v.get<std::string>());
        }
    }
    check_tiling(h.tensors, data_size, file);
    return h;
}

std::vector<uint8_t> header_bytes(const std::vector<TensorDecl>& decls,
                                  const std::map<std::string, std::string>& metadata) {
    nlohmann::ordered_json h = nlohmann::ordered_json::object();
    if (!metadata.empty()) h["__metadata__"] = metadata;
    uint64_t at = 0;
    for (const TensorDecl& d : decls) {
        uint64_t n = dtype_size(d.dtype);
        for (uint64_t v : d.shape) n *= v;
        h[d.name] = {{"dtype", dtype_name(d.dtype)}, {"shape", d.shape}, {"data_offsets", {at, at + n}}};
        at += n;
    }
    std::string text = h.dump();
    text.append((8 - text.size() % 8) % 8, ' ');
    if (text.size() > kMaxHeaderBytes)
        throw FormatError(ErrorKind::TooLarge, "", "", fmt::format("safetensors header of {} bytes", text.size()));
    const uint64_t len = text.size();
    std::vector<uint8_t> out(8 + text.size());
    std::memcpy(out.data(), &len, 8);
    std::memcpy(out.data() + 8, text.data(), text.size());
    return out;
}

Header parse_image(std::span<const uint8_t> image, const std::string& file) {
    ByteCursor c(image, file);
    const uint64_t n = c.get<uint64_t>("", "the header length");
    if (n > kMaxHeaderBytes)
        throw FormatError(ErrorKind::TooLarge, file, "",
                          fmt::format("header length {} exceeds the limit of {} bytes", n, kMaxHeaderBytes));
    const std::span<const uint8_t> json = c.take(n, "", "the JSON header");
    Header h = parse_header({reinterpret_cast<const char*>(json.data()), json.size()}, c.remaining(), file);
    for (Tensor& t : h.tensors) t.offset += c.pos();
    return h;
}

File::File(const std::string& path) : path_(path), map_(path), header_(parse_image(map_.bytes(), path_)) {}

const Tensor* File::find(std::string_view name) const {
    const auto& ts = header_.tensors;
    const auto it =
        std::lower_bound(ts.begin(), ts.end(), name, [](const Tensor& t, std::string_view n) { return t.name < n; });
    return it != ts.end() && it->name == name ? &*it : nullptr;
}

}  // namespace oiw::hf
