// gguf-eval MODEL -f TEXT [--ctx 256] [--chunks N] [--base SOURCE] [--save-all-logits FILE]
//           [--semantics exact|integer] [--json] [-t N]: perplexity of MODEL on TEXT through the
// bundled forward pass (converters/eval/), and with --base the KL divergence of MODEL's next-token
// distributions from SOURCE's, as llama-perplexity (--kl-divergence) reports them. MODEL: GGUF,
// split or OIW4; SOURCE: one of those, or a log-probability file saved by llama-perplexity
// --kl-divergence-base or by --save-all-logits here (then the text, ctx and chunks are the file's).
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "converters/eval/forward.h"
#include "converters/eval/log_prob_file.h"
#include "converters/eval/perplexity.h"
#include "converters/vocab/vocab.h"
#include "libformat/error.h"
#include "libformat/escape.h"
#include "libformat/io/text_file.h"
#include "libformat/json.h"
#include "libformat/parallel.h"
#include "tools/common/cli_parse.h"
#include "tools/common/tool_support.h"

namespace {

struct ToolOptions {
    std::string model, text, base, save, semantics = "exact";
    int64_t ctx = 256, chunks = -1;
    bool json = false, ctx_given = false;
    unsigned threads = 0;
};

int parse_options(int argc, char** argv, ToolOptions& o) {
    CLI::App app{"gguf-eval: perplexity and KL divergence through the bundled reference forward pass", "gguf-eval"};
    std::string model_opt, kl_base;
    bool kl = false;
    app.add_option("MODEL", o.model, "model to evaluate (.gguf, a shard of a split model, or .oiw4)");
    app.add_option("-m,--model", model_opt, "the model (llama-perplexity's spelling)");
    app.add_option("-f,--text", o.text, "text file to score (default with a log-probability base: its tokens)");
    auto* ctx = app.add_option("-c,--ctx,--ctx-size", o.ctx,
                               "tokens per chunk (llama-perplexity's -c; default 256, "
                               "or a log-probability base's)");
    app.add_option("--chunks", o.chunks, "at most this many chunks (default: every whole chunk)");
    app.add_option("--base", o.base,
                   "also report KL divergence against this source: a model, or a log-probability file "
                   "(llama-perplexity --kl-divergence-base's, or --save-all-logits')");
    app.add_option("--kl-divergence-base", kl_base,
                   "llama-perplexity's spelling: with --kl-divergence, or when the file exists, the base (as --base: "
                   "never overwritten); else where to save MODEL's log-probabilities (as --save-all-logits)");
    app.add_flag("--kl-divergence", kl, "compare against --kl-divergence-base (llama-perplexity's spelling)");
    app.add_option("--save-all-logits", o.save,
                   "write MODEL's log-probabilities as llama-perplexity --kl-divergence-base does, for later "
                   "--base runs here or llama-perplexity --kl-divergence runs (replaces only a file of that kind)");
    app.add_option("--semantics", o.semantics,
                   "exact (default): f32 activations, f64 sums; integer: as llama.cpp's CPU backend computes "
                   "(activations quantized to each weight's dot partner, F16 KV cache), for comparing with "
                   "llama-perplexity")
        ->check(CLI::IsMember({"integer", "exact"}));
    app.add_flag("--json", o.json, "one JSON document on stdout");
    oiw::add_threads_option(app, o.threads);
    oiw::add_version_flag(app);
    OIW_CLI_PARSE(app, argc, argv);
    o.ctx_given = ctx->count() > 0;
    auto usage = [](const char* what) {
        std::fprintf(stderr, "gguf-eval: %s\n", what);
        return 2;
    };
    if (!kl_base.empty()) {
        if (!o.base.empty()) return usage("--base and --kl-divergence-base: give one");
        std::error_code ec;
        // An existing file is read, never replaced (llama-perplexity would overwrite a saved base).
        const bool saves = !kl && !std::filesystem::exists(kl_base, ec);
        if (!saves)
            o.base = kl_base;
        else if (!o.save.empty() && o.save != kl_base)
            return usage("--save-all-logits and --kl-divergence-base (without --kl-divergence): give one");
        else
            o.save = kl_base;
    } else if (kl && o.base.empty()) {
        return usage("--kl-divergence: needs --kl-divergence-base FILE (or --base)");
    }
    if (!model_opt.empty()) {
        if (!o.model.empty() && o.model != model_opt) {
            std::fprintf(stderr, "gguf-eval: MODEL: given twice (positional and -m)\n");
            return 2;
        }
        o.model = model_opt;
    }
    if (o.model.empty()) return usage("MODEL: required (positional or -m)");
    return -1;
}

// An object `key` holding every field of a distribution, then `extra`.
void write_distribution(oiw::json::Writer& w, const char* key, const oiw::eval::Distribution& d,
                        std::initializer_list<std::pair<const char*, double>> extra) {
    const std::pair<const char*, double> fields[] = {
        {"mean", d.mean}, {"mean_unc", d.mean_unc}, {"min", d.min}, {"p0_1", d.p0_1},     {"p1", d.p1},
        {"p5", d.p5},     {"p10", d.p10},           {"p25", d.p25}, {"median", d.median}, {"p75", d.p75},
        {"p90", d.p90},   {"p95", d.p95},           {"p99", d.p99}, {"p99_9", d.p99_9},   {"max", d.max}};
    w.key(key);
    w.begin_object();
    for (const auto& [k, v] : fields) w.field(k, v);
    for (const auto& [k, v] : extra) w.field(k, v);
    w.end_object();
}

// "kld" and "delta_p" objects and the perplexity ratio, as llama-perplexity --kl-divergence reports them.
void write_kld_json(oiw::json::Writer& w, const oiw::eval::KldStats& k) {
    w.field("ppl_ratio", std::exp(k.ln_ppl_ratio));
    w.field("ln_ppl_ratio", k.ln_ppl_ratio);
    w.field("ln_ppl_ratio_unc", k.ln_ppl_ratio_unc);
    write_distribution(w, "kld", k.kld, {{"same_top", k.same_top}, {"same_top_unc", k.same_top_unc}});
    write_distribution(w, "delta_p", k.dp, {{"rms", k.dp_rms}, {"rms_unc", k.dp_rms_unc}});
}

std::string kld_text(const std::string& base, const oiw::eval::KldStats& k) {
    const oiw::eval::Distribution& d = k.kld;
    const oiw::eval::Distribution& p = k.dp;
    return fmt::format(
        "base       {}  PPL {:.4f}\n"
        "PPL ratio  {:.6f}  (ln {:.6f} ± {:.6f})\n"
        "KLD        mean {:.6f} ± {:.6f}  median {:.6f}  p99 {:.6f}  max {:.6f}\n"
        "           min {:.6f}  p1 {:.6f}  p5 {:.6f}  p10 {:.6f}  p90 {:.6f}  p95 {:.6f}  p99.9 {:.6f}\n"
        "delta p    mean {:.3f}% ± {:.3f}%  RMS {:.3f}% ± {:.3f}%  min {:.3f}%  median {:.3f}%  max {:.3f}%\n"
        "same top   {:.2f}% ± {:.2f}%\n",
        oiw::escape_text(base), k.base_ppl, std::exp(k.ln_ppl_ratio), k.ln_ppl_ratio, k.ln_ppl_ratio_unc, d.mean,
        d.mean_unc, d.median, d.p99, d.max, d.min, d.p1, d.p5, d.p10, d.p90, d.p95, d.p99_9, 100 * p.mean,
        100 * p.mean_unc, 100 * k.dp_rms, 100 * k.dp_rms_unc, 100 * p.min, 100 * p.median, 100 * p.max,
        100 * k.same_top, 100 * k.same_top_unc);
}

}  // namespace

int main(int argc, char** argv) {
    using namespace oiw;
    ToolOptions o;
    if (int rc = parse_options(argc, argv, o); rc >= 0) return rc;
    return run_tool("gguf-eval", [&] {
        const eval::Semantics sem = o.semantics == "exact" ? eval::Semantics::Exact : eval::Semantics::Integer;
        const int threads = static_cast<int>(thread_count(o.threads, 1 << 20));
        const Metadata md = eval::model_metadata(o.model);
        const eval::Forward model(matmul::open_tensor_source(o.model), md, sem, threads);
        std::unique_ptr<eval::Forward> base;
        std::unique_ptr<eval::LogProbReader> base_file;
        if (!o.base.empty() && eval::LogProbReader::is_log_prob_file(o.base)) {
            base_file = std::make_unique<eval::LogProbReader>(o.base);
        } else if (!o.base.empty()) {
            const Metadata bmd = eval::model_metadata(o.base);
            base = std::make_unique<eval::Forward>(matmul::open_tensor_source(o.base), bmd, sem, threads);
        }
        std::error_code ec;
        if (!o.save.empty() && std::filesystem::exists(o.save, ec) && !eval::LogProbReader::is_log_prob_file(o.save))
            throw FormatError(ErrorKind::Usage, o.save, "--save-all-logits",
                              "exists and is not a log-probability file: not replaced");
        if (o.text.empty() && !base_file)
            throw FormatError(ErrorKind::Usage, "", "--text", "required (unless the base is a log-probability file)");
        const vocab::Vocab vocab = vocab::Vocab::load(md);
        // llama-perplexity: common_tokenize(ctx, text, add_special = true), no special-token parsing.
        std::vector<int32_t> tokens;
        if (!o.text.empty())
            tokens = vocab.tokenize(read_text_file(o.text), true, false);
        else
            tokens.assign(base_file->tokens().begin(), base_file->tokens().end());
        eval::EvalOptions eo;
        eo.ctx = base_file && !o.ctx_given ? base_file->n_ctx() : o.ctx;
        eo.chunks = base_file && o.chunks < 0 ? base_file->n_chunk() : o.chunks;
        eo.base_file = base_file.get();
        eo.save_path = o.save;
        if (vocab.add_bos() && vocab.bos_id() >= 0) eo.bos = vocab.bos_id();
        std::unique_ptr<Progress> bar;
        const eval::EvalResult r = eval::evaluate(model, base.get(), tokens, eo, [&](int64_t done, int64_t total) {
            if (!bar) bar = std::make_unique<Progress>("gguf-eval", static_cast<uint64_t>(total), 0);
            bar->update(static_cast<uint64_t>(done - 1), 0, fmt::format("chunk {}/{}", done, total));
        });
        if (bar) bar->done();
        if (o.json) {
            json::Writer w;
            w.begin_object();
            w.field("model", o.model);
            w.field("semantics", o.semantics);
            w.field("tokens", static_cast<uint64_t>(tokens.size()));
            w.field("ctx", eo.ctx);
            w.field("chunks", r.chunks);
            w.field("scored", r.scored);
            w.field("nll", r.nll);
            w.field("ppl", r.ppl);
            if (!o.save.empty()) w.field("saved", o.save);
            if (r.kld) {
                w.field("base", o.base);
                w.field("base_kind", base_file ? "log-probs" : "model");
                w.field("base_ppl", r.kld->base_ppl);
                write_kld_json(w, *r.kld);
            }
            w.end_object();
            write_stdout(w.str() + "\n");
            return 0;
        }
        std::string out = fmt::format(
            "model      {}\nsemantics  {}\ntokens     {} ({} chunks of {}, {} scored)\n"
            "PPL        {:.4f}  (mean NLL {:.6f})\n",
            escape_text(o.model), o.semantics, tokens.size(), r.chunks, eo.ctx, r.scored, r.ppl, r.nll);
        if (!o.save.empty()) out += fmt::format("saved      {} (log-probabilities)\n", escape_text(o.save));
        if (r.kld) out += kld_text(o.base, *r.kld);
        write_stdout(out);
        return 0;
    });
}
