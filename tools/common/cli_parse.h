// Header-only CLI11 glue for the tools: usage errors print one line and exit with status 2.
#pragma once
#include <algorithm>
#include <charconv>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "libformat/error.h"
#include "oiw_version.h"

namespace oiw {

// The --version line: "<tool> <project version> (compatible with llama.cpp <commit>, ggml <version>)".
inline std::string version_line(const std::string& app_name) {
    return fmt::format("{} {} (compatible with llama.cpp {}, ggml {})", app_name.substr(0, app_name.find(' ')),
                       OIW_VERSION, OIW_COMPAT_LLAMA_CPP, OIW_COMPAT_GGML);
}

// Adds --version (prints version_line and exits 0, through CLI::CallForVersion) to `app`.
inline void add_version_flag(CLI::App& app) { app.set_version_flag("--version", version_line(app.get_name())); }

// Levenshtein distance of two short strings (option names).
inline size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            const size_t up = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1])});
            diag = up;
        }
    }
    return row[b.size()];
}

// The first word of `args` (in command-line order) that looks like an option `app` does not have
// ("--prest" or "--prest=x"), and the option name nearest to it when one is close (at most 2
// edits, or a third of its length), for "did you mean --preset?". Empty when there is none.
inline std::pair<std::string, std::string> unknown_option(const CLI::App& app, const std::vector<std::string>& args) {
    std::vector<std::string> names{"--help", "--version"};
    for (const CLI::Option* o : app.get_options()) {
        for (const auto& l : o->get_lnames()) names.push_back("--" + l);
        for (const auto& s : o->get_snames()) names.push_back("-" + s);
    }
    for (const std::string& arg : args) {
        if (arg == "--") break;
        if (arg.size() < 2 || arg[0] != '-' || (arg[1] >= '0' && arg[1] <= '9')) continue;
        const std::string name = arg.substr(0, arg.find('='));
        if (std::find(names.begin(), names.end(), name) != names.end()) continue;
        std::string best;
        size_t best_d = std::max<size_t>(2, name.size() / 3) + 1;
        for (const auto& n : names)
            if (const size_t d = edit_distance(name, n); d < best_d) best_d = d, best = n;
        return {name, best};
    }
    return {};
}

// Prepares `app` for parsing: adds --version, and makes every repeatable option take one value
// per occurrence (`--keep A --keep B`, as llama.cpp's tools), so positionals may come anywhere.
inline void prepare_cli(CLI::App& app) {
    add_version_flag(app);
    for (CLI::Option* o : app.get_options())
        if (o->nonpositional() && o->get_expected_max() > 1) o->allow_extra_args(false);
}

// The message for a failed parse of `args`: "unknown option --prest (did you mean --preset?)" when
// an option is misspelt, else CLI11's.
inline std::string parse_error_text(const CLI::App& app, const CLI::ParseError& e,
                                    const std::vector<std::string>& args) {
    const auto [unknown, near] = unknown_option(app, args);
    if (unknown.empty()) return e.what();
    return "unknown option " + unknown + (near.empty() ? "" : " (did you mean " + near + "?)");
}

// prepare_cli, then parses `args` (command-line order). Returns -1 to continue, otherwise the exit
// status after --help or --version (0, printed). Throws FormatError(Usage) "<message> (see --help)"
// for a usage error, for tools that report errors through run_tool.
inline int parse_args_or_throw(CLI::App& app, const std::vector<std::string>& args) {
    prepare_cli(app);
    try {
        app.parse(std::vector<std::string>(args.rbegin(), args.rend()));  // CLI11 takes them reversed
        return -1;
    } catch (const CLI::Success& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        throw FormatError(ErrorKind::Usage, "", "", parse_error_text(app, e, args) + " (see --help)");
    }
}

// Adds --version, then parses argv into `app` (prepare_cli). Returns -1 to continue, otherwise
// the exit status to return from main (0 after --help or --version, 2 after a usage error,
// reported as "<tool>: error: <message>", parse_error_text).
inline int parse_cli(CLI::App& app, int argc, char** argv) {
    prepare_cli(app);
    try {
        app.parse(argc, argv);
        return -1;
    } catch (const CLI::Success& e) {  // --help, --help-all, --version
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        fmt::print(stderr, "{}: error: {}\n", app.get_name(),
                   parse_error_text(app, e, std::vector<std::string>(argv + std::min(argc, 1), argv + argc)));
        return 2;
    }
}

// --help's usage line given in words ("Usage: gguf-requant [OPTIONS] IN [OUT] [TYPE [NTHREADS]]")
// where CLI11's own rendering of positional lists ("ARGS TEXT ...") would say less.
class UsageFormatter : public CLI::Formatter {
public:
    explicit UsageFormatter(std::string usage) : usage_(std::move(usage)) {}
    std::string make_usage(const CLI::App* /*app*/, std::string /*name*/) const override {
        return get_label("Usage") + ": " + usage_ + "\n";
    }

private:
    std::string usage_;
};

// Sets `app`'s usage line to `usage` (UsageFormatter).
inline void set_usage(CLI::App& app, std::string usage) {
    app.formatter(std::make_shared<UsageFormatter>(std::move(usage)));
}

// Adds -t/--threads N: 0 (the default) uses every core, a negative count is refused. Tools pass
// the value to thread_count (libformat/parallel.h), which also caps it at the cores and the work.
inline CLI::Option* add_threads_option(CLI::App& app, unsigned& threads) {
    return app
        .add_option("-t,--threads", threads, "worker threads (0: all cores; at most the cores and the work available)")
        ->default_val(0)
        ->check(CLI::Validator(
            [](std::string& s) -> std::string {
                long long v = 0;
                const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
                if (ec != std::errc() || end != s.data() + s.size()) return "'" + s + "' is not a thread count";
                return v < 0 ? "must be 0 (all cores) or more" : "";
            },
            "INT>=0"));
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
