#include "tools/gguf-requant/report.h"

#include <algorithm>

#include <fmt/format.h>

#include "libformat/escape.h"
#include "libformat/json.h"
#include "libformat/traffic.h"
#include "tools/common/tool_support.h"

namespace oiw::requant_cli {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

double bpw(uint64_t bytes, uint64_t elements) {
    return elements ? 8.0 * static_cast<double>(bytes) / static_cast<double>(elements) : 0;
}

std::string shape_text(const TensorPlan& t) { return "[" + fmt::format("{}", fmt::join(t.shape, ", ")) + "]"; }

// Output file k (one, or shard k of the split; "OUT" stands for a dry run's missing name).
std::string out_path(const ToolOptions& o, const RequantJob& job, size_t k) {
    return output_path(o.out.empty() ? "OUT" : o.out, job.split, static_cast<unsigned>(k),
                       static_cast<unsigned>(job.out_sizes.size()));
}

}  // namespace

// Per-token traffic of the planned output, by the same model gguf-inspect applies to files.
double planned_bytes_per_token(const RequantJob& job) {
    std::vector<GgufTensorInfo> infos;
    infos.reserve(job.plan.tensors.size());
    for (const TensorPlan& t : job.plan.tensors) infos.push_back(make_tensor_info(t.name, t.dst_type, t.shape));
    return static_cast<double>(traffic::analyze(job.kvs, infos).traffic.bytes_per_token);
}

std::string text_report(const ToolOptions& o, const RequantJob& job, std::optional<double> seconds) {
    std::string s;
    const auto& ts = job.plan.tensors;
    if (!seconds) {
        for (size_t i = 0; i < ts.size(); ++i) {
            const TensorPlan& t = ts[i];
            s += fmt::format("[{:4}/{:4}] {:<40} {:<18} ", i + 1, ts.size(), escape_text(t.name), shape_text(t));
            if (t.convert())
                s += fmt::format("{:>7} -> {:<7} {:9.2f} MiB -> {:9.2f} MiB\n", type_name(t.src_type),
                                 type_name(t.dst_type), t.src_bytes / kMiB, t.dst_bytes / kMiB);
            else
                s += fmt::format("{:>7}    {:<7} {:9.2f} MiB (copy)\n", type_name(t.src_type), "", t.src_bytes / kMiB);
        }
    }
    s += fmt::format("{} -> {}: preset {} (file type {}), {} tensors, {:.2f} M params\n", escape_text(o.in),
                     o.out.empty() ? "(dry run)" : escape_text(o.out), o.requant.plan.preset->name, job.ftype,
                     ts.size(), job.n_elements / 1e6);
    s += fmt::format("  model size {:9.2f} MiB ({:.2f} bpw)\n", job.src_bytes / kMiB,
                     bpw(job.src_bytes, job.n_elements));
    s += fmt::format("  quant size {:9.2f} MiB ({:.2f} bpw), file {} bytes, {:.2f} MiB read per token\n",
                     job.dst_bytes / kMiB, bpw(job.dst_bytes, job.n_elements), job.file_size,
                     planned_bytes_per_token(job) / kMiB);
    if (job.split.active())
        for (size_t k = 0; k < job.out_sizes.size(); ++k)
            s += fmt::format("  shard {}/{} {} {} bytes{}\n", k + 1, job.out_sizes.size(),
                             escape_text(out_path(o, job, k)), job.out_sizes[k],
                             job.split.writes_shard(k) ? "" : " (not written by this run)");
    if (seconds)
        s += fmt::format("  {:.2f} s, {:.1f} M params/s, {:.1f} MB/s in\n", *seconds, job.n_elements / 1e6 / *seconds,
                         job.written_src_bytes / 1e6 / *seconds);
    return s;
}

std::string summary(const ToolOptions& o, const RequantJob& job, double seconds) {
    std::vector<std::string> files;
    for (size_t k = 0; k < job.out_sizes.size(); ++k)
        if (!job.split.active() || job.split.writes_shard(k)) files.push_back(out_path(o, job, k));
    return summary_line("gguf-requant", files, seconds);
}

std::string json_report(const ToolOptions& o, const RequantJob& job, std::optional<double> seconds) {
    json::Writer w;
    w.begin_object();
    w.field("input", o.in);
    w.key("output");
    if (o.out.empty() || o.requant.dry_run)
        w.null();
    else
        w.value(o.out);
    w.field("dry_run", o.requant.dry_run);
    w.field("preset", o.requant.plan.preset->name);
    w.field("file_type", job.ftype);
    w.key("tensors");
    w.begin_array();
    for (const auto& t : job.plan.tensors) {
        w.begin_object();
        w.field("name", t.name);
        w.key("shape");
        w.begin_array(true);
        for (int64_t d : t.shape) w.value(d);
        w.end_array();
        w.field("old_type", type_name(t.src_type));
        w.field("new_type", type_name(t.dst_type));
        w.field("old_bytes", t.src_bytes);
        w.field("new_bytes", t.dst_bytes);
        w.field("action", t.convert() ? "convert" : "copy");
        w.end_object();
    }
    w.end_array();
    w.key("totals");
    w.begin_object();
    w.field("tensors", static_cast<uint64_t>(job.plan.tensors.size()));
    w.field("n_elements", job.n_elements);
    w.field("old_bytes", job.src_bytes);
    w.field("new_bytes", job.dst_bytes);
    w.field("old_bpw", bpw(job.src_bytes, job.n_elements));
    w.field("new_bpw", bpw(job.dst_bytes, job.n_elements));
    w.field("file_size", job.file_size);
    w.field("bytes_per_token", planned_bytes_per_token(job));
    w.end_object();
    if (job.split.active()) {
        w.key("shards");
        w.begin_array();
        for (size_t k = 0; k < job.out_sizes.size(); ++k) {
            w.begin_object();
            w.field("path", out_path(o, job, k));
            w.field("bytes", job.out_sizes[k]);
            w.field("written", !o.requant.dry_run && job.split.writes_shard(k));
            w.end_object();
        }
        w.end_array();
    }
    w.key("warnings");
    w.begin_array();
    for (const auto& msg : job.plan.warnings) w.value(msg);
    w.end_array();
    if (seconds) {
        w.field("seconds", *seconds);
        w.field("mparams_per_second", job.n_elements / 1e6 / *seconds);
        w.field("input_mb_per_second", job.written_src_bytes / 1e6 / *seconds);
    }
    w.end_object();
    return w.take() + "\n";
}

}  // namespace oiw::requant_cli
