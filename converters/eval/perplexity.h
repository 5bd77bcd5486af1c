// Perplexity and KL divergence over chunks of a token stream, as llama.cpp's llama-perplexity
// computes them: chunk i is tokens [i*ctx, (i+1)*ctx) with its first token replaced by BOS (when
// the vocabulary adds one), evaluated from position 0, and only its second half scored: logits
// at positions ctx/2 .. ctx-2 predicting the next token (ctx - 1 - ctx/2 predictions per chunk).
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "converters/eval/forward.h"
#include "converters/eval/log_prob_file.h"

namespace oiw::eval {

struct EvalOptions {
    int64_t ctx = 256;
    int64_t chunks = -1;         // -1: every whole chunk of the text
    std::optional<int32_t> bos;  // replaces each chunk's first token when set
    // The base as llama-perplexity saved it (--kl-divergence-base FILE): KL divergence against its
    // rows, computed as llama-perplexity --kl-divergence computes it (instead of a base model).
    const LogProbReader* base_file = nullptr;
    // Also write the model's log-probabilities here, as llama-perplexity --kl-divergence-base
    // writes them (published when every chunk is done; nothing is left behind on an error).
    std::string save_path;
};

// KL divergence of the model's next-token distributions from the base model's, per scored position.
struct KldStats {
    double mean = 0, median = 0, p99 = 0, max = 0;
    double same_top = 0;  // fraction of positions whose most likely token is the same in both
    double base_ppl = 0;  // perplexity of the base model on the same positions
};

struct EvalResult {
    int64_t chunks = 0, scored = 0;  // chunks evaluated, positions scored
    double nll = 0;                  // mean negative log-likelihood (nats)
    double ppl = 0;                  // exp(nll)
    std::optional<KldStats> kld;     // with a base model
};

// log softmax of one row of logits, in f64 (llama-perplexity's log_softmax: max subtracted,
// exponentials summed in f64).
std::vector<double> log_softmax(std::span<const float> logits);

// KL(base || model) of two log_softmax rows: sum_i exp(base_i) * (base_i - model_i), summed in order.
double kl_divergence(std::span<const double> base, std::span<const double> model);

// Evaluates `model` (and, when given, `base` on the same chunks) over `tokens`. Throws
// FormatError(BadData) on a non-finite logit (naming the position), FormatError(Usage) for a ctx
// below 4, a chunk count below 1, tokens that do not fill one chunk (naming both counts), when the two
// models differ in architecture, layers, width or vocabulary, or when o.base_file is given with
// `base`, or differs from the model's vocabulary, from o.ctx, or from `tokens`, or holds fewer
// chunks than asked (all before any work). progress(done, total) is called after each chunk.
EvalResult evaluate(const Forward& model, const Forward* base, std::span<const int32_t> tokens, const EvalOptions& o,
                    const std::function<void(int64_t, int64_t)>& progress = {});

}  // namespace oiw::eval
