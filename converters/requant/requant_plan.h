// Per-tensor type selection for requantization: llama-quantize's presets (ftypes), its mixture
// rules, row-length fallbacks, excluded tensors and tensor order (llama.cpp src/llama-quant.cpp,
// llama_tensor_get_type and friends, at the commit named in ../shared/fixtures/README.md).
// Pure planning: reads names, shapes, types and metadata, never tensor data.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "libformat/gguf/gguf.h"

namespace oiw {

// One llama-quantize preset: its name, the llama_ftype id written to general.file_type, and the
// type of every quantizable tensor no mixture rule changes.
struct RequantPreset {
    std::string_view name;
    uint32_t ftype;
    GgmlType default_type;
};

// The supported presets in llama-quantize's listing order (aliases not included).
std::span<const RequantPreset> requant_presets();
// Preset by name (case-insensitive; llama-quantize's aliases Q3_K, Q4_K, Q5_K) or ftype number;
// nullptr when there is none.
const RequantPreset* lookup_preset(std::string_view name);
// "unknown preset 'NAME' (valid: ...)": the message for a name lookup_preset does not know.
std::string unknown_preset_text(std::string_view name);
// lookup_preset, or throws FormatError(Usage) with unknown_preset_text.
const RequantPreset& find_preset(std::string_view name);
// A tensor type we can write, by ggml name (case-insensitive). `what` names the option in the
// error, which lists the valid names. Throws FormatError(Usage).
GgmlType parse_target_type(std::string_view name, std::string_view what);

// A tensor type rule, REGEX=TYPE (the regex is lower-cased and searched in tensor names, as in
// llama-quantize's --tensor-type; the first rule that matches a tensor wins).
struct TensorTypeRule {
    std::string pattern;
    GgmlType type = GgmlType::F32;
};
// Parses "REGEX=TYPE" (the regex compiled now, so a bad one is reported here). Throws
// FormatError(Usage) whose subject is `source` and the spec.
TensorTypeRule parse_type_rule(std::string_view spec, std::string_view source);

struct PlanOptions {
    const RequantPreset* preset = nullptr;         // required
    std::vector<TensorTypeRule> tensor_types;      // in order; the first that matches a tensor wins
    std::optional<GgmlType> output_tensor_type;    // type of output.weight
    std::optional<GgmlType> token_embedding_type;  // type of token_embd.weight
    bool leave_output_tensor = false;              // output.weight unchanged
    bool pure = false;                             // no mixture rules
    std::vector<std::string> keep;                 // regexes: copy matching tensors unchanged
    bool has_imatrix = false;                      // some rules depend on it
    std::vector<size_t> order;  // tensor order (e.g. the input's, for shards kept); empty: llama_tensor_order
};

// The model facts the mixture rules read (a subset of llama_hparams), from the metadata.
struct QuantModelInfo {
    std::string arch;  // general.architecture
    int n_layer = 0;   // <arch>.block_count
    uint32_t n_head = 0, n_head_kv = 0, n_expert = 0;
    bool is_70b = false;  // llama.cpp's LLM_TYPE_70B (80-layer llama with GQA, deci, qwen2, olmo)
    int n_gqa() const { return n_head_kv ? static_cast<int>(n_head / n_head_kv) : 0; }
};
QuantModelInfo quant_model_info(const Metadata& kvs);

struct TensorPlan {
    size_t input_index = 0;  // index in the input file's tensor list
    std::string name;
    std::vector<int64_t> shape;  // trailing 1s dropped (ggml_n_dims), as llama-quantize writes it
    GgmlType src_type = GgmlType::F32, dst_type = GgmlType::F32;
    uint64_t src_bytes = 0, dst_bytes = 0;
    int64_t n_elements = 0;
    bool requires_imatrix = false;  // llama-quantize refuses to write it without importance data
    bool convert() const { return src_type != dst_type; }
};

// A tensor the plan cannot convert (e.g. a row length its type does not allow): it is planned
// unchanged; the requantizer refuses the conversion (a dry run reports it as a warning).
struct PlanRefusal {
    std::string subject, what;  // as FormatError's
};

struct RequantPlan {
    std::vector<TensorPlan> tensors;    // in output order
    std::vector<std::string> warnings;  // fallbacks, rules matching nothing, ... (names escaped: escape_text)
    std::vector<PlanRefusal> refusals;  // in output order
};

// Tensor order of llama-quantize's output (llama_model_loader::weight_name_comparer): by block
// number ("blk.N." prefix; others count as -1 and come first), then by name. Returns indices.
std::vector<size_t> llama_tensor_order(const std::vector<GgufTensorInfo>& tensors);

// Chooses every tensor's output type as llama-quantize would for `opt`, plus our --keep.
// `kvs` is the output metadata (model facts are read from it). A tensor llama-quantize cannot
// place (no fallback type) goes to plan.refusals. Throws FormatError(Usage) for a bad regex or a
// missing block number.
RequantPlan plan_requant(const Metadata& kvs, const std::vector<GgufTensorInfo>& tensors, const PlanOptions& opt);

}  // namespace oiw
