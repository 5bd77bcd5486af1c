// A plain CPU forward pass (gguf-eval's reference): token ids in, logits out, for the
// architectures the toolchain meets -- llama (mistral's GGUFs are llama), qwen2 (q/k/v biases),
// qwen3 (q/k norms) and qwen3moe (top-k routed experts) -- reading GGUF, split or OIW4 models
// through matmul::TensorSource, so every weight runs through the bundled reference (or a
// packed encoding's kernels) in one of its two semantics (docs/matmul.md):
//
//   exact    weights dequantized to f32, products summed in f64; activations f32 throughout.
//   integer  what llama.cpp's CPU backend computes: each matmul's activations quantized to the
//            weight type's dot partner (Q8_0, Q8_K, F16, ...), and the attention as with its
//            default F16 KV cache (q, k, v and the softmax weights rounded to f16).
//
// One sequence is evaluated at once from position 0 (a perplexity chunk), with causal
// grouped-query attention over all its positions. Clarity before speed.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "converters/matmul/matvec.h"
#include "libformat/gguf/metadata.h"

namespace oiw::eval {

enum class Semantics { Exact, Integer };

// The hyper-parameters the pass uses, read from `{arch}.*` keys (llama.cpp's defaults where a
// key may be absent).
struct Hparams {
    std::string arch;
    int64_t n_embd = 0, n_layer = 0, n_head = 0, n_head_kv = 0, head_dim = 0, n_ff = 0, n_vocab = 0;
    int64_t n_rot = 0;     // rotated dimensions of each head
    int64_t n_expert = 0;  // 0: dense
    int64_t n_expert_used = 0;
    int64_t n_ff_exp = 0;
    float eps = 1e-5f, rope_base = 10000.f, rope_freq_scale = 1.f;
    bool neox = false;      // RoPE on pairs (i, i + n_rot/2) instead of (2i, 2i + 1)
    bool qk_norm = false;   // per-head RMS norms of q and k (qwen3, qwen3moe)
    bool qkv_bias = false;  // biases on q, k, v (qwen2)
};

// "llama, qwen2, qwen3, qwen3moe".
std::string known_architectures();

class Forward {
public:
    // Reads the hyper-parameters from `md` and resolves every tensor in `src`; throws
    // FormatError naming the file and the key or tensor that is missing, mis-shaped or of an
    // architecture the pass does not know (naming the ones it knows).
    Forward(std::shared_ptr<const matmul::TensorSource> src, const Metadata& md, Semantics s, int threads);
    ~Forward();
    Forward(const Forward&) = delete;
    Forward& operator=(const Forward&) = delete;

    const Hparams& hparams() const { return hp_; }
    // Logits of positions from .. T-1 of `tokens` (row t - from = position t, n_vocab each; every
    // position by default), the sequence starting at position 0. Each row is bit-identical whatever
    // `from` is. Throws FormatError(Usage) for an id outside the vocabulary.
    std::vector<float> logits(std::span<const int32_t> tokens, int64_t from = 0) const;
    // logits() in its three steps, so a caller can resume a pass from a stored layer input
    // (gguf-plan --calibrate): the embeddings of `tokens` (row t = position t, n_embd each);
    // layers [first, last) applied in place to `x` (positions 0 .. rows-1); the final norm and the
    // output matrix. logits(t) == head(layers(embeddings(t), 0, n_layer)) bit for bit.
    std::vector<float> embeddings(std::span<const int32_t> tokens) const;
    void layers(std::vector<float>& x, int64_t first, int64_t last) const;
    std::vector<float> head(const std::vector<float>& x) const;

private:
    struct Layer;
    // y[t] = W x[t] for t < tokens in the pass's semantics (rows of W.cols() in, W.rows() out).
    void apply(const matmul::MatVec& w, const float* x, float* y, int64_t tokens = 1) const;
    // x[t] = row tokens[t] of token_embd (ggml's get_rows); ids are checked.
    void embed(std::span<const int32_t> tokens, float* x) const;
    // out = attention block of layer L (after its norm: cur) over positions 0..T-1, Wo applied.
    void attention(const Layer& L, const std::vector<float>& cur, int64_t T, float* out) const;
    // out = SwiGLU feed-forward of layer L (dense or routed) on cur.
    void feed_forward(const Layer& L, const std::vector<float>& cur, int64_t T, float* out) const;
    std::shared_ptr<const matmul::TensorSource> src_;
    Hparams hp_;
    Semantics sem_;
    int threads_;
    std::unique_ptr<matmul::MatVec> embd_, output_;
    GgmlType embd_type_ = GgmlType::F32;
    std::span<const uint8_t> embd_rows_;  // token_embd as its ggml type: the source's bytes or embd_owned_
    std::vector<uint8_t> embd_owned_;     // a packed (OIW4) token_embd converted back to its ggml type
    std::vector<float> output_norm_;
    std::vector<Layer> layers_;
};

// The model's metadata: a GGUF (or split) model's keys, or the source keys an OIW4 file keeps.
Metadata model_metadata(const std::string& path);

}  // namespace oiw::eval
