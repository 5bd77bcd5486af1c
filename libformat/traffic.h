// Model facts and the batch-1 decode traffic model of a GGUF file (bytes read per token). Pure
// analysis: reads only the metadata and tensor infos (of a file or a planned output), never tensor
// data, never prints.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "libformat/model.h"

namespace oiw::traffic {

// Tensor groups by llama.cpp naming convention (see classify()).
enum class Group : uint8_t { Embedding, Attention, Ffn, Experts, SharedExperts, Routers, Norms, LmHead, Other };
inline constexpr size_t kGroupCount = 9;
inline constexpr std::array<Group, kGroupCount> kAllGroups = {Group::Embedding, Group::Attention,     Group::Ffn,
                                                              Group::Experts,   Group::SharedExperts, Group::Routers,
                                                              Group::Norms,     Group::LmHead,        Group::Other};

// Stable identifier used in JSON ("embedding", "attention", "ffn", "experts", "shared_experts",
// "routers", "norms", "lm_head", "other").
std::string_view group_id(Group g);
// Human label ("dense FFN", "shared experts", ...).
std::string_view group_label(Group g);

// Name split: "blk.12.ffn_down_exps.weight" -> layer 12, stem "ffn_down_exps".
struct NameParts {
    int layer = -1;         // -1 when the tensor is not in a "blk.N." block
    std::string_view stem;  // first dotted component after the block prefix
};
NameParts split_name(std::string_view name);

// Group of a tensor by name alone (token_embd is Embedding here; tying is decided by analyze()).
//   output -> lm_head; *norm* -> norms; token_embd / position_embd / token_types -> embedding;
//   ffn_gate_inp* / exp_probs_b -> routers; *_exps -> experts; *_shexp -> shared experts;
//   attn_* -> attention; other ffn_* -> dense FFN; anything else -> other.
Group classify(std::string_view name);

struct TensorFacts {
    Group group = Group::Other;
    int layer = -1;
    // A weight read by a matrix multiply during decode (>= 2-D, not an embedding lookup, not a norm).
    bool matmul = false;
    // Bytes read from this tensor per decoded token (batch 1), see analyze().
    uint64_t bytes_per_token = 0;
};

struct ModelFacts {
    std::string architecture;                   // general.architecture ("" when absent)
    std::string name;                           // general.name ("" when absent)
    std::optional<uint32_t> file_type;          // general.file_type
    std::optional<uint64_t> expert_count;       // <arch>.expert_count
    std::optional<uint64_t> expert_used_count;  // <arch>.expert_used_count
    bool tied_embeddings = false;               // token_embd present, output.weight absent
    uint64_t n_elements = 0;                    // all tensors
    uint64_t n_bytes = 0;                       // all tensor data bytes
    // Overall bits per weight: n_bytes * 8 / n_elements (0 without tensors).
    double bpw() const { return n_elements ? 8.0 * static_cast<double>(n_bytes) / static_cast<double>(n_elements) : 0; }
};

struct Totals {
    uint64_t count = 0, n_elements = 0, n_bytes = 0, bytes_per_token = 0;
};

struct TypeTotals : Totals {
    GgmlType type = GgmlType::F32;
};
struct LayerTotals : Totals {
    int layer = -1;
};

struct Traffic {
    uint64_t bytes_per_token = 0;
    std::array<uint64_t, kGroupCount> by_group{};  // indexed by Group
    // lm_head bytes / total bytes per token (0 when nothing is read).
    double lm_head_share = 0;
    // expert_used_count / expert_count applied to expert tensors (nullopt: no MoE facts).
    std::optional<double> expert_fraction;
};

struct Analysis {
    ModelFacts model;
    std::vector<TensorFacts> tensors;          // parallel to Model::tensors()
    std::vector<TypeTotals> by_type;           // types present, ascending type id
    std::array<Totals, kGroupCount> by_group;  // indexed by Group
    std::vector<LayerTotals> by_layer;         // layer -1 (outside blocks) first, then ascending
    Traffic traffic;
};

// Batch-1 decode traffic model, per tensor:
//   embedding lookups (token_embd when untied, position_embd, token_types): one row;
//   3-D expert tensors (*_exps whose last dimension is expert_count):
//       n_bytes * expert_used_count / expert_count (exact: such a tensor holds expert_count
//       equal slices, so this is expert_used_count whole slices);
//   everything else (lm_head, tied token_embd, dense matrices, shared experts, routers, norms): all bytes.
Analysis analyze(const Model& f);
// The same from metadata and tensor infos alone (e.g. a planned output that is not written yet).
Analysis analyze(const Metadata& kvs, const std::vector<GgufTensorInfo>& tensors);

// Parses a memory bandwidth such as "20GB/s", "20 GB", "51.2e9", "25GiB/s" into bytes per second
// (SI prefixes are powers of 1000, "i" prefixes powers of 1024). Throws FormatError(Usage).
double parse_bandwidth(std::string_view text);

}  // namespace oiw::traffic
