// The general.* naming heuristics of gguf-py (llama.cpp 1348f67, gguf/metadata.py and
// gguf/utility.py): what convert_hf_to_gguf.py derives from a model id
// such as "Qwen/Qwen2.5-7B-Instruct" or a directory name.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace oiw::hf {

struct ModelIdParts {
    std::optional<std::string> full_name, organization, basename, finetune, version, size_label;
};

// Metadata.get_model_id_components: splits "<org>/<name>" and annotates the name's '-' parts as
// version, quant type, size label, finetune or basename. `total_params` (0: unknown) decides
// whether a size-like part is the model's size or, far from it, a context length (a finetune).
// Throws FormatError(Unsupported) for a part with Unicode digits or case-folding letters, which
// gguf-py's Unicode regexes would read differently.
ModelIdParts model_id_parts(const std::string& model_id, int64_t total_params);

// Metadata.id_to_title: "tiny-llama" -> "Tiny Llama" (lower-case words title-cased, others and
// version-like words kept).
std::string id_to_title(const std::string& id);

// gguf.size_label: "7.2B", "140K", or "8x7.0B" for `expert_count` > 0.
std::string size_label(int64_t total_params, int64_t shared_params, int64_t expert_params, int64_t expert_count);

}  // namespace oiw::hf
