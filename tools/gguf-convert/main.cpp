// gguf-convert HF_DIR OUT.gguf [--outtype f32|f16|bf16|auto] [-t N] [--split-max-size S |
// --split-max-tensors N] [--no-tensor-first-split] [--dry-run] [--json]: a Hugging Face checkpoint
// (config.json, safetensors shards, tokenizer) to GGUF (or its shards), byte for byte as llama.cpp's
// convert_hf_to_gguf.py writes it, streaming one tensor at a time in chunks on N threads.
#include <chrono>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "converters/hf/checkpoint.h"
#include "converters/hf/convert.h"
#include "libformat/json.h"
#include "libformat/types.h"
#include "tools/common/cli_parse.h"
#include "tools/common/split_cli.h"
#include "tools/common/tool_support.h"

namespace {

struct Options {
    std::string dir, out, outtype = "auto";
    bool dry_run = false, json = false, quiet = false;
    unsigned threads = 0;
    oiw::SplitCli split;
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

std::string report_json(const oiw::hf::ConvertPlan& p, const Options& o, double seconds) {
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
    w.key("tensors");
    w.begin_array();
    for (const auto& t : p.tensors) {
        w.begin_object();
        w.field("name", t.name);
        w.field("source", t.source.tensor->name);
        w.field("type", std::string(oiw::type_name(t.type)));
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
    w.field("seconds", seconds);
    w.end_object();
    return w.take() + "\n";
}

std::string report_text(const oiw::hf::ConvertPlan& p, const Options& o) {
    std::string s;
    for (const auto& t : p.tensors) {
        std::string shape;
        for (int64_t d : t.ne) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
        s += fmt::format("{:<32} {:<5} {{{}}}  <- {}\n", t.name, oiw::type_name(t.type), shape, t.source.tensor->name);
    }
    for (const auto& n : p.notes) s += "note: " + n + "\n";
    s += fmt::format("{}: {} tensors, {} parameters, {} keys{}\n", o.dry_run ? "planned" : oiw::written_text(o.written),
                     p.tensors.size(), p.total_params, p.kvs.size(), o.dry_run ? " (dry run: nothing written)" : "");
    return s;
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    CLI::App app{
        "gguf-convert: convert a Hugging Face checkpoint (safetensors) to GGUF as llama.cpp's "
        "convert_hf_to_gguf.py does, byte for byte",
        "gguf-convert"};
    app.option_defaults()->always_capture_default();
    app.add_option("HF_DIR", o.dir, "checkpoint directory (config.json, model*.safetensors, tokenizer.model)")
        ->required();
    app.add_option("OUT", o.out, "output .gguf (not needed with --dry-run)");
    app.add_option("--outtype", o.outtype,
                   "type of the weight matrices: f32, f16, bf16, or auto (the checkpoint's 16-bit type, else f16); "
                   "1-D tensors, norms and biases stay f32");
    oiw::add_threads_option(app, o.threads);
    oiw::add_split_options(app, o.split);
    app.add_flag("--dry-run", o.dry_run, "print the planned tensors, types and keys; write nothing");
    app.add_flag("--json", o.json, "report as JSON on stdout");
    app.add_flag("-q,--quiet", o.quiet, "print nothing on success");
    app.footer(std::string("Architectures: ") + oiw::hf::supported_architectures() +
               " (SentencePiece tokenizer.model).");
    OIW_CLI_PARSE(app, argc, argv);
    return oiw::run_tool("gguf-convert", [&] {
        const auto start = std::chrono::steady_clock::now();
        const auto ot = oiw::hf::out_type_from_name(o.outtype);
        if (!ot)
            throw oiw::FormatError(oiw::ErrorKind::Usage, "", "--outtype",
                                   "'" + o.outtype + "' is not f32, f16, bf16 or auto");
        if (o.out.empty() && !o.dry_run)
            throw oiw::FormatError(oiw::ErrorKind::Usage, "", "OUT", "needed unless --dry-run");
        oiw::hf::WriteOptions wo;
        wo.threads = o.threads;
        wo.split = split_of(o);
        const oiw::hf::Checkpoint ck(o.dir);
        const oiw::hf::ConvertPlan plan = oiw::hf::plan_convert(ck, *ot);
        if (!o.dry_run) o.written = oiw::hf::write_convert(plan, o.out, wo);
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (o.json)
            oiw::write_stdout(report_json(plan, o, seconds));
        else if (!o.quiet)
            oiw::write_stdout(report_text(plan, o));
        return oiw::kExitOk;
    });
}
