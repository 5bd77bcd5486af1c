#include "converters/hf/convert.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <map>
#include <set>
#include <span>

#include <fmt/format.h>

#include "converters/hf/bpe_vocab.h"
#include "converters/hf/dequant.h"
#include "converters/hf/json_doc.h"
#include "converters/hf/model_card.h"
#include "converters/hf/model_name.h"
#include "converters/hf/rope_freqs.h"
#include "converters/hf/sentencepiece.h"
#include "libformat/gguf/gguf.h"
#include "libformat/io/mapped_file.h"
#include "libformat/io/text_file.h"

namespace oiw::hf {
namespace {
namespace fs = std::filesystem;

constexpr uint64_t kMaxJsonBytes = 64ull << 20;            // config, tokenizer_config, generation_config
constexpr uint64_t kMaxTokenizerJsonBytes = 256ull << 20;  // tokenizer.json (Gemma3's: 33 MB)
constexpr uint64_t kMaxSpmBytes = 256ull << 20;            // tokenizer.model
constexpr uint32_t kQuantizationVersion = 2;               // GGML_QNT_VERSION

// config.json as the converter reads it: text_config's keys over the root's.
class Hparams {
public:
    Hparams(const Json& j, std::string file) : raw_(j), j_(j), file_(std::move(file)) {
        if (!j_.is_object()) throw FormatError(ErrorKind::BadJson, file_, "", "not a JSON object");
        if (const Json* t = member(j, "text_config"); t && t->is_object())
            for (const auto& [k, v] : t->items()) j_[k] = v;
    }
    const std::string& file() const { return file_; }
    const Json& raw() const { return raw_; }  // the file as it is
    const Json& merged() const { return j_; }
    // find_hparam: the value of the first key present (possibly null), or null when none is.
    const Json* find(std::initializer_list<const char*> keys) const {
        for (const char* k : keys)
            if (const Json* v = member(j_, k)) return v;
        return nullptr;
    }
    // As find, null values counting as absent (the converter's `is not None`).
    const Json* get(std::initializer_list<const char*> keys) const {
        const Json* v = find(keys);
        return v && !v->is_null() ? v : nullptr;
    }
    // find(keys) that must be there.
    const Json& need(std::initializer_list<const char*> keys) const {
        if (const Json* v = get(keys)) return *v;
        throw FormatError(ErrorKind::BadJson, file_, "", fmt::format("'{}' is missing", *keys.begin()));
    }

private:
    Json raw_, j_;
    std::string file_;
};

// The GGUF keys in the converter's order; setting a key again replaces its value in place (as
// GGUFWriter.add_key_value does), empty strings and arrays are not written (add_string/add_array).
class KvWriter {
public:
    explicit KvWriter(std::string file) : file_(std::move(file)) {}
    // The file the values come from, named in errors (config.json unless set otherwise).
    void set_source(std::string file) { file_ = std::move(file); }
    void u32(const std::string& key, const Json& v) {
        put(key, GgufValue::make_scalar<uint32_t>(GgufType::U32, integer<uint32_t>(key, v)));
    }
    void u32(const std::string& key, uint64_t v) { u32(key, Json(v)); }
    void i32(const std::string& key, const Json& v) {
        put(key, GgufValue::make_scalar<int32_t>(GgufType::I32, integer<int32_t>(key, v)));
    }
    void f32(const std::string& key, const Json& v) {
        if (!v.is_number() && !v.is_boolean()) bad(key, v, "a number");
        put(key, GgufValue::make_scalar<float>(GgufType::F32,
                                               static_cast<float>(v.is_boolean() ? v.get<bool>() : v.get<double>())));
    }
    void boolean(const std::string& key, bool v) { put(key, GgufValue::make_bool(v)); }
    void str(const std::string& key, const std::string& v) {
        if (!v.empty()) put(key, GgufValue::make_string(v));
    }
    void str_json(const std::string& key, const Json& v) {
        if (!v.is_string()) bad(key, v, "a string");
        str(key, v.get<std::string>());
    }
    void strings(const std::string& key, std::vector<std::string> v) {
        if (!v.empty()) put(key, GgufValue::make_string_array(std::move(v)));
    }
    template <typename T>
    void numbers(const std::string& key, GgufType t, const std::vector<T>& v) {
        std::vector<uint8_t> packed(v.size() * sizeof(T));
        std::memcpy(packed.data(), v.data(), packed.size());
        if (!v.empty()) put(key, GgufValue::make_array(t, std::move(packed), v.size()));
    }
    Metadata take() { return std::move(m_); }

private:
    std::string file_;
    Metadata m_;
    void put(const std::string& key, GgufValue v) { m_.set({key, std::move(v)}); }
    [[noreturn]] void bad(const std::string& key, const Json& v, const char* want) const {
        throw FormatError(ErrorKind::BadJson, file_, "key '" + key + "'", fmt::format("{} is not {}", v.dump(), want));
    }
    // struct.pack of an int (a bool counts as 0/1) in T's range.
    template <typename T>
    T integer(const std::string& key, const Json& v) const {
        if (v.is_boolean()) return static_cast<T>(v.get<bool>());
        if (v.is_number_unsigned() && v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<T>::max()))
            return static_cast<T>(v.get<uint64_t>());
        if (v.is_number_integer() && v.get<int64_t>() >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
            v.get<int64_t>() <= static_cast<int64_t>(std::numeric_limits<T>::max()))
            return static_cast<T>(v.get<int64_t>());
        bad(key, v, std::is_signed_v<T> ? "an i32" : "a u32");
    }
};

std::optional<Json> read_optional_json(const fs::path& p, int depth = kMaxJsonDepth) {
    std::error_code ec;
    if (!fs::is_regular_file(p, ec)) return std::nullopt;
    return read_json_file(p.string(), kMaxJsonBytes, depth);
}

// Path(dir).name as Python computes it ("a/b/" -> "b", "." -> "").
std::string dir_name(const std::string& dir) {
    std::string last;
    for (const auto& part : fs::path(dir))
        if (const std::string s = part.string(); !s.empty() && s != "." && s != "/") last = s;
    return last;
}

// ---------------------------------------------------------------- tensors

using NamePair = std::pair<const char*, const char*>;

// HF module name (without .weight/.bias) -> GGUF name, as gguf-py's tensor_mapping.py maps the
// names of Hugging Face's own modelling code for every family here; "{}": the block.
constexpr NamePair kCommonNames[] = {
    {"model.embed_tokens", "token_embd"},
    {"lm_head", "output"},
    {"model.norm", "output_norm"},
    {"model.layers.{}.input_layernorm", "blk.{}.attn_norm"},
    {"model.layers.{}.self_attn.q_proj", "blk.{}.attn_q"},
    {"model.layers.{}.self_attn.k_proj", "blk.{}.attn_k"},
    {"model.layers.{}.self_attn.v_proj", "blk.{}.attn_v"},
    {"model.layers.{}.self_attn.o_proj", "blk.{}.attn_output"},
    {"model.layers.{}.post_attention_layernorm", "blk.{}.ffn_norm"},
    {"model.layers.{}.mlp.gate_proj", "blk.{}.ffn_gate"},
    {"model.layers.{}.mlp.up_proj", "blk.{}.ffn_up"},
    {"model.layers.{}.mlp.down_proj", "blk.{}.ffn_down"},
};
// Qwen3's per-head RMS norms of queries and keys (MODEL_TENSOR.ATTN_Q_NORM / ATTN_K_NORM).
constexpr NamePair kQkNormNames[] = {
    {"model.layers.{}.self_attn.q_norm", "blk.{}.attn_q_norm"},
    {"model.layers.{}.self_attn.k_norm", "blk.{}.attn_k_norm"},
};

// Mixtral's router and its experts once merged (LlamaModel.modify_tensors' "layers.B.feed_forward.experts.wK").
constexpr NamePair kMoeNames[] = {
    {"model.layers.{}.block_sparse_moe.gate", "blk.{}.ffn_gate_inp"},
    {"layers.{}.feed_forward.experts.w1", "blk.{}.ffn_gate_exps"},
    {"layers.{}.feed_forward.experts.w2", "blk.{}.ffn_down_exps"},
    {"layers.{}.feed_forward.experts.w3", "blk.{}.ffn_up_exps"},
};

// Qwen3Moe's q/k norms, router and experts once merged (Qwen2MoeModel.modify_tensors'
// "model.layers.B.mlp.experts.<proj>.weight").
constexpr NamePair kQwen3MoeNames[] = {
    {"model.layers.{}.self_attn.q_norm", "blk.{}.attn_q_norm"},
    {"model.layers.{}.self_attn.k_norm", "blk.{}.attn_k_norm"},
    {"model.layers.{}.mlp.gate", "blk.{}.ffn_gate_inp"},
    {"model.layers.{}.mlp.experts.down_proj", "blk.{}.ffn_down_exps"},
    {"model.layers.{}.mlp.experts.gate_proj", "blk.{}.ffn_gate_exps"},
    {"model.layers.{}.mlp.experts.up_proj", "blk.{}.ffn_up_exps"},
};

// Qwen2Moe's router, experts once merged, and shared expert with its gate (MODEL_ARCH.QWEN2MOE).
constexpr NamePair kQwen2MoeNames[] = {
    {"model.layers.{}.mlp.gate", "blk.{}.ffn_gate_inp"},
    {"model.layers.{}.mlp.experts.down_proj", "blk.{}.ffn_down_exps"},
    {"model.layers.{}.mlp.experts.gate_proj", "blk.{}.ffn_gate_exps"},
    {"model.layers.{}.mlp.experts.up_proj", "blk.{}.ffn_up_exps"},
    {"model.layers.{}.mlp.shared_expert_gate", "blk.{}.ffn_gate_inp_shexp"},
    {"model.layers.{}.mlp.shared_expert.gate_proj", "blk.{}.ffn_gate_shexp"},
    {"model.layers.{}.mlp.shared_expert.up_proj", "blk.{}.ffn_up_shexp"},
    {"model.layers.{}.mlp.shared_expert.down_proj", "blk.{}.ffn_down_shexp"},
};

// How a converter class holds and stacks per-expert matrices: the tensors whose name holds
// `marker` are experts named `expert` (block, expert, part); once a block has all of them, each
// part in `parts` order is stacked over the experts into the tensor `merged` (block, part) names.
struct ExpertNaming {
    const char* marker;
    const char* expert;
    const char* merged;
    std::array<const char*, 3> parts;
    const char* count_key;  // the expert count: this key (Mixtral), or num_local_experts / num_experts
    // Also the fused forms of newer transformers: <marker>.down_proj [X, E, F] and
    // <marker>.gate_up_proj [X, 2F, E] (optionally with .weight), one tensor per block.
    bool fused = false;
};
// LlamaModel.modify_tensors (Mixtral).
constexpr ExpertNaming kMixtralExperts = {"block_sparse_moe.experts",
                                          "model.layers.{}.block_sparse_moe.experts.{}.{}.weight",
                                          "layers.{}.feed_forward.experts.{}.weight",
                                          {"w1", "w2", "w3"},
                                          "num_local_experts"};
// Qwen2MoeModel.modify_tensors (Qwen2Moe, Qwen3Moe).
constexpr ExpertNaming kQwenMoeExperts = {"mlp.experts",
                                          "model.layers.{}.mlp.experts.{}.{}.weight",
                                          "model.layers.{}.mlp.experts.{}.weight",
                                          {"down_proj", "gate_proj", "up_proj"},
                                          nullptr,
                                          true};

// Gemma3's norms around attention and MLP, and its per-head q/k norms (MODEL_ARCH.GEMMA3's mapping:
// post_attention_layernorm is ATTN_POST_NORM there, pre_feedforward_layernorm the FFN norm).
constexpr NamePair kGemma3Names[] = {
    {"model.layers.{}.post_attention_layernorm", "blk.{}.post_attention_norm"},
    {"model.layers.{}.pre_feedforward_layernorm", "blk.{}.ffn_norm"},
    {"model.layers.{}.post_feedforward_layernorm", "blk.{}.post_ffw_norm"},
    {"model.layers.{}.self_attn.q_norm", "blk.{}.attn_q_norm"},
    {"model.layers.{}.self_attn.k_norm", "blk.{}.attn_k_norm"},
};

// Phi3's fused projections, kept fused (MODEL_ARCH.PHI3: ATTN_QKV and a double-height FFN_UP).
constexpr NamePair kPhi3Names[] = {
    {"model.layers.{}.self_attn.qkv_proj", "blk.{}.attn_qkv"},
    {"model.layers.{}.mlp.gate_up_proj", "blk.{}.ffn_up"},
};

// One supported Hugging Face architecture: its GGUF architecture and what its converter class
// (convert_hf_to_gguf.py) does beyond TextModel's common steps.
struct ArchSpec {
    const char* hf_name;
    const char* arch;                       // GGUF general.architecture
    std::span<const NamePair> extra_names;  // names mapped besides kCommonNames
    const ExpertNaming* experts;            // how experts are merged (nullptr: the class has none)
    bool undo_permute;                      // LlamaModel.permute on q/k rows
    float norm_shift;                       // added to tensors named *norm.weight (Gemma3Model.norm_shift)
    // The class's own refusals (reranker detection, pooling modules, ...), before anything is planned.
    void (*check)(const Checkpoint& ck, const Hparams& hp, CardFile& card);
    // set_gguf_parameters after TextModel's keys (`a`: "<arch>." prefix).
    void (*params)(KvWriter& kv, const Hparams& hp, const std::string& a);
    // A set_gguf_parameters that does not start from TextModel's (Phi3): replaces it and `params`.
    void (*own_params)(KvWriter& kv, const Hparams& hp, const std::string& a, int64_t n_block, OutType ot);
    // set_vocab.
    void (*vocab)(KvWriter& kv, const Checkpoint& ck, const Hparams& hp, std::vector<std::string>& notes);
    // generate_extra_tensors: tensors it computes (written before the checkpoint's) and keys it
    // adds (after general.architecture, before all others: it runs before prepare_metadata).
    void (*extra)(KvWriter& kv, const Hparams& hp, std::vector<PlannedTensor>& out) = nullptr;
    // modify_tensors' edits of planned tensors beyond names, types and shifts.
    void (*adjust)(const Checkpoint& ck, const Hparams& hp, std::vector<PlannedTensor>& tensors) = nullptr;
};

// The first all-digit part of a dotted name (the converter's block id), or -1.
int64_t block_id(const std::string& name) {
    for (size_t b = 0; b <= name.size();) {
        const size_t e = std::min(name.find('.', b), name.size());
        const std::string_view p(name.data() + b, e - b);
        if (!p.empty() && p.size() < 10 && std::all_of(p.begin(), p.end(), [](char c) { return c >= '0' && c <= '9'; }))
            return std::stoll(std::string(p));
        b = e + 1;
    }
    return -1;
}

// The GGUF name `table` gives the module `base` of block `bid`, or "".
std::string lookup(std::span<const NamePair> table, const std::string& base, int64_t bid, int64_t n_block) {
    for (const auto& [hf, gguf] : table) {
        const bool per_block = std::strstr(hf, "{}") != nullptr;
        if (per_block && (bid < 0 || bid >= n_block)) continue;
        if (base == (per_block ? fmt::format(fmt::runtime(hf), bid) : std::string(hf)))
            return per_block ? fmt::format(fmt::runtime(gguf), bid) : std::string(gguf);
    }
    return "";
}

// TensorNameMap.get_name with (".weight", ".bias") for `spec`'s architecture: the GGUF name, or ""
// when unmapped.
std::string map_name(const ArchSpec& spec, const std::string& name, int64_t bid, int64_t n_block) {
    for (const char* suffix : {"", ".weight", ".bias"}) {
        if (!name.ends_with(suffix)) continue;
        const std::string base = name.substr(0, name.size() - std::strlen(suffix));
        for (std::span<const NamePair> table : {spec.extra_names, std::span<const NamePair>(kCommonNames)})
            if (std::string gguf = lookup(table, base, bid, n_block); !gguf.empty()) return gguf + suffix;
    }
    return "";
}

// TextModel.filter_tensors + ModelBase.filter_tensors: the name the converter works with, or ""
// for a tensor it drops (multimodal parts).
std::string filtered_name(std::string name) {
    for (const char* p : {"mlp", "vit.", "vpm.", "siglip2.", "conformer.", "merger.", "resampler.", "sound_encoder.",
                          "sound_projection.", "speech_embeddings."})
        if (name.starts_with(p)) return "";
    for (const char* s : {"visual.", "vision.", "audio.", "talker.", "vision_", "audio_", "sam_model", "token2wav.",
                          "code2wav.", "projector.", "pre_mm_projector_norm", "image_newline", "view_seperator",
                          "patch_embed", "patch_embedding", "patch_merger.", "model.connector."})
        if (name.find(s) != std::string::npos) return "";
    auto erase_all = [&](const std::string& what) {
        for (size_t at; (at = name.find(what)) != std::string::npos;) name.erase(at, what.size());
    };
    erase_all("text_model.");  // LlamaModel.filter_tensors (SmolVLM)
    if (name.ends_with("e_score_correction_bias")) name.replace(name.size() - 23, 23, "e_score_correction.bias");
    erase_all("language_model.");
    return name;
}

GgmlType out_ggml(OutType t) {
    if (t == OutType::Q8_0) return GgmlType::Q8_0;
    return t == OutType::F32 ? GgmlType::F32 : t == OutType::BF16 ? GgmlType::BF16 : GgmlType::F16;
}

uint32_t file_type_of(OutType t) {
    return t == OutType::F32 ? 0 : t == OutType::BF16 ? 32 : t == OutType::Q8_0 ? 7 : 1;
}

// The Python converter's QuantError fallback: a Q8_0 matrix whose rows are not whole blocks of 32
// is written as F16.
void q8_0_fallback(std::vector<PlannedTensor>& tensors) {
    for (PlannedTensor& t : tensors)
        if (t.type == GgmlType::Q8_0 && t.ne[0] % 32 != 0) t.type = GgmlType::F16;
}

// The converter's GUESSED file type: the first 2-D+ tensor that is BF16 or F16 decides, else F16.
OutType resolve_auto(const Checkpoint& ck) {
    for (const TensorRef& r : ck.tensors()) {
        if (filtered_name(r.tensor->name).empty() || r.tensor->shape.size() < 2) continue;
        if (r.tensor->dtype == Dtype::BF16) return OutType::BF16;
        if (r.tensor->dtype == Dtype::F16) return OutType::F16;
    }
    return OutType::F16;
}

// What ModelBase.dequant_model does to a quantized checkpoint: the scale of each weight it decodes
// (by filtered name) and the tensors it removes.
struct Dequant {
    std::map<std::string, std::shared_ptr<const Scale>, std::less<>> scales;
    std::set<std::string, std::less<>> dropped;
};

// The block size of quantization_config's `key` (null or absent: none): a list of 1 or 2 positive integers.
std::vector<uint64_t> block_size(const Json* v, const std::string& file, const std::string& key) {
    std::vector<uint64_t> out;
    if (!v || v->is_null()) return out;
    const bool ok =
        v->is_array() && !v->empty() && v->size() <= 2 && std::all_of(v->begin(), v->end(), [](const Json& x) {
            return x.is_number_unsigned() && x.get<uint64_t>() > 0 && x.get<uint64_t>() <= (1u << 20);
        });
    if (!ok) throw FormatError(ErrorKind::BadJson, file, key, v->dump() + " is not a block size [rows, columns]");
    for (const Json& x : *v) out.push_back(x.get<uint64_t>());
    return out;
}

// dequant_model's fp8 method (<weight>_scale_inv; .activation_scale, _activation_scale, .qscale_act
// dropped; Mistral's .qscale_weight) and compressed-tensors' float-, int- and naive-quantized formats
// (<weight>_scale). Other methods are refused as the Python converter refuses them (NotImplementedError).
Dequant plan_dequant(const Checkpoint& ck, const Hparams& hp) {
    Dequant dq;
    const Json* qc = member(hp.merged(), "quantization_config");
    if (!qc || !qc->is_object()) return dq;
    const Json* method = member(*qc, "quant_method");
    if (!method || method->is_null()) return dq;
    const std::string m = method->is_string() ? method->get<std::string>() : method->dump();
    std::vector<std::pair<std::string, std::string>> suffixes;  // scale suffix -> what replaces it for the weight
    std::vector<std::string> unused;                            // suffixes of tensors dropped unread
    std::vector<uint64_t> block;
    if (m == "fp8") {
        block = block_size(member(*qc, "weight_block_size"), hp.file(), "quantization_config.weight_block_size");
        suffixes = {{"_scale_inv", ""}, {".qscale_weight", ".weight"}};
        unused = {".activation_scale", "_activation_scale", ".qscale_act"};
    } else if (m == "compressed-tensors") {
        const Json* format = member(*qc, "format");
        const Json* groups = member(*qc, "config_groups");
        const std::string f = format && format->is_string() ? format->get<std::string>() : "";
        if (f != "float-quantized" && f != "int-quantized" && f != "naive-quantized")
            throw FormatError(ErrorKind::Unsupported, hp.file(), "quantization_config.format",
                              fmt::format("compressed-tensors format {} is not converted (float-quantized, "
                                          "int-quantized and naive-quantized are)",
                                          format ? format->dump() : "(missing)"));
        if (!groups || !groups->is_object() || groups->size() != 1)
            throw FormatError(ErrorKind::Unsupported, hp.file(), "quantization_config.config_groups",
                              "one config group is converted, as in the Python converter");
        const Json* w = member(groups->begin().value(), "weights");
        const Json* strategy = w ? member(*w, "strategy") : nullptr;
        const Json* group_size = w ? member(*w, "group_size") : nullptr;
        if (!strategy || (*strategy != "channel" && *strategy != "block") || (group_size && !group_size->is_null()))
            throw FormatError(ErrorKind::Unsupported, hp.file(), "quantization_config.config_groups",
                              "weights with strategy \"channel\" or \"block\" and no group_size are converted");
        block = block_size(member(*w, "block_structure"), hp.file(), "quantization_config.block_structure");
        suffixes = {{".weight_scale", ".weight"}};
    } else {
        throw FormatError(ErrorKind::Unsupported, hp.file(), "quantization_config.quant_method",
                          fmt::format("{} is not converted (fp8 and compressed-tensors are)", method->dump()));
    }
    std::map<std::string, TensorRef, std::less<>> by_name;
    for (const TensorRef& r : ck.tensors())
        if (const std::string n = filtered_name(r.tensor->name); !n.empty()) by_name.emplace(n, r);
    for (const auto& [n, r] : by_name) {
        if (std::any_of(unused.begin(), unused.end(), [&name = n](const std::string& u) { return name.ends_with(u); }))
            dq.dropped.insert(n);
        for (const auto& [suffix, replace] : suffixes) {
            if (!n.ends_with(suffix)) continue;
            const std::string weight = n.substr(0, n.size() - suffix.size()) + replace;
            const auto w = by_name.find(weight);
            if (w == by_name.end())
                throw FormatError(ErrorKind::BadDims, r.part->path(), "tensor '" + r.tensor->name + "'",
                                  fmt::format("scales '{}', which the checkpoint does not hold", weight));
            dq.scales[weight] = std::make_shared<const Scale>(plan_scale(*r.part, *r.tensor, *w->second.tensor, block));
            dq.dropped.insert(n);
        }
    }
    return dq;
}

// LlamaModel.modify_tensors' head counts (n_heads, n_kv_heads): required, positive.
std::pair<int64_t, int64_t> head_counts(const Hparams& hp) {
    const Json& n_head_j = hp.need({"n_heads", "num_attention_heads"});
    const Json& n_kv_j = hp.need({"n_kv_heads", "num_key_value_heads"});
    if (!n_head_j.is_number_unsigned() || !n_kv_j.is_number_unsigned() || n_head_j.get<uint64_t>() == 0 ||
        n_kv_j.get<uint64_t>() == 0)
        throw FormatError(ErrorKind::BadJson, hp.file(), "", "head counts must be positive integers");
    return {static_cast<int64_t>(n_head_j.get<uint64_t>()), static_cast<int64_t>(n_kv_j.get<uint64_t>())};
}

// The experts of LlamaModel.modify_tensors (Mixtral: model.layers.B.block_sparse_moe.experts.X.wK.weight)
// and Qwen2MoeModel.modify_tensors (model.layers.B.mlp.experts.X.<proj>.weight), as `spec.experts`
// names them: held per block until the block has 3 x the expert count of them, then each part is
// stacked over X into one 3-D tensor (type `type`), appended to `out` in the naming's part order.
class ExpertMerger {
public:
    ExpertMerger(const ArchSpec& spec, const Hparams& hp, int64_t n_block, GgmlType type)
        : spec_(spec), hp_(hp), n_block_(n_block), type_(type) {}

    void add(const TensorRef& r, const std::string& name, std::vector<PlannedTensor>& out) {
        const std::string subject = "tensor '" + r.tensor->name + "'";
        const ExpertNaming& en = *spec_.experts;  // plan_tensors routes experts here only when the class has some
        const Json& nx = en.count_key ? hp_.need({en.count_key}) : hp_.need({"num_local_experts", "num_experts"});
        if (!nx.is_number_unsigned() || nx.get<uint64_t>() == 0 || nx.get<uint64_t>() > 4096)
            throw FormatError(ErrorKind::BadJson, hp_.file(), en.count_key ? en.count_key : "num_experts",
                              nx.dump() + " is not an expert count");
        const auto n = static_cast<int64_t>(nx.get<uint64_t>());
        const int64_t bid = block_id(name);
        bool known = bid >= 0 && bid < n_block_;
        for (int64_t x = 0; known && x < n && !held_[bid].contains(name); ++x)
            for (const char* w : en.parts)
                if (name == expert_name(bid, x, w)) held_[bid].emplace(name, r);
        if (!known || !held_[bid].contains(name))
            throw FormatError(
                ErrorKind::Unsupported, r.part->path(), subject,
                fmt::format("not an expert of a block below {} named as {} names them ({}, "
                            "<part> one of {}|{}|{}, X < {})",
                            n_block_, spec_.hf_name, fmt::format(fmt::runtime(en.expert), "B", "X", "<part>"),
                            en.parts[0], en.parts[1], en.parts[2], n));
        if (held_[bid].size() < static_cast<size_t>(3 * n)) return;
        for (const char* w : en.parts) {
            PlannedTensor t;
            for (int64_t x = 0; x < n; ++x) {
                const auto it = held_[bid].find(expert_name(bid, x, w));
                t.stacked.push_back(it->second);
                held_[bid].erase(it);
            }
            t.source = t.stacked.front();
            const Tensor& first = *t.source.tensor;
            for (const TensorRef& e : t.stacked)
                if (e.tensor->shape != first.shape || e.tensor->dtype != first.dtype)
                    throw FormatError(ErrorKind::BadDims, e.part->path(), "tensor '" + e.tensor->name + "'",
                                      fmt::format("not the shape and dtype of '{}': experts are stacked", first.name));
            if (first.shape.size() != 2)
                throw FormatError(ErrorKind::BadDims, t.source.part->path(), "tensor '" + first.name + "'",
                                  "an expert is a matrix");
            t.name = map_name(spec_, fmt::format(fmt::runtime(en.merged), bid, w), bid, n_block_);
            t.ne = {static_cast<int64_t>(first.shape[1]), static_cast<int64_t>(first.shape[0]), n};
            t.type = type_;
            out.push_back(std::move(t));
        }
    }

    // prepare_tensors' "Unprocessed experts": a block whose experts never completed.
    void check_done(const Checkpoint& ck) const {
        for (const auto& [bid, held] : held_)
            if (!held.empty())
                throw FormatError(ErrorKind::BadDims, ck.dir(), "tensor '" + held.begin()->first + "'",
                                  fmt::format("block {} has {} of the 3 x {} expert tensors", bid, held.size(),
                                              spec_.experts->count_key ? spec_.experts->count_key : "num_experts"));
    }

private:
    std::string expert_name(int64_t bid, int64_t x, const char* w) const {
        return fmt::format(fmt::runtime(spec_.experts->expert), bid, x, w);
    }
    const ArchSpec& spec_;
    const Hparams& hp_;
    int64_t n_block_;
    GgmlType type_;
    std::map<int64_t, std::map<std::string, TensorRef>> held_;
};

// Qwen2MoeModel.modify_tensors' fused experts: `name` (filtered) ending in mlp.experts.down_proj
// (copied as the stacked tensor) or mlp.experts.gate_up_proj (split on its second dimension: each
// expert's first half is the gate, the second the up projection); false for other names.
bool plan_fused_experts(const ArchSpec& spec, const TensorRef& r, const std::string& name, int64_t n_block,
                        GgmlType type, std::vector<PlannedTensor>& out) {
    if (!spec.experts || !spec.experts->fused) return false;
    std::string base = name.ends_with(".weight") ? name.substr(0, name.size() - 7) : name;
    const std::string m = std::string(spec.experts->marker) + ".";
    const bool down = base.ends_with(m + "down_proj"), gate_up = base.ends_with(m + "gate_up_proj");
    if (!down && !gate_up) return false;
    const Tensor& src = *r.tensor;
    const std::string subject = "tensor '" + src.name + "'";
    if (src.shape.size() != 3 || src.shape[0] == 0 || (gate_up && src.shape[1] % 2 != 0))
        throw FormatError(ErrorKind::BadDims, r.part->path(), subject,
                          gate_up ? "fused gate_up_proj experts are [experts, 2 x n_ff, n_embd]"
                                  : "fused down_proj experts are [experts, n_embd, n_ff]");
    const int64_t bid = block_id(name);
    auto planned = [&](const char* part) {
        PlannedTensor t;
        t.name = map_name(spec, fmt::format(fmt::runtime(spec.experts->merged), bid, part), bid, n_block);
        if (t.name.empty())
            throw FormatError(ErrorKind::Unsupported, r.part->path(), subject,
                              fmt::format("cannot map the tensor name to GGUF ({})", spec.arch));
        t.type = type;
        return t;
    };
    if (down) {
        PlannedTensor t = planned("down_proj");
        t.source = r;
        t.ne = {static_cast<int64_t>(src.shape[2]), static_cast<int64_t>(src.shape[1]),
                static_cast<int64_t>(src.shape[0])};
        out.push_back(std::move(t));
        return true;
    }
    const uint64_t rows = src.shape[1] / 2, per_expert = src.size / src.shape[0];
    for (const auto& [part, half] : {std::pair{"gate_proj", 0}, {"up_proj", 1}}) {
        PlannedTensor t = planned(part);
        for (uint64_t x = 0; x < src.shape[0]; ++x) {
            auto v = std::make_shared<Tensor>(src);
            v->shape = {rows, src.shape[2]};
            v->elements = rows * src.shape[2];
            v->size = per_expert / 2;
            v->offset = src.offset + x * per_expert + static_cast<uint64_t>(half) * (per_expert / 2);
            t.stacked.push_back({r.part, v.get()});
            t.views.push_back(std::move(v));
        }
        t.source = t.stacked.front();
        t.ne = {static_cast<int64_t>(src.shape[2]), static_cast<int64_t>(rows), static_cast<int64_t>(src.shape[0])};
        out.push_back(std::move(t));
    }
    return true;
}

std::vector<PlannedTensor> plan_tensors(const ArchSpec& spec, const Checkpoint& ck, const Hparams& hp, OutType ot,
                                        int64_t n_block) {
    const auto [n_head, n_kv] = spec.undo_permute ? head_counts(hp) : std::pair<int64_t, int64_t>{0, 0};
    std::vector<PlannedTensor> out;
    ExpertMerger experts(spec, hp, n_block, out_ggml(ot));
    const Dequant dq = plan_dequant(ck, hp);
    for (TensorRef r : ck.tensors()) {
        const std::string name = filtered_name(r.tensor->name);
        if (name.empty() || name.ends_with(".attention.masked_bias") || name.ends_with(".attention.bias") ||
            name.ends_with(".rotary_emb.inv_freq") || dq.dropped.contains(name))
            continue;
        const std::string subject = "tensor '" + r.tensor->name + "'";
        if (const auto sc = dq.scales.find(name); sc != dq.scales.end()) r.scale = sc->second;
        const Dtype d = r.tensor->dtype;
        if (!decodable(d) || (d == Dtype::I8 && !r.scale))
            throw FormatError(ErrorKind::Unsupported, r.part->path(), subject,
                              fmt::format("dtype {} is not converted (F32, F16, BF16, F8_E4M3 and F8_E5M2 are; I8 "
                                          "with a scale)",
                                          dtype_name(d)));
        if (plan_fused_experts(spec, r, name, n_block, out_ggml(ot), out)) continue;
        if (spec.experts && name.find(spec.experts->marker) != std::string::npos) {
            experts.add(r, name, out);
            continue;
        }
        PlannedTensor t;
        t.source = r;
        t.name = map_name(spec, name, block_id(name), n_block);
        if (t.name.empty())
            throw FormatError(ErrorKind::Unsupported, r.part->path(), subject,
                              fmt::format("cannot map the tensor name to GGUF ({})", spec.arch));
        for (auto it = r.tensor->shape.rbegin(); it != r.tensor->shape.rend(); ++it)
            t.ne.push_back(static_cast<int64_t>(*it));
        if (t.ne.empty()) t.ne.push_back(1);  // a 0-d tensor
        if (t.ne.size() > kMaxDims)
            throw FormatError(ErrorKind::BadDims, r.part->path(), subject,
                              fmt::format("{} dimensions (GGUF holds 4)", t.ne.size()));
        const bool q = name.ends_with("q_proj.weight") || name.ends_with("q_proj.bias");
        const bool k = name.ends_with("k_proj.weight") || name.ends_with("k_proj.bias");
        if (spec.undo_permute && (q || k)) {
            t.permute_heads = q ? n_head : n_kv;  // permute(w, n_head, n_kv) regroups by n_kv when they differ
            const uint64_t rows = r.tensor->shape.empty() ? 1 : r.tensor->shape[0];
            if (rows % static_cast<uint64_t>(2 * t.permute_heads) != 0)
                throw FormatError(
                    ErrorKind::BadDims, r.part->path(), subject,
                    fmt::format("{} rows do not split into {} heads of row pairs", rows, t.permute_heads));
        }
        const bool one_d = r.tensor->shape.size() <= 1;
        const bool f32_name = t.name.ends_with("_norm.weight") || !t.name.ends_with(".weight") ||
                              t.name.ends_with(".ffn_gate_inp.weight") ||  // routers stay F32
                              t.name.ends_with(".ffn_gate_inp_shexp.weight");
        t.type = one_d || f32_name ? GgmlType::F32 : out_ggml(ot);
        if (spec.norm_shift != 0.0f && name.ends_with("norm.weight")) t.shift = spec.norm_shift;
        out.push_back(std::move(t));
    }
    experts.check_done(ck);
    return out;
}

// ---------------------------------------------------------------- keys

// GGUFWriter.get_total_parameter_count's size label: "NxS" from the expert tensors ("_exps.", 3-D+:
// expert count = shape[-3], each expert's share counted once) and the shared ones, else the total.
std::string planned_size_label(const std::vector<PlannedTensor>& tensors, int64_t total) {
    int64_t shared = 0, expert = 0, expert_sum = 0, n_expert_tensors = 0;
    for (const PlannedTensor& t : tensors) {
        const auto n = static_cast<int64_t>(t.elements());
        if (t.name.find("_exps.") != std::string::npos && t.ne.size() >= 3) {
            const int64_t count = t.name.find(".bias") != std::string::npos ? t.ne[1] : t.ne[2];
            expert += count > 0 ? n / count : 0;
            expert_sum += count;
            ++n_expert_tensors;
        } else {
            shared += n;
        }
    }
    return size_label(total, shared, expert, n_expert_tensors > 0 ? expert_sum / n_expert_tensors : 0);
}

// set_gguf_meta_model's authorship keys, in its order.
void put_authorship(KvWriter& kv, const CardMetadata& m) {
    auto put = [&](const char* key, const std::optional<std::string>& v) {
        if (v) kv.str(key, *v);  // an empty value writes nothing (GGUFWriter.add_string)
    };
    put("general.name", m.name);
    put("general.author", m.author);
    put("general.version", m.version);
    put("general.organization", m.organization);
    put("general.finetune", m.finetune);
    put("general.basename", m.basename);
    put("general.description", m.description);
    put("general.quantized_by", m.quantized_by);
    put("general.size_label", m.size_label);
    put("general.license", m.license);
    put("general.license.name", m.license_name);
    put("general.license.link", m.license_link);
    put("general.url", m.url);
    put("general.doi", m.doi);
    put("general.uuid", m.uuid);
    put("general.repo_url", m.repo_url);
    put("general.source.url", m.source_url);
    put("general.source.doi", m.source_doi);
    put("general.source.uuid", m.source_uuid);
    put("general.source.repo_url", m.source_repo_url);
    for (const auto& [list, what] : {std::pair{&m.base_models, "base_model"}, {&m.datasets, "dataset"}}) {
        if (!*list) continue;
        kv.u32(fmt::format("general.{}.count", what), (*list)->size());
        for (size_t i = 0; i < (*list)->size(); ++i)
            for (const char* f : kCardSourceFields)
                if (const auto it = (**list)[i].find(f); it != (**list)[i].end())
                    kv.str(fmt::format("general.{}.{}.{}", what, i, f), it->second);
    }
    if (m.tags) kv.strings("general.tags", *m.tags);
    if (m.languages) kv.strings("general.languages", *m.languages);
}

// Metadata.load + prepare_metadata + set_gguf_meta_model: the model card's keys (README.md's front
// matter), then the names from config.json's _name_or_path and the directory for what the card
// leaves unset, the sampling keys of generation_config.json, the --metadata file over all of them,
// --model-name over the name; then the name and size label of last resort.
CardMetadata add_general(KvWriter& kv, const Checkpoint& ck, const Hparams& hp, CardFile& card,
                         const std::vector<PlannedTensor>& tensors, int64_t total_params, const PlanOptions& naming,
                         std::vector<std::string>& notes) {
    const fs::path dir(ck.dir());
    CardMetadata m = read_model_card(card, total_params);
    auto fill = [&](const ModelIdParts& p) {  // what the card leaves unset
        if (!m.name && p.full_name) m.name = id_to_title(*p.full_name);
        if (!m.organization && p.organization) m.organization = id_to_title(*p.organization);
        for (auto [dst, src] : {std::pair{&m.basename, &p.basename},
                                {&m.finetune, &p.finetune},
                                {&m.version, &p.version},
                                {&m.size_label, &p.size_label}})
            if (!*dst && *src) *dst = *src;
    };
    // load_hf_parameters: config.json's own _name_or_path, when it is a model id rather than a path.
    if (const Json* id = member(hp.raw(), "_name_or_path"); id && id->is_string()) {
        const std::string s = id->get<std::string>();
        if (std::count(s.begin(), s.end(), '/') <= 1) fill(model_id_parts(s, total_params));
    }
    fill(model_id_parts(dir_name(ck.dir()), total_params));

    Json sampling = Json::object();  // "general.sampling.*" -> value
    using Put = void (KvWriter::*)(const std::string&, const Json&);
    static constexpr std::tuple<const char*, const char*, Put> kSampling[] = {
        {"sequence", "sequence", &KvWriter::str_json},
        {"top_k", "top_k", &KvWriter::i32},
        {"top_p", "top_p", &KvWriter::f32},
        {"min_p", "min_p", &KvWriter::f32},
        {"xtc_probability", "xtc_probability", &KvWriter::f32},
        {"xtc_threshold", "xtc_threshold", &KvWriter::f32},
        {"temperature", "temp", &KvWriter::f32},
        {"penalty_last_n", "penalty_last_n", &KvWriter::i32},
        {"penalty_repeat", "penalty_repeat", &KvWriter::f32},
        {"mirostat", "mirostat", &KvWriter::i32},
        {"mirostat_tau", "mirostat_tau", &KvWriter::f32},
        {"mirostat_eta", "mirostat_eta", &KvWriter::f32}};
    std::optional<Json> gen;
    try {
        gen = read_optional_json(dir / "generation_config.json");
    } catch (const FormatError&) {
        notes.push_back("generation_config.json: not valid JSON, ignored (as the Python converter ignores it)");
    }
    std::string sampling_source = (dir / "generation_config.json").string();
    if (gen && gen->is_object())
        for (const auto& [from, to, put] : kSampling)
            if (const Json* v = member(*gen, from); v && !v->is_null())
                sampling[std::string("general.sampling.") + to] = *v;
    if (naming.metadata_file) {
        std::error_code ec;
        if (!fs::is_regular_file(*naming.metadata_file, ec))
            throw FormatError(ErrorKind::Io, *naming.metadata_file, "--metadata", "not a file");
        apply_metadata_override(read_text_file(*naming.metadata_file, kMaxJsonBytes), *naming.metadata_file, m,
                                sampling);
        sampling_source += " / " + *naming.metadata_file;
    }
    if (naming.model_name) m.name = *naming.model_name;
    if (!m.name) m.name = dir_name(ck.dir());
    if (!m.size_label && total_params > 0) m.size_label = planned_size_label(tensors, total_params);

    kv.str("general.type", "model");
    kv.set_source(sampling_source);
    for (const auto& [from, to, put] : kSampling)
        if (const std::string key = std::string("general.sampling.") + to; const Json* v = member(sampling, key))
            (kv.*put)(key, *v);
    kv.set_source(card.path());
    put_authorship(kv, m);
    kv.set_source(hp.file());
    return m;
}

// TextModel.rope_parameters: rope_parameters, else rope_scaling, with the theta keys mirrored in.
Json rope_parameters(const Hparams& hp) {
    const Json* given = member(hp.merged(), "rope_parameters");
    if (!given) given = member(hp.merged(), "rope_scaling");
    Json rope = given && given->is_object() ? *given : Json::object();
    const Json* theta =
        hp.find({"global_rope_theta", "rope_global_theta", "rope_theta_global", "rope_theta", "rotary_emb_base"});
    const Json* local =
        hp.find({"local_rope_theta", "rope_local_theta", "rope_theta_local", "swa_rope_theta", "rope_local_base_freq"});
    if (!rope.contains("full_attention") && !rope.contains("sliding_attention")) {
        if (local && !local->is_null()) rope["sliding_attention"] = {{"rope_theta", *local}};
        if (!rope.contains("rope_theta") && theta && !theta->is_null()) rope["rope_theta"] = *theta;
        if (!rope.contains("rope_type") && rope.contains("type") && !rope["type"].is_null())
            rope["rope_type"] = rope["type"];
    }
    return rope;
}

// ASCII letters upper-cased (output type names, which are ASCII).
std::string upper_ascii(std::string s) {
    for (char& c : s)
        if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    return s;
}

// Python's str.lower() where it can give ASCII: ASCII letters, and the Kelvin sign (U+212A) to 'k'.
std::string lower_ascii(std::string s) {
    for (size_t at; (at = s.find("\xE2\x84\xAA")) != std::string::npos;) s.replace(at, 3, "k");
    for (char& c : s)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return s;
}

// Its rope_type lower-cased ("" when absent or null); BadJson when it is not a string.
std::string rope_type_lower(const Hparams& hp, const Json& params) {
    const Json* type = member(params, "rope_type");
    if (!type || type->is_null()) return "";
    if (!type->is_string()) throw FormatError(ErrorKind::BadJson, hp.file(), "rope_type", "not a string");
    return lower_ascii(type->get<std::string>());
}

// The RoPE keys of TextModel.set_gguf_parameters: the scaling type's keys ("linear": factor;
// "yarn": factor, original context and the YaRN parameters given; "longrope"/"su": the type;
// "llama3" is a tensor, "dynamic" and "default" write nothing), then the frequency bases.
void add_rope(KvWriter& kv, const Hparams& hp, const std::string& a) {
    const Json rope = rope_parameters(hp);
    const Json& params = rope.contains("full_attention") ? rope["full_attention"] : rope;
    auto unsupported = [&](const std::string& what) {
        throw FormatError(ErrorKind::Unsupported, hp.file(), "rope", what + " is not converted yet");
    };
    if (const Json* type = member(params, "rope_type"); type && !type->is_null()) {
        const Json* factor = member(params, "factor");
        const bool has_factor = factor && !factor->is_null();
        if (*type == "linear" && has_factor) {
            kv.str(a + "rope.scaling.type", "linear");
            kv.f32(a + "rope.scaling.factor", *factor);
        } else if (*type == "yarn" && has_factor) {
            kv.str(a + "rope.scaling.type", "yarn");
            kv.f32(a + "rope.scaling.factor", *factor);
            const Json* orig = member(params, "original_max_position_embeddings");
            if (!orig)
                throw FormatError(ErrorKind::BadJson, hp.file(), "original_max_position_embeddings",
                                  "missing from YaRN's rope parameters");
            kv.u32(a + "rope.scaling.original_context_length", *orig);
            auto optional_f32 = [&](std::initializer_list<const char*> keys, const char* gguf) {
                for (const char* k : keys)
                    if (const Json* v = member(params, k)) {
                        if (!v->is_null()) kv.f32(a + gguf, *v);
                        return;  // rope_params.get(k, rope_params.get(next)): present and null is None
                    }
            };
            optional_f32({"extrapolation_factor"}, "rope.scaling.yarn_ext_factor");
            optional_f32({"attention_factor", "attn_factor"}, "rope.scaling.yarn_attn_factor");
            optional_f32({"beta_fast"}, "rope.scaling.yarn_beta_fast");
            optional_f32({"beta_slow"}, "rope.scaling.yarn_beta_slow");
        } else if (*type == "su" || *type == "longrope") {
            kv.str(a + "rope.scaling.type", "longrope");
        } else if (*type != "default" && *type != "dynamic" && *type != "linear" && *type != "yarn" &&
                   rope_type_lower(hp, params) != "llama3") {
            unsupported("RoPE scaling type " + type->dump());
        }
    }
    if (rope.contains("mrope_section")) unsupported("multimodal RoPE (mrope_section)");
    if (const Json* t = member(params, "rope_theta"); t && !t->is_null()) kv.f32(a + "rope.freq_base", *t);
    if (const Json* swa = member(rope, "sliding_attention"); swa && swa->is_object())
        if (const Json* t = member(*swa, "rope_theta"); t && !t->is_null()) kv.f32(a + "rope.freq_base_swa", *t);
}

// TextModel.set_gguf_parameters (`a`: "<arch>."); expert groups and gating functions are refused.
void add_text_params(KvWriter& kv, const Hparams& hp, const std::string& a, int64_t n_block, OutType ot) {
    kv.u32(a + "block_count", static_cast<uint64_t>(n_block));
    if (const Json* v = hp.get({"max_position_embeddings", "n_ctx", "n_positions", "max_length", "max_sequence_length",
                                "model_max_length"}))
        kv.u32(a + "context_length", *v);
    if (const Json* v = hp.get({"hidden_size", "n_embd", "dim"})) kv.u32(a + "embedding_length", *v);
    if (const Json* v = hp.get({"intermediate_size", "n_inner", "hidden_dim"})) kv.u32(a + "feed_forward_length", *v);
    if (const Json* v = hp.get({"num_attention_heads", "n_head", "n_heads"})) kv.u32(a + "attention.head_count", *v);
    if (const Json* v = hp.get({"num_key_value_heads", "n_kv_heads"})) kv.u32(a + "attention.head_count_kv", *v);
    if (const Json* v = hp.get({"is_causal"}); v && v->is_boolean() && !v->get<bool>())
        kv.boolean(a + "attention.causal", false);
    add_rope(kv, hp, a);
    if (const Json* v = hp.get({"rms_norm_eps", "norm_eps"})) kv.f32(a + "attention.layer_norm_rms_epsilon", *v);
    if (const Json* v = hp.get({"layer_norm_eps", "layer_norm_epsilon", "norm_epsilon"}))
        kv.f32(a + "attention.layer_norm_epsilon", *v);
    if (const Json* v = hp.get({"num_local_experts", "num_experts"})) kv.u32(a + "expert_count", *v);
    if (hp.get({"n_group"}) ||
        hp.get({"score_function", "scoring_func", "score_func", "moe_router_activation", "moe_router_activation_func"}))
        throw FormatError(ErrorKind::Unsupported, hp.file(), "",
                          "expert groups and gating functions are not converted yet");
    if (const Json* v = hp.get({"num_experts_per_tok", "num_experts_per_token", "top_k_experts"}))
        kv.u32(a + "expert_used_count", *v);
    if (const Json* v = hp.get({"head_dim"})) {
        kv.u32(a + "attention.key_length", *v);
        kv.u32(a + "attention.value_length", *v);
    }
    kv.u32("general.file_type", file_type_of(ot));
}

// LlamaModel.set_gguf_parameters after TextModel's: the vocabulary size and the RoPE dimensions.
void add_llama_params(KvWriter& kv, const Hparams& hp, const std::string& a) {
    kv.u32(a + "vocab_size", hp.need({"vocab_size"}));
    if (const Json* v = hp.get({"head_dim"})) {
        kv.u32(a + "rope.dimension_count", *v);
    } else {
        const Json &e = hp.need({"hidden_size"}), &h = hp.need({"num_attention_heads"});
        if (!e.is_number_unsigned() || !h.is_number_unsigned() || h.get<uint64_t>() == 0)
            throw FormatError(ErrorKind::BadJson, hp.file(), "",
                              "hidden_size and num_attention_heads must be positive integers");
        kv.u32(a + "rope.dimension_count", e.get<uint64_t>() / h.get<uint64_t>());
    }
}

// A JSON number as a double (`what` names it in the error): finite, else BadJson.
double finite_number(const Hparams& hp, const Json& v, const std::string& what) {
    if (!v.is_number() || !std::isfinite(v.get<double>()))
        throw FormatError(ErrorKind::BadJson, hp.file(), what, v.dump() + " is not a finite number");
    return v.get<double>();
}

// A computed F32 tensor named `name` of these values, which must all be finite (the parameters
// they come from are named by `what`).
PlannedTensor computed_tensor(const Hparams& hp, std::string name, std::vector<float> values, const std::string& what) {
    for (size_t i = 0; i < values.size(); ++i)
        if (!std::isfinite(values[i]))
            throw FormatError(ErrorKind::BadJson, hp.file(), what,
                              fmt::format("makes {}[{}] = {} (not finite)", name, i, values[i]));
    PlannedTensor t;
    t.name = std::move(name);
    t.ne = {static_cast<int64_t>(values.size())};
    t.computed = std::move(values);
    return t;
}

// LlamaModel.generate_extra_tensors: for rope_type "llama3" (any case), rope_freqs.weight from the
// rope parameters' rope_theta (10000), factor (8), low_freq_factor (1), high_freq_factor (4), the
// config's own original_max_position_embeddings (8192: the one inside rope_scaling is not read)
// and head_dim (hidden_size / num_attention_heads).
void add_llama_extra(KvWriter& /*kv*/, const Hparams& hp, std::vector<PlannedTensor>& out) {
    const Json rope = rope_parameters(hp);
    const Json& params = rope.contains("full_attention") ? rope["full_attention"] : rope;
    if (params.empty() || rope_type_lower(hp, params) != "llama3") return;
    auto param = [&](const Json& from, const char* key, double dflt) {
        const Json* v = member(from, key);
        return v ? finite_number(hp, *v, key) : dflt;
    };
    const double base = param(params, "rope_theta", 10000.0);
    const double factor = param(params, "factor", 8.0), low = param(params, "low_freq_factor", 1.0);
    const double high = param(params, "high_freq_factor", 4.0);
    const double old_ctx = param(hp.merged(), "original_max_position_embeddings", 8192.0);
    uint64_t dim = 0;
    if (const Json* d = hp.get({"head_dim"})) {
        dim = d->is_number_unsigned() ? d->get<uint64_t>() : 0;
    } else {
        const Json &e = hp.need({"hidden_size"}), &h = hp.need({"num_attention_heads"});
        if (e.is_number_unsigned() && h.is_number_unsigned() && h.get<uint64_t>() > 0)
            dim = e.get<uint64_t>() / h.get<uint64_t>();
    }
    if (dim == 0 || dim > 65536)
        throw FormatError(ErrorKind::BadJson, hp.file(), "head_dim", "Llama 3 RoPE needs a head size of 1 to 65536");
    if (!(base > 0.0) || !std::isfinite(static_cast<float>(base)) || factor == 0.0 || high == low)
        throw FormatError(ErrorKind::BadJson, hp.file(), "rope_scaling",
                          "llama3 RoPE needs 0 < rope_theta < 3.4e38 (a float32), factor != 0 and "
                          "high_freq_factor != low_freq_factor");
    out.push_back(computed_tensor(hp, "rope_freqs.weight", llama3_rope_factors(base, dim, factor, low, high, old_ctx),
                                  "rope_scaling"));
}

// _create_vocab_sentencepiece: tokenizer.model's pieces by id, padded with [PADi] (UNUSED, score
// -10000) up to the config's vocab_size, pieces past it dropped.
struct SpmVocab {
    std::vector<std::string> tokens;
    std::vector<float> scores;
    std::vector<int32_t> types;
    size_t pieces = 0;  // pieces in tokenizer.model (more than tokens when some lie past vocab_size)
};

SpmVocab spm_vocab(const fs::path& dir, const Hparams& hp, std::vector<std::string>& notes) {
    const std::string path = (dir / "tokenizer.model").string();
    const MappedFile map(path);
    if (map.bytes().size() > kMaxSpmBytes)
        throw FormatError(ErrorKind::TooLarge, path, "",
                          fmt::format("{} bytes (at most {})", map.bytes().size(), kMaxSpmBytes));
    const std::vector<SpmPiece> pieces = read_spm_pieces(map.bytes(), path);
    uint64_t n = pieces.size();
    if (const Json* v = hp.find({"vocab_size_per_layer_input", "vocab_size"});
        v && v->is_number_unsigned() && v->get<uint64_t>() > 0)
        n = v->get<uint64_t>();
    if (n > (1u << 24)) throw FormatError(ErrorKind::TooLarge, hp.file(), "vocab_size", fmt::format("{} tokens", n));
    if (pieces.size() > n)
        notes.push_back(fmt::format("tokenizer.model: pieces from id {} on are past vocab_size and dropped", n));
    SpmVocab v{std::vector<std::string>(n), std::vector<float>(n, -10000.0f),
               std::vector<int32_t>(n, static_cast<int32_t>(SpmType::Unused)), pieces.size()};
    for (uint64_t i = 0; i < n; ++i) v.tokens[i] = fmt::format("[PAD{}]", i);
    for (size_t i = 0; i < pieces.size() && i < n; ++i) {
        const SpmType t = pieces[i].type;
        const bool kept = t == SpmType::Unknown || t == SpmType::Control || t == SpmType::Unused || t == SpmType::Byte;
        v.tokens[i] = pieces[i].piece;
        v.scores[i] = pieces[i].score;
        v.types[i] = static_cast<int32_t>(kept ? t : SpmType::Normal);  // USER_DEFINED pieces read as NORMAL
    }
    return v;
}

// Python truthiness of a JSON value (None, False, 0, "", [] and {} are false).
bool truthy(const Json* v) {
    if (!v || v->is_null()) return false;
    if (v->is_boolean()) return v->get<bool>();
    if (v->is_number()) return v->get<double>() != 0.0;
    if (v->is_string() || v->is_array() || v->is_object()) return !v->empty();
    return true;
}

// Python's str.replace of U+2581 (the SentencePiece space) by a space.
std::string unspace(std::string s) {
    for (size_t at; (at = s.find("\xe2\x96\x81")) != std::string::npos;) s.replace(at, 3, " ");
    return s;
}

// TextModel.does_token_look_special.
bool looks_special(const std::string& t) {
    auto wrapped = [&](std::string_view a, std::string_view b) { return t.starts_with(a) && t.ends_with(b); };
    return t == "<pad>" || t == "<mask>" || t == "<2mass>" || t == "[@BOS@]" || wrapped("<|", "|>") ||
           wrapped("<\xef\xbd\x9c", "\xef\xbd\x9c>") || wrapped("<unused", ">");
}

// _create_vocab_sentencepiece's added tokens: added_tokens.json (USER_DEFINED), then
// tokenizer_config.json's added_tokens_decoder (CONTROL when special or looking special, else
// USER_DEFINED with U+2581 read as a space), each with score -1000; ids past the vocabulary skipped.
void add_spm_added_tokens(SpmVocab& v, const fs::path& dir, const std::optional<Json>& tc) {
    const uint64_t n = v.tokens.size();
    auto put = [&](uint64_t id, std::string token, SpmType type) {
        v.tokens[id] = std::move(token);
        v.scores[id] = -1000.0f;
        v.types[id] = static_cast<int32_t>(type);
    };
    const std::string at_path = (dir / "added_tokens.json").string();
    if (const std::optional<Json> at = read_optional_json(at_path)) {
        if (!at->is_object()) throw FormatError(ErrorKind::BadJson, at_path, "", "not a mapping of tokens to ids");
        for (const auto& [token, id] : at->items()) {
            if (!id.is_number_unsigned()) throw FormatError(ErrorKind::BadJson, at_path, token, "id is not a count");
            if (id.get<uint64_t>() < n) put(id.get<uint64_t>(), token, SpmType::UserDefined);
        }
    }
    const Json* dec = tc && tc->is_object() ? member(*tc, "added_tokens_decoder") : nullptr;
    if (!dec || dec->is_null()) return;
    const std::string tc_path = (dir / "tokenizer_config.json").string();
    if (!dec->is_object()) throw FormatError(ErrorKind::BadJson, tc_path, "added_tokens_decoder", "not a mapping");
    for (const auto& [key, data] : dec->items()) {
        const Json* content = member(data, "content");
        if (key.empty() || key.size() > 18 || key.find_first_not_of("0123456789") != std::string::npos || !content ||
            !content->is_string())
            throw FormatError(ErrorKind::BadJson, tc_path, "added_tokens_decoder",
                              "entry '" + key + "' is not an id with a content string");
        const uint64_t id = std::stoull(key);
        if (id >= n) continue;
        const std::string token = content->get<std::string>();
        const bool special = truthy(member(data, "special")) || looks_special(token);
        put(id, special ? token : unspace(token), special ? SpmType::Control : SpmType::UserDefined);
    }
}

// The chat template SpecialVocab takes: tokenizer_config's, else chat_template.jinja's, else
// chat_template.json's; nullopt when none is a string.
std::optional<std::string> chat_template(const fs::path& dir, const Json& tc, std::vector<std::string>& notes) {
    std::error_code ec;
    Json alt;
    if (fs::is_regular_file(dir / "chat_template.jinja", ec)) {
        if (fs::is_directory(dir / "additional_chat_templates", ec))
            throw FormatError(ErrorKind::Unsupported, (dir / "additional_chat_templates").string(), "",
                              "named chat templates are not converted yet");
        alt = read_text_file((dir / "chat_template.jinja").string(), kMaxJsonBytes);
    } else if (const std::optional<Json> j = read_optional_json(dir / "chat_template.json")) {
        if (const Json* c = member(*j, "chat_template")) alt = *c;
    }
    const Json* given = member(tc, "chat_template");
    const Json& t = given ? *given : alt;
    if (t.is_array())
        throw FormatError(ErrorKind::Unsupported, (dir / "tokenizer_config.json").string(), "chat_template",
                          "a list of named templates is not converted yet");
    if (!t.is_null() && !t.is_string())
        notes.push_back(
            "tokenizer_config.json: a chat_template that is not a string is ignored (as the Python converter ignores "
            "it)");
    return t.is_string() ? std::optional(t.get<std::string>()) : std::nullopt;
}

// tokenizer.json of `dir`, nullopt when there is none.
std::optional<Json> read_tokenizer_json(const fs::path& dir) {
    const std::string path = (dir / "tokenizer.json").string();
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) return std::nullopt;
    return read_json_file(path, kMaxTokenizerJsonBytes, 64);
}

// What SpecialVocab's _try_load_from_tokenizer_json keeps while it reads the post-processor.
struct SpecialState {
    std::vector<std::string> types = {"bos", "eos", "unk", "sep", "pad", "cls", "mask"};
    std::vector<std::pair<std::string, uint64_t>> ids;  // insertion order (dict)
    std::vector<std::pair<std::string, bool>> add;      // insertion order, later values in place
    void set_add(const std::string& typ, bool v) {
        for (auto& [t, x] : add)
            if (t == typ) return void(x = v);
        add.emplace_back(typ, v);
    }
};

// tokenizer.json's post_processor as SpecialVocab reads it (RobertaProcessing; the crude parse of
// TemplateProcessing): add_* flags into `st`, and tokenizer_config's special tokens (`tc`, may be
// edited; `have_tc`: present and not empty) completed or replaced, an EOT/EOM type added when the
// template ends in a token that is not the EOS.
void apply_post_processor(const Json& tok, std::optional<Json>& tc, bool have_tc, SpecialState& st) {
    auto set_add = [&](const std::string& typ, bool v) { st.set_add(typ, v); };
    std::vector<std::string>& types = st.types;
    auto tc_get = [&](const char* k) { return have_tc && member(*tc, k) ? *member(*tc, k) : Json(); };
    Json bos = tc_get("bos_token"), cls = tc_get("cls_token"), eos = tc_get("eos_token"), sep = tc_get("sep_token");
    if (!truthy(&bos) && truthy(&cls) && have_tc) (*tc)["bos_token"] = bos = cls;
    if (!truthy(&eos) && truthy(&sep) && have_tc) (*tc)["eos_token"] = eos = sep;
    const Json* pp = member(tok, "post_processor");
    const Json* list = truthy(pp) ? member(*pp, "processors") : nullptr;
    const Json procs = list ? *list : truthy(pp) ? Json::array({*pp}) : Json::array();
    auto special_id = [&](const Json& item) -> Json {  // item.get('SpecialToken', {}).get('id')
        const Json* st = member(item, "SpecialToken");
        const Json* id = st ? member(*st, "id") : nullptr;
        return id ? *id : Json();
    };
    for (const Json& proc : procs) {
        const Json* type = member(proc, "type");
        if (type && *type == "RobertaProcessing") {
            set_add("bos", true);
            set_add("eos", true);
            set_add("sep", true);
            if (!truthy(&cls) && have_tc) {
                const Json* c = member(proc, "cls");
                (*tc)["cls_token"] = cls = c && c->is_array() && !c->empty() ? (*c)[0] : bos;
            }
            if (!truthy(&sep) && have_tc) {
                const Json* c = member(proc, "sep");
                (*tc)["sep_token"] = sep = c && c->is_array() && !c->empty() ? (*c)[0] : eos;
            }
            continue;
        }
        if (!(type && *type == "TemplateProcessing")) continue;
        const Json* single_p = member(proc, "single");
        const Json* pair_p = member(proc, "pair");
        const Json single = single_p && single_p->is_array() ? *single_p : Json::array();
        Json pair = pair_p && pair_p->is_array() ? *pair_p : Json::array();
        Json first, last;
        if (single.size() > 1) {
            first = special_id(single.front());
            if (truthy(&first)) {
                if (!have_tc) bos = first;
                set_add("bos", first == bos || first == cls);
            }
            last = special_id(single.back());
            if (truthy(&last)) {
                if (!have_tc) {
                    eos = last;
                } else if (last != eos) {
                    if (std::find(types.begin(), types.end(), "eot") == types.end()) {
                        types.emplace_back("eot");
                        (*tc)["eot_token"] = eos;
                    } else if (std::find(types.begin(), types.end(), "eom") == types.end()) {
                        types.emplace_back("eom");
                        (*tc)["eom_token"] = eos;
                    }
                    (*tc)["eos_token"] = eos = last;
                }
                set_add("eos", last == eos);
            }
        }
        if (pair.empty()) continue;
        const bool drop_first = truthy(&first) && special_id(pair.front()) == first;
        const bool drop_last = truthy(&last) && special_id(pair.back()) == last;
        Json mid = Json::array();
        for (size_t i = drop_first ? 1 : 0; i + (drop_last ? 1 : 0) < pair.size(); ++i) mid.push_back(pair[i]);
        if (mid.empty()) continue;
        auto seq_id = [](const Json& item) -> Json {
            const Json* sq = member(item, "Sequence");
            const Json* id = sq ? member(*sq, "id") : nullptr;
            return id ? *id : Json();
        };
        if (!(seq_id(mid.front()) == "A" && seq_id(mid.back()) == "B")) continue;
        Json inner = Json::array();
        for (size_t i = 1; i + 1 < mid.size(); ++i) inner.push_back(mid[i]);
        if (inner.empty()) continue;  // A B
        bool add_sep = false;
        if (const Json e = special_id(inner[0]); truthy(&e) && (e == sep || e == eos) && !truthy(&last)) add_sep = true;
        if (inner.size() == 2)
            if (const Json e = special_id(inner[1]); truthy(&e) && (e == sep || e == eos)) add_sep = true;
        set_add("sep", add_sep);
        if (add_sep && !truthy(&sep) && have_tc) (*tc)["sep_token"] = eos;
    }
}

// gguf-py's SpecialVocab (merges not loaded): special token ids from tokenizer_config.json's
// <type>_token looked up in tokenizer.json's added tokens (its post-processor deciding the add_*
// flags and an EOT/EOM), then config.json's <type>_token_id for the types still unset; then
// tokenizer_config's add_<type>_token flags and the chat template. Keys in gguf-py's order: ids,
// add flags, template. `tc` is tokenizer_config.json and `tok` tokenizer.json (nullopt when absent);
// special ids at or past `n_vocab` are skipped (no check without it, as _set_vocab_gpt2 passes none).
void add_special_vocab(KvWriter& kv, const fs::path& dir, const Hparams& hp, std::optional<Json> tc,
                       const std::optional<Json>& tok, std::optional<uint64_t> n_vocab,
                       std::vector<std::string>& notes) {
    SpecialState st;
    const std::vector<std::string>& types = st.types;
    std::vector<std::pair<std::string, uint64_t>>& ids = st.ids;
    auto set_id = [&](const std::string& typ, const Json* tid, const std::string& file) {  // _set_special_token
        if (!tid || !tid->is_number_integer()) return;  // lists (several eos ids), nulls, strings: skipped
        if (!tid->is_number_unsigned())
            throw FormatError(ErrorKind::BadJson, file, typ + "_token", "negative token id");
        const uint64_t v = tid->get<uint64_t>();
        if (n_vocab && v >= *n_vocab)
            return notes.push_back(
                fmt::format("{}: {} id {} is out of range, skipped", fs::path(file).filename().string(), typ, v));
        for (const auto& [t, x] : ids)
            if (t == typ) return;
        ids.emplace_back(typ, v);
    };
    const std::string tj_path = (dir / "tokenizer.json").string();
    if (tc && !tc->is_object()) tc.reset();  // not a mapping: nothing SpecialVocab can read
    const bool have_tc = tc && !tc->empty();
    Json added = Json::array();
    if (tok)
        if (const Json* a = member(*tok, "added_tokens"); a && a->is_array()) added = *a;
    if (tok) apply_post_processor(*tok, tc, have_tc, st);
    if (have_tc) {
        for (const std::string& typ : types) {
            if (const Json* f = member(*tc, "add_" + typ + "_token"); f && f->is_boolean())
                st.set_add(typ, f->get<bool>());
            const Json* entry = member(*tc, typ + "_token");
            const Json* content = entry && entry->is_object() ? member(*entry, "content") : entry;
            if (!content || !content->is_string()) continue;
            for (const Json& atok : added)  // the first added token with that content
                if (const Json* c = member(atok, "content"); c && *c == *content) {
                    set_id(typ, member(atok, "id"), tj_path);
                    break;
                }
        }
    }
    const Json& cfg = hp.raw();  // _try_load_from_config_json: config.json as it is (plan_convert read it)
    for (const std::string& typ : types) {
        const std::string key = typ + "_token_id";
        const Json* id = member(cfg, key);
        if (const Json* text = member(cfg, "text_config"); (!id || id->is_null()) && text) id = member(*text, key);
        set_id(typ, id, (dir / "config.json").string());
    }
    for (const auto& [typ, id] : ids) {
        const std::string gguf = typ == "unk" ? "unknown" : typ == "sep" ? "seperator" : typ == "pad" ? "padding" : typ;
        if (typ != "cls") kv.u32(fmt::format("tokenizer.ggml.{}_token_id", gguf), id);  // GGUFWriter has no cls id
    }
    for (const auto& [typ, v] : st.add)
        if (typ == "bos" || typ == "eos" || typ == "sep") kv.boolean("tokenizer.ggml.add_" + typ + "_token", v);
    if (!have_tc) return;  // SpecialVocab reads no template without a tokenizer config
    if (const auto t = chat_template(dir, *tc, notes)) kv.str("tokenizer.chat_template", *t);
}

// The vocabulary keys of a SentencePiece model (tokenizer model "llama", pre-tokenizer "default",
// tokens, scores, types), then SpecialVocab's (`tok`: tokenizer.json, nullopt when absent).
void write_spm_vocab(KvWriter& kv, SpmVocab v, const fs::path& dir, const Hparams& hp, const std::optional<Json>& tc,
                     const std::optional<Json>& tok, std::vector<std::string>& notes) {
    const uint64_t n_vocab = v.tokens.size();
    kv.str("tokenizer.ggml.model", "llama");
    kv.str("tokenizer.ggml.pre", "default");
    kv.strings("tokenizer.ggml.tokens", std::move(v.tokens));
    kv.numbers("tokenizer.ggml.scores", GgufType::F32, v.scores);
    kv.numbers("tokenizer.ggml.token_type", GgufType::I32, v.types);
    add_special_vocab(kv, dir, hp, tc, tok, n_vocab, notes);
}

bool has_tokenizer_model(const Checkpoint& ck) {
    std::error_code ec;
    return fs::is_regular_file(fs::path(ck.dir()) / "tokenizer.model", ec);
}

// _set_vocab_sentencepiece (tokenizer.model is there): the pieces, then SpecialVocab. Returns
// tokenizer_config.json (nullopt when absent).
std::optional<Json> add_spm_vocab(KvWriter& kv, const Checkpoint& ck, const Hparams& hp,
                                  std::vector<std::string>& notes) {
    const fs::path dir(ck.dir());
    std::optional<Json> tc = read_optional_json(dir / "tokenizer_config.json");
    SpmVocab v = spm_vocab(dir, hp, notes);
    add_spm_added_tokens(v, dir, tc);
    write_spm_vocab(kv, std::move(v), dir, hp, tc, read_tokenizer_json(dir), notes);
    return tc;
}

// _set_vocab_gpt2: tokenizer.json's BPE vocabulary (get_vocab_base: vocab_size from config.json,
// else the tokenizer's own count), tokenizer.ggml.pre from the hash of the check text, then
// SpecialVocab with the merges. `tok` is tokenizer.json as the caller read it (nullopt: absent).
// Returns tokenizer_config.json (nullopt when absent).
std::optional<Json> add_bpe_vocab(KvWriter& kv, const Checkpoint& ck, const Hparams& hp, const std::optional<Json>& tok,
                                  std::vector<std::string>& notes) {
    const fs::path dir(ck.dir());
    const std::string tj = (dir / "tokenizer.json").string();
    if (!tok) throw FormatError(ErrorKind::Unsupported, ck.dir(), "", "neither tokenizer.model nor tokenizer.json");
    std::optional<uint64_t> n_vocab;
    if (const Json* n = hp.get({"vocab_size"})) {
        if (!n->is_number_unsigned()) throw FormatError(ErrorKind::BadJson, hp.file(), "vocab_size", "not a count");
        n_vocab = n->get<uint64_t>();
    }
    BpeVocab v = read_bpe_vocab(*tok, n_vocab, tj);
    std::optional<Json> tc = read_optional_json(dir / "tokenizer_config.json");
    const std::string pre =
        detect_bpe_pre(v, encode_template(*tok, tc, v, (dir / "tokenizer_config.json").string()), tj);
    std::error_code ec;
    if (v.merges.empty() && fs::exists(dir / "merges.txt", ec))
        throw FormatError(ErrorKind::Unsupported, (dir / "merges.txt").string(), "",
                          "merges outside tokenizer.json are not read yet");
    kv.str("tokenizer.ggml.model", "gpt2");
    kv.str("tokenizer.ggml.pre", pre);
    kv.strings("tokenizer.ggml.tokens", std::move(v.tokens));
    kv.numbers("tokenizer.ggml.token_type", GgufType::I32, v.types);
    if (!v.merges.empty()) kv.strings("tokenizer.ggml.merges", std::move(v.merges));
    add_special_vocab(kv, dir, hp, tc, tok, std::nullopt, notes);
    return tc;
}

// LlamaModel.set_vocab: _set_vocab_sentencepiece; without tokenizer.model, _set_vocab_llama_hf for
// a BPE tokenizer.json with byte fallback (refused) or else _set_vocab_gpt2 (Llama 3); then
// add_prefix_space and the vocabulary sizes of CodeLlama (refused) and granite's small models.
void add_llama_vocab(KvWriter& kv, const Checkpoint& ck, const Hparams& hp, std::vector<std::string>& notes) {
    std::optional<Json> tc;
    if (has_tokenizer_model(ck)) {
        tc = add_spm_vocab(kv, ck, hp, notes);
    } else {
        const std::optional<Json> tok = read_tokenizer_json(fs::path(ck.dir()));
        if (tok) {
            const Json* model = member(*tok, "model");
            const Json* decoder = member(*tok, "decoder");
            const Json* type = model ? member(*model, "type") : nullptr;
            const Json* fallback = model ? member(*model, "byte_fallback") : nullptr;
            const Json* dtype = decoder && decoder->is_object() ? member(*decoder, "type") : nullptr;
            if (type && *type == "BPE" && truthy(fallback) && dtype && *dtype == "Sequence")
                throw FormatError(ErrorKind::Unsupported, (fs::path(ck.dir()) / "tokenizer.json").string(), "",
                                  "a BPE tokenizer with byte fallback (LlamaHfVocab) is not converted yet");
        }
        tc = add_bpe_vocab(kv, ck, hp, tok, notes);
    }
    if (tc && tc->is_object())
        if (const Json* p = member(*tc, "add_prefix_space"); p && p->is_boolean())
            kv.boolean("tokenizer.ggml.add_space_prefix", p->get<bool>());
    if (const Json* n = hp.get({"vocab_size"}); n && n->is_number_unsigned()) {
        if (n->get<uint64_t>() == 32016)
            throw FormatError(ErrorKind::Unsupported, hp.file(), "vocab_size",
                              "CodeLlama's infill tokens (vocab 32016) are not converted yet");
        if (n->get<uint64_t>() == 49152) kv.boolean("tokenizer.ggml.add_bos_token", false);
    }
}

// Qwen2Model.set_vocab: _set_vocab_sentencepiece, else (no tokenizer.model) _set_vocab_gpt2.
void add_qwen2_vocab(KvWriter& kv, const Checkpoint& ck, const Hparams& hp, std::vector<std::string>& notes) {
    if (has_tokenizer_model(ck)) {
        add_spm_vocab(kv, ck, hp, notes);
    } else {
        add_bpe_vocab(kv, ck, hp, read_tokenizer_json(fs::path(ck.dir())), notes);
    }
}

// ---------------------------------------------------------------- architectures

// Qwen2Model._try_set_pooling_type: a sentence-transformers modules.json naming a Pooling module
// would add pooling_type (from that module's own config.json), which is refused.
void check_no_pooling(const Checkpoint& ck, const Hparams& /*hp*/, CardFile& /*card*/) {
    const fs::path path = fs::path(ck.dir()) / "modules.json";
    const std::optional<Json> modules = read_optional_json(path);
    if (!modules) return;
    if (!modules->is_array()) throw FormatError(ErrorKind::BadJson, path.string(), "", "not a list of modules");
    for (const Json& m : *modules) {
        const Json* type = member(m, "type");
        if (!type || !type->is_string())
            throw FormatError(ErrorKind::BadJson, path.string(), "type", "a module without a type name");
        if (type->get<std::string>().ends_with("Pooling"))
            throw FormatError(ErrorKind::Unsupported, path.string(), "",
                              "sentence-transformers pooling (" + type->get<std::string>() + ") is not converted yet");
    }
}

// Qwen3Model._is_qwen3_reranker: README.md's "# qwen3-reranker" heading, "qwen3-reranker" in the
// directory name, _name_or_path, model_type or the first architecture, or a SequenceClassification
// architecture.
bool is_qwen3_reranker(const Checkpoint& ck, const Hparams& hp, CardFile& card) {
    if (const std::string* text = card.text()) {
        const std::string l = lower_ascii(*text);
        if (l.find("# qwen3-reranker") != std::string::npos || l.find("# qwen3-vl-reranker") != std::string::npos)
            return true;
    }
    const Json* archs = member(hp.raw(), "architectures");
    const Json* origin = archs && archs->is_array() && !archs->empty() ? &(*archs)[0] : nullptr;
    std::vector<std::string> hints = {dir_name(ck.dir())};
    for (const Json* v : {member(hp.merged(), "_name_or_path"), member(hp.merged(), "model_type"), origin})
        if (v && !v->is_null()) hints.push_back(v->is_string() ? v->get<std::string>() : v->dump());
    for (const std::string& h : hints) {
        const std::string l = lower_ascii(h);
        if (l.find("qwen3-reranker") != std::string::npos || l.find("qwen3-vl-reranker") != std::string::npos)
            return true;
    }
    return origin && origin->is_string() &&
           lower_ascii(origin->get<std::string>()).find("sequenceclassification") != std::string::npos;
}

// Qwen3Model's refusals: rerankers (their yes/no classifier head needs transformers' tokenizer)
// and Qwen2Model's pooling modules.
void check_qwen3(const Checkpoint& ck, const Hparams& hp, CardFile& card) {
    if (is_qwen3_reranker(ck, hp, card))
        throw FormatError(ErrorKind::Unsupported, ck.dir(), "",
                          "a Qwen3 reranker (README, name or architecture says so) is not converted yet");
    check_no_pooling(ck, hp, card);
}

// Gemma3Model's own refusals: attn_logit_softcapping must be unset (its assert), a sliding window
// when the pattern is not 1.
void check_gemma3(const Checkpoint& /*ck*/, const Hparams& hp, CardFile& /*card*/) {
    if (const Json* v = hp.get({"attn_logit_softcapping"}))
        throw FormatError(ErrorKind::Unsupported, hp.file(), "attn_logit_softcapping",
                          v->dump() + ": Gemma3 has none (the Python converter asserts it)");
    if (const Json* p = member(hp.merged(), "sliding_window_pattern"); !(p && *p == 1)) hp.need({"sliding_window"});
}

// Gemma3Model.modify_tensors: the embedding cut to its first n_vocab_real rows, the length of the
// SentencePiece vocabulary (vocab_size, else the pieces) or, without tokenizer.model, tokenizer.json's
// vocab plus its added tokens (gemma-3-4b-it's 262 208 rows hold image tokens past the 262 144).
void trim_gemma3_embedding(const Checkpoint& ck, const Hparams& hp, std::vector<PlannedTensor>& tensors) {
    for (PlannedTensor& t : tensors) {
        if (!t.computed.empty() || t.source.tensor->name.find("embed_tokens.weight") == std::string::npos) continue;
        uint64_t n = 0;
        if (has_tokenizer_model(ck)) {
            std::vector<std::string> ignored;  // set_vocab reports them
            n = spm_vocab(fs::path(ck.dir()), hp, ignored).tokens.size();
        } else {
            const std::string tj = (fs::path(ck.dir()) / "tokenizer.json").string();
            const std::optional<Json> tok = read_tokenizer_json(fs::path(ck.dir()));
            const Json* model = tok ? member(*tok, "model") : nullptr;
            const Json* vocab = model ? member(*model, "vocab") : nullptr;
            const Json* added = tok ? member(*tok, "added_tokens") : nullptr;
            if (!vocab || !vocab->is_object() || !added || !added->is_array())
                throw FormatError(ErrorKind::BadJson, tj, "model.vocab",
                                  "Gemma3 counts the vocabulary from model.vocab and added_tokens");
            n = vocab->size() + added->size();
        }
        const Tensor& src = *t.source.tensor;
        if (src.shape.empty() || n >= src.shape[0]) continue;  // data_torch[:n] of a shorter tensor: all of it
        auto view = std::make_shared<Tensor>(src);
        view->shape[0] = n;
        view->elements = src.elements / src.shape[0] * n;
        view->size = src.size / src.shape[0] * n;
        t.ne.back() = static_cast<int64_t>(n);
        t.source.tensor = view.get();
        t.views.push_back(std::move(view));
    }
}

// Gemma3Model.set_gguf_parameters after TextModel's (keys set again keep their place).
void add_gemma3_params(KvWriter& kv, const Hparams& hp, const std::string& a) {
    auto or_default = [&](const char* key, const Json& d) -> Json {
        const Json* v = member(hp.merged(), key);
        return v ? *v : d;  // hparams.get(key, default): a null value stays null
    };
    kv.u32(a + "context_length", or_default("max_position_embeddings", 131072));
    kv.u32(a + "attention.head_count", or_default("num_attention_heads", 8));
    kv.f32(a + "attention.layer_norm_rms_epsilon", or_default("rms_norm_eps", 1e-6));
    kv.u32(a + "attention.key_length", or_default("head_dim", 256));
    kv.u32(a + "attention.value_length", or_default("head_dim", 256));
    // rope_parameters.get("full_attention", rope_parameters).get("rope_theta", 1e6).
    const Json rope = rope_parameters(hp);
    const Json& params = rope.contains("full_attention") ? rope["full_attention"] : rope;
    const Json* theta = member(params, "rope_theta");
    kv.f32(a + "rope.freq_base", theta ? *theta : Json(1000000.0));
    if (const Json* v = hp.get({"final_logit_softcapping"}); v && v->is_number() && v->get<double>() != 0.0)
        kv.f32(a + "final_logit_softcapping", *v);
    if (const Json* p = member(hp.merged(), "sliding_window_pattern"); !(p && *p == 1))
        kv.u32(a + "attention.sliding_window", hp.need({"sliding_window"}));
    kv.u32(a + "attention.head_count_kv", or_default("num_key_value_heads", 4));
}

// Gemma3Model.set_vocab: _set_vocab_sentencepiece without the space prefix, else _set_vocab_gpt2.
void add_gemma3_vocab(KvWriter& kv, const Checkpoint& ck, const Hparams& hp, std::vector<std::string>& notes) {
    if (!has_tokenizer_model(ck))
        return void(add_bpe_vocab(kv, ck, hp, read_tokenizer_json(fs::path(ck.dir())), notes));
    add_spm_vocab(kv, ck, hp, notes);
    kv.boolean("tokenizer.ggml.add_space_prefix", false);
}

// Phi3MiniModel.set_vocab's tokenizer_class: true for GPT2Tokenizer (Phi-4, Phi-4-mini: a
// tokenizer.json BPE vocabulary). A tokenizer_config without tokenizer_class is its KeyError.
bool phi3_gpt2_tokenizer(const Checkpoint& ck) {
    const fs::path tc_path = fs::path(ck.dir()) / "tokenizer_config.json";
    const std::optional<Json> tc = read_optional_json(tc_path);
    if (!tc) return false;
    const Json* cls = member(*tc, "tokenizer_class");
    if (!cls) throw FormatError(ErrorKind::BadJson, tc_path.string(), "tokenizer_class", "missing");
    return *cls == "GPT2Tokenizer";
}

// Phi3MiniModel's refusal before anything is planned: a tokenizer_config without tokenizer_class.
void check_phi3(const Checkpoint& ck, const Hparams& /*hp*/, CardFile& /*card*/) { phi3_gpt2_tokenizer(ck); }

// Phi3's rotated dimensions: int(partial_rotary_factor * hidden_size) // num_attention_heads.
uint64_t phi3_rope_dims(const Hparams& hp) {
    const Json& e = hp.need({"hidden_size", "n_embd"});
    const Json& h = hp.need({"num_attention_heads", "n_head"});
    const Json* pct = member(hp.merged(), "partial_rotary_factor");
    if (!e.is_number_unsigned() || !h.is_number_unsigned() || h.get<uint64_t>() == 0 || (pct && !pct->is_number()))
        throw FormatError(ErrorKind::BadJson, hp.file(), "",
                          "hidden_size, num_attention_heads and partial_rotary_factor must be numbers");
    const double rot = pct ? pct->get<double>() : 1.0;
    return static_cast<uint64_t>(std::floor(static_cast<double>(static_cast<int64_t>(rot * e.get<double>())) /
                                            static_cast<double>(h.get<uint64_t>())));
}

// Phi3MiniModel.set_gguf_parameters (all of it: it does not call TextModel's).
void add_phi3_params(KvWriter& kv, const Hparams& hp, const std::string& a, int64_t n_block, OutType ot) {
    const Json& e = hp.need({"hidden_size", "n_embd"});
    const Json& h = hp.need({"num_attention_heads", "n_head"});
    kv.u32(a + "context_length", hp.need({"n_positions", "max_position_embeddings"}));
    kv.u32(a + "rope.scaling.original_context_length", hp.need({"original_max_position_embeddings"}));
    kv.u32(a + "embedding_length", e);
    kv.u32(a + "feed_forward_length", hp.need({"intermediate_size"}));
    kv.u32(a + "block_count", static_cast<uint64_t>(n_block));
    kv.u32(a + "attention.head_count", h);
    kv.u32(a + "attention.head_count_kv", hp.need({"num_key_value_heads", "n_head_kv"}));
    kv.f32(a + "attention.layer_norm_rms_epsilon", hp.need({"rms_norm_eps"}));
    kv.u32(a + "rope.dimension_count", phi3_rope_dims(hp));
    const Json rope = rope_parameters(hp);
    const Json& params = rope.contains("full_attention") ? rope["full_attention"] : rope;
    const Json* theta = member(params, "rope_theta");
    if (!theta) throw FormatError(ErrorKind::BadJson, hp.file(), "rope_theta", "missing");
    kv.f32(a + "rope.freq_base", *theta);
    kv.u32("general.file_type", file_type_of(ot));
    const Json* sw = member(hp.merged(), "sliding_window");
    kv.u32(a + "attention.sliding_window", sw && !sw->is_null() ? *sw : Json(0));  // 0 tells Phi-4 apart
}

// Phi3MiniModel.generate_extra_tensors: with rope_scaling (LongRoPE, "su", or YaRN), the attention
// factor key and rope_factors_long/short.weight from its long_factor / short_factor lists (one per
// rotated pair), rounded to F32.
void add_phi3_extra(KvWriter& kv, const Hparams& hp, std::vector<PlannedTensor>& out) {
    const Json* rs = hp.find({"rope_scaling"});
    if (!rs || rs->is_null()) return;
    if (!rs->is_object()) throw FormatError(ErrorKind::BadJson, hp.file(), "rope_scaling", "not an object");
    const double max_pos =
        finite_number(hp, hp.need({"n_positions", "max_position_embeddings"}), "max_position_embeddings");
    const double orig =
        finite_number(hp, hp.need({"original_max_position_embeddings"}), "original_max_position_embeddings");
    if (!(orig > 1.0)) throw FormatError(ErrorKind::BadJson, hp.file(), "original_max_position_embeddings", "not > 1");
    const double scale = max_pos / orig;
    const Json* type = member(*rs, "rope_type");
    if (!type) type = member(*rs, "type");
    if (!type || !type->is_string() || type->get<std::string>().empty())
        throw FormatError(ErrorKind::BadJson, hp.file(), "rope_scaling.type", "missing");
    const std::string t = lower_ascii(type->get<std::string>());
    double attn = 1.0;
    if (t == "su" || t == "longrope") {
        if (scale > 1.0) attn = std::sqrt(1.0 + std::log(scale) / std::log(orig));
    } else if (t == "yarn") {
        if (scale > 1.0) attn = 0.1 * std::log(scale) + 1.0;
    } else {
        throw FormatError(ErrorKind::Unsupported, hp.file(), "rope_scaling.type",
                          fmt::format("'{}' is not supported by Phi3's converter (longrope, su, yarn are)", t));
    }
    kv.f32("phi3.rope.scaling.attn_factor", attn);
    const uint64_t rope_dims = phi3_rope_dims(hp);
    auto factors = [&](const char* key) {
        const Json* list = member(*rs, key);
        if (!list || list->is_null() || !list->is_array())
            throw FormatError(ErrorKind::BadJson, hp.file(), std::string("rope_scaling.") + key, "missing");
        if (rope_dims % 2 != 0 || list->size() != rope_dims / 2)
            throw FormatError(ErrorKind::BadDims, hp.file(), std::string("rope_scaling.") + key,
                              fmt::format("{} factors; one per rotated pair is {} / 2", list->size(), rope_dims));
        std::vector<float> v;
        for (const Json& x : *list) v.push_back(static_cast<float>(finite_number(hp, x, key)));
        return v;
    };
    std::vector<float> long_f = factors("long_factor"), short_f = factors("short_factor");
    out.push_back(computed_tensor(hp, "rope_factors_long.weight", std::move(long_f), "rope_scaling.long_factor"));
    out.push_back(computed_tensor(hp, "rope_factors_short.weight", std::move(short_f), "rope_scaling.short_factor"));
}

// Phi3MiniModel.set_vocab: a GPT2Tokenizer's _set_vocab_gpt2; otherwise the SentencePiece pieces
// (none may lie past vocab_size), then added_tokens.json, then
// tokenizer_config's added_tokens_decoder and tokenizer.json's added_tokens, each USER_DEFINED (CONTROL
// when special) with score -1000 and no further rule; then SpecialVocab.
void add_phi3_vocab(KvWriter& kv, const Checkpoint& ck, const Hparams& hp, std::vector<std::string>& notes) {
    if (phi3_gpt2_tokenizer(ck)) {
        add_bpe_vocab(kv, ck, hp, read_tokenizer_json(fs::path(ck.dir())), notes);
        return;
    }
    const fs::path dir(ck.dir());
    if (!has_tokenizer_model(ck))
        throw FormatError(ErrorKind::Unsupported, ck.dir(), "", "no tokenizer.model (Phi3 reads SentencePiece)");
    std::optional<Json> tc = read_optional_json(dir / "tokenizer_config.json");
    SpmVocab v = spm_vocab(dir, hp, notes);
    if (v.pieces > v.tokens.size())
        throw FormatError(ErrorKind::BadDims, (dir / "tokenizer.model").string(), "",
                          "more pieces than vocab_size (Phi3's converter fails on them)");
    const uint64_t n = v.tokens.size();
    add_spm_added_tokens(v, dir, std::nullopt);  // added_tokens.json only
    auto take = [&](const Json& list, const std::string& file, bool by_key) {
        for (const auto& [key, data] : list.items()) {
            const Json* content = member(data, "content");
            const Json* id = by_key ? nullptr : member(data, "id");
            const bool key_ok =
                !key.empty() && key.size() < 19 && key.find_first_not_of("0123456789") == std::string::npos;
            if (!content || !content->is_string() || (by_key ? !key_ok : !(id && id->is_number_unsigned())))
                throw FormatError(ErrorKind::BadJson, file, "added tokens", "an entry without an id and content");
            const uint64_t i = by_key ? std::stoull(key) : id->get<uint64_t>();
            if (i >= n) throw FormatError(ErrorKind::BadDims, file, "added tokens", fmt::format("id {} >= {}", i, n));
            v.tokens[i] = content->get<std::string>();
            v.scores[i] = -1000.0f;
            v.types[i] =
                static_cast<int32_t>(truthy(member(data, "special")) ? SpmType::Control : SpmType::UserDefined);
        }
    };
    if (const Json* d = tc && tc->is_object() ? member(*tc, "added_tokens_decoder") : nullptr; d && d->is_object())
        take(*d, (dir / "tokenizer_config.json").string(), true);
    const std::optional<Json> tok = read_tokenizer_json(dir);
    if (tok)
        if (const Json* at = member(*tok, "added_tokens"); at && at->is_array())
            take(*at, (dir / "tokenizer.json").string(), false);
    write_spm_vocab(kv, std::move(v), dir, hp, tc, tok, notes);
}

// Qwen2MoeModel.set_gguf_parameters after TextModel's: the expert and shared-expert FFN widths.
void add_qwen_moe_params(KvWriter& kv, const Hparams& hp, const std::string& a) {
    if (const Json* v = hp.get({"moe_intermediate_size"})) kv.u32(a + "expert_feed_forward_length", *v);
    if (const Json* v = hp.get({"shared_expert_intermediate_size"}))
        kv.u32(a + "expert_shared_feed_forward_length", *v);
}

// TextModel.set_vocab (Qwen2MoeModel keeps it): _set_vocab_gpt2, whatever else the checkpoint has.
void add_gpt2_vocab(KvWriter& kv, const Checkpoint& ck, const Hparams& hp, std::vector<std::string>& notes) {
    add_bpe_vocab(kv, ck, hp, read_tokenizer_json(fs::path(ck.dir())), notes);
}

constexpr const ExpertNaming* kNoExperts = nullptr;
constexpr ArchSpec kArchs[] = {
    {"LlamaForCausalLM", "llama", kMoeNames, &kMixtralExperts, true, 0.0f, nullptr, add_llama_params, nullptr,
     add_llama_vocab, add_llama_extra},
    {"MistralForCausalLM", "llama", kMoeNames, &kMixtralExperts, true, 0.0f, nullptr, add_llama_params, nullptr,
     add_llama_vocab, add_llama_extra},
    {"MixtralForCausalLM", "llama", kMoeNames, &kMixtralExperts, true, 0.0f, nullptr, add_llama_params, nullptr,
     add_llama_vocab, add_llama_extra},
    {"Qwen2ForCausalLM", "qwen2", {}, kNoExperts, false, 0.0f, check_no_pooling, nullptr, nullptr, add_qwen2_vocab},
    {"Qwen2MoeForCausalLM", "qwen2moe", kQwen2MoeNames, &kQwenMoeExperts, false, 0.0f, nullptr, add_qwen_moe_params,
     nullptr, add_gpt2_vocab},
    {"Qwen3ForCausalLM", "qwen3", kQkNormNames, kNoExperts, false, 0.0f, check_qwen3, nullptr, nullptr,
     add_qwen2_vocab},
    {"Qwen3MoeForCausalLM", "qwen3moe", kQwen3MoeNames, &kQwenMoeExperts, false, 0.0f, nullptr, add_qwen_moe_params,
     nullptr, add_gpt2_vocab},
    {"Gemma3ForCausalLM", "gemma3", kGemma3Names, kNoExperts, false, 1.0f, check_gemma3, add_gemma3_params, nullptr,
     add_gemma3_vocab, nullptr, trim_gemma3_embedding},
    {"Gemma3ForConditionalGeneration", "gemma3", kGemma3Names, kNoExperts, false, 1.0f, check_gemma3, add_gemma3_params,
     nullptr, add_gemma3_vocab, nullptr, trim_gemma3_embedding},
    {"Phi3ForCausalLM", "phi3", kPhi3Names, kNoExperts, false, 0.0f, check_phi3, nullptr, add_phi3_params,
     add_phi3_vocab, add_phi3_extra},
};

}  // namespace

std::optional<OutType> out_type_from_name(std::string_view name) {
    if (name == "f32") return OutType::F32;
    if (name == "f16") return OutType::F16;
    if (name == "bf16") return OutType::BF16;
    if (name == "auto") return OutType::Auto;
    if (name == "q8_0") return OutType::Q8_0;
    return std::nullopt;
}

std::string default_file_name(const ConvertPlan& plan, const std::string& output_type) {
    auto strip = [](const std::string& v) {
        const size_t b = v.find_first_not_of(" \t\n\r\f\v"), e = v.find_last_not_of(" \t\n\r\f\v");
        return b == std::string::npos ? std::string() : v.substr(b, e - b + 1);
    };
    auto dashed = [&](const std::string& v, bool slash) {
        std::string o = strip(v);
        for (char& c : o)
            if (c == ' ' || (slash && c == '/')) c = '-';
        return o;
    };
    std::string f = plan.basename ? dashed(*plan.basename, true) : plan.name ? dashed(*plan.name, true) : "ggml-model";
    if (plan.size_label && !plan.vocab_only) f += "-" + *plan.size_label;
    if (plan.finetune) f += "-" + dashed(*plan.finetune, false);
    if (plan.version) f += "-" + dashed(*plan.version, false);
    return f + (plan.vocab_only ? "-vocab" : "-" + upper_ascii(dashed(output_type, false)));
}

std::string fill_templated_filename(const std::string& name, const std::string& output_type) {
    const std::string lower = lower_ascii(output_type), upper = upper_ascii(output_type);
    std::string out;
    for (size_t i = 0; i < name.size(); ++i) {
        const char c = name[i];
        if ((c == '{' || c == '}') && i + 1 < name.size() && name[i + 1] == c) {
            out += c;
            ++i;
        } else if (c == '{') {
            const size_t end = name.find('}', i);
            const std::string field = end == std::string::npos ? "" : name.substr(i + 1, end - i - 1);
            if ((field.empty() && end != std::string::npos) || field == "0" || field == "ftype" || field == "outtype") {
                out += lower;
            } else if (field == "FTYPE" || field == "OUTTYPE") {
                out += upper;
            } else {
                throw FormatError(ErrorKind::Usage, name, "OUT",
                                  "a '{' that is not {ftype}, {outtype}, {FTYPE}, {OUTTYPE}, {} or {{ (the Python "
                                  "converter's str.format fails on it)");
            }
            i = end;
        } else if (c == '}') {
            throw FormatError(ErrorKind::Usage, name, "OUT", "a single '}' (write }} for a brace)");
        } else {
            out += c;
        }
    }
    return out;
}

const char* supported_architectures() {
    static const std::string names = [] {
        std::string s;
        for (const ArchSpec& a : kArchs) s += (s.empty() ? "" : ", ") + std::string(a.hf_name);
        return s;
    }();
    return names.c_str();
}

ConvertPlan plan_convert(const Checkpoint& ck, OutType outtype, const PlanOptions& opt) {
    const fs::path dir(ck.dir());
    const std::string cfg_path = (dir / "config.json").string();
    const std::optional<Json> cfg = read_optional_json(cfg_path);
    if (!cfg) throw FormatError(ErrorKind::Io, cfg_path, "", "missing: a Hugging Face checkpoint has a config.json");
    const Hparams hp(*cfg, cfg_path);
    const Json* archs = hp.find({"architectures"});
    if (!archs || !archs->is_array() || archs->empty() || !(*archs)[0].is_string())
        throw FormatError(ErrorKind::BadJson, cfg_path, "architectures", "missing or not a list of names");
    const std::string hf_arch = (*archs)[0].get<std::string>();
    const auto spec =
        std::find_if(std::begin(kArchs), std::end(kArchs), [&](const ArchSpec& s) { return hf_arch == s.hf_name; });
    if (spec == std::end(kArchs))
        throw FormatError(ErrorKind::Unsupported, cfg_path, "architectures",
                          fmt::format("'{}' is not supported (supported: {})", hf_arch, supported_architectures()));
    const Json& nb = hp.need({"n_layers", "num_hidden_layers", "n_layer", "num_layers"});
    if (!nb.is_number_unsigned() || nb.get<uint64_t>() > 100000)
        throw FormatError(ErrorKind::BadJson, cfg_path, "num_hidden_layers", nb.dump() + " is not a block count");
    const auto n_block = static_cast<int64_t>(nb.get<uint64_t>());
    CardFile card(ck.dir());
    if (spec->check) spec->check(ck, hp, card);
    const OutType ot = outtype == OutType::Auto ? resolve_auto(ck) : outtype;

    ConvertPlan plan;
    plan.arch = spec->arch;
    KvWriter kv(cfg_path);
    kv.str("general.architecture", plan.arch);
    // --vocab-only is write_vocab: neither generate_extra_tensors nor prepare_tensors runs (no
    // tensor, none of their keys, 0 parameters)
    plan.vocab_only = opt.vocab_only;
    if (!opt.vocab_only) {
        if (spec->extra) spec->extra(kv, hp, plan.tensors);
        for (PlannedTensor& t : plan_tensors(*spec, ck, hp, ot, n_block)) plan.tensors.push_back(std::move(t));
        if (spec->adjust) spec->adjust(ck, hp, plan.tensors);
        q8_0_fallback(plan.tensors);
        for (const PlannedTensor& t : plan.tensors) plan.total_params += t.elements();
    }
    const CardMetadata m =
        add_general(kv, ck, hp, card, plan.tensors, static_cast<int64_t>(plan.total_params), opt, plan.notes);
    plan.name = m.name;
    plan.basename = m.basename;
    plan.finetune = m.finetune;
    plan.version = m.version;
    plan.size_label = m.size_label;
    plan.output_type = ot == OutType::F32 ? "F32" : ot == OutType::BF16 ? "BF16" : ot == OutType::Q8_0 ? "Q8_0" : "F16";
    const std::string a = plan.arch + ".";
    if (spec->own_params) {
        spec->own_params(kv, hp, a, n_block, ot);
    } else {
        add_text_params(kv, hp, a, n_block, ot);
        if (spec->params) spec->params(kv, hp, a);
    }
    kv.u32("general.quantization_version", kQuantizationVersion);
    spec->vocab(kv, ck, hp, plan.notes);
    plan.kvs = kv.take();
    return plan;
}

}  // namespace oiw::hf
