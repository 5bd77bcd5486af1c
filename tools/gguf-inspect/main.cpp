// gguf-inspect: audit a GGUF model (header, metadata, tensors, per-token weight traffic, slow
// paths on a runtime profile) or compare two. Analysis lives in inspect/; this only dispatches.
#include <cstring>

#include "tools/common/tool_support.h"
#include "tools/gguf-inspect/commands.h"

int main(int argc, char** argv) {
    const bool diff = argc > 1 && std::strcmp(argv[1], "diff") == 0;
    const bool hash = argc > 1 && std::strcmp(argv[1], "hash") == 0;
    const bool report = argc > 1 && std::strcmp(argv[1], "report") == 0;
    return oiw::run_tool("gguf-inspect", [&] {
        if (diff) return oiw::inspect_tool::run_diff(argc - 1, argv + 1);
        if (hash) return oiw::inspect_tool::run_hash(argc - 1, argv + 1);
        if (report) return oiw::inspect_tool::run_report(argc - 1, argv + 1);
        return oiw::inspect_tool::run_report(argc, argv);
    });
}
