#include "converters/requant/imatrix.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <span>

#include <fmt/format.h>

#include "libformat/io/mapped_file.h"
#include "libformat/model.h"

namespace oiw {
namespace {

constexpr std::string_view kSumsSuffix = ".in_sum2", kCountsSuffix = ".counts";

// The values of an F32 tensor, copied out (an alignment-1 file may place them at any address).
std::vector<float> f32_data(const Model& f, size_t i) {
    const GgufTensorInfo& t = f.tensors()[i];
    if (t.type != GgmlType::F32)
        throw FormatError(ErrorKind::BadType, f.path(), "tensor '" + t.name + "'",
                          fmt::format("imatrix data must be F32, not {}", type_name(t.type)));
    auto bytes = f.tensor_data(i);
    std::vector<float> v(bytes.size() / sizeof(float));
    std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
    return v;
}

// Refuses a count (per matrix in GGUF files, per entry in legacy ones) that is not positive:
// the entry never saw input, and dividing by it gives no usable weights.
void check_count(const std::string& path, const std::string& name, float count, const std::string& which) {
    if (!(count > 0.0f) || !std::isfinite(count))
        throw FormatError(ErrorKind::BadData, path, "entry '" + name + "'",
                          fmt::format("{} is {} (must be positive)", which, count));
}

// Refuses importance values that would zero or poison the quantized weights: non-finite or
// negative values, and a matrix (`ne0` values) that is all zero.
void check_values(const std::string& path, const std::string& name, const std::vector<float>& v, size_t ne0) {
    const std::string subject = "entry '" + name + "'";
    for (size_t i = 0; i < v.size(); ++i) {
        if (!std::isfinite(v[i]))
            throw FormatError(ErrorKind::BadData, path, subject,
                              fmt::format("non-finite importance value {} at index {}", v[i], i));
        if (v[i] < 0.0f)
            throw FormatError(ErrorKind::BadData, path, subject,
                              fmt::format("negative importance value {} at index {}", v[i], i));
    }
    for (size_t j = 0; j * ne0 < v.size(); ++j)
        if (std::all_of(v.begin() + static_cast<ptrdiff_t>(j * ne0), v.begin() + static_cast<ptrdiff_t>((j + 1) * ne0),
                        [](float x) { return x == 0.0f; }))
            throw FormatError(ErrorKind::BadData, path, subject,
                              v.size() == ne0 ? std::string("importance values are all zero")
                                              : fmt::format("importance values of matrix {} are all zero", j));
}

Imatrix load_gguf(std::span<const uint8_t> bytes, const std::string& path) {
    const Model f{GgufFile::parse_copy(bytes, path)};
    const Metadata& md = f.metadata();
    const GgufValue* datasets = md.find("imatrix.datasets");
    const GgufValue* chunks = md.find("imatrix.chunk_count");
    if (!datasets || !chunks || !md.find("imatrix.chunk_size"))
        throw FormatError(ErrorKind::BadKey, path, "",
                          "missing imatrix metadata (imatrix.datasets, imatrix.chunk_count, imatrix.chunk_size)");
    Imatrix m;
    if (datasets->is_array() && datasets->elem_type() == GgufType::STRING)
        m.datasets = datasets->strings();
    else if (datasets->as_string())
        m.datasets = {*datasets->as_string()};
    m.chunk_count = *md.get_int("imatrix.chunk_count", 0, UINT32_MAX);  // written as u32 quantize.imatrix.chunks_count

    // name -> (in_sum2 index, counts index)
    std::map<std::string, std::pair<int64_t, int64_t>> pairs;
    for (size_t i = 0; i < f.tensors().size(); ++i) {
        std::string_view n = f.tensors()[i].name;
        if (n.ends_with(kSumsSuffix)) {
            auto& p = pairs.try_emplace(std::string(n.substr(0, n.size() - kSumsSuffix.size())), -1, -1).first->second;
            p.first = static_cast<int64_t>(i);
        } else if (n.ends_with(kCountsSuffix)) {
            auto& p =
                pairs.try_emplace(std::string(n.substr(0, n.size() - kCountsSuffix.size())), -1, -1).first->second;
            p.second = static_cast<int64_t>(i);
        }
    }
    if (pairs.empty())
        throw FormatError(ErrorKind::BadKey, path, "", "no imatrix entries (<tensor>.in_sum2 / <tensor>.counts)");
    for (const auto& [name, idx] : pairs) {
        if (idx.first < 0 || idx.second < 0)
            throw FormatError(ErrorKind::BadKey, path, "entry '" + name + "'",
                              idx.first < 0 ? "counts without in_sum2" : "in_sum2 without counts");
        auto sums = f32_data(f, static_cast<size_t>(idx.first));
        auto counts = f32_data(f, static_cast<size_t>(idx.second));
        if (sums.size() % counts.size() != 0)
            throw FormatError(ErrorKind::BadDims, path, "entry '" + name + "'",
                              fmt::format("{} sums do not split into {} matrices", sums.size(), counts.size()));
        const size_t ne0 = sums.size() / counts.size();
        std::vector<float>& v = m.entries[name];
        v.resize(sums.size());
        for (size_t j = 0; j < counts.size(); ++j) {
            check_count(path, name, counts[j], fmt::format("the count of matrix {}", j));
            for (size_t i = 0; i < ne0; ++i) v[j * ne0 + i] = sums[j * ne0 + i] / counts[j];
        }
        check_values(path, name, v, ne0);
    }
    return m;
}

// Bounds-checked little-endian reader over the legacy file image.
struct Reader {
    std::span<const uint8_t> b;
    const std::string& path;
    size_t pos = 0;
    void need(size_t n, const std::string& what) const {
        if (b.size() - pos < n) throw FormatError(ErrorKind::Truncated, path, "", "truncated legacy imatrix: " + what);
    }
    int32_t i32(const std::string& what) {
        need(4, what);
        int32_t v;
        std::memcpy(&v, b.data() + pos, 4);
        pos += 4;
        return v;
    }
    std::string str(int32_t len, const std::string& what) {
        if (len < 0)
            throw FormatError(ErrorKind::TooLarge, path, "", fmt::format("negative length {} of {}", len, what));
        need(static_cast<size_t>(len), what);
        std::string s(reinterpret_cast<const char*>(b.data() + pos), static_cast<size_t>(len));
        pos += static_cast<size_t>(len);
        return s;
    }
};

Imatrix load_legacy(const std::string& path, std::span<const uint8_t> bytes) {
    Reader r{bytes, path};
    Imatrix m;
    const int32_t n_entries = r.i32("entry count");
    if (n_entries < 1) throw FormatError(ErrorKind::BadKey, path, "", "no imatrix entries");
    for (int32_t e = 0; e < n_entries; ++e) {
        const std::string what = fmt::format("entry {}", e + 1);
        std::string name = r.str(r.i32(what + " name length"), what + " name");
        const int32_t ncall = r.i32(what + " call count");
        const int32_t nval = r.i32(what + " value count");
        if (nval < 1)
            throw FormatError(ErrorKind::BadDims, path, "entry '" + name + "'", fmt::format("value count {}", nval));
        r.need(static_cast<size_t>(nval) * sizeof(float), "values of '" + name + "'");
        std::vector<float>& v = m.entries[name];
        v.resize(static_cast<size_t>(nval));
        std::memcpy(v.data(), bytes.data() + r.pos, v.size() * sizeof(float));
        r.pos += v.size() * sizeof(float);
        check_count(path, name, static_cast<float>(ncall), "the call count");
        for (float& x : v) x /= static_cast<float>(ncall);
        check_values(path, name, v, v.size());
    }
    if (r.pos < bytes.size()) {  // newer legacy files end with the chunk count and the data set name
        m.chunk_count = r.i32("chunk count");
        m.datasets = {r.str(r.i32("data set name length"), "data set name")};
    }
    return m;
}

}  // namespace

Imatrix parse_imatrix(std::span<const uint8_t> bytes, const std::string& path) {
    if (bytes.size() >= 4 && std::memcmp(bytes.data(), "GGUF", 4) == 0) return load_gguf(bytes, path);
    return load_legacy(path, bytes);
}

Imatrix load_imatrix(const std::string& path) {
    MappedFile file(path);
    return parse_imatrix(file.bytes(), path);
}

void filter_imatrix(Imatrix& m, const std::vector<std::string>& include, const std::vector<std::string>& exclude) {
    auto contains_any = [](const std::string& name, const std::vector<std::string>& parts) {
        return std::any_of(parts.begin(), parts.end(),
                           [&](const std::string& p) { return name.find(p) != std::string::npos; });
    };
    std::erase_if(m.entries, [&](const auto& e) {
        return (!include.empty() && !contains_any(e.first, include)) || contains_any(e.first, exclude);
    });
}

}  // namespace oiw
