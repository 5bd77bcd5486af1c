// A model card's YAML front matter (README.md) read as gguf-py reads it (llama.cpp 1348f67,
// gguf/metadata.py: Metadata.load_model_card, PyYAML's safe_load with YAML 1.1 implicit types, then
// the model-card half of Metadata.apply_metadata_heuristic): the general.* authorship fields
// convert_hf_to_gguf.py takes from it. Parsed with libyaml (the C library PyYAML's own parser is
// a port of); types resolved with PyYAML's resolver and safe constructor rules.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "converters/hf/json_doc.h"

namespace oiw::hf {

// One general.base_model.N / general.dataset.N entry: field ("name", "organization", "repo_url",
// ...) -> value, only the fields gguf-py writes.
using CardSource = std::map<std::string, std::string>;
// The fields of a CardSource gguf-py writes, in its order.
inline constexpr const char* kCardSourceFields[] = {"name", "author", "version", "organization", "description",
                                                    "url",  "doi",    "uuid",    "repo_url"};

// What the card sets. A field that is set but empty ("" here) blocks the later heuristics and
// writes nothing, as a card value that is empty, false or zero does in Python.
struct CardMetadata {
    std::optional<std::string> name, author, version, organization, description, finetune, basename, size_label,
        license, license_name, license_link, source_url, source_doi, source_uuid, source_repo_url;
    std::optional<std::string> url, doi, uuid, repo_url, quantized_by;  // only from a --metadata file
    std::optional<std::vector<CardSource>> base_models, datasets;
    std::optional<std::vector<std::string>> tags, languages;
};

// A checkpoint's README.md, read at most once and only when first asked for (Qwen3's reranker check
// and the model card both read it, each where the Python converter does).
class CardFile {
public:
    explicit CardFile(const std::string& dir);
    const std::string& path() const { return path_; }
    // The file's text, or nullptr when the directory has none. Throws FormatError naming the file
    // when it cannot be read, is over 64 MiB or is not UTF-8 (the Python converter stops on it).
    const std::string* text();

private:
    std::string path_;
    bool read_ = false;
    std::optional<std::string> text_;
};

// Applies `card`'s keys as gguf-py does; `total_params` feeds the size-label heuristics of
// base-model ids. No file or no front matter: all fields unset. Throws FormatError naming the file
// (and the key) where the Python converter fails (YAML errors, a non-string value where a string
// is written, an impossible date) or where a construct is not read here (merge keys, explicit tags
// other than !!str / !!null / !!seq / !!map, a non-string tag or language).
CardMetadata read_model_card(CardFile& card, int64_t total_params);

// read_model_card on `text`, the text of `path` (not read here; named in errors).
CardMetadata parse_model_card(const std::string& text, const std::string& path, int64_t total_params);

// Metadata.load's override file (convert_hf_to_gguf.py --metadata FILE, a JSON object keyed by GGUF
// key names): its authorship keys replace `m`'s fields (null unsets one; "general.license" is not
// among them, as in gguf-py), its "general.sampling.*" keys replace those in `sampling` (null
// removes one). Throws FormatError naming `file` and the key for what the Python converter fails
// on or misreads (a non-string name, a base model that is not an object, tags that are not a list
// of strings).
void apply_metadata_override(const std::string& json_text, const std::string& file, CardMetadata& m, Json& sampling);

// The front matter as Metadata.load_model_card hands it to yaml.safe_load: the lines after a first
// line "---" up to the next "---" line (str.splitlines' line breaks), joined with "\n", "- no\n"
// quoted and tabs made two spaces; nullopt when the text does not start with a "---" line.
std::optional<std::string> front_matter(const std::string& text);

}  // namespace oiw::hf
