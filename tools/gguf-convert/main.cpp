// gguf-convert HF_DIR [OUT] [--outtype f32|f16|bf16|q8_0|auto] [--preset P [--imatrix F] | --plan PLAN]
// [-t N] [--split-max-size S | --split-max-tensors N] [--no-tensor-first-split] [--dry-run] [--json]:
// a Hugging Face checkpoint (config.json, safetensors shards, tokenizer) to GGUF (or its shards), byte
// for byte as llama.cpp's convert_hf_to_gguf.py writes it, streaming one tensor at a time in chunks on
// N threads; with --preset / --plan, straight on through the requantizer, as gguf-requant would
// quantize that output, without writing it.
#include <chrono>
#include <filesystem>
#include <optional>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "converters/hf/checkpoint.h"
#include "converters/hf/convert.h"
#include "converters/hf/convert_requant.h"
#include "converters/planner/planner.h"
#include "converters/requant/requant.h"
#include "libformat/json.h"
#include "libformat/types.h"
#include "tools/common/cli_parse.h"
#include "tools/common/requant_args.h"
#include "tools/common/split_cli.h"
#include "tools/common/tool_support.h"

namespace {

struct Options {
    std::string dir, out, outtype = "auto";
    oiw::hf::PlanOptions convert;  // --model-name, --metadata, --vocab-only
    bool dry_run = false, json = false, quiet = false;
    unsigned threads = 0;
    oiw::SplitCli split;
    // Straight to a preset: --preset / --plan and the requantizer's type options.
    std::string preset, plan, output_type, embd_type;
    std::vector<std::string> type_rules;
    oiw::RequantOptions requant;
    std::optional<oiw::PlanFile> plan_file;
    std::vector<std::string> written;  // files written
};

// The split options as the Python converter takes them: --no-tensor-first-split alone is a split
// too (a metadata shard, then every tensor in a second one).
oiw::SplitOptions split_of(const Options& o) {
    oiw::SplitCli c = o.split;
    c.no_tensor_first_split = false;
    oiw::SplitOptions s = oiw::split_options(c, o.split.no_tensor_first_split);
    s.no_tensor_first_split = o.split.no_tensor_first_split;
    return s;
}

// Each planned tensor's type in the output: the converter's, or the requantizer's (`job`).
std::vector<oiw::GgmlType> output_types(const oiw::hf::ConvertPlan& p, const oiw::RequantJob* job) {
    std::vector<oiw::GgmlType> v;
    for (const auto& t : p.tensors) v.push_back(t.type);
    if (job)
        for (const auto& t : job->plan.tensors) v.at(t.input_index) = t.dst_type;
    return v;
}

std::string report_json(const oiw::hf::ConvertPlan& p, const Options& o, const oiw::RequantJob* job, double seconds) {
    const auto types = output_types(p, job);
    oiw::json::Writer w;
    w.begin_object();
    w.field("input", o.dir);
    if (!o.dry_run) {
        w.field("output", o.out);
        w.key("files");
        w.begin_array();
        for (const auto& f : o.written) w.value(f);
        w.end_array();
    }
    w.field("architecture", p.arch);
    w.field("parameters", p.total_params);
    if (job) {
        w.field("preset", std::string(o.requant.plan.preset->name));
        w.field("file_type", job->ftype);
        w.field("size", job->file_size);
    }
    w.key("tensors");
    w.begin_array();
    for (size_t i = 0; i < p.tensors.size(); ++i) {
        const auto& t = p.tensors[i];
        w.begin_object();
        w.field("name", t.name);
        w.field("source", t.source_name());
        if (!t.stacked.empty()) w.field("stacked", static_cast<uint64_t>(t.stacked.size()));  // sources stacked
        w.field("type", std::string(oiw::type_name(types[i])));
        w.key("shape");
        w.begin_array();
        for (int64_t d : t.ne) w.value(d);
        w.end_array();
        w.end_object();
    }
    w.end_array();
    w.key("notes");
    w.begin_array();
    for (const auto& n : p.notes) w.value(n);
    w.end_array();
    if (job) {  // the requantizer's (a plain conversion has none)
        w.key("warnings");
        w.begin_array();
        for (const auto& n : job->plan.warnings) w.value(n);
        w.end_array();
    }
    w.field("seconds", seconds);
    w.end_object();
    return w.take() + "\n";
}

std::string report_text(const oiw::hf::ConvertPlan& p, const Options& o, const oiw::RequantJob* job) {
    const auto types = output_types(p, job);
    std::string s;
    for (size_t i = 0; i < p.tensors.size(); ++i) {
        const auto& t = p.tensors[i];
        std::string shape;
        for (int64_t d : t.ne) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
        const std::string more = t.stacked.empty() ? "" : fmt::format(" (+{} stacked)", t.stacked.size() - 1);
        s += fmt::format("{:<32} {:<7} {{{}}}  <- {}{}\n", t.name, oiw::type_name(types[i]), shape, t.source_name(),
                         more);
    }
    for (const auto& n : p.notes) s += "note: " + n + "\n";
    const std::string preset =
        job ? fmt::format(", {} ({} bytes as one file)", o.requant.plan.preset->name, job->file_size) : "";
    s += fmt::format("{}: {} tensors, {} parameters, {} keys{}{}\n",
                     o.dry_run ? "planned" : oiw::written_text(o.written), p.tensors.size(), p.total_params,
                     p.kvs.size(), preset, o.dry_run ? " (dry run: nothing written)" : "");
    return s;
}

// convert_hf_to_gguf.py's --outfile: an existing directory (the checkpoint's when OUT is not given)
// gets the default file name (gguf.naming_convention, the preset's name as the type when there is
// one); a file name has its {ftype} / {outtype} templates filled.
std::string resolve_out(const std::string& out, const oiw::hf::ConvertPlan& plan, const std::string& type) {
    std::error_code ec;
    if (std::filesystem::is_directory(out, ec))
        return (std::filesystem::path(out) / (oiw::hf::default_file_name(plan, type) + ".gguf")).string();
    const std::filesystem::path p(out);
    return (p.parent_path() / oiw::hf::fill_templated_filename(p.filename().string(), type)).string();
}

// --preset / --plan and the type options into o.requant (as gguf-requant reads them).
void requant_options(Options& o, const CLI::Option* rules) {
    oiw::PlanOptions& p = o.requant.plan;
    if (!o.plan.empty()) o.plan_file = oiw::plan_arg(o.plan, o.requant.imatrix_path, p, o.preset);
    if (o.preset.empty())
        throw oiw::FormatError(oiw::ErrorKind::Usage, "", "--plan", "the plan names no preset: pass --preset");
    p.preset = &oiw::preset_arg(o.preset, "--preset");
    if (!o.output_type.empty()) p.output_tensor_type = oiw::parse_target_type(o.output_type, "--output-tensor-type");
    if (!o.embd_type.empty()) p.token_embedding_type = oiw::parse_target_type(o.embd_type, "--token-embedding-type");
    if (rules->count())
        for (const auto& r : o.type_rules) p.tensor_types.push_back(oiw::tensor_type_arg(r));
    o.requant.dry_run = o.dry_run;
    o.requant.split = oiw::split_options(o.split);
}

// Converts and requantizes (--preset / --plan): the requantizer reads the checkpoint through
// ConvertedInput. Returns the job (its plan is what a dry run reports).
oiw::RequantJob convert_requant(const oiw::hf::ConvertPlan& plan, Options& o) {
    const oiw::hf::ConvertedInput in(plan, o.dir, o.threads);
    oiw::RequantJob job = [&] {
        try {
            return oiw::prepare_requant(in, o.requant);
        } catch (const oiw::FormatError& e) {
            throw oiw::with_option_hint(e);
        }
    }();
    if (o.plan_file) {
        std::vector<std::pair<std::string, oiw::GgmlType>> types;
        for (const auto& t : job.plan.tensors) types.emplace_back(t.name, t.dst_type);
        if (const std::string why = oiw::plan_mismatch(*o.plan_file, types, job.file_size); !why.empty())
            throw oiw::FormatError(oiw::ErrorKind::Usage, "", "--plan", why);
    }
    for (const auto& w : job.plan.warnings) fmt::print(stderr, "gguf-convert: warning: {}\n", w);
    if (o.dry_run) return job;
    oiw::Progress bar("gguf-convert", job.plan.tensors.size(), job.written_src_bytes);
    oiw::write_requant(in, job, o.out, o.threads,
                       [&](size_t i, uint64_t bytes, std::string_view name) { bar.update(i, bytes, name); });
    bar.done();
    for (size_t k = 0; k < job.out_sizes.size(); ++k)
        if (!job.split.active() || job.split.writes_shard(k))
            o.written.push_back(oiw::output_path(o.out, job.split, static_cast<unsigned>(k),
                                                 static_cast<unsigned>(job.out_sizes.size())));
    return job;
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    CLI::App app{
        "gguf-convert: convert a Hugging Face checkpoint (safetensors) to GGUF as llama.cpp's "
        "convert_hf_to_gguf.py does, byte for byte; optionally straight on to a llama-quantize preset",
        "gguf-convert"};
    app.option_defaults()->always_capture_default();
    app.add_option("HF_DIR", o.dir, "checkpoint directory (config.json, model*.safetensors, tokenizer.model)")
        ->required();
    app.add_option("OUT", o.out,
                   "output .gguf; a directory (default: HF_DIR) gets the Python converter's default name "
                   "(Name-Size-F16.gguf); {ftype} / {FTYPE} in the name become the output type");
    auto* outtype =
        app.add_option("--outtype", o.outtype,
                       "type of the weight matrices: f32, f16, bf16, q8_0 (from the source values, rows not a "
                       "multiple of 32 in f16), or auto (the checkpoint's 16-bit "
                       "type, else f16); 1-D tensors, norms and biases stay f32. With --preset: the type "
                       "the preset quantizes from (default f16)");
    app.add_option("--model-name", o.convert.model_name, "general.name, over the model card's and the directory's");
    app.add_option("--metadata", o.convert.metadata_file,
                   "JSON file of general.* keys (convert_hf_to_gguf.py's override file) over the model card's");
    app.add_flag("--vocab-only", o.convert.vocab_only,
                 "write the keys and vocabulary only, no tensors (the Python converter's --vocab-only; default "
                 "name Name-vocab.gguf)");
    app.add_option("--preset", o.preset,
                   "quantize on the way out as gguf-requant --preset does (Q4_K_M, Q8_0, ...): the bytes of "
                   "--outtype f16 then gguf-requant, without the intermediate file");
    app.add_option("--plan", o.plan, "execute a gguf-plan plan (its preset and per-tensor types)");
    app.add_option("--imatrix", o.requant.imatrix_path, "importance matrix for --preset / --plan");
    auto* rules = app.add_option("--tensor-type", o.type_rules, "REGEX=TYPE for --preset: matching tensors get TYPE");
    app.add_option("--output-tensor-type", o.output_type, "type of output.weight (with --preset)");
    app.add_option("--token-embedding-type", o.embd_type, "type of token_embd.weight (with --preset)");
    app.add_flag("--pure", o.requant.plan.pure, "with --preset: no mixture rules");
    app.add_flag("--leave-output-tensor", o.requant.plan.leave_output_tensor,
                 "with --preset: output.weight stays as converted");
    oiw::add_threads_option(app, o.threads);
    oiw::add_split_options(app, o.split);
    app.add_flag("--dry-run", o.dry_run, "print the planned tensors, types, keys and size; write nothing");
    app.add_flag("--json", o.json, "report as JSON on stdout");
    app.add_flag("-q,--quiet", o.quiet, "print nothing on success");
    app.footer(std::string("Architectures: ") + oiw::hf::supported_architectures() +
               " (SentencePiece tokenizer.model).");
    OIW_CLI_PARSE(app, argc, argv);
    return oiw::run_tool("gguf-convert", [&] {
        const auto start = std::chrono::steady_clock::now();
        const bool quantize = !o.preset.empty() || !o.plan.empty();
        if (quantize && !outtype->count()) o.outtype = "f16";
        const auto ot = oiw::hf::out_type_from_name(o.outtype);
        if (!ot)
            throw oiw::FormatError(oiw::ErrorKind::Usage, "", "--outtype",
                                   "'" + o.outtype + "' is not f32, f16, bf16, q8_0 or auto");
        if (quantize && *ot == oiw::hf::OutType::Q8_0)
            throw oiw::FormatError(oiw::ErrorKind::Usage, "", "--outtype",
                                   "q8_0 is an output type; --preset / --plan quantize from f32, f16 or bf16");
        const bool requant_option = !o.requant.imatrix_path.empty() || rules->count() || !o.output_type.empty() ||
                                    !o.embd_type.empty() || o.requant.plan.pure || o.requant.plan.leave_output_tensor;
        if (!quantize && requant_option)
            throw oiw::FormatError(oiw::ErrorKind::Usage, "", "--imatrix/--tensor-type/...", "need --preset or --plan");
        if (o.convert.vocab_only &&
            (quantize || o.split.max_size || o.split.shard || o.split.max_tensors || o.split.no_tensor_first_split))
            throw oiw::FormatError(oiw::ErrorKind::Usage, "", "--vocab-only",
                                   "writes one file of keys: not with --preset, --plan or the split options");
        if (quantize) requant_options(o, rules);
        const oiw::hf::Checkpoint ck(o.dir);
        const oiw::hf::ConvertPlan plan = oiw::hf::plan_convert(ck, *ot, o.convert);
        if (!o.out.empty() || !o.dry_run)
            o.out = resolve_out(o.out.empty() ? o.dir : o.out, plan, quantize ? o.preset : plan.output_type);
        std::optional<oiw::RequantJob> job;
        if (quantize) {
            job = convert_requant(plan, o);
        } else if (!o.dry_run) {
            oiw::hf::WriteOptions wo;
            wo.threads = o.threads;
            wo.split = split_of(o);
            oiw::Progress bar("gguf-convert", plan.tensors.size(), plan.total_bytes());
            wo.progress = [&](size_t i, uint64_t bytes, std::string_view name) { bar.update(i, bytes, name); };
            o.written = oiw::hf::write_convert(plan, o.out, wo);
            bar.done();
        }
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        const oiw::RequantJob* j = job ? &*job : nullptr;
        if (o.json)
            oiw::write_stdout(report_json(plan, o, j, seconds));
        else if (!o.quiet)
            oiw::write_stdout(report_text(plan, o, j));
        return oiw::kExitOk;
    });
}
