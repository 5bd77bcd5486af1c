// gguf-edit IN OUT [--set KEY=TYPE:VALUE] [--set-array KEY=str:@FILE] [--remove KEY]
//                  [--rename-tensor OLD=NEW] [--split-max-size S | --split-max-tensors N]
//                  [--split | --merge] [--dry-run] [--json] [-q]:
// metadata surgery; tensor bytes are copied untouched. A split IN is merged (llama-gguf-split
// --merge); the split options write shards (llama-gguf-split --split). --split and --merge are
// llama-gguf-split's spellings: they only assert which of the two the run does.
#include <algorithm>
#include <chrono>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "converters/edit/gguf_edit.h"
#include "libformat/escape.h"
#include "libformat/json.h"
#include "tools/common/cli_parse.h"
#include "tools/common/split_cli.h"
#include "tools/common/tool_support.h"

namespace {

struct Options {
    std::string in, out;
    std::vector<std::string> set, set_array, remove, rename;
    bool quiet = false, json = false, dry_run = false, split_mode = false, merge_mode = false;
    oiw::SplitCli split;
};

std::pair<std::string, std::string> split_rename(const std::string& s) {
    auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == s.size())
        throw oiw::FormatError(oiw::ErrorKind::Usage, "", "--rename-tensor '" + s + "'", "expected OLD=NEW");
    return {s.substr(0, eq), s.substr(eq + 1)};
}

std::string json_report(const Options& o, const oiw::EditResult& r, double seconds) {
    oiw::json::Writer w;
    w.begin_object();
    w.field("input", o.in);
    w.field("dry_run", o.dry_run);
    w.key("files");
    w.begin_array();
    for (size_t k = 0; k < r.paths.size(); ++k) {
        w.begin_object();
        w.field("path", r.paths[k]);
        w.field("bytes", r.sizes[k]);
        w.field("written", std::find(r.written.begin(), r.written.end(), r.paths[k]) != r.written.end());
        w.end_object();
    }
    w.end_array();
    w.field("keys_changed", r.kv_set);
    w.field("keys_added", r.kv_added);
    w.field("keys_removed", r.kv_removed);
    w.field("tensors_renamed", r.tensors_renamed);
    w.field("relaid_out", r.relaid_out);
    w.field("seconds", seconds);
    w.end_object();
    return w.take() + "\n";
}

int run(const Options& o) {
    const auto start = std::chrono::steady_clock::now();
    const oiw::SplitOptions split = oiw::split_options(o.split);
    if (o.split_mode && !split.active())
        throw oiw::FormatError(oiw::ErrorKind::Usage, "", "--split", "needs --split-max-size or --split-max-tensors");
    oiw::Model in = oiw::open_model(o.in);
    if (o.merge_mode && (split.active() || !in.is_split()))
        throw oiw::FormatError(oiw::ErrorKind::Usage, o.in, "--merge",
                               split.active() ? "cannot be used with the split options" : "is not a split model");
    oiw::EditPlan plan;
    for (const auto& s : o.set) plan.set.push_back(oiw::parse_kv_assignment(s));
    for (const auto& s : o.set_array) plan.set.push_back(oiw::parse_string_array_assignment(s));
    plan.remove = o.remove;
    for (const auto& s : o.rename) plan.renames.push_back(split_rename(s));
    oiw::EditResult r = oiw::write_edited(in, plan, o.out, split, o.dry_run);
    if (r.relaid_out)
        fmt::print(stderr, "gguf-edit: warning: {}: tensor layout was not canonical; offsets in {} were recomputed\n",
                   o.in, o.out);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (o.json) {
        oiw::write_stdout(json_report(o, r, seconds));
    } else if (o.dry_run) {
        for (size_t k = 0; k < r.paths.size(); ++k)
            oiw::write_stdout(fmt::format("would write {} ({} bytes)\n", oiw::escape_text(r.paths[k]), r.sizes[k]));
    } else if (!o.quiet) {
        oiw::write_stdout(fmt::format("{}: {} keys changed, {} added, {} removed, {} tensors renamed\n",
                                      oiw::written_text(r.written), r.kv_set, r.kv_added, r.kv_removed,
                                      r.tensors_renamed) +
                          oiw::summary_line("gguf-edit", r.written, seconds));
    }
    return oiw::kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    CLI::App app{
        "gguf-edit: edit GGUF metadata without touching tensor bytes (no edits = byte-exact copy);\n"
        "also merges a split model (IN: any shard) and splits one (--split-max-size/--split-max-tensors)",
        "gguf-edit"};
    app.add_option("IN", o.in, "input .gguf")->required();
    app.add_option("OUT", o.out, "output .gguf (written atomically; must not be IN)")->required();
    app.add_option("--set", o.set, "KEY=TYPE:VALUE (TYPE: u8 i8 u16 i16 u32 i32 u64 i64 f32 f64 bool str)");
    app.add_option("--set-array", o.set_array, "KEY=str:@FILE: string array, one element per line of FILE");
    app.add_option("--remove", o.remove, "remove KEY");
    app.add_option("--rename-tensor", o.rename, "OLD=NEW");
    app.add_flag("-q,--quiet", o.quiet, "print nothing on success");
    app.add_flag("--dry-run", o.dry_run, "print the files (shards) and sizes it would write; write nothing");
    app.add_flag("--json", o.json, "report as JSON on stdout");
    auto* sm = app.add_flag("--split", o.split_mode, "llama-gguf-split's spelling: split (needs a split option)");
    auto* mm = app.add_flag("--merge", o.merge_mode, "llama-gguf-split's spelling: merge the split model IN");
    sm->excludes(mm);
    oiw::add_split_options(app, o.split);
    OIW_CLI_PARSE(app, argc, argv);
    return oiw::run_tool("gguf-edit", [&] { return run(o); });
}
