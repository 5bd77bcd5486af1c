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

#include "converters/hf/convert.h"

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

// One line of tests/data/hf/goldens.txt: what convert_hf_to_gguf.py wrote for a case at an outtype
// ("vocab": --vocab-only), its SHA-256 and default file name.
struct ConvertGolden {
    std::string name, outtype, sha, file_name;
};
// Every line of tests/data/hf/goldens.txt, in order.
std::vector<ConvertGolden> convert_goldens();

// hf::plan_convert of `ck` at `outtype` ("f16", ..., or "vocab": --vocab-only).
hf::ConvertPlan plan_case(const hf::Checkpoint& ck, const std::string& outtype);

// hf::write_convert of `plan` to `out` with `opt`; the written file's SHA-256.
std::string write_sha(const hf::ConvertPlan& plan, const std::filesystem::path& out, const hf::WriteOptions& opt);

// hf::write_convert of the checkpoint `dir` at `outtype` ("f16", ..., or "vocab": --vocab-only) to
// `out` with `opt` (an hf::WriteOptions); the written file's SHA-256.
std::string convert_sha(const std::filesystem::path& dir, const std::string& outtype, const std::filesystem::path& out,
                        const hf::WriteOptions& opt);

// u64 length of `header` | `header` | `data`: any header at all.
std::vector<uint8_t> safetensors_raw(std::string_view header, std::span<const uint8_t> data = {});

}  // namespace oiw::test
