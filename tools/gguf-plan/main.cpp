// gguf-plan IN.gguf --target SIZE|--target-bpw X|--target-bytes-per-token B|--target-tokens-per-s T
// [options] -o PLAN: per-tensor types minimising the imatrix-weighted error within a budget.
#include <chrono>
#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "converters/planner/calibrate.h"
#include "converters/planner/errtable.h"
#include "converters/planner/planner.h"
#include "converters/requant/imatrix.h"
#include "libformat/escape.h"
#include "libformat/io/atomic_file.h"
#include "libformat/io/text_file.h"
#include "libformat/parallel.h"
#include "tools/common/tool_support.h"
#include "tools/gguf-plan/options.h"

namespace oiw::plan_cli {

// Measures the error table, with progress on a TTY (stderr; quiet when piped).
PlanTable measured_table(const Model& in, const ToolOptions& o) {
    std::unique_ptr<Progress> bar;
    PlanTable t = measure_plan(
        in, o.types, o.imatrix, o.excluded,
        [&](size_t done, size_t total, uint64_t w_done, uint64_t w_total, const std::string& tensor) {
            if (!bar) bar = std::make_unique<Progress>("gguf-plan: measuring", total, w_total * 4);
            bar->update(done - 1, w_done * 4, tensor);
        },
        o.threads);
    if (bar) bar->done();
    return t;
}

// The error table from the sidecar when it matches `key` (errtable_key), else measured (and the
// sidecar rewritten; a sidecar that cannot be written is a warning).
PlanTable cached_table(const Model& in, const ToolOptions& o, const std::string& key) {
    if (o.cache.empty()) return measured_table(in, o);
    if (const auto text = read_errtable_sidecar(o.cache)) {
        if (auto t = parse_errtable(*text, key)) {
            fmt::print(stderr, "gguf-plan: error table from {}\n", escape_text(o.cache));
            return *t;
        }
    }
    PlanTable t = measured_table(in, o);
    try {
        const std::string text = format_errtable(t, key);
        AtomicFile f(o.cache, in.files(), false);
        f.write(text.data(), text.size());
        f.commit();
    } catch (const FormatError& e) {
        fmt::print(stderr, "gguf-plan: warning: error table not cached: {}\n", e.what());
    }
    return t;
}

// The measured gains of --calibrate, from their sidecar (the error table's, + ".calib") when it
// matches (the table's key `table_key`, the text, the chunking), else measured with progress on a
// TTY (and the sidecar rewritten).
Calibration calibrated_gains(const Model& in, const PlanTable& table, const ToolOptions& o,
                             const std::string& table_key) {
    const std::string text = read_text_file(o.calibrate);
    CalibrateOptions co = o.calib;
    co.threads = static_cast<int>(thread_count(o.threads, 1 << 20));
    const std::string cache = o.cache.empty() ? "" : o.cache + ".calib";
    const std::string key = calibration_key(table_key, text, co);
    if (!cache.empty())
        if (const auto cached = read_errtable_sidecar(cache))
            if (auto c = parse_calibration(*cached, table, key)) {
                fmt::print(stderr, "gguf-plan: calibration from {}\n", escape_text(cache));
                return *c;
            }
    const auto imatrix = o.imatrix.empty() ? Imatrix{} : load_imatrix(o.imatrix);
    std::unique_ptr<Progress> bar;
    Calibration c =
        calibrate(in, table, text, imatrix.entries, co, [&](size_t done, size_t total, const std::string& t) {
            if (!bar) bar = std::make_unique<Progress>("gguf-plan: calibrating", total, 0);
            bar->update(done - 1, 0, t);
        });
    if (bar) bar->done();
    if (!cache.empty()) try {
            const std::string s = format_calibration(c, table, key);
            AtomicFile f(cache, in.files(), false);
            f.write(s.data(), s.size());
            f.commit();
        } catch (const FormatError& e) {
            fmt::print(stderr, "gguf-plan: warning: calibration not cached: {}\n", e.what());
        }
    return c;
}

}  // namespace oiw::plan_cli

int main(int argc, char** argv) {
    using namespace oiw;
    plan_cli::ToolOptions o;
    if (int rc = plan_cli::parse_options(argc, argv, o); rc >= 0) return rc;
    return run_tool("gguf-plan", [&] {
        const auto start = std::chrono::steady_clock::now();
        Model in = open_model(o.in);
        // The error table's key (the input, the types, the imatrix): both sidecars are keyed by it.
        const std::string key =
            o.cache.empty() && o.calibrate.empty() ? "" : errtable_key(in, o.types, o.imatrix, o.excluded);
        const PlanTable table = plan_cli::cached_table(in, o, key);
        ChooseOptions choose = o.choose;
        if (!o.calibrate.empty()) {
            const Calibration c = plan_cli::calibrated_gains(in, table, o, key);
            choose.measured = c.gain;
            fmt::print(stderr, "gguf-plan: gains calibrated on {} positions of {} ({} chunks of {})\n", c.scored,
                       escape_text(o.calibrate), c.chunks, o.calib.ctx);
        }
        const auto measured = std::chrono::steady_clock::now();
        const PlanResult r = choose_plan(table, choose);
        // The size gguf-requant --dry-run computes for this plan must be the solver's.
        const PlanFile pf = plan_file_of(table, r);
        RequantOptions ro = requant_options_for(pf, o.imatrix);
        ro.allow_requantize = true;
        ro.dry_run = true;
        const RequantJob job = prepare_requant(in, ro);  // job.imatrix: the entries it loaded, for the gaps below
        if (!o.imatrix.empty())  // gaps named per tensor, as gguf-requant (and llama-quantize) name them
            for (const auto& t : table.tensors)
                if (!job.imatrix.contains(t.name))
                    fmt::print(stderr,
                               "gguf-plan: warning: did not find imatrix weights for tensor '{}': its error is "
                               "measured with unit weights\n",
                               escape_text(t.name));
        const uint64_t size = job.file_size;
        if (size != r.file_size)
            throw FormatError(ErrorKind::BadData, o.in, "plan",
                              fmt::format("predicted {} bytes, gguf-requant plans {}", r.file_size, size));
        const std::string text = format_plan_file(table, r, o.imatrix.empty() ? "" : imatrix_id(o.imatrix));
        if (!o.out.empty()) {
            AtomicFile f(o.out, in.files());
            f.write(text.data(), text.size());
            f.commit();
        }
        const double t_measure = std::chrono::duration<double>(measured - start).count();
        const double t_total = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (o.json)
            fmt::print("{}", format_plan_json(table, r));
        else if (o.out.empty())
            fmt::print("{}", text);
        else if (!o.quiet)
            fmt::print("{}", summary_line("gguf-plan", {o.out}, t_total));
        fmt::print(stderr,
                   "gguf-plan: {} tensors, predicted {} bytes ({:.4f} bpw, {} bytes/token), error {:.6g} (lower bound "
                   "{:.6g}); "
                   "measured in {:.2f} s, planned in {:.3f} s\n",
                   table.tensors.size(), r.file_size, r.bpw, r.bytes_per_token, r.error, r.lower_bound, t_measure,
                   t_total - t_measure);
        return kExitOk;
    });
}
