// gguf-synth OUT [--n-embd N ...] [--sparse] [--split-max-size S | --split-max-tensors N]
// [--imatrix FILE]: writes a deterministic synthetic llama / MoE model (samples, benchmarks, tests),
// as one file or as gguf-split shards; --sparse leaves the tensor data as holes (zeros) for scale
// tests; --imatrix also writes an importance matrix for it (the presets that require one); --hf
// writes a Hugging Face checkpoint directory instead (gguf-convert's input; --hf-arch picks the
// family: llama, Qwen2, Qwen3).
#include <chrono>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "converters/synth/synth.h"
#include "converters/synth/synth_hf.h"
#include "converters/synth/synth_imatrix.h"
#include "libformat/json.h"
#include "tools/common/cli_parse.h"
#include "tools/common/split_cli.h"
#include "tools/common/tool_support.h"

namespace {

// The options that shape a Hugging Face checkpoint (each needs --hf).
std::vector<CLI::Option*> add_hf_options(CLI::App& app, oiw::SynthHfOptions& hfo) {
    auto* hf_arch = app.add_option(
        "--hf-arch", hfo.arch,
        fmt::format("with --hf: the family's tensors and config.json ({})", oiw::synth_hf_architectures()));
    auto* head_dim = app.add_option("--head-dim", hfo.head_dim, "with --hf: attention head width (0: n_embd / n_head)")
                         ->check(CLI::NonNegativeNumber);
    auto* fused = app.add_flag("--hf-fused-experts", hfo.fused_experts,
                               "with --hf and a Qwen MoE family: each block's experts as the two tensors newer "
                               "transformers write (mlp.experts.gate_up_proj [X, 2F, E], mlp.experts.down_proj "
                               "[X, E, F])");
    auto* fp8 = app.add_option("--hf-fp8", hfo.fp8,
                               "with --hf: an FP8 release's layout: the projections F8_E4M3 with F32 *_scale_inv "
                               "scales per RxC block (e.g. 128x128: weight_block_size), per row (row) or per matrix "
                               "(tensor), quantization_config.quant_method fp8");
    return {hf_arch, head_dim, fused, fp8};
}

}  // namespace

int main(int argc, char** argv) {
    oiw::SynthOptions o;
    std::string out, type = "F16", imatrix;
    oiw::SplitCli split;
    bool json = false, quiet = false, hf = false;
    oiw::SynthHfOptions hfo;
    CLI::App app{"gguf-synth: write a synthetic llama-style (or MoE) GGUF model with random heavy-tailed weights",
                 "gguf-synth"};
    app.option_defaults()->always_capture_default();  // --help shows each option's default
    app.add_option("OUT", out, "output .gguf (with --hf: the checkpoint's directory)")->required();
    app.add_option("--name", o.name, "general.name");
    app.add_option("--n-embd", o.n_embd, "embedding width")->check(oiw::at_least_one());
    app.add_option("--n-layer", o.n_layer, "blocks")->check(CLI::NonNegativeNumber);
    app.add_option("--n-ff", o.n_ff, "FFN width (per expert for MoE)")->check(oiw::at_least_one());
    app.add_option("--n-vocab", o.n_vocab, "vocabulary size")->check(CLI::Range(int64_t{3}, int64_t{1} << 24));
    app.add_option("--n-head", o.n_head, "attention heads")->check(oiw::at_least_one());
    app.add_option("--n-head-kv", o.n_head_kv, "KV heads")->check(oiw::at_least_one());
    app.add_option("--n-expert", o.n_expert, "experts (0 = dense)")->check(CLI::NonNegativeNumber);
    auto* used = app.add_option("--n-expert-used", o.n_expert_used, "experts used per token (with --n-expert)");
    app.add_flag("--tied", o.tied, "tie embeddings (no output.weight)");
    app.add_option("--type", type, "matrix type: F32, F16, BF16 or a quantized type (Q8_0, Q4_K, ...)");
    app.add_option("--seed", o.seed, "random seed");
    app.add_flag("--sparse", o.sparse,
                 "leave the tensor data as holes (zeros): full-size files that cost only their headers on disk");
    app.add_option("--imatrix", imatrix,
                   "also write an importance matrix for the model to this file (llama-imatrix's GGUF format, "
                   "deterministic positive values; for the presets that require one)");
    app.add_flag("--hf", hf,
                 "write a Hugging Face checkpoint (config.json of --hf-arch's family and model.safetensors; "
                 "--type F32, F16 or BF16; with --split-max-size, model-0000K-of-0000N.safetensors "
                 "shards and model.safetensors.index.json) into the directory OUT");
    const std::vector<CLI::Option*> hf_only = add_hf_options(app, hfo);
    app.add_flag("--json", json, "report as JSON on stdout");
    app.add_flag("-q,--quiet", quiet, "print nothing on success");
    oiw::add_split_options(app, split);
    OIW_CLI_PARSE(app, argc, argv);
    return oiw::run_tool("gguf-synth", [&] {
        const auto start = std::chrono::steady_clock::now();
        if (used->count() && o.n_expert == 0)
            throw oiw::FormatError(oiw::ErrorKind::Usage, "", "--n-expert-used", "needs --n-expert (a MoE model)");
        auto t = oiw::type_from_name(type);
        if (!t) throw oiw::FormatError(oiw::ErrorKind::Usage, "", "--type", "unknown ggml type '" + type + "'");
        o.type = *t;
        const oiw::SplitOptions so = oiw::split_options(split);
        if (!imatrix.empty() && so.shard != 0)
            throw oiw::FormatError(oiw::ErrorKind::Usage, "", "--imatrix", "needs the whole model (not with --shard)");
        std::vector<std::string> files;
        if (hf && (!imatrix.empty() || so.shard || so.max_tensors || so.no_tensor_first_split))
            throw oiw::FormatError(oiw::ErrorKind::Usage, "", "--hf",
                                   "takes --split-max-size only (not --imatrix, --shard, --split-max-tensors, "
                                   "--no-tensor-first-split)");
        for (const CLI::Option* opt : hf_only)
            if (!hf && opt->count())
                throw oiw::FormatError(oiw::ErrorKind::Usage, "", opt->get_name(),
                                       "needs --hf (a Hugging Face checkpoint)");
        hfo.max_shard_bytes = so.max_bytes;
        const uint64_t params =
            hf ? oiw::write_synth_hf(out, o, hfo, &files) : oiw::write_synth_model(out, o, so, &files);
        size_t imatrix_entries = 0;
        if (!imatrix.empty())
            imatrix_entries = oiw::write_synth_imatrix(imatrix, oiw::open_model(files.front()), o.seed);
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (json) {
            oiw::json::Writer w;
            w.begin_object();
            w.key("output");
            w.begin_array();
            for (const auto& f : files) w.value(f);
            w.end_array();
            w.field("parameters", params);
            if (!imatrix.empty()) {
                w.field("imatrix", imatrix);
                w.field("imatrix_entries", static_cast<uint64_t>(imatrix_entries));
            }
            w.field("seconds", seconds);
            w.end_object();
            oiw::write_stdout(w.take() + "\n");
        } else if (!quiet) {
            std::string text = fmt::format("{}: {} parameters\n", oiw::written_text(files), params);
            auto all = files;
            if (!imatrix.empty()) {
                text += fmt::format("{}: importance matrix, {} entries\n", imatrix, imatrix_entries);
                all.push_back(imatrix);
            }
            oiw::write_stdout(text + oiw::summary_line("gguf-synth", all, seconds));
        }
        return oiw::kExitOk;
    });
}
