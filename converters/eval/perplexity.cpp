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

// The statistics of the per-position divergences (`same` top tokens; the base's summed NLL).
KldStats kld_stats(std::vector<double> klds, int64_t same, double base_nll) {
    KldStats k;
    double sum = 0;
    for (const double d : klds) sum += d;
    const auto n = static_cast<double>(klds.size());
    k.mean = sum / n;
    std::sort(klds.begin(), klds.end());
    auto pct = [&](double p) { return klds[static_cast<size_t>(p * (n - 1) + 0.5)]; };
    k.median = pct(0.5);
    k.p99 = pct(0.99);
    k.max = klds.back();
    k.same_top = static_cast<double>(same) / n;
    k.base_ppl = std::exp(base_nll / n);
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
    std::vector<double> klds;
    double base_nll = 0, nll = 0;
    int64_t same = 0;
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
                base_nll += k.nll_base;
                klds.push_back(k.kld);
                same += k.same_top ? 1 : 0;
            }
            if (!base) continue;
            const std::span<const float> brow(lb.data() + (j - first) * nv, static_cast<size_t>(nv));
            const std::vector<double> pb = log_softmax(brow);
            base_nll -= pb[next];
            const double kld = kl_divergence(pb, pm);
            klds.push_back(kld);
            if (std::max_element(row.begin(), row.end()) - row.begin() ==
                std::max_element(brow.begin(), brow.end()) - brow.begin())
                ++same;
        }
        if (file) file->release(c);
        if (progress) progress(c + 1, chunks);
    }
    if (save) save->commit();
    r.nll = nll / static_cast<double>(r.scored);
    r.ppl = std::exp(r.nll);
    if (base || file) r.kld = kld_stats(std::move(klds), same, base_nll);
    return r;
}

}  // namespace oiw::eval
