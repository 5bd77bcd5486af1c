#include "converters/eval/perplexity.h"

#include <algorithm>
#include <cmath>

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
    if (base) {
        const Hparams& a = model.hparams();
        const Hparams& b = base->hparams();
        if (a.n_vocab != b.n_vocab || a.n_embd != b.n_embd || a.n_layer != b.n_layer || a.arch != b.arch)
            throw FormatError(
                ErrorKind::Usage, "", "--base",
                fmt::format("{} with {} layers of {}, vocabulary {}: not the model's source ({} with {} "
                            "layers of {}, vocabulary {})",
                            b.arch, b.n_layer, b.n_embd, b.n_vocab, a.arch, a.n_layer, a.n_embd, a.n_vocab));
    }
    EvalResult r;
    r.chunks = chunks;
    std::vector<double> klds;
    double base_nll = 0, nll = 0;
    int64_t same = 0;
    const int64_t first = o.ctx / 2;
    for (int64_t c = 0; c < chunks; ++c) {
        std::vector<int32_t> chunk(tokens.begin() + c * o.ctx, tokens.begin() + (c + 1) * o.ctx);
        if (o.bos) chunk[0] = *o.bos;
        const std::vector<float> lm = model.logits(chunk);
        std::vector<float> lb;
        if (base) lb = base->logits(chunk);
        auto check = [&](const std::vector<float>& l, const char* who) {
            const auto bad = std::find_if(l.begin(), l.end(), [](float v) { return !std::isfinite(v); });
            if (bad != l.end())
                throw FormatError(
                    ErrorKind::BadData, "", who,
                    fmt::format("non-finite logit at position {} of chunk {} (NaN or Inf in the weights?)",
                                (bad - l.begin()) / nv, c + 1));
        };
        check(lm, "model");
        check(lb, "--base");
        for (int64_t j = first; j < o.ctx - 1; ++j) {
            const auto next = static_cast<size_t>(tokens[static_cast<size_t>(c * o.ctx + j + 1)]);
            const std::span<const float> row(lm.data() + j * nv, static_cast<size_t>(nv));
            const std::vector<double> pm = log_softmax(row);
            nll -= pm[next];
            ++r.scored;
            if (!base) continue;
            const std::span<const float> brow(lb.data() + j * nv, static_cast<size_t>(nv));
            const std::vector<double> pb = log_softmax(brow);
            base_nll -= pb[next];
            const double kld = kl_divergence(pb, pm);
            klds.push_back(kld);
            if (std::max_element(row.begin(), row.end()) - row.begin() ==
                std::max_element(brow.begin(), brow.end()) - brow.begin())
                ++same;
        }
        if (progress) progress(c + 1, chunks);
    }
    r.nll = nll / static_cast<double>(r.scored);
    r.ppl = std::exp(r.nll);
    if (base) {
        KldStats k;
        double sum = 0;
        for (const double d : klds) sum += d;
        k.mean = sum / static_cast<double>(klds.size());
        std::sort(klds.begin(), klds.end());
        auto pct = [&](double p) { return klds[static_cast<size_t>(p * static_cast<double>(klds.size() - 1) + 0.5)]; };
        k.median = pct(0.5);
        k.p99 = pct(0.99);
        k.max = klds.back();
        k.same_top = static_cast<double>(same) / static_cast<double>(klds.size());
        k.base_ppl = std::exp(base_nll / static_cast<double>(r.scored));
        r.kld = k;
    }
    return r;
}

}  // namespace oiw::eval
