#include "converters/requant/requant_plan.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <iterator>
#include <unordered_map>

#include <fmt/format.h>

#include "converters/quant/quants.h"
#include "libformat/escape.h"
#include "libformat/ftype.h"
#include "libformat/names.h"
#include "libformat/pattern.h"

namespace oiw {
namespace {

using T = GgmlType;
using F = LlamaFtype;

// A preset named as llama-quantize lists it: the ftype's name without "MOSTLY_" / "ALL_".
constexpr RequantPreset preset(F ftype, GgmlType default_type) {
    return {ftype_short_name(ftype), static_cast<uint32_t>(ftype), default_type};
}

// llama-quantize's QUANT_OPTIONS in its listing order (aliases apart; Q2_0 is newer than 1348f67).
constexpr RequantPreset kPresets[] = {
    preset(F::MOSTLY_Q1_0, T::Q1_0),       preset(F::MOSTLY_Q4_0, T::Q4_0),
    preset(F::MOSTLY_Q4_1, T::Q4_1),       preset(F::MOSTLY_MXFP4_MOE, T::MXFP4),
    preset(F::MOSTLY_Q5_0, T::Q5_0),       preset(F::MOSTLY_Q5_1, T::Q5_1),
    preset(F::MOSTLY_IQ2_XXS, T::IQ2_XXS), preset(F::MOSTLY_IQ2_XS, T::IQ2_XS),
    preset(F::MOSTLY_IQ2_S, T::IQ2_XS),    preset(F::MOSTLY_IQ2_M, T::IQ2_S),
    preset(F::MOSTLY_IQ1_S, T::IQ1_S),     preset(F::MOSTLY_IQ1_M, T::IQ1_M),
    preset(F::MOSTLY_TQ1_0, T::TQ1_0),     preset(F::MOSTLY_TQ2_0, T::TQ2_0),
    preset(F::MOSTLY_Q2_K, T::Q2_K),       preset(F::MOSTLY_Q2_K_S, T::Q2_K),
    preset(F::MOSTLY_IQ3_XXS, T::IQ3_XXS), preset(F::MOSTLY_IQ3_S, T::IQ3_S),
    preset(F::MOSTLY_IQ3_M, T::IQ3_S),     preset(F::MOSTLY_IQ3_XS, T::IQ3_S),
    preset(F::MOSTLY_Q3_K_S, T::Q3_K),     preset(F::MOSTLY_Q3_K_M, T::Q3_K),
    preset(F::MOSTLY_Q3_K_L, T::Q3_K),     preset(F::MOSTLY_IQ4_NL, T::IQ4_NL),
    preset(F::MOSTLY_IQ4_XS, T::IQ4_XS),   preset(F::MOSTLY_Q4_K_S, T::Q4_K),
    preset(F::MOSTLY_Q4_K_M, T::Q4_K),     preset(F::MOSTLY_Q5_K_S, T::Q5_K),
    preset(F::MOSTLY_Q5_K_M, T::Q5_K),     preset(F::MOSTLY_Q6_K, T::Q6_K),
    preset(F::MOSTLY_Q8_0, T::Q8_0),       preset(F::MOSTLY_F16, T::F16),
    preset(F::MOSTLY_BF16, T::BF16),       preset(F::ALL_F32, T::F32),
};
constexpr std::pair<std::string_view, std::string_view> kPresetAliases[] = {
    {"Q3_K", "Q3_K_M"},
    {"Q4_K", "Q4_K_M"},
    {"Q5_K", "Q5_K_M"},
};

[[noreturn]] void usage_error(std::string_view subject, const std::string& what) {
    throw FormatError(ErrorKind::Usage, "", std::string(subject), what);
}

// ---------------------------------------------------------------------------------------------
// Which tensors are quantized at all (llama-quant.cpp tensor_allows_quantization).

// A weight whose name contains any of these stays as it is.
constexpr std::string_view kNeverQuantized[] = {
    "_norm.weight",  // norms
    "ffn_gate_inp.weight",
    "ffn_gate_tid2eid.weight",  // MoE routers and routing tables
    "altup",
    "laurel",
    "per_layer_model_proj",  // small Gemma-3n tensors
    "ssm_conv1d",
    "shortconv.conv.weight",  // small conv1d weights
    "indexer.k_proj.weight",
    "indexer.q_proj.weight",  // MiniMax indexer projections
    "time_mix_first.weight",
    "time_mix_w0.weight",
    "time_mix_w1.weight",
    "time_mix_w2.weight",  // RWKV
    "time_mix_v0.weight",
    "time_mix_v1.weight",
    "time_mix_v2.weight",
    "time_mix_a0.weight",
    "time_mix_a1.weight",
    "time_mix_a2.weight",
    "time_mix_g1.weight",
    "time_mix_g2.weight",
    "time_mix_decay_w1.weight",
    "time_mix_decay_w2.weight",
    "time_mix_lerp_fused.weight",
    "attn_rel_b.weight",  // T5 relative position bias
    ".position_embd",
    "sam.pos_embd",
    "sam.neck.",
    "sam.net_",
    ".rel_pos",
    ".patch_embd",
    ".patch_merger",  // multimodal
    "a.rvq.codebook",
    "mm.a.code_embd",  // audio codebooks
};
// Whole names that stay as they are (BERT-style positional and token-type embeddings).
constexpr std::string_view kNeverQuantizedNames[] = {"position_embd.weight", "token_types.weight"};

// ggml_n_dims: dimensions up to the last one > 1.
uint32_t effective_dims(const GgufTensorInfo& t) {
    uint32_t n = kMaxDims;
    while (n > 1 && t.ne[n - 1] == 1) --n;
    return n;
}

bool allows_quantization(const GgufTensorInfo& t, const PlanOptions& opt) {
    const std::string_view name = t.name;
    // llama.cpp's "ends with weight" test is name.rfind("weight") == name.size() - 6, which a
    // 5-character name also passes (npos == size_t(5 - 6)).
    if (effective_dims(t) < 2 || !(name.ends_with("weight") || name.size() == 5)) return false;
    if (opt.leave_output_tensor && name == "output.weight") return false;
    for (auto s : kNeverQuantized)
        if (name.find(s) != std::string_view::npos) return false;
    return std::find(std::begin(kNeverQuantizedNames), std::end(kNeverQuantizedNames), name) ==
           std::end(kNeverQuantizedNames);
}

// ---------------------------------------------------------------------------------------------
// Tensor categories (llama-quant.cpp tensor_get_category): exact names first, then the first
// substring that matches.

enum class Cat { TokenEmbd, AttnQ, AttnV, AttnK, AttnQkv, AttnKvB, AttnOutput, FfnUp, FfnGate, FfnDown, Output, Other };

constexpr std::pair<std::string_view, Cat> kCategoryBySubstring[] = {
    {"attn_qkv.weight", Cat::AttnQkv},
    {"attn_kv_b.weight", Cat::AttnKvB},
    {"attn_v.weight", Cat::AttnV},
    {"attn_k.weight", Cat::AttnK},
    {"attn_q.weight", Cat::AttnQ},
    {"attn_output.weight", Cat::AttnOutput},
    {"ffn_up", Cat::FfnUp},
    {"ffn_gate", Cat::FfnGate},
    {"ffn_down", Cat::FfnDown},
};

Cat category(std::string_view name) {
    if (name == "output.weight") return Cat::Output;
    if (name == "token_embd.weight" || name == "per_layer_token_embd.weight") return Cat::TokenEmbd;
    for (const auto& [s, c] : kCategoryBySubstring)
        if (name.find(s) != std::string_view::npos) return c;
    return Cat::Other;
}

// attn_v-like tensors are the most sensitive to quantization and share one counter.
bool attn_v_like(Cat c) { return c == Cat::AttnV || c == Cat::AttnQkv || c == Cat::AttnKvB; }

// Block number as llama.cpp reads it: sscanf(name, "blk.%d.") (-1 when absent).
int block_number(const std::string& name) {
    int layer = -1;
    if (std::sscanf(name.c_str(), "blk.%d.", &layer) != 1) return -1;
    return layer;
}

// ---------------------------------------------------------------------------------------------
// The mixture rules (llama-quant.cpp llama_tensor_get_type_impl).

struct MixState {
    const QuantModelInfo& model;
    LlamaFtype ftype;
    bool has_imatrix;
    bool tied_embeddings;  // no output.weight: token_embd doubles as lm_head
    std::optional<GgmlType> output_tensor_type;
    int n_attention_wv = 0, i_attention_wv = 0, i_ffn_down = 0, i_ffn_gate = 0, i_ffn_up = 0;
};

bool use_more_bits(int i_layer, int n_layers) {
    return i_layer < n_layers / 8 || i_layer >= 7 * n_layers / 8 || (i_layer - n_layers / 8) % 3 == 2;
}

// (layer, n_layer) of an FFN tensor: its position among its kind (dense models), or the block
// number in its name (MoE models, whose expert tensors need not be consecutive).
std::pair<int, int> layer_info(const MixState& s, int counter, const std::string& name) {
    const int n_layer = s.model.n_layer;
    if (s.model.n_expert <= 1) return {counter, n_layer};
    int layer = -1;
    if (std::sscanf(name.c_str(), "blk.%d.", &layer) != 1)
        usage_error("tensor '" + name + "'", "cannot determine its block number (expected a 'blk.N.' prefix)");
    if (layer < 0 || layer >= n_layer)
        usage_error("tensor '" + name + "'", fmt::format("block {} is outside [0, {})", layer, n_layer));
    return {layer, n_layer};
}

// The lowest-bit presets, which llama.cpp mixes in a branch of their own.
bool lowest_bit_preset(LlamaFtype ft) {
    switch (ft) {
        case F::MOSTLY_IQ2_XXS:
        case F::MOSTLY_IQ2_XS:
        case F::MOSTLY_IQ2_S:
        case F::MOSTLY_IQ2_M:
        case F::MOSTLY_IQ1_S:
        case F::MOSTLY_IQ1_M: return true;
        default: return false;
    }
}

// token_embd (untied): more bits for the lowest-bit, IQ3_XXS and ternary presets.
GgmlType token_embd_type(LlamaFtype ft, GgmlType type) {
    switch (ft) {
        case F::MOSTLY_IQ2_XXS:
        case F::MOSTLY_IQ2_XS:
        case F::MOSTLY_IQ1_S:
        case F::MOSTLY_IQ1_M: return T::Q2_K;
        case F::MOSTLY_IQ2_S:
        case F::MOSTLY_IQ2_M:
        case F::MOSTLY_IQ3_XXS: return T::IQ3_S;
        case F::MOSTLY_TQ1_0:
        case F::MOSTLY_TQ2_0: return T::Q4_K;
        default: return type;
    }
}

// The lowest-bit presets' branch: attn_v, attn_k (8 experts), the first ffn_down blocks (counted
// over ffn_down tensors, experts or not) and attn_output get more bits.
GgmlType lowest_bit_type(MixState& s, Cat cat, GgmlType type) {
    const QuantModelInfo& m = s.model;
    const bool iq2_s_m = s.ftype == F::MOSTLY_IQ2_S || s.ftype == F::MOSTLY_IQ2_M;
    const GgmlType more = iq2_s_m ? T::IQ3_S : T::Q2_K;
    if (attn_v_like(cat)) {
        ++s.i_attention_wv;
        return m.n_gqa() >= 4 || m.n_expert >= 4 ? T::Q4_K : more;
    }
    switch (cat) {
        case Cat::AttnK: return m.n_expert == 8 ? T::Q4_K : type;
        case Cat::FfnDown: return s.i_ffn_down++ < m.n_layer / 8 ? more : type;
        case Cat::AttnOutput:
            if (m.n_expert == 8) return T::Q5_K;
            if (s.ftype == F::MOSTLY_IQ1_S || s.ftype == F::MOSTLY_IQ1_M) return T::IQ2_XXS;
            return iq2_s_m ? T::IQ3_S : type;
        default: return type;
    }
}

// MXFP4_MOE: expert tensors (3-D) get MXFP4, every other tensor Q8_0. (bailingmoe3's 3-D MLA
// projections are not experts: only its ffn tensors count there.)
GgmlType mxfp4_moe_type(const QuantModelInfo& m, const GgufTensorInfo& t, Cat cat) {
    const bool ffn = cat == Cat::FfnUp || cat == Cat::FfnGate || cat == Cat::FfnDown;
    return t.ne[2] > 1 && (m.arch != "bailingmoe3" || ffn) ? T::MXFP4 : T::Q8_0;
}

// The type llama-quantize's mixture rules give tensor t of category `cat` when the preset says
// `type`, counting layers in `s` (llama_tensor_get_type's rule chain, kept in one piece to be read
// side by side with it).
// NOLINTNEXTLINE(readability-function-size)
GgmlType mixture_type(MixState& s, const GgufTensorInfo& t, Cat cat, GgmlType type) {
    const QuantModelInfo& m = s.model;
    const LlamaFtype ft = s.ftype;
    const bool falcon = m.arch == "falcon";

    if (cat == Cat::Output || (s.tied_embeddings && cat == Cat::TokenEmbd)) {
        if (s.output_tensor_type) return *s.output_tensor_type;
        if (ft == F::MOSTLY_MXFP4_MOE || falcon || t.ne[0] % traits(type).block_size != 0) return T::Q8_0;
        if (lowest_bit_preset(ft) || ft == F::MOSTLY_IQ3_XXS) return T::Q5_K;
        return type != T::Q8_0 ? T::Q6_K : type;
    }
    if (ft == F::MOSTLY_MXFP4_MOE) return mxfp4_moe_type(m, t, cat);
    if (cat == Cat::TokenEmbd) return token_embd_type(ft, type);
    if (lowest_bit_preset(ft)) return lowest_bit_type(s, cat, type);

    if (attn_v_like(cat)) {
        const int i = s.i_attention_wv++;
        switch (ft) {
            case F::MOSTLY_Q2_K: type = m.n_gqa() >= 4 ? T::Q4_K : T::Q3_K; break;
            case F::MOSTLY_Q2_K_S:
                if (m.n_gqa() >= 4) type = T::Q4_K;
                break;
            case F::MOSTLY_IQ3_XXS: type = m.n_gqa() >= 4 ? T::Q4_K : !s.has_imatrix ? T::IQ3_S : T::IQ3_XXS; break;
            case F::MOSTLY_IQ3_XS:
            case F::MOSTLY_IQ3_S:
                if (m.n_gqa() >= 4) type = T::Q4_K;
                break;
            case F::MOSTLY_IQ3_M: type = T::Q4_K; break;
            case F::MOSTLY_Q3_K_M: type = i < 2 ? T::Q5_K : T::Q4_K; break;
            case F::MOSTLY_Q3_K_L: type = T::Q5_K; break;
            case F::MOSTLY_IQ4_NL:
            case F::MOSTLY_IQ4_XS:
                if (m.n_gqa() >= 4) type = T::Q5_K;
                break;
            case F::MOSTLY_Q4_K_M:
            case F::MOSTLY_Q5_K_M:
                if (use_more_bits(i, s.n_attention_wv)) type = T::Q6_K;
                break;
            case F::MOSTLY_Q4_K_S:
                if (i < 4) type = T::Q5_K;
                break;
            default: break;
        }
        // 70B: attn_v is 8x smaller than attn_q, more bits cost little.
        if (m.is_70b && (type == T::Q3_K || type == T::Q4_K)) type = T::Q5_K;
        if (m.n_expert == 8) type = T::Q8_0;
        return type;
    }
    switch (cat) {
        case Cat::AttnK:
            if (m.n_expert == 8) return T::Q8_0;
            [[fallthrough]];
        case Cat::AttnQ: return ft == F::MOSTLY_IQ3_XS ? T::IQ3_XXS : ft == F::MOSTLY_IQ3_XXS ? T::IQ2_S : type;
        case Cat::FfnDown: {
            const auto [i, n] = layer_info(s, s.i_ffn_down, t.name);
            ++s.i_ffn_down;
            const bool more = use_more_bits(i, n);
            switch (ft) {
                case F::MOSTLY_Q2_K: return T::Q3_K;
                case F::MOSTLY_Q2_K_S: return i < n / 8 ? T::Q4_K : type;
                case F::MOSTLY_IQ3_XXS: return s.has_imatrix ? type : i < n / 8 ? T::Q4_K : T::Q3_K;
                case F::MOSTLY_Q3_K_M: return i < n / 16 ? T::Q5_K : (!falcon || more) ? T::Q4_K : T::Q3_K;
                case F::MOSTLY_IQ3_M: return i < n / 8 || (m.n_expert == 8 && more) ? T::Q4_K : type;
                case F::MOSTLY_Q3_K_L: return falcon ? T::Q4_K : T::Q5_K;
                case F::MOSTLY_Q4_K_M:
                    if (falcon) return i < n / 16 ? T::Q6_K : more ? T::Q5_K : T::Q4_K;
                    return more ? T::Q6_K : type;
                case F::MOSTLY_IQ4_NL:
                case F::MOSTLY_IQ4_XS: return i < n / 8 && !s.has_imatrix ? T::Q5_K : type;
                case F::MOSTLY_Q5_K_M: return more ? T::Q6_K : type;
                case F::MOSTLY_Q4_K_S: return !falcon && i < n / 8 ? T::Q5_K : type;
                // Guard the first ffn_down layers, only with an imatrix (keeps old outputs reproducible).
                case F::MOSTLY_Q4_0: return s.has_imatrix && i < n / 8 ? T::Q4_1 : type;
                case F::MOSTLY_Q5_0: return s.has_imatrix && i < n / 8 ? T::Q5_1 : type;
                default: return type;
            }
        }
        case Cat::AttnOutput:
            if (falcon) return ft == F::MOSTLY_Q3_K_L ? T::Q4_K : type;
            if (m.n_expert == 8) {
                switch (ft) {
                    case F::MOSTLY_Q2_K:
                    case F::MOSTLY_IQ3_XS:
                    case F::MOSTLY_IQ3_XXS:
                    case F::MOSTLY_Q3_K_S:
                    case F::MOSTLY_Q3_K_M:
                    case F::MOSTLY_IQ4_NL:
                    case F::MOSTLY_Q4_K_S:
                    case F::MOSTLY_Q4_K_M:
                    case F::MOSTLY_IQ3_S:
                    case F::MOSTLY_IQ3_M:
                    case F::MOSTLY_IQ4_XS: return T::Q5_K;
                    default: return type;
                }
            }
            switch (ft) {
                case F::MOSTLY_Q2_K: return T::Q3_K;
                case F::MOSTLY_IQ3_XXS: return T::IQ3_S;
                case F::MOSTLY_Q3_K_M:
                case F::MOSTLY_IQ3_M: return T::Q4_K;
                case F::MOSTLY_Q3_K_L: return T::Q5_K;
                default: return type;
            }
        case Cat::FfnGate:
        case Cat::FfnUp: {
            // IQ3_XS: the middle blocks' gate and up get IQ3_XXS.
            int& counter = cat == Cat::FfnGate ? s.i_ffn_gate : s.i_ffn_up;
            const auto [i, n] = layer_info(s, counter++, t.name);
            return ft == F::MOSTLY_IQ3_XS && i >= n / 8 && i < 7 * n / 8 ? T::IQ3_XXS : type;
        }
        default: return type;
    }
}

// A type the row length allows (llama-quant.cpp tensor_type_fallback), with a warning. A type
// with no fallback is a refusal: the tensor is planned unchanged and the refusal recorded.
GgmlType fallback_type(const GgufTensorInfo& t, GgmlType type, RequantPlan& plan) {
    const int64_t ncols = t.ne[0];
    const int64_t block = traits(type).block_size;
    if (ncols % block == 0) return type;
    GgmlType fb;
    switch (type) {
        case T::IQ1_S:
        case T::IQ1_M:
        case T::IQ2_XXS:
        case T::IQ2_XS:
        case T::IQ2_S:
        case T::IQ3_XXS:
        case T::IQ3_S:
        case T::IQ4_XS: fb = T::IQ4_NL; break;
        case T::Q2_K:
        case T::Q3_K:
        case T::TQ1_0:
        case T::TQ2_0: fb = T::Q4_0; break;
        case T::Q4_K: fb = T::Q5_0; break;
        case T::Q5_K: fb = T::Q5_1; break;
        case T::Q6_K: fb = T::Q8_0; break;
        default:
            plan.refusals.push_back(
                {"tensor '" + t.name + "'",
                 fmt::format("row length {} is not a multiple of {} (required by {}) and {} has no fallback type",
                             ncols, block, type_name(type), type_name(type))});
            return t.type;
    }
    if (ncols % traits(fb).block_size != 0) fb = T::F16;
    plan.warnings.push_back(fmt::format("tensor '{}': row length {} is not a multiple of {} (required by {}): using {}",
                                        escape_text(t.name), ncols, block, type_name(type), type_name(fb)));
    return fb;
}

// llama-quant.cpp tensor_requires_imatrix.
bool requires_imatrix(std::string_view name, GgmlType type, LlamaFtype ftype) {
    if (name == "token_embd.weight" || name == "per_layer_token_embd.weight" || name == "output.weight") return false;
    switch (type) {
        case T::IQ3_XXS:
        case T::IQ2_XXS:
        case T::IQ2_XS:
        case T::IQ2_S:
        case T::IQ1_M:
        case T::IQ1_S: return true;
        case T::Q2_K: return ftype == F::MOSTLY_Q2_K_S;
        default: return quantize_requires_imatrix(type);
    }
}

}  // namespace

std::span<const RequantPreset> requant_presets() { return kPresets; }

const RequantPreset* lookup_preset(std::string_view name) {
    const auto* alias = find_by_name(kPresetAliases, name, [](const auto& a) { return a.first; });
    const std::string_view wanted = alias ? alias->second : name;
    if (const RequantPreset* p = find_by_name(kPresets, wanted, [](const RequantPreset& r) { return r.name; }))
        return p;
    uint32_t id = 0;
    auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), id);
    if (ec == std::errc() && end == name.data() + name.size())
        for (const auto& p : kPresets)
            if (p.ftype == id) return &p;
    return nullptr;
}

std::string unknown_preset_text(std::string_view name) {
    std::string valid;
    for (const auto& p : kPresets) valid += (valid.empty() ? "" : " ") + std::string(p.name);
    return fmt::format("unknown preset '{}' (valid: {}; aliases Q3_K Q4_K Q5_K)", name, valid);
}

const RequantPreset& find_preset(std::string_view name) {
    if (const RequantPreset* p = lookup_preset(name)) return *p;
    usage_error("preset", unknown_preset_text(name));
}

GgmlType parse_target_type(std::string_view name, std::string_view what) {
    auto t = type_from_name(name);
    if (t && (*t == T::F32 || can_quantize(*t))) return *t;
    std::string valid = "F32";
    for (uint32_t id = 0; id < kGgmlTypeCount; ++id)
        if (type_id_valid(id) && can_quantize(static_cast<GgmlType>(id)))
            valid += " " + std::string(type_name(static_cast<GgmlType>(id)));
    usage_error(what, fmt::format("{} type '{}' (valid: {})", t ? "cannot write" : "unknown", name, valid));
}

TensorTypeRule parse_type_rule(std::string_view spec, std::string_view source) {
    const std::string subject = fmt::format("{} '{}'", source, spec);
    const auto eq = spec.rfind('=');
    if (eq == std::string_view::npos || eq == 0 || eq + 1 == spec.size()) usage_error(subject, "expected REGEX=TYPE");
    TensorTypeRule r;
    r.pattern = std::string(spec.substr(0, eq));
    std::transform(r.pattern.begin(), r.pattern.end(), r.pattern.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    r.type = parse_target_type(spec.substr(eq + 1), subject);
    const Pattern compiled(r.pattern, source);  // reports a bad regex now, not at planning time
    return r;
}

QuantModelInfo quant_model_info(const Metadata& kvs) {
    // Counts as llama.cpp reads them (per-layer arrays: layer 0), range-checked for their C++ types.
    auto count = [&](const std::string& key, uint64_t max) { return kvs.get_uint(key, max, true); };
    QuantModelInfo m;
    m.arch = kvs.get_string("general.architecture").value_or("");
    const std::string p = m.arch + ".";
    m.n_layer = static_cast<int>(count(p + "block_count", INT32_MAX).value_or(0));
    m.n_head = static_cast<uint32_t>(count(p + "attention.head_count", UINT32_MAX).value_or(0));
    m.n_head_kv = static_cast<uint32_t>(count(p + "attention.head_count_kv", UINT32_MAX).value_or(m.n_head));
    m.n_expert = static_cast<uint32_t>(count(p + "expert_count", UINT32_MAX).value_or(0));
    // LLM_TYPE_70B as llama_model::load_hparams sets it: llama with 80 layers and grouped-query
    // attention (not the 8-expert Mixtral shapes), and every 80-layer deci / qwen2 / qwen2vl / olmo.
    if (m.n_layer == 80) {
        if (m.arch == "llama")
            m.is_70b = m.n_expert != 8 && m.n_head != m.n_head_kv;
        else
            m.is_70b = m.arch == "deci" || m.arch == "qwen2" || m.arch == "qwen2vl" || m.arch == "olmo";
    }
    return m;
}

std::vector<size_t> llama_tensor_order(const std::vector<GgufTensorInfo>& tensors) {
    std::vector<std::pair<int, size_t>> keyed;
    keyed.reserve(tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) keyed.emplace_back(block_number(tensors[i].name), i);
    std::sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
        if (a.first != b.first) return a.first < b.first;
        return tensors[a.second].name < tensors[b.second].name;
    });
    std::vector<size_t> order;
    order.reserve(keyed.size());
    for (const auto& k : keyed) order.push_back(k.second);
    return order;
}

RequantPlan plan_requant(const Metadata& kvs, const std::vector<GgufTensorInfo>& tensors, const PlanOptions& opt) {
    if (!opt.preset) usage_error("plan", "no preset given");
    const RequantPreset& preset = *opt.preset;
    const QuantModelInfo model = quant_model_info(kvs);
    RequantPlan plan;

    MixState s{model, static_cast<LlamaFtype>(preset.ftype), opt.has_imatrix, true, opt.output_tensor_type};
    for (const auto& t : tensors) {
        const Cat c = category(t.name);
        if (attn_v_like(c)) ++s.n_attention_wv;
        if (c == Cat::Output) s.tied_embeddings = false;
    }

    std::vector<Pattern> type_res, keep_res;
    for (const auto& r : opt.tensor_types) type_res.emplace_back(r.pattern, "tensor type rule");
    for (const auto& k : opt.keep) keep_res.emplace_back(k, "keep pattern");
    std::vector<size_t> type_hits(type_res.size()), keep_hits(keep_res.size());
    // A plan has one anchored exact-name rule per tensor: those are found by name, the others
    // searched in order, so the first matching rule wins in O(rules + tensors), not their product.
    std::unordered_map<std::string, size_t> exact_rule;
    std::vector<size_t> searched_rules;
    for (size_t r = 0; r < type_res.size(); ++r) {
        if (const auto& name = type_res[r].exact_name())
            exact_rule.try_emplace(*name, r);
        else
            searched_rules.push_back(r);
    }
    const auto first_rule = [&](const std::string& name) {
        const auto it = exact_rule.find(name);
        size_t first = it == exact_rule.end() ? type_res.size() : it->second;
        for (size_t r : searched_rules) {
            if (r >= first) break;
            if (type_res[r].search(name)) first = r;
            if (first == r) break;
        }
        return first;
    };

    const bool quantized_preset = traits(preset.default_type).quantized;
    if (!opt.order.empty() && opt.order.size() != tensors.size())
        usage_error("tensor order", "does not list every tensor");
    for (size_t idx : opt.order.empty() ? llama_tensor_order(tensors) : opt.order) {
        const GgufTensorInfo& t = tensors[idx];
        const Cat c = category(t.name);
        GgmlType dst = t.type;
        const bool allowed = allows_quantization(t, opt);
        if (allowed) {
            if (opt.token_embedding_type && c == Cat::TokenEmbd) {
                dst = fallback_type(t, *opt.token_embedding_type, plan);
            } else if (opt.output_tensor_type && c == Cat::Output) {
                dst = fallback_type(t, *opt.output_tensor_type, plan);
            } else {
                dst = preset.default_type;
                if (quantized_preset) {
                    if (const size_t r = first_rule(t.name); r < type_res.size()) {
                        dst = opt.tensor_types[r].type;
                        ++type_hits[r];
                    } else if (!opt.pure) {
                        dst = mixture_type(s, t, c, dst);
                    }
                    dst = fallback_type(t, dst, plan);
                }
            }
        }
        for (size_t k = 0; k < keep_res.size(); ++k) {
            if (keep_res[k].search(t.name)) {
                ++keep_hits[k];
                dst = t.type;
                break;
            }
        }

        TensorPlan tp;
        tp.input_index = idx;
        tp.name = t.name;
        tp.shape.assign(t.ne.begin(), t.ne.begin() + effective_dims(t));
        tp.src_type = t.type;
        tp.dst_type = dst;
        tp.n_elements = t.n_elements();
        tp.src_bytes = t.n_bytes;
        tp.dst_bytes = row_size(dst, t.ne[0]) * static_cast<uint64_t>(t.n_rows());
        tp.requires_imatrix =
            allowed && tp.convert() && requires_imatrix(t.name, dst, static_cast<LlamaFtype>(preset.ftype));
        plan.tensors.push_back(std::move(tp));
    }

    if (!quantized_preset && !opt.tensor_types.empty()) {
        plan.warnings.push_back(
            fmt::format("tensor type rules are ignored with preset {} (as in llama-quantize)", preset.name));
    } else {
        for (size_t r = 0; r < type_hits.size(); ++r)
            if (!type_hits[r])
                plan.warnings.push_back(fmt::format("tensor type rule '{}={}' applies to no tensor",
                                                    escape_text(opt.tensor_types[r].pattern),
                                                    type_name(opt.tensor_types[r].type)));
    }
    for (size_t k = 0; k < keep_hits.size(); ++k)
        if (!keep_hits[k])
            plan.warnings.push_back(fmt::format("keep pattern '{}' matches no tensor", escape_text(opt.keep[k])));
    return plan;
}

}  // namespace oiw
