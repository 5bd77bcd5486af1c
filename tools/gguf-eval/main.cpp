// gguf-eval MODEL -f TEXT [--ctx 256] [--chunks N] [--base SOURCE] [--semantics exact|integer]
//           [--json] [-t N]: perplexity of MODEL on TEXT through the bundled forward pass
// (converters/eval/), and with --base the KL divergence of MODEL's next-token distributions from
// SOURCE's, as llama-perplexity (--kl-divergence) reports them. MODEL and SOURCE: GGUF, split or OIW4.
#include <cstdio>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "converters/eval/forward.h"
#include "converters/eval/perplexity.h"
#include "converters/vocab/vocab.h"
#include "libformat/escape.h"
#include "libformat/io/text_file.h"
#include "libformat/json.h"
#include "libformat/parallel.h"
#include "tools/common/cli_parse.h"
#include "tools/common/tool_support.h"

namespace {

struct ToolOptions {
    std::string model, text, base, semantics = "exact";
    int64_t ctx = 256, chunks = -1;
    bool json = false;
    unsigned threads = 0;
};

int parse_options(int argc, char** argv, ToolOptions& o) {
    CLI::App app{"gguf-eval: perplexity and KL divergence through the bundled reference forward pass", "gguf-eval"};
    std::string model_opt;
    app.add_option("MODEL", o.model, "model to evaluate (.gguf, a shard of a split model, or .oiw4)");
    app.add_option("-m,--model", model_opt, "the model (llama-perplexity's spelling)");
    app.add_option("-f,--text", o.text, "text file to score")->required();
    app.add_option("-c,--ctx,--ctx-size", o.ctx, "tokens per chunk (llama-perplexity's -c)")->default_val(256);
    app.add_option("--chunks", o.chunks, "at most this many chunks (default: every whole chunk)");
    app.add_option("--base,--kl-divergence-base", o.base, "source model: also report KL divergence against it");
    app.add_option("--semantics", o.semantics,
                   "exact (default): f32 activations, f64 sums; integer: as llama.cpp's CPU backend computes "
                   "(activations quantized to each weight's dot partner, F16 KV cache), for comparing with "
                   "llama-perplexity")
        ->check(CLI::IsMember({"integer", "exact"}));
    app.add_flag("--json", o.json, "one JSON document on stdout");
    oiw::add_threads_option(app, o.threads);
    oiw::add_version_flag(app);
    OIW_CLI_PARSE(app, argc, argv);
    if (!model_opt.empty()) {
        if (!o.model.empty() && o.model != model_opt) {
            std::fprintf(stderr, "gguf-eval: MODEL: given twice (positional and -m)\n");
            return 2;
        }
        o.model = model_opt;
    }
    if (o.model.empty()) {
        std::fprintf(stderr, "gguf-eval: MODEL: required (positional or -m)\n");
        return 2;
    }
    return -1;
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
        if (!o.base.empty()) {
            const Metadata bmd = eval::model_metadata(o.base);
            base = std::make_unique<eval::Forward>(matmul::open_tensor_source(o.base), bmd, sem, threads);
        }
        const vocab::Vocab vocab = vocab::Vocab::load(md);
        const std::string text = read_text_file(o.text);
        // llama-perplexity: common_tokenize(ctx, text, add_special = true), no special-token parsing.
        const std::vector<int32_t> tokens = vocab.tokenize(text, true, false);
        eval::EvalOptions eo;
        eo.ctx = o.ctx;
        eo.chunks = o.chunks;
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
            w.field("ctx", o.ctx);
            w.field("chunks", r.chunks);
            w.field("scored", r.scored);
            w.field("nll", r.nll);
            w.field("ppl", r.ppl);
            if (r.kld) {
                w.field("base", o.base);
                w.field("base_ppl", r.kld->base_ppl);
                w.key("kld");
                w.begin_object();
                w.field("mean", r.kld->mean);
                w.field("median", r.kld->median);
                w.field("p99", r.kld->p99);
                w.field("max", r.kld->max);
                w.field("same_top", r.kld->same_top);
                w.end_object();
            }
            w.end_object();
            write_stdout(w.str() + "\n");
            return 0;
        }
        std::string out = fmt::format(
            "model      {}\nsemantics  {}\ntokens     {} ({} chunks of {}, {} scored)\n"
            "PPL        {:.4f}  (mean NLL {:.6f})\n",
            escape_text(o.model), o.semantics, tokens.size(), r.chunks, o.ctx, r.scored, r.ppl, r.nll);
        if (r.kld)
            out += fmt::format(
                "base       {}  PPL {:.4f}\nKLD        mean {:.6f}  median {:.6f}  p99 {:.6f}  max {:.6f}\n"
                "same top   {:.2f}%\n",
                escape_text(o.base), r.kld->base_ppl, r.kld->mean, r.kld->median, r.kld->p99, r.kld->max,
                100 * r.kld->same_top);
        write_stdout(out);
        return 0;
    });
}
