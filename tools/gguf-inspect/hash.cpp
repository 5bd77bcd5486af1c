// gguf-inspect hash FILE: llama.cpp's llama-gguf-hash, byte for byte on stdout (per-tensor and
// whole-model xxh64 / sha1 / sha256 lines, UUIDv5), -c/--check MANIFEST with its results and exit
// codes (0 ok, 1 mismatch, 3 manifest lacks the entries, 4 no known hash type, 5 manifest
// unreadable). A split model is hashed as one model (what llama-gguf-hash prints for the merged
// file, named as given); an OIW4 file as the GGUF tensor bytes it stands for. Other errors: exit 2
// (a code llama-gguf-hash defines but never returns).
#include <cstdio>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "inspect/digest.h"
#include "inspect/gguf_hash.h"
#include "libformat/io/text_file.h"
#include "libformat/oiw4/oiw4.h"
#include "tools/common/cli_parse.h"
#include "tools/common/tool_support.h"
#include "tools/gguf-inspect/commands.h"

namespace oiw::inspect_tool {

using namespace oiw::inspect;

namespace {

struct HashOptions {
    std::string path, manifest, name;
    GgufHashSelection sel;
    bool all = false, no_layer = false, shard_only = false;
    unsigned threads = 0;
};

// Parses the arguments into `o`; returns -1 to go on, else the exit status (0 after --help / --version).
int parse(HashOptions& o, int argc, char** argv) {
    CLI::App app{
        "Per-tensor and whole-model hashes, exactly as llama.cpp's llama-gguf-hash prints them; -c checks a manifest.\n"
        "Exit status: 0 ok, 1 mismatch, 3 manifest has no entry for the file, 4 no known hash type in the manifest,\n"
        "5 manifest unreadable, 2 other errors.",
        "gguf-inspect hash"};
    app.add_option("FILE", o.path, "GGUF file, any shard of a split model (hashed as one model), or OIW4 file")
        ->required();
    app.add_flag("--xxh64", o.sel.xxh64, "use xxh64 hash");
    app.add_flag("--sha1", o.sel.sha1, "use sha1 hash");
    app.add_flag("--sha256", o.sel.sha256, "use sha256 hash");
    app.add_flag("--all", o.all, "use all hash (xxh64, sha1, sha256)");
    app.add_flag("--no-layer", o.no_layer, "exclude per layer hash");
    app.add_flag("--uuid", o.sel.uuid, "generate UUIDv5 ID");
    app.add_option("-c,--check", o.manifest, "verify against a manifest")
        ->type_name("MANIFEST")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    app.add_flag("--shard-only", o.shard_only,
                 "a shard of a split model: hash this file alone (as llama-gguf-hash does)");
    app.add_option("--name", o.name,
                   "the file name printed and looked up in the manifest (default: FILE as given), e.g. the source "
                   "GGUF's for an OIW4 file")
        ->type_name("NAME");
    add_threads_option(app, o.threads);
    if (const int rc = parse_args_or_throw(app, std::vector<std::string>(argv + 1, argv + argc)); rc >= 0) return rc;
    if (o.all) o.sel.xxh64 = o.sel.sha1 = o.sel.sha256 = true;
    o.sel.per_tensor = !o.no_layer;
    return -1;
}

// Reads the manifest as llama-gguf-hash does; on failure prints its ERROR text (stdout, no newline)
// and our reason (stderr) and returns its exit code, else 0.
int read_manifest(const std::string& path, HashManifest& m) {
    try {
        m = parse_hash_manifest(read_text_file(path));
    } catch (const FormatError& e) {
        write_stdout("ERROR cannot open manifest " + path);
        fmt::print(stderr, "gguf-inspect: error: {}\n", e.what());
        return kHashExitManifestFileError;
    }
    if (!m.any_known()) {
        write_stdout("ERROR manifest does not have any known hash format in " + path);
        return kHashExitUnknownHash;
    }
    return 0;
}

Model open_for_hash(const HashOptions& o) {
    if (o.shard_only) return Model(GgufFile::open(o.path));
    return open_model(o.path);
}

}  // namespace

int run_hash(int argc, char** argv) {
    HashOptions o;
    if (const int rc = parse(o, argc, argv); rc >= 0) return rc;
    HashManifest manifest;
    const bool check = !o.manifest.empty();  // llama-gguf-hash ignores an empty --check ""
    if (check)
        if (const int rc = read_manifest(o.manifest, manifest)) return rc;
    const GgufHashSelection sel = effective_selection(o.sel, check ? &manifest : nullptr);

    // The model is opened (and validated) before anything but a manifest error is printed.
    std::optional<Oiw4File> oiw4;
    std::optional<Model> model;
    if (is_oiw4_file(o.path))
        oiw4.emplace(Oiw4File::open(o.path));
    else
        model.emplace(open_for_hash(o));
    const TensorBytes src = oiw4 ? tensor_bytes(*oiw4) : tensor_bytes(*model);
    const GgufHashes h = gguf_hashes(src, sel, o.threads);
    const GgufHashReport r =
        render_gguf_hash(o.name.empty() ? o.path : o.name, src, h, sel, check ? &manifest : nullptr, o.manifest);
    write_stdout((check ? manifest_header(o.manifest, manifest) : "") + r.text);
    return r.exit_code;
}

}  // namespace oiw::inspect_tool
