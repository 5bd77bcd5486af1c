// gguf-edit IN OUT [--set KEY=TYPE:VALUE] [--set-array KEY=str:@FILE] [--remove KEY]
//                  [--rename-tensor OLD=NEW] [--split-max-size S | --split-max-tensors N]:
// metadata surgery; tensor bytes are copied untouched. A split IN is merged (llama-gguf-split
// --merge); the split options write shards (llama-gguf-split --split).
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "converters/edit/gguf_edit.h"
#include "tools/common/cli_parse.h"
#include "tools/common/split_cli.h"
#include "tools/common/tool_support.h"

namespace {

struct Options {
    std::string in, out;
    std::vector<std::string> set, set_array, remove, rename;
    bool quiet = false;
    oiw::SplitCli split;
};

std::pair<std::string, std::string> split_rename(const std::string& s) {
    auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == s.size())
        throw oiw::FormatError(oiw::ErrorKind::Usage, "", "--rename-tensor '" + s + "'", "expected OLD=NEW");
    return {s.substr(0, eq), s.substr(eq + 1)};
}

int run(const Options& o) {
    oiw::Model in = oiw::open_model(o.in);
    oiw::EditPlan plan;
    for (const auto& s : o.set) plan.set.push_back(oiw::parse_kv_assignment(s));
    for (const auto& s : o.set_array) plan.set.push_back(oiw::parse_string_array_assignment(s));
    plan.remove = o.remove;
    for (const auto& s : o.rename) plan.renames.push_back(split_rename(s));
    oiw::EditResult r = oiw::write_edited(in, plan, o.out, oiw::split_options(o.split));
    if (r.relaid_out)
        fmt::print(stderr, "gguf-edit: warning: {}: tensor layout was not canonical; offsets in {} were recomputed\n",
                   o.in, o.out);
    if (!o.quiet) {
        fmt::print("{}: {} keys changed, {} added, {} removed, {} tensors renamed\n", oiw::written_text(r.written),
                   r.kv_set, r.kv_added, r.kv_removed, r.tensors_renamed);
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
    oiw::add_split_options(app, o.split);
    OIW_CLI_PARSE(app, argc, argv);
    return oiw::run_tool("gguf-edit", [&] { return run(o); });
}
