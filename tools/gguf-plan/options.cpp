#include "tools/gguf-plan/options.h"

#include <cmath>
#include <sstream>

#include <CLI/CLI.hpp>

#include "inspect/profile.h"
#include "libformat/traffic.h"
#include "tools/common/cli_parse.h"
#include "tools/common/tool_support.h"

namespace oiw::plan_cli {
namespace {

double parse_positive(const std::string& text, const std::string& option) {
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (text.empty() || *end || !std::isfinite(v) || v <= 0)
        throw FormatError(ErrorKind::Usage, "", option, "'" + text + "' is not a positive number");
    return v;
}

}  // namespace

double parse_size(const std::string& text, const std::string& option) {
    try {
        const double v = traffic::parse_bandwidth(text);
        if (v > 0 && std::isfinite(v)) return v;
    } catch (const FormatError&) {}
    throw FormatError(ErrorKind::Usage, "", option, "'" + text + "' is not a size (e.g. 4200000000, 4.2GB, 3.5GiB)");
}

int parse_options(int argc, char** argv, ToolOptions& o) {
    CLI::App app{
        "gguf-plan: per-tensor quantization types that minimise the imatrix-weighted error within a budget\n"
        "(the plan is executed by gguf-requant IN OUT --plan PLAN, or llama-quantize --tensor-type-file)",
        "gguf-plan"};
    std::string profile, size, bpw, bpt, tps, bandwidth, types, gains;
    std::vector<std::string> pins;
    std::string positional_out;
    app.add_option("IN", o.in, "input .gguf")->required();
    app.add_option("OUT", positional_out, "plan file to write (as -o; default: stdout)");
    app.add_option("-o,--output", o.out, "plan file to write (default: stdout)");
    app.add_option("--target", size, "exact output file size (4200000000, 4.2GB, 3.5GiB)");
    app.add_option("--target-bpw", bpw, "bits per weight of the tensor data (llama.cpp's definition)");
    app.add_option("--target-bytes-per-token", bpt, "bytes read per decoded token (gguf-inspect's traffic model)");
    app.add_option("--target-tokens-per-s", tps, "decode speed: with --bandwidth, bytes per token = bandwidth / T");
    app.add_option("--bandwidth", bandwidth, "memory bandwidth for --target-tokens-per-s (20GB/s, 25GiB/s)");
    app.add_option("--imatrix", o.imatrix, "importance matrix (GGUF or legacy .dat); without: unit weights");
    app.add_option(
        "--types", types,
        "comma-separated candidate types (default: Q2_K,Q3_K,Q4_K,Q5_K,Q6_K,Q8_0,IQ4_XS + 32-block fallbacks)");
    app.add_option("--profile", profile,
                   "runtime profile (gguf-inspect's): types without a SIMD dot there are not candidates");
    app.add_option("--pin", pins, "REGEX=TYPE: matching tensors get TYPE (repeatable, first match wins)");
    app.add_option("--tie", o.choose.ties, "REGEX: matching tensors of one layer share a type (repeatable)");
    app.add_option("--gains", gains, "file of REGEX=GAIN lines tried before the default gains");
    app.add_option("--calibrate", o.calibrate,
                   "text file: measure each tensor's gain as the KL divergence its quantization adds on this text "
                   "(through gguf-eval's forward pass) instead of the default gains");
    app.add_option("--calibrate-ctx", o.calib.ctx, "tokens per calibration chunk")->default_val(128);
    app.add_option("--calibrate-chunks", o.calib.chunks, "at most this many calibration chunks")->default_val(4);
    bool no_cache = false;
    app.add_option("--cache", o.cache,
                   "error-table sidecar (default: IN.errtable; re-planning the same input skips the measurement)");
    app.add_flag("--no-cache", no_cache, "measure, neither read nor write the sidecar");
    app.add_flag("--json", o.json, "the plan as JSON on stdout");
    add_threads_option(app, o.threads);
    app.add_flag("-q,--quiet", o.quiet, "no summary line on stdout (with -o)");
    OIW_CLI_PARSE(app, argc, argv);

    return run_tool("gguf-plan", [&] {
        if (!positional_out.empty()) {
            if (!o.out.empty() && o.out != positional_out)
                throw FormatError(ErrorKind::Usage, "", "OUT", "given twice (positional and -o)");
            o.out = positional_out;
        }
        const int n_targets = !size.empty() + !bpw.empty() + !bpt.empty() + !tps.empty();
        if (n_targets != 1)
            throw FormatError(
                ErrorKind::Usage, "", "budget",
                "give exactly one of --target, --target-bpw, --target-bytes-per-token, --target-tokens-per-s");
        if (!tps.empty() && bandwidth.empty())
            throw FormatError(ErrorKind::Usage, "", "--target-tokens-per-s", "needs --bandwidth");
        PlanBudget& b = o.choose.budget;
        if (!size.empty()) b = {BudgetKind::FileSize, std::floor(parse_size(size, "--target"))};
        if (!bpw.empty()) b = {BudgetKind::Bpw, parse_positive(bpw, "--target-bpw")};
        if (!bpt.empty()) b = {BudgetKind::BytesPerToken, std::floor(parse_size(bpt, "--target-bytes-per-token"))};
        if (!tps.empty())
            b = {BudgetKind::BytesPerToken,
                 std::floor(traffic::parse_bandwidth(bandwidth) / parse_positive(tps, "--target-tokens-per-s"))};
        std::istringstream list(types);
        for (std::string t; std::getline(list, t, ',');) o.types.push_back(parse_target_type(t, "--types"));
        for (const auto& p : pins) o.choose.pins.push_back(parse_type_rule(p, "--pin"));
        if (o.cache.empty() && !no_cache) o.cache = o.in + ".errtable";
        if (no_cache) o.cache.clear();
        if (!profile.empty()) {
            const inspect::Profile p = inspect::load_profile(profile);
            for (size_t id = 0; id < kGgmlTypeCount; ++id) {
                const auto& e = p.entries[id];
                if (!e || e->dot != inspect::Dot::Simd) o.excluded.push_back(static_cast<GgmlType>(id));
            }
        }
        if (!gains.empty()) o.choose.gains = read_gains_file(gains);
        return -1;
    });
}

}  // namespace oiw::plan_cli
