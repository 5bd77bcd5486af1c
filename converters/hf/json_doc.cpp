#include "converters/hf/json_doc.h"

#include <set>
#include <vector>

#include <fmt/format.h>

#include "libformat/error.h"
#include "libformat/io/text_file.h"

namespace oiw::hf {

namespace {

struct RepeatedKey {};  // a key repeated in one object, seen where the object ends

// nlohmann's callback parser with the checks parse_json promises. With `named`, each open object
// keeps the keys read so far and a repeat is refused naming the key (a set entry per key: slow on
// a 150k-token vocabulary); without, an object is only counted and a repeat seen at its end, where
// it holds fewer members than keys were read, throws RepeatedKey.
Json parse_checked(std::string_view text, const std::string& file, int max_depth, bool named) {
    std::vector<std::set<std::string>> open_keys;  // named: the keys of each open object, innermost last
    std::vector<size_t> open_counts;               // not named: how many keys each has read
    auto check = [&](int depth, Json::parse_event_t event, Json& parsed) {
        using E = Json::parse_event_t;
        if ((event == E::object_start || event == E::array_start) && depth >= max_depth)
            throw FormatError(ErrorKind::BadJson, file, "",
                              fmt::format("JSON nested deeper than {} levels", max_depth));
        if (named) {
            if (event == E::object_start) open_keys.emplace_back();
            if (event == E::object_end) open_keys.pop_back();
            if (event == E::key && !open_keys.back().insert(parsed.get<std::string>()).second)
                throw FormatError(ErrorKind::BadJson, file, "key '" + parsed.get<std::string>() + "'",
                                  "repeated in one JSON object");
        } else {
            if (event == E::object_start) open_counts.push_back(0);
            if (event == E::key) ++open_counts.back();
            if (event == E::object_end) {
                if (parsed.size() != open_counts.back()) throw RepeatedKey{};
                open_counts.pop_back();
            }
        }
        return true;
    };
    try {
        return Json::parse(text.begin(), text.end(), check);
    } catch (const Json::exception& e) {
        // nlohmann's what(): "[json.exception.parse_error.101] parse error at line 1, column 5: ..."
        const std::string what = e.what();
        const size_t tag = what.find("] ");
        throw FormatError(ErrorKind::BadJson, file, "",
                          "not valid JSON: " + (tag == std::string::npos ? what : what.substr(tag + 2)));
    }
}

}  // namespace

Json parse_json(std::string_view text, const std::string& file, int max_depth) {
    try {
        return parse_checked(text, file, max_depth, false);
    } catch (const RepeatedKey&) {
    } catch (const FormatError&) {}
    // Refused: parsed again keeping every key, so the error is the first in document order (a
    // repeat is then seen at the key itself, before a later syntax error or nesting).
    return parse_checked(text, file, max_depth, true);
}

Json read_json_file(const std::string& path, uint64_t max_bytes, int max_depth) {
    return parse_json(read_text_file(path, static_cast<size_t>(max_bytes)), path, max_depth);
}

const Json* member(const Json& j, std::string_view key) {
    if (!j.is_object()) return nullptr;
    const auto it = j.find(key);
    return it == j.end() ? nullptr : &*it;
}

uint64_t get_u64(const Json& j, std::string_view key, const std::string& file, const std::string& subject) {
    const Json* v = member(j, key);
    if (!v || !v->is_number_unsigned())
        throw FormatError(ErrorKind::BadJson, file, subject,
                          fmt::format("'{}' {}", key, v ? "is not an unsigned integer" : "is missing"));
    return v->get<uint64_t>();
}

}  // namespace oiw::hf
