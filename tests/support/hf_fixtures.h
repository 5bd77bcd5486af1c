// Synthetic Hugging Face checkpoints for tests: safetensors images built from entries, or from a
// raw header for the hostile cases.
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace oiw::test {

struct StEntry {
    std::string name;
    std::string dtype;            // "BF16", "F32", ... (not checked here: hostile tests lie)
    std::vector<uint64_t> shape;  // outermost first
    std::vector<uint8_t> bytes;
};

// A safetensors file holding `entries` in the given order, spans back to back, the header padded
// with spaces to a multiple of 8 bytes (as the safetensors library writes it).
std::vector<uint8_t> safetensors_image(const std::vector<StEntry>& entries,
                                       const std::map<std::string, std::string>& metadata = {});
// The checkpoint of tests/data/hf/cases/<name> in root/<name>, built as scripts/make-convert-goldens
// builds it: `gguf-synth --hf $(cat synth.args)`, tests/data/hf/tokenizer.model (or, when the case
// has a tokenizer.from naming a directory of tests/data, that directory's tokenizer.json.zst
// decompressed and its tokenizer_config.json) and the case's JSON files copied in.
std::filesystem::path make_hf_case(const std::string& name, const std::filesystem::path& root);

// A gguf-synth --hf checkpoint with `args` and tests/data/hf/tokenizer.model, at `dir`.
std::filesystem::path make_synth(const std::string& args, const std::filesystem::path& dir);

// u64 length of `header` | `header` | `data`: any header at all.
std::vector<uint8_t> safetensors_raw(std::string_view header, std::span<const uint8_t> data = {});

}  // namespace oiw::test
