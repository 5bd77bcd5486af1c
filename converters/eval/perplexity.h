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

// A sample's distribution as llama-perplexity --kl-divergence reports it: mean with its standard
// error, and percentiles interpolated between neighbouring sorted values (the median of an even
// count is the mean of the middle two).
struct Distribution {
    double mean = 0, mean_unc = 0;  // mean_unc: 0 for 10 values or fewer, as llama-perplexity
    double min = 0, p0_1 = 0, p1 = 0, p5 = 0, p10 = 0, p25 = 0, median = 0, p75 = 0, p90 = 0, p95 = 0, p99 = 0,
           p99_9 = 0, max = 0;
};

// The distribution of `values` (at least one).
Distribution distribution(std::vector<double> values);

// The model against the base, over the scored positions, with llama-perplexity's statistics.
struct KldStats {
    Distribution kld;                   // KL(base || model) per position
    Distribution dp;                    // p(next) - p_base(next) per position (delta p)
    double dp_rms = 0, dp_rms_unc = 0;  // root mean square of delta p, with its uncertainty
    double same_top = 0;                // fraction of positions whose most likely token is the same in both
    double same_top_unc = 0;            // its binomial standard error
    double base_ppl = 0;                // perplexity of the base model on the same positions
    double ln_ppl_ratio = 0;            // mean of ln p_base(next) - ln p(next): ln(PPL / PPL(base))
    double ln_ppl_ratio_unc = 0;
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
