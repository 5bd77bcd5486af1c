// Reading the JSON documents of a Hugging Face checkpoint (safetensors headers, the shard index,
// config.json) strictly: one error type, the file named, caps on what a document may ask for.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace oiw::hf {

using Json = nlohmann::json;

// Parses `text` as one JSON value (UTF-8 checked, surrounding whitespace allowed), refusing
// nesting deeper than `max_depth` and any object that repeats a key (nlohmann would keep the last
// silently). Throws FormatError(BadJson) naming `file` and the byte where parsing stopped.
Json parse_json(std::string_view text, const std::string& file, int max_depth);

// Reads the whole regular file `path` (at most `max_bytes`) and parses it as parse_json does.
// Throws FormatError(Io) when it cannot be read, (TooLarge) when it is larger.
Json read_json_file(const std::string& path, uint64_t max_bytes, int max_depth);

// `j[key]` when j is an object holding it, else null. Never throws.
const Json* member(const Json& j, std::string_view key);

// j[key] as an unsigned integer, or FormatError(BadJson) naming `file`, `subject` and the key.
uint64_t get_u64(const Json& j, std::string_view key, const std::string& file, const std::string& subject);

}  // namespace oiw::hf
