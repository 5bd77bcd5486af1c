#include "converters/synth/synth.h"

#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "converters/quant/quants.h"
#include "converters/quant/validate.h"
#include "converters/synth/rng.h"
#include "libformat/fp16.h"

namespace oiw {
namespace {

struct TensorSpec {
    std::string name;
    std::vector<int64_t> shape;
    GgmlType type;
    float scale;  // weights ~ scale * heavy(); norms are 1 + small noise
    bool norm;
};

std::vector<TensorSpec> plan(const SynthOptions& o) {
    const int64_t e = o.n_embd, kv = o.n_embd / o.n_head * o.n_head_kv;
    const float ws = 1.0f / std::sqrt(static_cast<float>(e));
    std::vector<TensorSpec> t;
    auto mat = [&](std::string n, std::vector<int64_t> s) {
        t.push_back({std::move(n), std::move(s), o.type, ws, false});
    };
    auto f32 = [&](std::string n, std::vector<int64_t> s, bool norm) {
        t.push_back({std::move(n), std::move(s), GgmlType::F32, ws, norm});
    };
    mat("token_embd.weight", {e, o.n_vocab});
    for (int64_t l = 0; l < o.n_layer; ++l) {
        const std::string b = fmt::format("blk.{}.", l);
        f32(b + "attn_norm.weight", {e}, true);
        mat(b + "attn_q.weight", {e, e});
        mat(b + "attn_k.weight", {e, kv});
        mat(b + "attn_v.weight", {e, kv});
        mat(b + "attn_output.weight", {e, e});
        f32(b + "ffn_norm.weight", {e}, true);
        if (o.n_expert > 0) {
            f32(b + "ffn_gate_inp.weight", {e, o.n_expert}, false);
            mat(b + "ffn_gate_exps.weight", {e, o.n_ff, o.n_expert});
            mat(b + "ffn_up_exps.weight", {e, o.n_ff, o.n_expert});
            mat(b + "ffn_down_exps.weight", {o.n_ff, e, o.n_expert});
        } else {
            mat(b + "ffn_gate.weight", {e, o.n_ff});
            mat(b + "ffn_up.weight", {e, o.n_ff});
            mat(b + "ffn_down.weight", {o.n_ff, e});
        }
    }
    f32("output_norm.weight", {e}, true);
    if (!o.tied) mat("output.weight", {e, o.n_vocab});
    return t;
}

template <typename T>
GgufKV scalar(std::string k, GgufType t, T v) {
    return {std::move(k), GgufValue::make_scalar<T>(t, v)};
}

std::vector<GgufKV> metadata(const SynthOptions& o) {
    const std::string a = o.n_expert > 0 ? "qwen3moe" : "llama";
    std::vector<GgufKV> kv;
    kv.push_back({"general.architecture", GgufValue::make_string(a)});
    kv.push_back({"general.name", GgufValue::make_string(o.name)});
    kv.push_back(scalar<uint32_t>(a + ".context_length", GgufType::U32, 2048));
    kv.push_back(scalar<uint32_t>(a + ".embedding_length", GgufType::U32, static_cast<uint32_t>(o.n_embd)));
    kv.push_back(scalar<uint32_t>(a + ".block_count", GgufType::U32, static_cast<uint32_t>(o.n_layer)));
    kv.push_back(scalar<uint32_t>(a + ".feed_forward_length", GgufType::U32, static_cast<uint32_t>(o.n_ff)));
    kv.push_back(scalar<uint32_t>(a + ".attention.head_count", GgufType::U32, static_cast<uint32_t>(o.n_head)));
    kv.push_back(scalar<uint32_t>(a + ".attention.head_count_kv", GgufType::U32, static_cast<uint32_t>(o.n_head_kv)));
    kv.push_back(
        scalar<uint32_t>(a + ".rope.dimension_count", GgufType::U32, static_cast<uint32_t>(o.n_embd / o.n_head)));
    kv.push_back(scalar<float>(a + ".attention.layer_norm_rms_epsilon", GgufType::F32, 1e-5f));
    if (o.n_expert > 0) {
        kv.push_back(scalar<uint32_t>(a + ".expert_count", GgufType::U32, static_cast<uint32_t>(o.n_expert)));
        kv.push_back(scalar<uint32_t>(a + ".expert_used_count", GgufType::U32, static_cast<uint32_t>(o.n_expert_used)));
        kv.push_back(scalar<uint32_t>(a + ".expert_feed_forward_length", GgufType::U32, static_cast<uint32_t>(o.n_ff)));
    }
    uint32_t ftype = o.type == GgmlType::F32 ? 0 : o.type == GgmlType::F16 ? 1 : o.type == GgmlType::BF16 ? 32 : 1024;
    if (ftype != 1024) kv.push_back(scalar<uint32_t>("general.file_type", GgufType::U32, ftype));
    // SPM-style vocabulary: <unk> <s> </s>, 256 byte tokens, then synthetic pieces.
    std::vector<std::string> tokens;
    std::vector<uint8_t> scores, types;
    auto push = [&](std::string s, float score, int32_t type) {
        tokens.push_back(std::move(s));
        scores.insert(scores.end(), reinterpret_cast<uint8_t*>(&score), reinterpret_cast<uint8_t*>(&score) + 4);
        types.insert(types.end(), reinterpret_cast<uint8_t*>(&type), reinterpret_cast<uint8_t*>(&type) + 4);
    };
    push("<unk>", 0.0f, 2);
    push("<s>", 0.0f, 3);
    push("</s>", 0.0f, 3);
    for (int b = 0; b < 256 && static_cast<int64_t>(tokens.size()) < o.n_vocab; ++b)
        push(fmt::format("<0x{:02X}>", b), 0.0f, 6);
    for (int64_t i = static_cast<int64_t>(tokens.size()); i < o.n_vocab; ++i)
        push(fmt::format("\xe2\x96\x81t{}", i), -static_cast<float>(i), 1);
    const uint64_t n = tokens.size();
    kv.push_back({"tokenizer.ggml.model", GgufValue::make_string("llama")});
    kv.push_back({"tokenizer.ggml.tokens", GgufValue::make_string_array(std::move(tokens))});
    kv.push_back({"tokenizer.ggml.scores", GgufValue::make_array(GgufType::F32, std::move(scores), n)});
    kv.push_back({"tokenizer.ggml.token_type", GgufValue::make_array(GgufType::I32, std::move(types), n)});
    kv.push_back(scalar<uint32_t>("tokenizer.ggml.bos_token_id", GgufType::U32, 1));
    kv.push_back(scalar<uint32_t>("tokenizer.ggml.eos_token_id", GgufType::U32, 2));
    return kv;
}

}  // namespace

uint64_t write_synth_model(const std::string& path, const SynthOptions& o, const SplitOptions& split,
                           std::vector<std::string>* written) {
    if (o.n_embd % o.n_head != 0 || o.n_head % o.n_head_kv != 0)
        throw FormatError(ErrorKind::Usage, path, "", "n_embd must be a multiple of n_head, n_head of n_head_kv");
    if (o.n_expert > 0 && (o.n_expert_used < 1 || o.n_expert_used > o.n_expert))
        throw FormatError(ErrorKind::Usage, path, "", "n_expert_used must be in 1..n_expert");
    if (o.type != GgmlType::F32 && o.type != GgmlType::F16 && o.type != GgmlType::BF16 && !can_quantize(o.type))
        throw FormatError(ErrorKind::Usage, path, "",
                          fmt::format("cannot generate weights of type {}", type_name(o.type)));
    GgufOutput w(path, split);
    w.set_kvs(metadata(o));
    auto specs = plan(o);
    for (const auto& s : specs) w.add_tensor(s.name, s.type, s.shape);
    w.plan();
    SynthRng rng(o.seed);
    uint64_t params = 0;
    std::vector<float> rowbuf;
    std::vector<uint8_t> out;
    for (size_t i = 0; i < specs.size(); ++i) {
        const auto& s = specs[i];
        const int64_t ne0 = s.shape[0];
        int64_t rows = 1;
        for (size_t d = 1; d < s.shape.size(); ++d) rows *= s.shape[d];
        params += static_cast<uint64_t>(ne0 * rows);
        if (o.sparse) {
            if (w.writes(i)) w.write_tensor_zeros(row_size(s.type, ne0) * static_cast<uint64_t>(rows));
            continue;
        }
        const int64_t chunk = std::max<int64_t>(1, 4096 / std::max<int64_t>(1, ne0 / 64));
        for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
            const int64_t nr = std::min(chunk, rows - r0);
            rowbuf.resize(static_cast<size_t>(nr * ne0));
            for (auto& x : rowbuf) x = s.norm ? 1.0f + 0.1f * rng.heavy() : s.scale * rng.heavy();
            out.resize(row_size(s.type, ne0) * nr);
            if (s.type == GgmlType::F32)
                std::memcpy(out.data(), rowbuf.data(), out.size());
            else if (s.type == GgmlType::F16 || s.type == GgmlType::BF16) {
                auto* h = reinterpret_cast<uint16_t*>(out.data());
                for (size_t j = 0; j < rowbuf.size(); ++j)
                    h[j] = s.type == GgmlType::F16 ? fp32_to_fp16(rowbuf[j]) : fp32_to_bf16(rowbuf[j]);
            } else {
                quantize_chunk(s.type, rowbuf.data(), out.data(), nr, ne0, nullptr);
            }
            // Never emit data ggml's loader would refuse (NaN/inf values or scales).
            validate_rows(s.type, out, row_size(s.type, ne0), r0, path, s.name, "generated");
            if (w.writes(i)) w.write_tensor_data(out);
        }
    }
    w.finish();
    if (written) *written = w.written_paths();
    return params;
}

}  // namespace oiw
