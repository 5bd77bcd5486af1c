#include "converters/synth/synth_hf.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "converters/hf/checkpoint.h"
#include "converters/hf/dequant.h"
#include "converters/hf/safetensors.h"
#include "converters/synth/rng.h"
#include "libformat/error.h"
#include "libformat/fp16.h"
#include "libformat/io/atomic_file.h"

namespace oiw {
namespace {
namespace fs = std::filesystem;

struct HfTensor {
    hf::TensorDecl decl;
    float scale;  // weights ~ scale * heavy(); norms are 1 + small noise
    bool norm;
    // FP8 (SynthHfOptions::fp8): an F8_E4M3 weight, or (scale_of set) the F32 scales of the weight
    // `scale_of` positions before; rows x cols of the weight per scale element.
    uint64_t block[2] = {0, 0};
    size_t scale_of = 0;
};

// The F8_E4M3 byte nearest x (ties to the even code), saturating at +-448 (synthetic data only).
uint8_t to_e4m3(float x) {
    static const std::vector<float> values = [] {  // codes 0x00..0x7E, ascending
        std::vector<float> v;
        for (uint8_t b = 0; b < 0x7F; ++b) v.push_back(hf::decode_element(&b, hf::Dtype::F8E4M3, 0));
        return v;
    }();
    const float a = std::min(std::fabs(x), 448.0f);
    auto hi = static_cast<size_t>(std::lower_bound(values.begin(), values.end(), a) - values.begin());
    if (hi == values.size()) hi = values.size() - 1;
    size_t code = hi;
    if (hi > 0) {
        const float dl = a - values[hi - 1], dh = values[hi] - a;
        if (dl < dh || (dl == dh && (hi - 1) % 2 == 0)) code = hi - 1;
    }
    return static_cast<uint8_t>(code | (std::signbit(x) && code != 0 ? 0x80u : 0u));
}

// The scale of block (br, bc) of weight number `id` whose values are ~ ws * heavy(): 1/64 to 8/64 of ws.
float block_scale(float ws, size_t id, uint64_t br, uint64_t bc) {
    return ws * static_cast<float>(1 + (id * 131 + br * 31 + bc * 7) % 8) / 64.0f;
}

// SynthHfOptions::fp8 parsed: scales per `block` [rows, cols] ("RxC"), per row or per matrix.
struct Fp8Layout {
    enum Kind { Block, Row, Tensor } kind = Block;
    uint64_t block[2] = {0, 0};
};

Fp8Layout fp8_layout(const std::string& mode, const std::string& dir) {
    if (mode == "row") return {Fp8Layout::Row, {0, 0}};
    if (mode == "tensor") return {Fp8Layout::Tensor, {0, 0}};
    char x = 0, rest = 0;
    unsigned long long r = 0, c = 0;
    if (std::sscanf(mode.c_str(), "%llu%c%llu%c", &r, &x, &c, &rest) != 3 || x != 'x' || r == 0 || c == 0)
        throw FormatError(ErrorKind::Usage, dir, "--hf-fp8", "'" + mode + "' is not RxC, row or tensor");
    return {Fp8Layout::Block, {r, c}};
}

// Turns the projections of `t` into F8_E4M3 weights laid out as `f`, each followed by its scales.
void make_fp8(std::vector<HfTensor>& t, const Fp8Layout& f) {
    std::vector<HfTensor> out;
    for (HfTensor& w : t) {
        const std::string& n = w.decl.name;
        const bool proj = n.ends_with("_proj.weight") || n.ends_with(".w1.weight") || n.ends_with(".w2.weight") ||
                          n.ends_with(".w3.weight");
        if (!proj || w.decl.shape.size() != 2) {
            out.push_back(std::move(w));
            continue;
        }
        const uint64_t rows = w.decl.shape[0], cols = w.decl.shape[1];
        w.decl.dtype = hf::Dtype::F8E4M3;
        w.block[0] = f.kind == Fp8Layout::Row ? 1 : f.kind == Fp8Layout::Tensor ? rows : f.block[0];
        w.block[1] = f.kind == Fp8Layout::Block ? f.block[1] : cols;
        HfTensor s = w;
        s.decl.name = n + "_scale_inv";
        s.decl.dtype = hf::Dtype::F32;
        s.decl.shape = f.kind == Fp8Layout::Tensor ? std::vector<uint64_t>{}
                       : f.kind == Fp8Layout::Row  ? std::vector<uint64_t>{rows, 1}
                                                   : std::vector<uint64_t>{(rows + w.block[0] - 1) / w.block[0],
                                                                           (cols + w.block[1] - 1) / w.block[1]};
        s.scale_of = 1;
        out.push_back(std::move(w));
        out.push_back(std::move(s));
    }
    t = std::move(out);
}

// How a MoE family names its router and experts: Mixtral's block_sparse_moe.{gate, experts.X.w1..w3},
// Qwen's mlp.{gate, experts.X.gate_proj|up_proj|down_proj}; Qwen2Moe's adds a shared expert
// (mlp.shared_expert.{gate,up,down}_proj, 2 x n_ff wide) and its sigmoid gate mlp.shared_expert_gate.
enum class Moe { None, Mixtral, Qwen, QwenShared };

// One family's differences from the llama layout (synth_hf.h).
struct HfFamily {
    const char* arch;
    const char* model_type;
    bool qkv_bias, qk_norm, head_dim_key;  // head_dim_key: config.json always holds head_dim
    Moe moe;                               // a router and experts instead of the MLP
    bool gemma;  // Gemma3: q/k norms, norms before and after attention and MLP, its config keys
    bool fused;  // Phi3: qkv_proj and gate_up_proj
    // Gemma3ForConditionalGeneration: the text model under language_model., a vision tower and
    // projector beside it, config.json's text keys in text_config (gemma-3-4b-it's layout)
    bool multimodal = false;
};
constexpr HfFamily kFamilies[] = {
    {"LlamaForCausalLM", "llama", false, false, false, Moe::None, false, false},
    {"MixtralForCausalLM", "mixtral", false, false, false, Moe::Mixtral, false, false},
    {"Qwen2ForCausalLM", "qwen2", true, false, false, Moe::None, false, false},
    {"Qwen2MoeForCausalLM", "qwen2_moe", true, false, false, Moe::QwenShared, false, false},
    {"Qwen3ForCausalLM", "qwen3", false, true, true, Moe::None, false, false},
    {"Qwen3MoeForCausalLM", "qwen3_moe", false, true, true, Moe::Qwen, false, false},
    {"Gemma3ForCausalLM", "gemma3_text", false, true, true, Moe::None, true, false},
    {"Phi3ForCausalLM", "phi3", false, false, false, Moe::None, false, true},
    {"Gemma3ForConditionalGeneration", "gemma3_text", false, true, true, Moe::None, true, false, true}};

const HfFamily& family(const std::string& dir, const std::string& arch) {
    for (const HfFamily& f : kFamilies)
        if (arch == f.arch) return f;
    throw FormatError(ErrorKind::Usage, dir, "",
                      fmt::format("no synthetic '{}' checkpoint (there are: {})", arch, synth_hf_architectures()));
}

int64_t head_dim(const SynthOptions& o, const SynthHfOptions& h) {
    return h.head_dim > 0 ? h.head_dim : o.n_embd / o.n_head;
}

std::vector<HfTensor> hf_plan(const SynthOptions& o, const SynthHfOptions& h, const HfFamily& fam, hf::Dtype dt) {
    const auto d = static_cast<uint64_t>(head_dim(o, h));
    const uint64_t e = o.n_embd, q = d * o.n_head, kv = d * o.n_head_kv, f = o.n_ff, v = o.n_vocab;
    const float ws = 1.0f / std::sqrt(static_cast<float>(e));
    std::vector<HfTensor> t;
    auto mat = [&](std::string n, uint64_t rows, uint64_t cols) {
        t.push_back({{std::move(n), dt, {rows, cols}}, ws, false});
    };
    auto vec = [&](std::string n, uint64_t len, bool norm) { t.push_back({{std::move(n), dt, {len}}, ws, norm}); };
    mat("model.embed_tokens.weight", v, e);
    for (int64_t l = 0; l < o.n_layer; ++l) {
        const std::string b = fmt::format("model.layers.{}.", l);
        vec(b + "input_layernorm.weight", e, true);
        if (fam.fused) {
            mat(b + "self_attn.qkv_proj.weight", q + 2 * kv, e);
        } else {
            mat(b + "self_attn.q_proj.weight", q, e);
            mat(b + "self_attn.k_proj.weight", kv, e);
            mat(b + "self_attn.v_proj.weight", kv, e);
        }
        if (fam.qkv_bias) {
            vec(b + "self_attn.q_proj.bias", q, false);
            vec(b + "self_attn.k_proj.bias", kv, false);
            vec(b + "self_attn.v_proj.bias", kv, false);
        }
        if (fam.qk_norm) {
            vec(b + "self_attn.q_norm.weight", d, true);
            vec(b + "self_attn.k_norm.weight", d, true);
        }
        mat(b + "self_attn.o_proj.weight", e, q);
        vec(b + "post_attention_layernorm.weight", e, true);
        if (fam.gemma) {
            vec(b + "pre_feedforward_layernorm.weight", e, true);
            vec(b + "post_feedforward_layernorm.weight", e, true);
        }
        if (fam.moe != Moe::None) {  // the router, then each expert's three matrices
            const bool qwen = fam.moe != Moe::Mixtral;
            const std::string base = b + (qwen ? "mlp." : "block_sparse_moe.");
            const std::pair<const char*, bool> parts[3] = {// name, whether it maps E to F
                                                           {qwen ? "gate_proj" : "w1", true},
                                                           {qwen ? "up_proj" : "w2", qwen},
                                                           {qwen ? "down_proj" : "w3", !qwen}};
            mat(base + "gate.weight", static_cast<uint64_t>(o.n_expert), e);
            const auto nx = static_cast<uint64_t>(o.n_expert);
            if (h.fused_experts && qwen) {
                t.push_back({{base + "experts.gate_up_proj", dt, {nx, 2 * f, e}}, ws, false});
                t.push_back({{base + "experts.down_proj", dt, {nx, e, f}}, ws, false});
            } else {
                for (int64_t x = 0; x < o.n_expert; ++x)
                    for (const auto& [name, up] : parts)
                        mat(fmt::format("{}experts.{}.{}.weight", base, x, name), up ? f : e, up ? e : f);
            }
            if (fam.moe == Moe::QwenShared) {
                mat(base + "shared_expert.gate_proj.weight", 2 * f, e);
                mat(base + "shared_expert.up_proj.weight", 2 * f, e);
                mat(base + "shared_expert.down_proj.weight", e, 2 * f);
                mat(base + "shared_expert_gate.weight", 1, e);
            }
            continue;
        }
        if (fam.fused) {
            mat(b + "mlp.gate_up_proj.weight", 2 * f, e);
        } else {
            mat(b + "mlp.gate_proj.weight", f, e);
            mat(b + "mlp.up_proj.weight", f, e);
        }
        mat(b + "mlp.down_proj.weight", e, f);
    }
    vec("model.norm.weight", e, true);
    if (!o.tied) mat("lm_head.weight", v, e);
    if (fam.multimodal) {
        for (HfTensor& x : t) x.decl.name = "language_model." + x.decl.name;
        mat("multi_modal_projector.mm_input_projection_weight", e, e);
        vec("multi_modal_projector.mm_soft_emb_norm.weight", e, true);
        mat("vision_tower.vision_model.embeddings.patch_embedding.weight", e, 3 * 14 * 14);
        vec("vision_tower.vision_model.post_layernorm.weight", e, true);
    }
    return t;
}

uint64_t elements_of(const hf::TensorDecl& d) {
    uint64_t n = 1;
    for (uint64_t x : d.shape) n *= x;
    return n;
}

uint64_t bytes_of(const hf::TensorDecl& d) { return elements_of(d) * hf::dtype_size(d.dtype); }

// An FP8 release's (DeepSeek-V3's, Qwen3-*-FP8's) quantization_config for layout `f`.
nlohmann::ordered_json quantization_config(const Fp8Layout& f) {
    nlohmann::ordered_json q = {{"activation_scheme", "dynamic"}, {"fmt", "e4m3"}, {"quant_method", "fp8"}};
    if (f.kind == Fp8Layout::Block) q["weight_block_size"] = {f.block[0], f.block[1]};
    return q;
}

// config.json as the family's own checkpoints have it (Qwen: their rope_theta, eps, window keys).
nlohmann::ordered_json config_json(const SynthOptions& o, const SynthHfOptions& h, const HfFamily& fam, hf::Dtype dt) {
    const char* torch_dtype = dt == hf::Dtype::F32 ? "float32" : dt == hf::Dtype::F16 ? "float16" : "bfloat16";
    const bool qwen = std::string_view(fam.model_type).starts_with("qwen");
    nlohmann::ordered_json c = {{"architectures", {fam.arch}},     {"model_type", fam.model_type},
                                {"hidden_size", o.n_embd},         {"intermediate_size", o.n_ff},
                                {"num_attention_heads", o.n_head}, {"num_key_value_heads", o.n_head_kv},
                                {"num_hidden_layers", o.n_layer},  {"vocab_size", o.n_vocab}};
    if (fam.head_dim_key || h.head_dim > 0) c["head_dim"] = head_dim(o, h);
    if (qwen) {
        c["max_position_embeddings"] = 32768;
        c["max_window_layers"] = o.n_layer;
        c["rms_norm_eps"] = 1e-6;
        c["rope_theta"] = 1000000.0;
        c["sliding_window"] = fam.qk_norm ? nlohmann::ordered_json() : nlohmann::ordered_json(32768);
        c["use_sliding_window"] = false;
        c["attention_dropout"] = 0.0;
        if (fam.qk_norm) {
            c["attention_bias"] = false;
            c["rope_scaling"] = nullptr;
        }
        if (fam.moe == Moe::Qwen || fam.moe == Moe::QwenShared) {
            // Qwen3-30B-A3B's / Qwen1.5-MoE-A2.7B's keys (the dense intermediate_size is unused)
            c["intermediate_size"] = 2 * o.n_ff;
            c["moe_intermediate_size"] = o.n_ff;
            if (fam.moe == Moe::QwenShared) c["shared_expert_intermediate_size"] = 2 * o.n_ff;
            c["num_experts"] = o.n_expert;
            c["num_experts_per_tok"] = o.n_expert_used;
            c["norm_topk_prob"] = fam.moe == Moe::Qwen;
            c["decoder_sparse_step"] = 1;
            c["mlp_only_layers"] = nlohmann::ordered_json::array();
            c["output_router_logits"] = false;
            c["router_aux_loss_coef"] = 0.001;
        }
    } else if (fam.gemma) {  // gemma-3-1b-it's keys
        c["max_position_embeddings"] = 32768;
        c["query_pre_attn_scalar"] = head_dim(o, h);
        c["rms_norm_eps"] = 1e-6;
        c["rope_local_base_freq"] = 10000.0;
        c["rope_scaling"] = nullptr;
        c["rope_theta"] = 1000000.0;
        c["sliding_window"] = 512;
        c["sliding_window_pattern"] = 6;
        c["attn_logit_softcapping"] = nullptr;
        c["final_logit_softcapping"] = nullptr;
    } else if (fam.fused) {  // Phi-3-mini-4k-instruct's keys
        c["max_position_embeddings"] = 4096;
        c["original_max_position_embeddings"] = 4096;
        c["rms_norm_eps"] = 1e-5;
        c["rope_scaling"] = nullptr;
        c["rope_theta"] = 10000.0;
        c["sliding_window"] = 2047;
        c["attention_bias"] = false;
    } else if (fam.moe == Moe::Mixtral) {  // Mixtral-8x7B's keys
        c["max_position_embeddings"] = 32768;
        c["num_local_experts"] = o.n_expert;
        c["num_experts_per_tok"] = o.n_expert_used;
        c["output_router_logits"] = false;
        c["router_aux_loss_coef"] = 0.02;
        c["rms_norm_eps"] = 1e-5;
        c["rope_theta"] = 1000000.0;
        c["sliding_window"] = nullptr;
    } else {
        c["max_position_embeddings"] = 2048;
        c["rms_norm_eps"] = 1e-5;
        c["rope_theta"] = 10000.0;
    }
    c[fam.gemma ? "hidden_activation" : "hidden_act"] = fam.gemma ? "gelu_pytorch_tanh" : "silu";
    c["tie_word_embeddings"] = o.tied;
    c["bos_token_id"] = qwen ? 151643 : fam.gemma ? 2 : 1;
    c["eos_token_id"] = qwen ? 151645 : fam.gemma ? 1 : 2;
    if (fam.fused) c["pad_token_id"] = 2;
    c["torch_dtype"] = torch_dtype;
    if (fam.multimodal) {  // gemma-3-4b-it: no vocab_size (the tokenizer's count), ids and dtype outside
        c.erase("architectures");
        c.erase("vocab_size");
        c.erase("bos_token_id");
        c.erase("eos_token_id");
        c.erase("torch_dtype");
        nlohmann::ordered_json m = {{"architectures", {"Gemma3ForConditionalGeneration"}},
                                    {"boi_token_index", 255999},
                                    {"eoi_token_index", 256000},
                                    {"eos_token_id", {1, 106}},
                                    {"image_token_index", 262144},
                                    {"initializer_range", 0.02},
                                    {"mm_tokens_per_image", 256},
                                    {"model_type", "gemma3"},
                                    {"text_config", c},
                                    {"torch_dtype", torch_dtype},
                                    {"vision_config",
                                     {{"hidden_size", o.n_embd},
                                      {"image_size", 896},
                                      {"model_type", "siglip_vision_model"},
                                      {"num_hidden_layers", 0},
                                      {"patch_size", 14},
                                      {"vision_use_head", false}}}};
        return m;
    }
    return c;
}

// Streams tensor number `id`'s values (drawn from `rng`) into `out` as its dtype, or as a hole when
// sparse. An FP8 weight holds each value over its block's scale; its scales are block_scale's.
void write_values(AtomicFile& out, const HfTensor& t, size_t id, SynthRng& rng, bool sparse) {
    const uint64_t n = elements_of(t.decl);
    if (sparse) return out.skip(bytes_of(t.decl));
    const uint64_t cols = t.block[0] == 0 || t.scale_of ? 1 : t.decl.shape[1];
    const uint64_t scale_cols = t.scale_of && t.decl.shape.size() == 2 ? t.decl.shape[1] : 1;
    std::vector<uint8_t> buf;
    for (uint64_t done = 0; done < n;) {
        const uint64_t m = std::min<uint64_t>(n - done, 1 << 16);
        buf.resize(m * hf::dtype_size(t.decl.dtype));
        for (uint64_t i = 0; i < m; ++i) {
            const uint64_t e = done + i;
            if (t.scale_of) {  // the scales of the weight before
                const float s = block_scale(t.scale, id - t.scale_of, e / scale_cols, e % scale_cols);
                std::memcpy(buf.data() + 4 * i, &s, 4);
                continue;
            }
            const float x = t.norm ? 1.0f + 0.1f * rng.heavy() : t.scale * rng.heavy();
            if (t.decl.dtype == hf::Dtype::F8E4M3) {
                buf[i] = to_e4m3(x / block_scale(t.scale, id, e / cols / t.block[0], e % cols / t.block[1]));
            } else if (t.decl.dtype == hf::Dtype::F32) {
                std::memcpy(buf.data() + 4 * i, &x, 4);
            } else {
                const uint16_t h = t.decl.dtype == hf::Dtype::F16 ? fp32_to_fp16(x) : fp32_to_bf16(x);
                std::memcpy(buf.data() + 2 * i, &h, 2);
            }
        }
        out.write(buf.data(), buf.size());
        done += m;
    }
}

}  // namespace

const char* synth_hf_architectures() {
    return "LlamaForCausalLM, MixtralForCausalLM, Qwen2ForCausalLM, Qwen2MoeForCausalLM, Qwen3ForCausalLM, "
           "Qwen3MoeForCausalLM, Gemma3ForCausalLM, Gemma3ForConditionalGeneration, Phi3ForCausalLM";
}

uint64_t write_synth_hf(const std::string& dir, const SynthOptions& o, const SynthHfOptions& h,
                        std::vector<std::string>* written) {
    const HfFamily& fam = family(dir, h.arch);
    if ((h.head_dim == 0 && o.n_embd % o.n_head != 0) || o.n_head % o.n_head_kv != 0 || head_dim(o, h) % 2 != 0)
        throw FormatError(
            ErrorKind::Usage, dir, "",
            "n_embd must be a multiple of n_head (or head_dim given), n_head of n_head_kv, head_dim even");
    const bool moe = fam.moe != Moe::None;
    if (h.fused_experts && fam.moe != Moe::Qwen && fam.moe != Moe::QwenShared)
        throw FormatError(ErrorKind::Usage, dir, "", "--hf-fused-experts is for the Qwen MoE families");
    if (moe != (o.n_expert > 0))
        throw FormatError(ErrorKind::Usage, dir, "",
                          moe ? fmt::format("{} needs --n-expert", fam.arch)
                              : std::string("only MixtralForCausalLM, Qwen2MoeForCausalLM and Qwen3MoeForCausalLM "
                                            "have experts here"));
    if (moe && (o.n_expert_used <= 0 || o.n_expert_used > o.n_expert))
        throw FormatError(ErrorKind::Usage, dir, "", "--n-expert-used must be in 1..--n-expert");
    const hf::Dtype dt =
        o.type == GgmlType::F32   ? hf::Dtype::F32
        : o.type == GgmlType::F16 ? hf::Dtype::F16
        : o.type == GgmlType::BF16
            ? hf::Dtype::BF16
            : throw FormatError(ErrorKind::Usage, dir, "",
                                fmt::format("a checkpoint holds F32, F16 or BF16, not {}", type_name(o.type)));
    const std::optional<Fp8Layout> fp8 = h.fp8.empty() ? std::nullopt : std::optional(fp8_layout(h.fp8, dir));
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec || !fs::is_directory(dir))
        throw FormatError(ErrorKind::Io, dir, "", "cannot create the directory" + (ec ? ": " + ec.message() : ""));
    std::vector<HfTensor> plan = hf_plan(o, h, fam, dt);
    if (fp8) make_fp8(plan, *fp8);
    // Shards: greedy, a new one when the next tensor would pass the cap.
    std::vector<std::vector<size_t>> shards(1);
    uint64_t in_shard = 0, total = 0, params = 0;
    for (size_t i = 0; i < plan.size(); ++i) {
        const uint64_t b = bytes_of(plan[i].decl);
        if (h.max_shard_bytes > 0 && !shards.back().empty() && in_shard + b > h.max_shard_bytes) {
            shards.emplace_back();
            in_shard = 0;
        }
        shards.back().push_back(i);
        in_shard += b;
        total += b;
        params += elements_of(plan[i].decl);
    }
    const size_t n = shards.size();
    auto shard_name = [&](size_t k) {
        return n == 1 ? std::string("model.safetensors") : fmt::format("model-{:05d}-of-{:05d}.safetensors", k + 1, n);
    };
    std::vector<std::unique_ptr<AtomicFile>> files;
    auto text_file = [&](const std::string& name, const std::string& text) {
        files.push_back(std::make_unique<AtomicFile>((fs::path(dir) / name).string()));
        files.back()->write(text.data(), text.size());
        files.back()->complete();
    };
    nlohmann::ordered_json config = config_json(o, h, fam, dt);
    if (fp8) config["quantization_config"] = quantization_config(*fp8);
    text_file("config.json", config.dump(2) + "\n");
    SynthRng rng(o.seed);
    nlohmann::json weight_map = nlohmann::json::object();
    for (size_t k = 0; k < n; ++k) {
        std::vector<hf::TensorDecl> decls;
        for (size_t i : shards[k]) {
            decls.push_back(plan[i].decl);
            weight_map[plan[i].decl.name] = shard_name(k);
        }
        files.push_back(std::make_unique<AtomicFile>((fs::path(dir) / shard_name(k)).string()));
        const std::vector<uint8_t> head = hf::header_bytes(decls, {{"format", "pt"}});
        files.back()->write(head.data(), head.size());
        for (size_t i : shards[k]) write_values(*files.back(), plan[i], i, rng, o.sparse);
        files.back()->complete();
    }
    if (n > 1)
        text_file(hf::kIndexName,
                  nlohmann::json{{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}}.dump(2) + "\n");
    std::vector<AtomicFile*> set;
    set.reserve(files.size());
    for (auto& f : files) set.push_back(f.get());
    size_t published = 0;
    AtomicFile::publish_all(set, published);
    if (written)
        for (auto& f : files) written->push_back(f->path());
    return params;
}

}  // namespace oiw
