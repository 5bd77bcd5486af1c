// gguf-inspect [report]: header, metadata, tensors, summaries, traffic, audit, digests.
#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "inspect/audit.h"
#include "inspect/digest.h"
#include "inspect/profile.h"
#include "inspect/render.h"
#include "libformat/oiw4/oiw4.h"
#include "libformat/traffic.h"
#include "tools/common/cli_parse.h"
#include "tools/common/tool_support.h"
#include "tools/gguf-inspect/commands.h"

namespace oiw::inspect_tool {

using namespace oiw::inspect;

namespace {

// "--hash" may stand alone: give it its default value unless an algorithm name follows, so
// "gguf-inspect --hash model.gguf" does not take the file for the algorithm.
std::vector<std::string> normalize_args(int argc, char** argv) {
    std::vector<std::string> args;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--hash" && !(i + 1 < argc && hash_from_name(argv[i + 1])))
            args.push_back("--hash=xxh3");
        else
            args.push_back(a);
    }
    return args;
}

}  // namespace

int run_report(int argc, char** argv) {
    CLI::App app{
        "Audit a GGUF model: tensor types, bytes per token, slow paths on a runtime profile.\n"
        "Also: gguf-inspect diff A.gguf B.gguf; gguf-inspect hash FILE (llama-gguf-hash; see --help there).",
        "gguf-inspect"};
    std::string path, profile_name(kDefaultProfile), bandwidth, hash, html;
    bool json = false, markdown = false, full = false, no_audit = false, list_profiles = false, shard_only = false;
    std::string color = "auto";
    app.add_option("FILE", path, "GGUF file to inspect");
    auto* j = app.add_flag("--json", json, "JSON output (schema: docs/gguf-inspect.md)");
    auto* md = app.add_flag("--markdown", markdown, "Markdown output (exact integers)")->excludes(j);
    app.add_option("--html", html,
                   "write a self-contained HTML report (type map, bytes/token charts) to OUT; - for stdout")
        ->type_name("OUT")
        ->excludes(j)
        ->excludes(md);
    app.add_flag("--full", full, "show every array element and whole values");
    app.add_option("--profile", profile_name, "runtime profile for the slow-path audit (name or path)")
        ->capture_default_str();
    app.add_flag("--no-audit", no_audit, "skip the slow-path audit");
    app.add_flag("--shard-only", shard_only,
                 "a shard of a split model: inspect this file alone (split keys shown; other shards not needed)");
    app.add_flag("--list-profiles", list_profiles, "list the runtime profiles and exit");
    app.add_option("--bandwidth", bandwidth, "memory bandwidth for the tokens/s ceiling, e.g. 20GB/s");
    unsigned threads = 0;
    add_threads_option(app, threads);
    app.add_option("--hash", hash, "per-tensor digest of the data bytes: xxh3 (default) or sha256")
        ->check(CLI::IsMember({"xxh3", "sha256"}));
    app.add_option("--color", color, "colour: auto (only on a terminal), always, never")
        ->check(CLI::IsMember({"auto", "always", "never"}));

    if (const int rc = parse_args_or_throw(app, normalize_args(argc, argv)); rc >= 0) return rc;
    if (list_profiles) {
        for (const auto& n : profile_names()) {
            const Profile p = load_profile(n);
            const std::string runtime = p.runtime.size() > 80 ? p.runtime.substr(0, 77) + "..." : p.runtime;
            fmt::print("{:<16} {}\n{:<16} {}\n", p.name, p.version, "", runtime);
        }
        return kExitOk;
    }
    if (path.empty()) throw FormatError(ErrorKind::Usage, "", "", "missing FILE (see --help)");

    // Everything that can fail on arguments is checked before the file is read.
    std::optional<double> bw;
    if (!bandwidth.empty()) bw = traffic::parse_bandwidth(bandwidth);
    std::optional<Profile> profile;
    if (!no_audit) profile = load_profile(profile_name);

    if (is_oiw4_file(path)) {
        if (!html.empty()) throw FormatError(ErrorKind::Usage, path, "", "--html applies to GGUF files only");
        return run_oiw4_report(path, json, hash);
    }
    const Model f = [&] {
        if (shard_only) return Model(GgufFile::open(path));
        try {
            return open_model(path);
        } catch (const FormatError& e) {
            if (e.kind() != ErrorKind::BadSplit) throw;
            throw FormatError(e.kind(), "", "",
                              std::string(e.what()) + " (--shard-only inspects the given file alone)");
        }
    }();
    const traffic::Analysis a = traffic::analyze(f);
    std::vector<Flag> flags;
    if (profile) flags = audit(f, a, *profile);
    std::vector<std::string> digests;
    std::optional<HashAlgo> algo;
    if (!hash.empty()) {
        algo = hash_from_name(hash);
        digests = tensor_digests(f, *algo, threads);
    }

    Report r{f, a, profile ? &*profile : nullptr, profile ? &flags : nullptr, bw, algo, algo ? &digests : nullptr};
    RenderOptions o;
    o.full = full;
    o.color = want_color(color);
    if (!html.empty()) {
        write_output(html, render_html(r, o));
        return kExitOk;
    }
    const std::string out = json ? render_json(r, o) : markdown ? render_markdown(r, o) : render_table(r, o);
    write_stdout(out);
    return kExitOk;
}

}  // namespace oiw::inspect_tool
