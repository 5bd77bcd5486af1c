#include "converters/eval/perplexity.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "libformat/error.h"

namespace oiw::eval {

std::vector<double> log_softmax(std::span<const float> logits) {
    const float mx = *std::max_element(logits.begin(), logits.end());
    double sum = 0;
    for (const float l : logits) sum += std::exp(static_cast<double>(l) - mx);
    const double lse = std::log(sum);
    std::vector<double> out(logits.size());
    for (size_t i = 0; i < logits.size(); ++i) out[i] = static_cast<double>(logits[i]) - mx - lse;
    return out;
}

double kl_divergence(std::span<const double> base, std::span<const double> model) {
    double kld = 0;
    for (size_t i = 0; i < base.size(); ++i) kld += std::exp(base[i]) * (base[i] - model[i]);
    return kld;
}

namespace {

// llama-perplexity's mean_and_uncertainty: the mean of values summing to `sum` (squares to
// `sum2`) and its standard error (0 for 10 values or fewer).
std::pair<double, double> mean_and_unc(double sum, double sum2, double n) {
    const double f = sum / n, var = sum2 / n - f * f;
    return {f, var > 0 && n > 10 ? std::sqrt(var / (n - 1)) : 0.0};
}

}  // namespace

Distribution distribution(std::vector<double> v) {
    Distribution d;
    const auto n = static_cast<double>(v.size());
    double sum = 0, sum2 = 0;
    for (const double x : v) {
        sum += x;
        sum2 += x * x;
    }
    std::tie(d.mean, d.mean_unc) = mean_and_unc(sum, sum2, n);
    std::sort(v.begin(), v.end());
    // llama-perplexity's percentile: linear between the sorted values around fraction * (n - 1).
    auto pct = [&](double f) {
        const double p = f * (n - 1);
        const auto i = static_cast<size_t>(p);
        const double w = p - static_cast<double>(i);
        return (1 - w) * v[i] + w * v[std::min(i + 1, v.size() - 1)];
    };
    d.min = v.front();
    d.p0_1 = pct(0.001);
    d.p1 = pct(0.01);
    d.p5 = pct(0.05);
    d.p10 = pct(0.10);
    d.p25 = pct(0.25);
    d.median = pct(0.5);
    d.p75 = pct(0.75);
    d.p90 = pct(0.90);
    d.p95 = pct(0.95);
    d.p99 = pct(0.99);
    d.p99_9 = pct(0.999);
    d.max = v.back();
    return d;
}

namespace {

// Refuses a base model or a log-probability file that is not `model`'s source, or a file that does
// not hold `chunks` chunks of `ctx` of `tokens`.
void check_base(const Forward& model, const Forward* base, const LogProbReader* file, std::span<const int32_t> tokens,
                int64_t ctx, int64_t chunks) {
    const Hparams& a = model.hparams();
    if (base) {
        const Hparams& b = base->hparams();
        if (a.n_vocab != b.n_vocab || a.n_embd != b.n_embd || a.n_layer != b.n_layer || a.arch != b.arch)
            throw FormatError(
                ErrorKind::Usage, "", "--base",
                fmt::format("{} with {} layers of {}, vocabulary {}: not the model's source ({} with {} "
                            "layers of {}, vocabulary {})",
                            b.arch, b.n_layer, b.n_embd, b.n_vocab, a.arch, a.n_layer, a.n_embd, a.n_vocab));
    }
    if (!file) return;
    if (base) throw FormatError(ErrorKind::Usage, "", "--base", "a base model and a log-probability file given");
    auto refuse = [&](const std::string& what) { throw FormatError(ErrorKind::Usage, file->path(), "", what); };
    if (file->n_vocab() != a.n_vocab)
        refuse(fmt::format("vocabulary of {}: not the model's source (vocabulary {})", file->n_vocab(), a.n_vocab));
    if (file->n_ctx() != ctx) refuse(fmt::format("n_ctx {}, not the --ctx {} asked", file->n_ctx(), ctx));
    if (file->n_chunk() < chunks) refuse(fmt::format("{} chunks, fewer than the {} asked", file->n_chunk(), chunks));
    const std::span<const int32_t> ft = file->tokens().first(static_cast<size_t>(chunks * ctx));
    const auto diff = std::mismatch(ft.begin(), ft.end(), tokens.begin()).first;
    if (diff != ft.end())
        refuse(fmt::format("token {} is {} there and {} in the text: computed on another text or vocabulary",
                           diff - ft.begin(), *diff, tokens[static_cast<size_t>(diff - ft.begin())]));
}

// Throws FormatError(BadData) naming `who` at the first non-finite logit of chunk `c` (`l`: the
// rows of positions from `first` on).
void check_finite(const std::vector<float>& l, const char* who, int64_t nv, int64_t first, int64_t c) {
    const auto bad = std::find_if(l.begin(), l.end(), [](float v) { return !std::isfinite(v); });
    if (bad != l.end())
        throw FormatError(ErrorKind::BadData, "", who,
                          fmt::format("non-finite logit at position {} of chunk {} (NaN or Inf in the weights?)",
                                      first + (bad - l.begin()) / nv, c + 1));
}

// What each scored position contributed against the base.
struct Samples {
    std::vector<double> kld, dp, nll, nll_base;
    int64_t same = 0;
    void add(double kl, double model_nll, double base_nll, bool same_top) {
        kld.push_back(kl);
        nll.push_back(model_nll);
        nll_base.push_back(base_nll);
        dp.push_back(std::exp(-model_nll) - std::exp(-base_nll));
        same += same_top ? 1 : 0;
    }
};

KldStats kld_stats(const Samples& s) {
    KldStats k;
    const auto n = static_cast<double>(s.kld.size());
    k.kld = distribution(s.kld);
    k.dp = distribution(s.dp);
    double dp2 = 0, dp4 = 0, a = 0, a2 = 0, b = 0, b2 = 0, ab = 0;
    for (size_t i = 0; i < s.kld.size(); ++i) {
        dp2 += s.dp[i] * s.dp[i];
        dp4 += s.dp[i] * s.dp[i] * s.dp[i] * s.dp[i];
        a += s.nll[i];
        a2 += s.nll[i] * s.nll[i];
        b += s.nll_base[i];
        b2 += s.nll_base[i] * s.nll_base[i];
        ab += s.nll[i] * s.nll_base[i];
    }
    const auto [mse, mse_unc] = mean_and_unc(dp2, dp4, n);
    k.dp_rms = std::sqrt(mse);
    k.dp_rms_unc = k.dp_rms > 0 ? 0.5 / k.dp_rms * mse_unc : 0;
    k.same_top = static_cast<double>(s.same) / n;
    k.same_top_unc = n > 1 ? std::sqrt(k.same_top * (1 - k.same_top) / (n - 1)) : 0;
    k.base_ppl = std::exp(b / n);
    const auto [la, la_unc] = mean_and_unc(a, a2, n);
    const auto [lb, lb_unc] = mean_and_unc(b, b2, n);
    const double cov = n < 10 ? 0 : (ab / n - (a / n) * (b / n)) / (n - 1);
    k.ln_ppl_ratio = la - lb;
    k.ln_ppl_ratio_unc = std::sqrt(std::max(0.0, la_unc * la_unc + lb_unc * lb_unc - 2 * cov));
    return k;
}

}  // namespace

EvalResult evaluate(const Forward& model, const Forward* base, std::span<const int32_t> tokens, const EvalOptions& o,
                    const std::function<void(int64_t, int64_t)>& progress) {
    if (o.ctx < 4) throw FormatError(ErrorKind::Usage, "", "--ctx", fmt::format("{} is below 4", o.ctx));
    if (o.chunks == 0 || o.chunks < -1)
        throw FormatError(ErrorKind::Usage, "", "--chunks", fmt::format("{} is not a positive count", o.chunks));
    const auto n = static_cast<int64_t>(tokens.size());
    const int64_t whole = n / o.ctx;
    if (whole == 0)
        throw FormatError(ErrorKind::Usage, "", "--text",
                          fmt::format("tokenizes to {} tokens, fewer than one chunk of --ctx {}", n, o.ctx));
    const int64_t chunks = o.chunks < 0 ? whole : std::min(whole, o.chunks);
    const int64_t nv = model.hparams().n_vocab;
    const LogProbReader* file = o.base_file;
    check_base(model, base, file, tokens, o.ctx, chunks);
    std::optional<LogProbWriter> save;
    if (!o.save_path.empty())
        save.emplace(o.save_path, o.ctx, nv, chunks, tokens.first(static_cast<size_t>(chunks * o.ctx)));
    EvalResult r;
    r.chunks = chunks;
    Samples samples;
    double nll = 0;
    const int64_t first = o.ctx / 2;
    const auto row_len = static_cast<size_t>(log_prob_row_len(nv));
    for (int64_t c = 0; c < chunks; ++c) {
        std::vector<int32_t> chunk(tokens.begin() + c * o.ctx, tokens.begin() + (c + 1) * o.ctx);
        if (o.bos) chunk[0] = *o.bos;
        // Only the scored half's logits: rows j - first.
        const std::vector<float> lm = model.logits(chunk, first);
        std::vector<float> lb;
        if (base) lb = base->logits(chunk, first);
        check_finite(lm, "model", nv, first, c);
        check_finite(lb, "--base", nv, first, c);
        std::span<const uint16_t> rows;
        if (file) rows = file->chunk(c);
        for (int64_t j = first; j < o.ctx - 1; ++j) {
            const auto next = static_cast<size_t>(tokens[static_cast<size_t>(c * o.ctx + j + 1)]);
            const std::span<const float> row(lm.data() + (j - first) * nv, static_cast<size_t>(nv));
            const std::vector<double> pm = log_softmax(row);
            nll -= pm[next];
            ++r.scored;
            if (save) save->add_row(row);
            if (file) {
                const RowKld k = compare_log_probs(row, rows.subspan(static_cast<size_t>(j - first) * row_len, row_len),
                                                   static_cast<int32_t>(next));
                samples.add(k.kld, -pm[next], k.nll_base, k.same_top);
            }
            if (!base) continue;
            const std::span<const float> brow(lb.data() + (j - first) * nv, static_cast<size_t>(nv));
            const std::vector<double> pb = log_softmax(brow);
            samples.add(kl_divergence(pb, pm), -pm[next], -pb[next],
                        std::max_element(row.begin(), row.end()) - row.begin() ==
                            std::max_element(brow.begin(), brow.end()) - brow.begin());
        }
        if (file) file->release(c);
        if (progress) progress(c + 1, chunks);
    }
    if (save) save->commit();
    r.nll = nll / static_cast<double>(r.scored);
    r.ppl = std::exp(r.nll);
    if (base || file) r.kld = kld_stats(samples);
    return r;
}

}  // namespace oiw::eval
