// oiw4-check: proves conversions with the bundled reference matmul (docs/matmul.md).
//   oiw4-check SOURCE CONVERTED [--tensor REGEX] [--vectors N] [--seed S] [--activations FILE]
//   oiw4-check --self FILE        optimized kernels vs the scalar reference
//   oiw4-check bench [--rows R --cols C] [--threads N]
#include <CLI/CLI.hpp>

#include <cstring>

#include "tools/common/cli_parse.h"
#include "tools/common/tool_support.h"
#include "tools/oiw4-check/commands.h"

int main(int argc, char** argv) {
    using namespace oiw::check;
    if (argc > 1 && std::strcmp(argv[1], "bench") == 0) {
        BenchOptions o;
        CLI::App app{"oiw4-check bench: read bandwidth, then GMAC/s of each GEMV kernel", "oiw4-check bench"};
        app.add_option("--rows", o.rows, "matrix rows")
            ->check(CLI::Range(int64_t{8}, int64_t{1} << 22))
            ->capture_default_str();
        app.add_option("--cols", o.cols, "matrix columns (a multiple of 256)")
            ->check(CLI::Range(int64_t{256}, int64_t{1} << 20))
            ->capture_default_str();
        oiw::add_threads_option(app, o.threads);
        app.add_option("--bandwidth-mib", o.bandwidth_mib, "buffer of the read-bandwidth measurement (MiB)")
            ->check(CLI::Range(int64_t{1}, int64_t{1} << 16));
        app.add_option("--min-time", o.min_time, "seconds of timed runs per kernel (best run counts)")
            ->check(CLI::Range(0.0, 60.0));
        app.add_flag("--json", o.json, "JSON output");
        OIW_CLI_PARSE(app, argc - 1, argv + 1);
        return oiw::run_tool("oiw4-check", [&] { return run_bench(o); });
    }
    CompareOptions c;
    SelfOptions s;
    std::vector<std::string> files, limits;
    CLI::App app{"oiw4-check: compare a converted model with its source through the reference matmul", "oiw4-check"};
    oiw::set_usage(app, "oiw4-check [OPTIONS] SOURCE CONVERTED | --self FILE | bench [OPTIONS]");
    app.add_option("SOURCE CONVERTED", files, "the model and its conversion (GGUF or OIW4 each)")
        ->expected(0, 2)
        ->type_name("");
    app.add_option("--self", s.file, "check the optimized kernels against the scalar reference on FILE's tensors");
    app.add_option("--tensor", c.tensor_regex, "only tensors whose name matches REGEX");
    app.add_option("--vectors", c.vectors, "activation vectors per tensor")
        ->check(CLI::Range(1, 1 << 16))
        ->capture_default_str();
    app.add_option("--seed", c.seed, "seed of the heavy-tailed activation vectors")->capture_default_str();
    app.add_option("--activations", c.activations, "raw little-endian f32 activations instead of seeded vectors");
    app.add_option("--max-rel-rms", limits, "KIND=X: relative RMS limit for lossy pairs converted to KIND");
    oiw::add_threads_option(app, c.threads);
    app.add_flag("--json", c.json, "JSON output");
    OIW_CLI_PARSE(app, argc, argv);
    return oiw::run_tool("oiw4-check", [&] {
        if (!s.file.empty()) {
            if (!files.empty()) throw oiw::FormatError(oiw::ErrorKind::Usage, "", "--self", "takes no other file");
            s.json = c.json;
            s.threads = c.threads;
            s.seed = c.seed;
            return run_self(s);
        }
        if (files.size() != 2)
            throw oiw::FormatError(oiw::ErrorKind::Usage, "", "", "expected SOURCE CONVERTED, --self FILE or bench");
        c.source = files[0];
        c.converted = files[1];
        for (const auto& l : limits) {
            const auto eq = l.find('=');
            if (eq == std::string::npos || eq == 0)
                throw oiw::FormatError(oiw::ErrorKind::Usage, "", "--max-rel-rms", "expected KIND=X, got '" + l + "'");
            try {
                c.max_rel_rms[l.substr(0, eq)] = std::stod(l.substr(eq + 1));
            } catch (const std::exception&) {
                throw oiw::FormatError(oiw::ErrorKind::Usage, "", "--max-rel-rms", "not a number in '" + l + "'");
            }
        }
        return run_compare(c);
    });
}
