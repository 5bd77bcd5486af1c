// Case-insensitive (ASCII) name lookup, shared by the type, llama_ftype and preset tables.
#pragma once
#include <algorithm>
#include <string_view>

namespace oiw {

// True when a and b are equal ignoring ASCII case.
inline bool iequals(std::string_view a, std::string_view b) {
    auto upper = [](char c) { return c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c; };
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [&](char x, char y) { return upper(x) == upper(y); });
}

// Accepts every row (find_by_name's default filter).
struct AnyRow {
    bool operator()(const auto&) const { return true; }
};

// First row of `rows` for which iequals(name_of(row), name) and keep(row) hold, or nullptr.
template <typename Rows, typename NameOf, typename Keep = AnyRow>
auto find_by_name(const Rows& rows, std::string_view name, NameOf name_of, Keep keep = {}) -> decltype(&*std::begin(rows)) {
    for (const auto& row : rows)
        if (keep(row) && iequals(name_of(row), name)) return &row;
    return nullptr;
}

}  // namespace oiw
