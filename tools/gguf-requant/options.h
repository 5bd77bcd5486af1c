// gguf-requant command line: the options struct and its parser.
#pragma once
#include <string>

#include <optional>

#include "converters/planner/planner.h"
#include "converters/requant/requant.h"

namespace oiw::requant_cli {

struct ToolOptions {
    std::string in, out;           // OUT may be empty with --dry-run
    RequantOptions requant;        // everything the engine needs (requant.dry_run: plan only, write nothing)
    unsigned threads = 0;          // 0: all hardware threads
    bool json = false;             // report as JSON on stdout
    bool quiet = false;            // -q: no report on stdout
    std::optional<PlanFile> plan;  // --plan: its rules come first; checked before and after writing
};

// Parses argv. Returns -1 and fills `o` to continue, otherwise the exit status (0 after --help,
// 2 after a usage error, already reported on stderr). Option values (types, presets, regexes,
// KEY=TYPE:VALUE) are checked here, with errors that list the valid names.
int parse_options(int argc, char** argv, ToolOptions& o);

}  // namespace oiw::requant_cli
