// gguf-requant IN.gguf OUT.gguf --preset NAME [options]: llama-quantize's conversions, streamed.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>

#include <fmt/format.h>

#include "libformat/escape.h"
#include "tools/common/requant_args.h"
#include "tools/common/tool_support.h"
#include "tools/gguf-requant/options.h"
#include "tools/gguf-requant/report.h"

int main(int argc, char** argv) {
    using namespace oiw;
    requant_cli::ToolOptions o;
    if (int rc = requant_cli::parse_options(argc, argv, o); rc >= 0) return rc;
    return run_tool("gguf-requant", [&] {
        Model in = open_model(o.in);
        RequantJob job = [&] {
            try {
                return prepare_requant(in, o.requant);
            } catch (const FormatError& e) {
                throw with_option_hint(e);
            }
        }();
        auto types_of = [](const auto& list, auto type) {
            std::vector<std::pair<std::string, GgmlType>> v;
            v.reserve(list.size());
            for (const auto& t : list) v.emplace_back(t.name, type(t));
            return v;
        };
        if (o.plan) {  // before writing: the plan as gguf-requant plans it (exit 2, nothing written)
            const std::string why = plan_mismatch(
                *o.plan, types_of(job.plan.tensors, [](const TensorPlan& t) { return t.dst_type; }), job.file_size);
            if (!why.empty()) throw FormatError(ErrorKind::Usage, "", "--plan", why);
        }
        for (const auto& w : job.plan.warnings) fmt::print(stderr, "gguf-requant: warning: {}\n", w);
        std::optional<double> seconds;
        if (!o.requant.dry_run) {
            const auto start = std::chrono::steady_clock::now();
            Progress bar("gguf-requant", job.plan.tensors.size(), job.written_src_bytes);
            write_requant(in, job, o.out, o.threads,
                          [&](size_t i, uint64_t bytes, std::string_view name) { bar.update(i, bytes, name); });
            bar.done();
            if (o.plan && !job.split.active()) {  // after writing: the file itself (shards: checked before writing
                                                  // only) (exit 1, the file is left for inspection)
                const Model out = open_model(o.out);
                const std::string why =
                    plan_mismatch(*o.plan, types_of(out.tensors(), [](const GgufTensorInfo& t) { return t.type; }),
                                  std::filesystem::file_size(o.out));
                if (!why.empty()) {
                    fmt::print(stderr, "gguf-requant: error: {}: written file differs from the plan: {}\n",
                               escape_text(o.out), why);
                    return kExitDiffers;
                }
            }
            seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        }
        if (o.json)
            fmt::print("{}", requant_cli::json_report(o, job, seconds));
        else if (o.quiet)
            ;
        else if (!seconds)
            fmt::print("{}", requant_cli::text_report(o, job, seconds));
        else
            fmt::print("{}{}", is_tty(1) ? requant_cli::text_report(o, job, seconds) : "",
                       requant_cli::summary(o, job, *seconds));
        return kExitOk;
    });
}
