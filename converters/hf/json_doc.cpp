#include "converters/hf/json_doc.h"

#include <set>
#include <vector>

#include <fmt/format.h>

#include "libformat/error.h"
#include "libformat/io/text_file.h"

namespace oiw::hf {

Json parse_json(std::string_view text, const std::string& file, int max_depth) {
    // The keys seen so far in each object being parsed, innermost last.
    std::vector<std::set<std::string>> open_objects;
    auto check = [&](int depth, Json::parse_event_t event, Json& parsed) {
        using E = Json::parse_event_t;
        if ((event == E::object_start || event == E::array_start) && depth >= max_depth)
            throw FormatError(ErrorKind::BadJson, file, "",
                              fmt::format("JSON nested deeper than {} levels", max_depth));
        if (event == E::object_start) open_objects.emplace_back();
        if (event == E::object_end) open_objects.pop_back();
        if (event == E::key && !open_objects.back().insert(parsed.get<std::string>()).second)
            throw FormatError(ErrorKind::BadJson, file, "key '" + parsed.get<std::string>() + "'",
                              "repeated in one JSON object");
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
