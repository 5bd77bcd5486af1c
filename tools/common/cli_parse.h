// Header-only CLI11 glue for the tools: usage errors print one line and exit with status 2.
#pragma once
#include <charconv>
#include <string>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "oiw_version.h"

namespace oiw {

// The --version line: "<tool> <project version> (compatible with llama.cpp <commit>, ggml <version>)".
inline std::string version_line(const std::string& app_name) {
    return fmt::format("{} {} (compatible with llama.cpp {}, ggml {})", app_name.substr(0, app_name.find(' ')),
                       OIW_VERSION, OIW_COMPAT_LLAMA_CPP, OIW_COMPAT_GGML);
}

// Adds --version (prints version_line and exits 0, through CLI::CallForVersion) to `app`.
inline void add_version_flag(CLI::App& app) { app.set_version_flag("--version", version_line(app.get_name())); }

// Adds --version, then parses argv into `app`. Returns -1 to continue, otherwise the exit status
// to return from main (0 after --help or --version, 2 after a usage error, reported as
// "<tool>: error: <message>").
inline int parse_cli(CLI::App& app, int argc, char** argv) {
    add_version_flag(app);
    try {
        app.parse(argc, argv);
        return -1;
    } catch (const CLI::Success& e) {  // --help, --help-all, --version
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        fmt::print(stderr, "{}: error: {}\n", app.get_name(), e.what());
        return 2;
    }
}

// Validator for counts: an integer below 1 is refused with "must be at least 1" (CLI11's
// PositiveNumber prints its bound, a 309-digit number). Non-numbers are left to the conversion.
inline CLI::Validator at_least_one() {
    return CLI::Validator(
        [](std::string& s) -> std::string {
            long long v = 0;
            const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
            return ec == std::errc() && end == s.data() + s.size() && v < 1 ? "must be at least 1" : "";
        },
        "INT>=1");
}

}  // namespace oiw

// Drop-in replacement for CLI11_PARSE with exit status 2 on usage errors.
#define OIW_CLI_PARSE(app, argc, argv)                             \
    do {                                                           \
        int oiw_cli_rc_ = ::oiw::parse_cli((app), (argc), (argv)); \
        if (oiw_cli_rc_ >= 0) return oiw_cli_rc_;                  \
    } while (0)
