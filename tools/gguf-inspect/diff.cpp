// gguf-inspect diff A B: metadata, tensor and (with --data) byte differences; either side may be
// an OIW4 file (compared as the GGUF it stands for). Exit 0 identical,
// 1 different, 2 error, like cmp. diff A --plan PLAN: B is what gguf-requant A --plan PLAN would
// write (its header; converters/planner/preview.h), so the report shows the planned types.
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include <CLI/CLI.hpp>

#include "converters/planner/preview.h"
#include "converters/repack/oiw4_convert.h"
#include "inspect/diff.h"
#include "inspect/render.h"
#include "libformat/oiw4/oiw4.h"
#include "libformat/traffic.h"
#include "tools/common/cli_parse.h"
#include "tools/common/tool_support.h"
#include "tools/gguf-inspect/commands.h"

namespace oiw::inspect_tool {

using namespace oiw::inspect;

namespace {

// A GGUF model, or an OIW4 file as the GGUF it stands for (what oiw4-convert --to-gguf writes,
// into a temp file unlinked at once: the mapping keeps it), named "PATH (OIW4)" in the report.
Model open_side(const std::string& path, std::string& name) {
    if (!is_oiw4_file(path)) return open_model(path);
    name = path + " (OIW4)";
    std::string tmpl = (std::filesystem::temp_directory_path() / "oiw-diff-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw FormatError(ErrorKind::Io, tmpl, "", std::strerror(errno));
    const std::string gguf = tmpl + "/as.gguf";
    try {
        write_gguf_from_oiw4(Oiw4File::open(path), gguf);
        Model m = open_model(gguf);
        std::filesystem::remove_all(tmpl);
        return m;
    } catch (...) {
        std::filesystem::remove_all(tmpl);
        throw;
    }
}

}  // namespace

int run_diff(int argc, char** argv) {
    CLI::App app{
        "Compare two GGUF files (or OIW4 files, as the GGUF each stands for): metadata, tensors, per-token traffic,\n"
        "and with --data the tensor bytes.\n"
        "Exit status: 0 identical, 1 different, 2 error.",
        "gguf-inspect diff"};
    std::string pa, pb, html, plan, imatrix;
    bool data = false, json = false, full = false;
    std::string color = "auto";
    app.add_option("A", pa, "first GGUF file")->required();
    auto* b_opt = app.add_option("B", pb, "second GGUF file");
    auto* plan_opt = app.add_option("--plan", plan,
                                    "compare A with what `gguf-requant A OUT --plan PLAN` would write (instead of B)")
                         ->type_name("PLAN")
                         ->excludes(b_opt);
    app.add_option("--imatrix", imatrix, "with --plan: the imatrix the plan was made with (its keys are in the output)")
        ->needs(plan_opt);
    app.add_flag("--data", data, "also compare tensor bytes (reads both files)");
    auto* j = app.add_flag("--json", json, "JSON output (schema: docs/gguf-inspect.md)");
    app.add_option("--html", html,
                   "write a self-contained HTML page (both type maps, per-layer bytes/token) to OUT; - for stdout")
        ->type_name("OUT")
        ->excludes(j);
    app.add_flag("--full", full, "show every array element and every tensor name");
    app.add_option("--color", color, "colour: auto (only on a terminal), always, never")
        ->check(CLI::IsMember({"auto", "always", "never"}));
    if (const int rc = parse_args_or_throw(app, std::vector<std::string>(argv + 1, argv + argc)); rc >= 0) return rc;

    if (pb.empty() && plan.empty())
        throw FormatError(ErrorKind::Usage, "", "B", "second file (or --plan PLAN) required");
    std::string a_name, b_name;
    const Model a = open_side(pa, a_name);
    const Model b = plan.empty() ? open_side(pb, b_name) : plan_preview(a, read_plan_file(plan), imatrix);
    const traffic::Analysis aa = traffic::analyze(a), ab = traffic::analyze(b);
    const Diff d = diff(a, aa, b, ab, data && plan.empty());
    RenderOptions o;
    o.full = full;
    o.color = want_color(color);
    const DiffReport r{a, aa, b, ab, d, plan.empty() ? b_name : plan + " (planned)", a_name};
    if (!html.empty())
        write_output(html, render_diff_html(r, o));
    else
        write_stdout(json ? render_diff_json(r, o) : render_diff_table(r, o));
    return d.identical() ? kExitOk : kExitDiffers;
}

}  // namespace oiw::inspect_tool
