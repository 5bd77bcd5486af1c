// Case-insensitive (ASCII) name lookup, shared by the type, llama_ftype and preset tables; the
// block number of a tensor name.
#pragma once
#include <algorithm>
#include <cstddef>
#include <optional>
#include <string_view>

namespace oiw {

// True when a and b are equal ignoring ASCII case.
inline bool iequals(std::string_view a, std::string_view b) {
    auto upper = [](char c) { return c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c; };
    return a.size() == b.size() &&
           std::equal(a.begin(), a.end(), b.begin(), [&](char x, char y) { return upper(x) == upper(y); });
}

// Accepts every row (find_by_name's default filter).
struct AnyRow {
    bool operator()(const auto&) const { return true; }
};

// First row of `rows` for which iequals(name_of(row), name) and keep(row) hold, or nullptr.
template <typename Rows, typename NameOf, typename Keep = AnyRow>
auto find_by_name(const Rows& rows, std::string_view name, NameOf name_of, Keep keep = {})
    -> decltype(&*std::begin(rows)) {
    for (const auto& row : rows)
        if (keep(row) && iequals(name_of(row), name)) return &row;
    return nullptr;
}

// N of a tensor name "blk.N.<rest>": decimal digits (read while N < 1,000,000) followed by a
// dot; nullopt for any other name. (gguf-requant orders tensors by llama.cpp's own, laxer
// sscanf("blk.%d.") reading instead, to write the same files: requant_plan.cpp block_number.)
inline std::optional<int> block_index(std::string_view name, size_t* rest = nullptr) {
    if (name.substr(0, 4) != "blk.") return std::nullopt;
    size_t i = 4;
    int n = 0;
    while (i < name.size() && name[i] >= '0' && name[i] <= '9' && n < 1000000) n = n * 10 + (name[i++] - '0');
    if (i == 4 || i >= name.size() || name[i] != '.') return std::nullopt;
    if (rest) *rest = i + 1;
    return n;
}

}  // namespace oiw
