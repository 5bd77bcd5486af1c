#include "tools/gguf-requant/options.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "tools/common/cli_parse.h"
#include "tools/common/requant_args.h"
#include "tools/common/split_cli.h"
#include "tools/common/tool_support.h"

namespace oiw::requant_cli {
namespace {

// --override-kv as llama-quantize reads it: its "int" values are written as u32 (absolute value).
GgufKV parse_override(const std::string& spec) {
    GgufKV kv = parse_kv_assignment(spec);
    const auto eq = spec.find('=');
    if (spec.compare(eq + 1, 4, "int:") == 0)
        kv.value =
            GgufValue::make_scalar<uint32_t>(GgufType::U32, static_cast<uint32_t>(std::llabs(*kv.value.as_int())));
    return kv;
}

bool is_count(const std::string& s) { return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos; }

// llama-quantize's positional form, IN [OUT] TYPE [NTHREADS]: when the word after IN names a
// preset, OUT is <IN's directory>/ggml-model-<TYPE>.gguf, as llama-quantize names it (the name
// as given, upper-cased; for an ftype number, the preset's name).
void take_positionals(const std::vector<std::string>& args, bool have_preset, ToolOptions& o, std::string& preset,
                      std::string& nthreads) {
    o.in = args.at(0);
    size_t next = 1;
    if (!have_preset && args.size() >= 2 && lookup_preset(args[1]) && (args.size() == 2 || is_count(args[2]))) {
        std::string name = is_count(args[1]) ? std::string(lookup_preset(args[1])->name) : args[1];
        std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::toupper(c); });
        o.out = o.in.substr(0, o.in.find_last_of('/') + 1) + "ggml-model-" + name + ".gguf";
    } else if (args.size() >= 2) {
        if (!have_preset && lookup_preset(args[1]) && args.size() >= 3 && !lookup_preset(args[2]))
            throw FormatError(ErrorKind::Usage, "", "'" + args[1] + "'",
                              fmt::format("a preset where OUT belongs: write IN OUT {0} (llama-quantize's order) or "
                                          "IN OUT --preset {0}",
                                          args[1]));
        o.out = args[next++];
    }
    if (next < args.size()) {
        if (have_preset)
            throw FormatError(ErrorKind::Usage, "", "'" + args[next] + "'",
                              "unexpected: the type is given by --preset or --plan already");
        preset = args[next++];
        if (!lookup_preset(preset)) throw FormatError(ErrorKind::Usage, "", "TYPE", unknown_preset_text(preset));
    }
    if (next < args.size()) nthreads = args[next++];
    if (next < args.size())
        throw FormatError(ErrorKind::Usage, "", "'" + args[next] + "'",
                          "unexpected (usage: gguf-requant [OPTIONS] IN [OUT] [TYPE [NTHREADS]])");
}

}  // namespace

int parse_options(int argc, char** argv, ToolOptions& o) {
    CLI::App app{
        "gguf-requant: convert / requantize a GGUF model with llama-quantize's presets and mixture rules\n"
        "(output identical to llama-quantize's, written atomically; the input is never modified)",
        "gguf-requant"};
    set_usage(app, "gguf-requant [OPTIONS] IN [OUT] [TYPE [NTHREADS]]   (or IN [OUT] --preset TYPE)");
    std::string preset, output_type, embd_type;
    std::vector<std::string> args, type_rules, type_files, overrides;
    RequantOptions& r = o.requant;
    PlanOptions& p = r.plan;
    app.add_option(
           "IN OUT TYPE NTHREADS", args,
           "input .gguf, output .gguf (not needed with --dry-run; llama-quantize's ggml-model-TYPE.gguf beside "
           "IN when omitted before TYPE), and as in llama-quantize the preset (name or ftype number) and threads")
        ->required()
        ->type_name("");
    std::string plan;
    app.add_option("--preset", preset,
                   "llama-quantize type: Q4_K_M, Q8_0, ... (an unknown name lists them all; with --plan: the plan's)");
    app.add_option(
        "--plan", plan,
        "execute a gguf-plan plan; fails unless every tensor gets its planned type and the file its predicted size");
    auto* tt = app.add_option("--tensor-type", type_rules,
                              "REGEX=TYPE: tensors whose name matches get TYPE (first match wins)");
    auto* tf =
        app.add_option("--tensor-type-file", type_files,
                       "file of REGEX=TYPE entries (whitespace-separated, '#' comments; a gguf-plan plan; a pipe)");
    app.add_option("--output-tensor-type", output_type, "type of output.weight");
    app.add_option("--token-embedding-type", embd_type, "type of token_embd.weight");
    app.add_flag("--leave-output-tensor", p.leave_output_tensor, "leave output.weight as it is");
    app.add_flag("--pure", p.pure, "no mixture rules: every quantized tensor gets the preset's type");
    app.add_option("--keep", p.keep, "REGEX: copy matching tensors unchanged (repeatable)");
    app.add_option("--imatrix", r.imatrix_path, "importance matrix (GGUF from llama-imatrix, or legacy .dat)");
    app.add_option("--include-weights", r.include_weights,
                   "use the imatrix only for entries containing this (repeatable)");
    app.add_option("--exclude-weights", r.exclude_weights,
                   "do not use the imatrix for entries containing this (repeatable)");
    app.add_flag("--allow-requantize", r.allow_requantize, "allow quantized input (dequantized first: lower quality)");
    app.add_option("--override-kv", overrides, "KEY=TYPE:VALUE written to the output metadata (repeatable)");
    auto* threads = add_threads_option(app, o.threads);
    app.add_flag("--reference-kernels", r.reference_kernels,
                 "use the scalar reference quantizers (benchmark baseline; identical bytes)");
    app.add_flag("--dry-run", r.dry_run, "print the plan per tensor and the totals; write nothing");
    app.add_flag("--json", o.json, "report as JSON on stdout");
    app.add_flag("-q,--quiet", o.quiet, "no report on stdout (errors and warnings still on stderr)");
    SplitCli split;
    add_split_options(app, split);
    app.add_flag("--keep-split", r.keep_split,
                 "one output shard per input shard, as llama-quantize --keep-split writes them");
    OIW_CLI_PARSE(app, argc, argv);

    return run_tool("gguf-requant", [&] {
        std::string nthreads;
        take_positionals(args, !preset.empty() || !plan.empty(), o, preset, nthreads);
        if (!nthreads.empty()) {
            if (threads->count())
                throw FormatError(ErrorKind::Usage, "", "NTHREADS", "given twice (positional and --threads)");
            if (!is_count(nthreads) || nthreads.size() > 6)
                throw FormatError(ErrorKind::Usage, "", "NTHREADS", "'" + nthreads + "' is not a thread count");
            o.threads = static_cast<unsigned>(std::stoul(nthreads));
        }
        if (o.out.empty() && !r.dry_run)
            throw FormatError(ErrorKind::Usage, "", "OUT", "output path required (or --dry-run)");
        if (!plan.empty()) o.plan = plan_arg(plan, r.imatrix_path, p, preset);
        if (preset.empty())
            throw FormatError(ErrorKind::Usage, "", "--preset", "required (or TYPE after IN OUT, or --plan)");
        p.preset = &preset_arg(preset, "--preset");
        if (!output_type.empty()) p.output_tensor_type = parse_target_type(output_type, "--output-tensor-type");
        if (!embd_type.empty()) p.token_embedding_type = parse_target_type(embd_type, "--token-embedding-type");
        if (r.imatrix_path.empty() && !(r.include_weights.empty() && r.exclude_weights.empty()))
            throw FormatError(ErrorKind::Usage, "",
                              r.include_weights.empty() ? "--exclude-weights" : "--include-weights", "needs --imatrix");
        // --tensor-type and --tensor-type-file rules keep their command-line order.
        size_t next_rule = 0, next_file = 0;
        for (const CLI::Option* opt : app.parse_order()) {
            if (opt == tt) p.tensor_types.push_back(tensor_type_arg(type_rules.at(next_rule++)));
            if (opt == tf)
                for (auto& rule : read_tensor_type_file(type_files.at(next_file++)))
                    p.tensor_types.push_back(std::move(rule));
        }
        for (const auto& spec : overrides) r.override_kv.push_back(parse_override(spec));
        r.split = split_options(split, r.keep_split);
        return -1;
    });
}

}  // namespace oiw::requant_cli
