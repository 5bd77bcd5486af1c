// gguf-inspect subcommands; each parses its own arguments and returns the exit status.
#pragma once
#include <cstdio>
#include <string>

#include "libformat/error.h"
#include "libformat/io/atomic_file.h"
#include "tools/common/tool_support.h"

namespace oiw::inspect_tool {

// --color auto|always|never: colour only on a terminal unless forced.
inline bool want_color(const std::string& mode) { return mode == "always" || (mode == "auto" && is_tty(1)); }

// Writes a rendered page to `path` through an AtomicFile (never over an input of the run or a
// special file), or to stdout when `path` is "-".
inline void write_output(const std::string& path, const std::string& text) {
    if (path == "-") return write_stdout(text);
    AtomicFile out(path);
    out.write(text.data(), text.size());
    out.commit();
}

// gguf-inspect [report] FILE [--json|--markdown] [--full] [--profile NAME] [--bandwidth BW] [--hash [ALGO]] [--html
// OUT]
int run_report(int argc, char** argv);
// gguf-inspect FILE.oiw4 [--json] [--hash [ALGO]]: encodings, planes, checksums, bytes per token.
int run_oiw4_report(const std::string& path, bool json, const std::string& hash);
// gguf-inspect diff A B [--data] [--json|--html OUT] [--full]
int run_diff(int argc, char** argv);
// gguf-inspect hash FILE [--xxh64] [--sha1] [--sha256] [--uuid] [--all] [--no-layer] [-c MANIFEST]: llama-gguf-hash's
// output.
int run_hash(int argc, char** argv);

}  // namespace oiw::inspect_tool
