// gguf-plan command line: the options struct and its parser.
#pragma once
#include <string>
#include <vector>

#include "converters/planner/calibrate.h"
#include "converters/planner/planner.h"

namespace oiw::plan_cli {

struct ToolOptions {
    std::string in, out;             // out empty: the plan goes to stdout
    std::string imatrix;             // --imatrix
    std::vector<GgmlType> types;     // --types (empty: default_plan_types())
    std::vector<GgmlType> excluded;  // --profile: types without a SIMD dot there
    ChooseOptions choose;            // budget, gains, pins, ties
    std::string cache;               // error-table sidecar ("" with --no-cache)
    std::string calibrate;           // --calibrate TEXT: gains measured through the forward pass
    CalibrateOptions calib;          // --calibrate-ctx, --calibrate-chunks (threads: --threads)
    bool json = false;
    unsigned threads = 0;  // measurement threads (0: all cores)
    bool quiet = false;    // -q: no summary line
};

// Parses a size such as "4200000000", "4.2GB", "3.5GiB" into bytes (SI prefixes powers of 1000,
// "i" prefixes of 1024). Throws FormatError(Usage) naming `option`.
double parse_size(const std::string& text, const std::string& option);

// Parses argv. Returns -1 and fills `o` to continue, otherwise the exit status (0 after --help,
// 2 after a usage error, already reported on stderr).
int parse_options(int argc, char** argv, ToolOptions& o);

}  // namespace oiw::plan_cli
