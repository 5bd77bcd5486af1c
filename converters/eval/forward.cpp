#include "converters/eval/forward.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <unordered_map>

#include <fmt/format.h>

#include "converters/quant/kernels.h"
#include "converters/repack/oiw4_convert.h"
#include "libformat/fp16.h"
#include "libformat/model.h"
#include "libformat/oiw4/oiw4.h"

namespace oiw::eval {
namespace {

constexpr const char* kKnown[] = {"llama", "qwen2", "qwen3", "qwen3moe"};

// f32 -> f16 -> f32, as a value stored in llama.cpp's F16 KV cache or converted for an F16 dot.
float round_f16(float v) { return fp16_to_fp32(fp32_to_fp16(v)); }

}  // namespace

std::string known_architectures() {
    std::string s;
    for (const char* a : kKnown) s += (s.empty() ? "" : ", ") + std::string(a);
    return s;
}

Metadata model_metadata(const std::string& path) {
    if (is_oiw4_file(path)) return Oiw4File::open(path).metadata();
    return open_model(path).metadata();
}

// One block's weights. Vectors are f32 (norms, biases); matrices run through MatVec.
struct Forward::Layer {
    std::vector<float> attn_norm, ffn_norm, q_norm, k_norm, bq, bk, bv;
    std::unique_ptr<matmul::MatVec> wq, wk, wv, wo, gate, up, down, router;
    std::vector<std::unique_ptr<matmul::MatVec>> gate_e, up_e, down_e;  // per expert
};

namespace {

// Reads what building a Forward needs from one source, every failure naming the file and the
// tensor or key.
class Loader {
public:
    Loader(const matmul::TensorSource& src, const Metadata& md) : src_(src), md_(md) {
        for (const auto& e : src_.entries()) by_name_.try_emplace(e.info.name, &e);  // the first of a name
    }

    [[noreturn]] void fail(const std::string& subject, const std::string& what) const {
        throw FormatError(ErrorKind::Unsupported, src_.path(), subject, what);
    }
    const matmul::TensorEntry* entry(const std::string& name) const {
        const auto it = by_name_.find(name);
        return it == by_name_.end() ? nullptr : it->second;
    }
    int64_t uint_key(const std::string& key, std::optional<int64_t> fallback = std::nullopt) const {
        if (!md_.contains(key)) {
            if (fallback) return *fallback;
            fail(key, "missing (the forward pass needs it)");
        }
        const auto v = md_.get_uint(key, uint64_t{1} << 31);
        if (!v || *v == 0) fail(key, "must be a positive integer below 2^31");
        return static_cast<int64_t>(*v);
    }
    float float_key(const std::string& key, float fallback) const {
        const GgufValue* v = md_.find(key);
        if (!v) return fallback;
        const auto d = v->as_double();
        if (!d || !std::isfinite(*d) || *d <= 0) fail(key, "must be a positive finite number");
        return static_cast<float>(*d);
    }
    // A 1-D tensor of n values as f32; empty when absent and optional.
    std::vector<float> vector(const std::string& name, int64_t n, bool optional = false) const {
        const matmul::TensorEntry* e = entry(name);
        if (!e) {
            if (optional) return {};
            fail(name, "tensor missing");
        }
        if (e->info.n_elements() != n)
            fail(name, fmt::format("has {} elements, the model's shape needs {}", e->info.n_elements(), n));
        const auto bytes = src_.ggml_bytes(name);
        const ToFloatFn to_float = reference_kernels()[static_cast<size_t>(e->info.type)].to_float;
        if (bytes.empty() || !to_float) fail(name, "not readable as a ggml type");
        std::vector<float> v(static_cast<size_t>(n));
        to_float(bytes.data(), v.data(), n);
        return v;
    }
    // A matrix of `rows` outputs by `cols` inputs; null when absent and optional.
    std::unique_ptr<matmul::MatVec> matrix(const std::string& name, int64_t cols, int64_t rows,
                                           bool optional = false) const {
        auto m = entry(name) ? src_.tensor(name) : nullptr;
        if (!m) {
            if (optional) return nullptr;
            fail(name, "tensor missing");
        }
        if (m->cols() != cols || m->rows() != rows)
            fail(name, fmt::format("is {}x{}, the model's shape needs {}x{}", m->cols(), m->rows(), cols, rows));
        return m;
    }
    // The n 2-D slices of a 3-D expert tensor [cols, rows, n] (stored as its ggml type).
    std::vector<std::unique_ptr<matmul::MatVec>> experts(const std::string& name, int64_t cols, int64_t rows,
                                                         int64_t n) const {
        const matmul::TensorEntry* e = entry(name);
        if (!e) fail(name, "tensor missing");
        const auto& ne = e->info.ne;
        if (e->info.n_dims != 3 || ne[0] != cols || ne[1] != rows || ne[2] != n)
            fail(name, fmt::format("has shape {}, the model's shape needs [{}, {}, {}]", e->info.shape_string(), cols,
                                   rows, n));
        const auto bytes = src_.ggml_bytes(name);
        if (bytes.empty()) fail(name, "packed expert tensors are not supported by the forward pass yet");
        const uint64_t per = bytes.size() / static_cast<uint64_t>(n);
        std::vector<std::unique_ptr<matmul::MatVec>> v;
        for (int64_t i = 0; i < n; ++i)
            v.push_back(matmul::ggml_matvec(e->info.type, bytes.data() + per * static_cast<uint64_t>(i), rows, cols));
        return v;
    }

private:
    const matmul::TensorSource& src_;
    const Metadata& md_;
    std::unordered_map<std::string, const matmul::TensorEntry*> by_name_;
};

Hparams read_hparams(const Loader& ld, const Metadata& md) {
    Hparams h;
    h.arch = md.get_string("general.architecture").value_or("");
    if (std::find(std::begin(kKnown), std::end(kKnown), h.arch) == std::end(kKnown))
        ld.fail("general.architecture",
                fmt::format("'{}' is not an architecture the forward pass knows ({})", h.arch, known_architectures()));
    const std::string a = h.arch + ".";
    h.n_embd = ld.uint_key(a + "embedding_length");
    h.n_layer = ld.uint_key(a + "block_count");
    h.n_head = ld.uint_key(a + "attention.head_count");
    h.n_head_kv = ld.uint_key(a + "attention.head_count_kv", h.n_head);
    if (h.n_head % h.n_head_kv != 0)
        ld.fail(a + "attention.head_count_kv", fmt::format("{} does not divide head_count {}", h.n_head_kv, h.n_head));
    h.head_dim = ld.uint_key(a + "attention.key_length", h.n_embd / h.n_head);
    if (ld.uint_key(a + "attention.value_length", h.head_dim) != h.head_dim)
        ld.fail(a + "attention.value_length", "differs from key_length (not supported)");
    h.n_rot = ld.uint_key(a + "rope.dimension_count", h.head_dim);
    if (h.n_rot > h.head_dim || h.n_rot % 2 != 0)
        ld.fail(a + "rope.dimension_count",
                fmt::format("{} must be even and at most the head size {}", h.n_rot, h.head_dim));
    h.eps = ld.float_key(a + "attention.layer_norm_rms_epsilon", 1e-5f);
    h.rope_base = ld.float_key(a + "rope.freq_base", 10000.f);
    if (const auto type = md.get_string(a + "rope.scaling.type"); type && *type != "none") {
        if (*type != "linear") ld.fail(a + "rope.scaling.type", "'" + *type + "' is not supported (none, linear)");
        h.rope_freq_scale = 1.f / ld.float_key(a + "rope.scaling.factor", 1.f);
    }
    h.neox = h.arch != "llama";  // llama.cpp's rope type: NORM for llama, NEOX for the qwen family
    h.qk_norm = h.arch == "qwen3" || h.arch == "qwen3moe";
    h.qkv_bias = h.arch == "qwen2";
    if (h.arch == "qwen3moe") {
        h.n_expert = ld.uint_key(a + "expert_count");
        h.n_expert_used = ld.uint_key(a + "expert_used_count");
        if (h.n_expert_used > h.n_expert)
            ld.fail(a + "expert_used_count", fmt::format("{} exceeds expert_count {}", h.n_expert_used, h.n_expert));
        h.n_ff_exp = ld.uint_key(a + "expert_feed_forward_length");
    } else {
        h.n_ff = ld.uint_key(a + "feed_forward_length");
    }
    return h;
}

// y = RMSNorm(x) * w per row of n, as ggml's rms_norm (sum of squares in f64, scale in f32) then mul.
void rms_norm(const float* x, const float* w, float* y, int64_t n, float eps) {
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i] * x[i]);
    const auto mean = static_cast<float>(sum / static_cast<double>(n));
    const float scale = 1.0f / std::sqrt(mean + eps);
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] * scale) * w[i];
}

// ggml's rope cache for position p: cos/sin of p * base^(-2i/n_rot) * freq_scale, the power
// formed by repeated f32 multiplication as ggml_rope_cache_init does.
void rope_cache(int64_t p, const Hparams& h, std::vector<float>& cs) {
    const float theta_scale = std::pow(h.rope_base, -2.0f / static_cast<float>(h.n_rot));
    auto theta = static_cast<float>(p);
    cs.resize(static_cast<size_t>(h.n_rot));
    for (int64_t i0 = 0; i0 < h.n_rot; i0 += 2) {
        const float t = h.rope_freq_scale * theta;
        cs[static_cast<size_t>(i0)] = std::cos(t);
        cs[static_cast<size_t>(i0) + 1] = std::sin(t);
        theta *= theta_scale;
    }
}

// Rotates one head (head_dim values) in place with the cache of its position.
void rope_head(float* x, const std::vector<float>& cs, const Hparams& h) {
    for (int64_t i0 = 0; i0 < h.n_rot; i0 += 2) {
        const float c = cs[static_cast<size_t>(i0)], s = cs[static_cast<size_t>(i0) + 1];
        const int64_t a = h.neox ? i0 / 2 : i0, b = h.neox ? i0 / 2 + h.n_rot / 2 : i0 + 1;
        const float x0 = x[a], x1 = x[b];
        x[a] = x0 * c - x1 * s;
        x[b] = x0 * s + x1 * c;
    }
}

float silu(float x) { return x / (1.0f + std::exp(-x)); }

}  // namespace

Forward::Forward(std::shared_ptr<const matmul::TensorSource> src, const Metadata& md, Semantics s, int threads)
    : src_(std::move(src)), sem_(s), threads_(threads) {
    const Loader ld(*src_, md);
    hp_ = read_hparams(ld, md);
    const Hparams& h = hp_;
    const matmul::TensorEntry* te = ld.entry("token_embd.weight");
    if (!te || te->info.n_dims != 2 || te->info.ne[0] != h.n_embd)
        ld.fail("token_embd.weight", fmt::format("missing or not [{}, n_vocab]", h.n_embd));
    hp_.n_vocab = te->info.ne[1];
    embd_ = ld.matrix("token_embd.weight", h.n_embd, hp_.n_vocab);
    embd_type_ = te->info.type;
    embd_rows_ = src_->ggml_bytes("token_embd.weight");
    if (embd_rows_.empty()) {  // packed in an OIW4 file: the rows as the GGUF they stand for (lossless)
        const Oiw4File f = Oiw4File::open(src_->path());
        const int64_t i = f.find_tensor("token_embd.weight");
        const float err = oiw4_tensor_gguf_bytes(f, static_cast<size_t>(i), [&](std::span<const uint8_t> b) {
            embd_owned_.insert(embd_owned_.end(), b.begin(), b.end());
        });
        if (err != 0) ld.fail("token_embd.weight", fmt::format("packed scales not exact in f16 (error {:g})", err));
        embd_rows_ = embd_owned_;
    }
    output_norm_ = ld.vector("output_norm.weight", h.n_embd);
    output_ = ld.matrix("output.weight", h.n_embd, hp_.n_vocab, true);  // absent: tied to token_embd
    const int64_t q_dim = h.n_head * h.head_dim, kv_dim = h.n_head_kv * h.head_dim;
    for (int64_t il = 0; il < h.n_layer; ++il) {
        const std::string p = fmt::format("blk.{}.", il);
        Layer L;
        L.attn_norm = ld.vector(p + "attn_norm.weight", h.n_embd);
        L.ffn_norm = ld.vector(p + "ffn_norm.weight", h.n_embd);
        L.wq = ld.matrix(p + "attn_q.weight", h.n_embd, q_dim);
        L.wk = ld.matrix(p + "attn_k.weight", h.n_embd, kv_dim);
        L.wv = ld.matrix(p + "attn_v.weight", h.n_embd, kv_dim);
        L.wo = ld.matrix(p + "attn_output.weight", q_dim, h.n_embd);
        if (h.qkv_bias) {
            L.bq = ld.vector(p + "attn_q.bias", q_dim);
            L.bk = ld.vector(p + "attn_k.bias", kv_dim);
            L.bv = ld.vector(p + "attn_v.bias", kv_dim);
        }
        if (h.qk_norm) {
            L.q_norm = ld.vector(p + "attn_q_norm.weight", h.head_dim);
            L.k_norm = ld.vector(p + "attn_k_norm.weight", h.head_dim);
        }
        if (h.n_expert > 0) {
            L.router = ld.matrix(p + "ffn_gate_inp.weight", h.n_embd, h.n_expert);
            L.gate_e = ld.experts(p + "ffn_gate_exps.weight", h.n_embd, h.n_ff_exp, h.n_expert);
            L.up_e = ld.experts(p + "ffn_up_exps.weight", h.n_embd, h.n_ff_exp, h.n_expert);
            L.down_e = ld.experts(p + "ffn_down_exps.weight", h.n_ff_exp, h.n_embd, h.n_expert);
        } else {
            L.gate = ld.matrix(p + "ffn_gate.weight", h.n_embd, h.n_ff);
            L.up = ld.matrix(p + "ffn_up.weight", h.n_embd, h.n_ff);
            L.down = ld.matrix(p + "ffn_down.weight", h.n_ff, h.n_embd);
        }
        layers_.push_back(std::move(L));
    }
}

Forward::~Forward() = default;

void Forward::apply(const matmul::MatVec& w, const float* x, float* y, int64_t tokens) const {
    if (sem_ == Semantics::Integer) return w.integer_batch(x, tokens, y, threads_);
    std::vector<double> yd(static_cast<size_t>(tokens * w.rows()));
    w.exact_batch(x, tokens, yd.data(), threads_);
    for (size_t i = 0; i < yd.size(); ++i) y[i] = static_cast<float>(yd[i]);
}

void Forward::embed(std::span<const int32_t> tokens, float* x) const {
    const int64_t E = hp_.n_embd;
    const uint64_t rs = row_size(embd_type_, E);
    for (size_t t = 0; t < tokens.size(); ++t) {
        const int32_t id = tokens[t];
        if (id < 0 || id >= hp_.n_vocab)
            throw FormatError(
                ErrorKind::Usage, src_->path(), "tokens",
                fmt::format("token id {} at position {} is outside the vocabulary ({})", id, t, hp_.n_vocab));
        reference_kernels()[static_cast<size_t>(embd_type_)].to_float(
            embd_rows_.data() + rs * static_cast<uint64_t>(id), x + static_cast<int64_t>(t) * E, E);
    }
}

void Forward::attention(const Layer& L, const std::vector<float>& cur, int64_t T, float* out) const {
    const Hparams& h = hp_;
    const int64_t hd = h.head_dim, q_dim = h.n_head * hd, kv_dim = h.n_head_kv * hd;
    std::vector<float> q(static_cast<size_t>(T * q_dim)), k(static_cast<size_t>(T * kv_dim)),
        v(static_cast<size_t>(T * kv_dim)), att(static_cast<size_t>(T * q_dim)), scores(static_cast<size_t>(T)), cs;
    apply(*L.wq, cur.data(), q.data(), T);
    apply(*L.wk, cur.data(), k.data(), T);
    apply(*L.wv, cur.data(), v.data(), T);
    for (int64_t t = 0; t < T; ++t) {
        if (h.qkv_bias) {
            for (int64_t i = 0; i < q_dim; ++i) q[t * q_dim + i] += L.bq[i];
            for (int64_t i = 0; i < kv_dim; ++i) k[t * kv_dim + i] += L.bk[i];
            for (int64_t i = 0; i < kv_dim; ++i) v[t * kv_dim + i] += L.bv[i];
        }
        rope_cache(t, h, cs);
        for (int64_t hh = 0; hh < h.n_head; ++hh) {
            float* qh = &q[t * q_dim + hh * hd];
            if (h.qk_norm) rms_norm(qh, L.q_norm.data(), qh, hd, h.eps);
            rope_head(qh, cs, h);
        }
        for (int64_t hh = 0; hh < h.n_head_kv; ++hh) {
            float* kh = &k[t * kv_dim + hh * hd];
            if (h.qk_norm) rms_norm(kh, L.k_norm.data(), kh, hd, h.eps);
            rope_head(kh, cs, h);
        }
    }
    const bool integer = sem_ == Semantics::Integer;
    if (integer) {  // llama.cpp's F16 cache holds k and v as halves; its F16 dots take q as halves
        for (float& f : q) f = round_f16(f);
        for (float& f : k) f = round_f16(f);
        for (float& f : v) f = round_f16(f);
    }
    const float kq_scale = 1.0f / std::sqrt(static_cast<float>(hd));
    const int64_t group = h.n_head / h.n_head_kv;
    for (int64_t t = 0; t < T; ++t) {
        for (int64_t hh = 0; hh < h.n_head; ++hh) {
            const float* qh = &q[t * q_dim + hh * hd];
            const int64_t kvo = (hh / group) * hd;
            // softmax(q.k * scale) over positions 0..t (causal), as ggml's soft_max: max
            // subtracted, exponentials summed in f64, scaled by the f32 inverse of the sum.
            float mx = -INFINITY;
            for (int64_t s = 0; s <= t; ++s) {
                double dot = 0;
                for (int64_t i = 0; i < hd; ++i) dot += static_cast<double>(qh[i]) * k[s * kv_dim + kvo + i];
                scores[s] = static_cast<float>(dot) * kq_scale;
                mx = std::max(mx, scores[s]);
            }
            double sum = 0;
            for (int64_t s = 0; s <= t; ++s) {
                scores[s] = std::exp(scores[s] - mx);
                sum += scores[s];
            }
            const auto inv = static_cast<float>(1.0 / sum);
            for (int64_t s = 0; s <= t; ++s) scores[s] = integer ? round_f16(scores[s] * inv) : scores[s] * inv;
            float* o = &att[t * q_dim + hh * hd];
            for (int64_t i = 0; i < hd; ++i) {
                double acc = 0;
                for (int64_t s = 0; s <= t; ++s) acc += static_cast<double>(scores[s]) * v[s * kv_dim + kvo + i];
                o[i] = static_cast<float>(acc);
            }
        }
    }
    apply(*L.wo, att.data(), out, T);
}

void Forward::feed_forward(const Layer& L, const std::vector<float>& cur, int64_t T, float* out) const {
    const Hparams& h = hp_;
    const int64_t E = h.n_embd;
    if (h.n_expert == 0) {
        std::vector<float> g(static_cast<size_t>(T * h.n_ff)), u(g.size());
        apply(*L.gate, cur.data(), g.data(), T);
        apply(*L.up, cur.data(), u.data(), T);
        for (size_t i = 0; i < g.size(); ++i) g[i] = silu(g[i]) * u[i];
        apply(*L.down, g.data(), out, T);
        return;
    }
    // Routed: softmax over the router's logits, the n_expert_used largest chosen (first on ties),
    // their weights normalised to sum 1 (llama.cpp's qwen3moe), the experts' SwiGLU outputs summed.
    std::vector<float> p(static_cast<size_t>(h.n_expert)), g(static_cast<size_t>(h.n_ff_exp)), u(g.size()),
        d(static_cast<size_t>(E));
    std::vector<int64_t> order(p.size());
    for (int64_t t = 0; t < T; ++t) {
        const float* xt = &cur[t * E];
        apply(*L.router, xt, p.data());
        const float mx = *std::max_element(p.begin(), p.end());
        double sum = 0;
        for (float& l : p) {
            l = std::exp(l - mx);
            sum += l;
        }
        for (float& l : p) l *= static_cast<float>(1.0 / sum);
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return p[a] > p[b]; });
        float wsum = 0;
        for (int64_t j = 0; j < h.n_expert_used; ++j) wsum += p[order[j]];
        float* ot = out + t * E;
        std::fill(ot, ot + E, 0.f);
        for (int64_t j = 0; j < h.n_expert_used; ++j) {
            const auto e = static_cast<size_t>(order[j]);
            apply(*L.gate_e[e], xt, g.data());
            apply(*L.up_e[e], xt, u.data());
            for (size_t i = 0; i < g.size(); ++i) g[i] = silu(g[i]) * u[i];
            apply(*L.down_e[e], g.data(), d.data());
            const float w = p[e] / wsum;
            for (int64_t i = 0; i < E; ++i) ot[i] += d[i] * w;
        }
    }
}

std::vector<float> Forward::embeddings(std::span<const int32_t> tokens) const {
    std::vector<float> x(tokens.size() * static_cast<size_t>(hp_.n_embd));
    embed(tokens, x.data());
    return x;
}

void Forward::layers(std::vector<float>& x, int64_t first, int64_t last) const {
    const Hparams& h = hp_;
    const int64_t E = h.n_embd;
    const auto T = static_cast<int64_t>(x.size()) / E;
    std::vector<float> cur(x.size()), o(x.size());
    auto norm = [&](const std::vector<float>& w) {
        for (int64_t t = 0; t < T; ++t) rms_norm(&x[t * E], w.data(), &cur[t * E], E, h.eps);
    };
    for (int64_t il = std::max<int64_t>(first, 0); il < std::min(last, h.n_layer); ++il) {
        const Layer& L = layers_[static_cast<size_t>(il)];
        norm(L.attn_norm);
        attention(L, cur, T, o.data());
        for (size_t i = 0; i < x.size(); ++i) x[i] += o[i];
        norm(L.ffn_norm);
        feed_forward(L, cur, T, o.data());
        for (size_t i = 0; i < x.size(); ++i) x[i] += o[i];
    }
}

std::vector<float> Forward::head(const std::vector<float>& x) const {
    const int64_t E = hp_.n_embd;
    const auto T = static_cast<int64_t>(x.size()) / E;
    std::vector<float> cur(x.size());
    for (int64_t t = 0; t < T; ++t) rms_norm(&x[t * E], output_norm_.data(), &cur[t * E], E, hp_.eps);
    std::vector<float> out(static_cast<size_t>(T * hp_.n_vocab));
    apply(output_ ? *output_ : *embd_, cur.data(), out.data(), T);
    return out;
}

std::vector<float> Forward::logits(std::span<const int32_t> tokens, int64_t from) const {
    std::vector<float> x = embeddings(tokens);
    layers(x, 0, hp_.n_layer);
    const auto skip = static_cast<size_t>(std::clamp<int64_t>(from, 0, static_cast<int64_t>(tokens.size()))) *
                      static_cast<size_t>(hp_.n_embd);
    if (skip) x.erase(x.begin(), x.begin() + static_cast<ptrdiff_t>(skip));
    return head(x);
}

}  // namespace oiw::eval
