#include "converters/requant/requant.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <numeric>

#include <fmt/format.h>

#include "converters/quant/quants.h"
#include "converters/quant/validate.h"
#include "converters/requant/imatrix.h"
#include "libformat/escape.h"
#include "libformat/parallel.h"

namespace oiw {
namespace {

constexpr uint32_t kQuantizationVersion = 2;  // GGML_QNT_VERSION
constexpr size_t kMaxKvString = 127;          // llama_model_kv_override::val_str holds 128 bytes
constexpr int64_t kTaskElements = 1 << 17;    // elements converted per task (512 KiB of f32)
constexpr size_t kCopyPiece = 256 << 10;      // unconverted tensors are written in pieces this size
constexpr uint64_t kReleaseEvery = 32 << 20;  // input bytes consumed between releases of input pages

// gguf_set_val_*: drops an existing key, then appends (so re-set keys move to the end).
void set_kv(Metadata& kvs, GgufKV kv) {
    kvs.erase(kv.key);
    kvs.add(std::move(kv));
}

GgufKV u32_kv(std::string key, uint32_t v) {
    return {std::move(key), GgufValue::make_scalar<uint32_t>(GgufType::U32, v)};
}

// The metadata llama-quantize writes: the input's keys, general.quantization_version and
// general.file_type re-set, split keys dropped, then the overrides (imatrix keys last).
Metadata output_kvs(const Metadata& in, uint32_t ftype, const std::vector<GgufKV>& overrides) {
    Metadata kvs = in;
    set_kv(kvs, u32_kv("general.quantization_version", kQuantizationVersion));
    set_kv(kvs, u32_kv("general.file_type", ftype));
    for (const char* k : {"split.no", "split.count", "split.tensors.count"}) kvs.erase(k);
    for (const auto& o : overrides) set_kv(kvs, o);
    return kvs;
}

// The quantize.imatrix.* keys llama-quantize adds when it uses an imatrix.
std::vector<GgufKV> imatrix_kvs(const std::string& path, const Imatrix& m) {
    std::vector<GgufKV> kvs;
    kvs.push_back({"quantize.imatrix.file", GgufValue::make_string(path.substr(0, kMaxKvString))});
    if (!m.datasets.empty())
        kvs.push_back({"quantize.imatrix.dataset", GgufValue::make_string(m.datasets[0].substr(0, kMaxKvString))});
    kvs.push_back(u32_kv("quantize.imatrix.entries_count", static_cast<uint32_t>(m.entries.size())));
    if (m.chunk_count > 0) kvs.push_back(u32_kv("quantize.imatrix.chunks_count", static_cast<uint32_t>(m.chunk_count)));
    return kvs;
}

// A Model as the requantizer reads it: through its mapping, pages released behind the reader.
class ModelInput final : public RequantInput {
public:
    explicit ModelInput(const Model& m) : m_(m) {}
    const Metadata& metadata() const override { return m_.metadata(); }
    const std::vector<GgufTensorInfo>& tensors() const override { return m_.tensors(); }
    const std::string& path() const override { return m_.path(); }
    std::vector<std::string> files() const override { return m_.files(); }
    std::span<const uint8_t> tensor_data(size_t i) const override { return m_.tensor_data(i); }
    void release_pages(size_t i) const override { m_.release_tensor_pages(i); }
    void done(size_t i) const override { m_.release_tensor_pages(i); }
    size_t shard_of(size_t i) const override { return m_.shard_of(i); }
    size_t shard_count() const override { return m_.shards().size(); }

private:
    const Model& m_;
};

int64_t matrices(const TensorPlan& t) { return t.shape.size() > 2 ? t.shape[2] : 1; }

template <typename Writer>  // GgufWriter or GgufOutput
void describe_output(Writer& w, const RequantJob& job) {
    w.set_pad_empty(true);  // ggml's writer (llama-quantize) pads even a file without tensors
    w.set_kvs(job.kvs);
    for (const auto& t : job.plan.tensors) w.add_tensor(t.name, t.dst_type, t.shape);
}

// Refuses a conversion the engine cannot do, naming the tensor.
void check_convertible(const RequantInput& in, const TensorPlan& t) {
    const std::string subject = "tensor '" + t.name + "'";
    if (t.dst_type != GgmlType::F32 && !can_quantize(t.dst_type))
        throw FormatError(ErrorKind::Unsupported, in.path(), subject,
                          fmt::format("no quantizer for {}", type_name(t.dst_type)));
    const bool quantized = traits(t.src_type).quantized;
    const bool source_ok =
        t.src_type == GgmlType::F32 ||
        ((quantized || t.src_type == GgmlType::F16 || t.src_type == GgmlType::BF16) && can_dequantize(t.src_type));
    if (!source_ok)
        throw FormatError(ErrorKind::Unsupported, in.path(), subject,
                          fmt::format("cannot convert {} to {}", type_name(t.src_type), type_name(t.dst_type)));
}

// How a tensor's conversion splits into tasks: runs of up to `rows_per_task` rows inside one
// matrix (experts have their own importance weights).
struct TaskGrid {
    int64_t rows_per_task, tasks_per_mat, n_tasks;
    explicit TaskGrid(const GgufTensorInfo& info)
        : rows_per_task(std::clamp<int64_t>(kTaskElements / info.ne[0], 1, info.ne[1])),
          tasks_per_mat((info.ne[1] + rows_per_task - 1) / rows_per_task),
          n_tasks(info.ne[2] * info.ne[3] * tasks_per_mat) {}
};

// Converts one tensor, task by task (TaskGrid). `reference`: use the scalar reference quantizers.
void convert_tensor(ThreadPool& pool, std::vector<std::vector<float>>& scratch, const RequantInput& in,
                    const TensorPlan& t, const float* imatrix, bool reference, GgufOutput& w,
                    const std::function<void(uint64_t)>& consumed) {
    const GgufTensorInfo& info = in.tensors()[t.input_index];
    const int64_t ne0 = info.ne[0], ne1 = info.ne[1];
    const TaskGrid grid(info);
    const int64_t rows_per_task = grid.rows_per_task, tasks_per_mat = grid.tasks_per_mat;
    const uint64_t src_row = row_size(t.src_type, ne0), dst_row = row_size(t.dst_type, ne0);
    const uint8_t* src = in.tensor_data(t.input_index).data();
    const bool direct_f32 = t.src_type == GgmlType::F32 && reinterpret_cast<uintptr_t>(src) % alignof(float) == 0;
    for (auto& s : scratch)
        if (s.size() < static_cast<size_t>(rows_per_task * ne0)) s.resize(static_cast<size_t>(rows_per_task * ne0));

    struct Span {
        int64_t first_row, n_rows, mat;
    };
    auto span_of = [&](int64_t task) {
        const int64_t mat = task / tasks_per_mat, r0 = (task % tasks_per_mat) * rows_per_task;
        return Span{mat * ne1 + r0, std::min(rows_per_task, ne1 - r0), mat};
    };
    // A task whose data fails validation records its error here; the sink, which runs in task
    // order, throws it, so the first bad row of the tensor is the one reported.
    std::mutex bad_mu;
    std::map<int64_t, FormatError> bad;
    auto validate = [&](int64_t task, GgmlType type, const uint8_t* rows, uint64_t row_bytes, int64_t first_row,
                        const char* what) {
        try {
            validate_rows(type, {rows, static_cast<size_t>(row_bytes) * static_cast<size_t>(span_of(task).n_rows)},
                          row_bytes, first_row, in.path(), t.name, what);
            return true;
        } catch (const FormatError& e) {
            std::lock_guard lk(bad_mu);
            bad.emplace(task, e);
            return false;
        }
    };
    auto compute = [&](int64_t task, unsigned worker, uint8_t* out) -> size_t {
        const Span s = span_of(task);
        const uint8_t* rows = src + static_cast<uint64_t>(s.first_row) * src_row;
        const int64_t n = s.n_rows * ne0;
        if (!validate(task, t.src_type, rows, src_row, s.first_row, "input")) return 0;
        const float* f32 = reinterpret_cast<const float*>(rows);
        if (!direct_f32) {
            float* buf = scratch[worker].data();
            if (t.src_type == GgmlType::F32)
                std::memcpy(buf, rows, static_cast<size_t>(n) * sizeof(float));
            else
                dequantize_row(t.src_type, rows, buf, n);
            f32 = buf;
        }
        if (t.dst_type == GgmlType::F32) {
            std::memcpy(out, f32, static_cast<size_t>(n) * sizeof(float));
            return static_cast<size_t>(n) * sizeof(float);
        }
        const float* imat = imatrix ? imatrix + (s.mat % info.ne[2]) * ne0 : nullptr;
        const auto quantize = reference ? quantize_chunk_ref : quantize_chunk;
        size_t written = 0;
        try {
            written = quantize(t.dst_type, f32, out, s.n_rows, ne0, imat);
        } catch (const FormatError& e) {
            // A quantizer that gives up (an i-quant grid search on huge values) names only its
            // type: find the first row it refuses and name the tensor and that row.
            int64_t r = 0;
            for (; r + 1 < s.n_rows; ++r) {
                try {
                    quantize(t.dst_type, f32 + r * ne0, out, 1, ne0, imat);
                } catch (const FormatError&) {
                    break;
                }
            }
            std::lock_guard lk(bad_mu);
            bad.emplace(task, FormatError(e.kind(), in.path(), "tensor '" + t.name + "'",
                                          fmt::format("row {}: {}", s.first_row + r, e.what())));
            return 0;
        }
        if (written == static_cast<size_t>(s.n_rows) * dst_row &&
            !validate(task, t.dst_type, out, dst_row, s.first_row, "quantized output"))
            return 0;
        return written;
    };
    auto sink = [&](int64_t task, std::span<const uint8_t> out) {
        const Span s = span_of(task);
        if (out.empty()) {
            std::lock_guard lk(bad_mu);
            if (auto it = bad.find(task); it != bad.end()) throw it->second;
        }
        if (out.size() != static_cast<size_t>(s.n_rows) * dst_row)
            throw FormatError(
                ErrorKind::Unsupported, in.path(), "tensor '" + t.name + "'",
                fmt::format("quantizer wrote {} bytes for {} rows of {}", out.size(), s.n_rows, type_name(t.dst_type)));
        w.write_tensor_data(out);
        consumed(static_cast<uint64_t>(s.first_row + s.n_rows) * src_row);
    };
    pool.run_ordered(grid.n_tasks, static_cast<size_t>(rows_per_task) * dst_row, compute, sink);
}

}  // namespace

const float* RequantJob::imatrix_for(const TensorPlan& t) const {
    auto it = imatrix.find(t.name);
    if (it == imatrix.end() || it->second.size() != static_cast<size_t>(t.shape[0] * matrices(t))) return nullptr;
    return it->second.data();
}

RequantJob prepare_requant(const RequantInput& in, const RequantOptions& opt) {
    if (!opt.plan.preset) throw FormatError(ErrorKind::Usage, "", "--preset", "no preset given");
    if (!opt.include_weights.empty() && !opt.exclude_weights.empty())
        throw FormatError(ErrorKind::Usage, "", "--include-weights/--exclude-weights", "cannot be used together");
    RequantJob job;
    job.ftype = opt.plan.preset->ftype;
    job.reference_kernels = opt.reference_kernels;

    std::vector<GgufKV> overrides = opt.override_kv;
    if (!opt.imatrix_path.empty()) {
        Imatrix m = load_imatrix(opt.imatrix_path);
        filter_imatrix(m, opt.include_weights, opt.exclude_weights);
        if (!m.entries.empty()) {
            for (auto& kv : imatrix_kvs(opt.imatrix_path, m)) overrides.push_back(std::move(kv));
            job.imatrix = std::move(m.entries);
        }
    }
    job.kvs = output_kvs(in.metadata(), job.ftype, overrides);

    PlanOptions popt = opt.plan;
    popt.has_imatrix = !job.imatrix.empty();
    job.split = opt.split;
    if (opt.keep_split) {  // llama-quantize --keep-split: tensors by input shard, then offset
        if (opt.split.max_bytes || opt.split.max_tensors)
            throw FormatError(ErrorKind::Usage, "", "--keep-split",
                              "cannot be used with --split-max-size or --split-max-tensors");
        popt.order.resize(in.tensors().size());
        std::iota(popt.order.begin(), popt.order.end(), size_t{0});
        std::stable_sort(popt.order.begin(), popt.order.end(), [&](size_t a, size_t b) {
            return std::pair(in.shard_of(a), in.tensors()[a].offset) <
                   std::pair(in.shard_of(b), in.tensors()[b].offset);
        });
        job.split.keep.assign(in.shard_count(), 0);
        for (size_t i : popt.order) ++job.split.keep[in.shard_of(i)];
    }
    job.plan = plan_requant(job.kvs, in.tensors(), popt);

    // What a conversion would refuse fails here; a dry run reports it as a warning instead.
    auto refuse = [&](const FormatError& e) {
        if (!opt.dry_run) throw e;
        job.writable = false;
        job.plan.warnings.push_back(std::string("a conversion would fail: ") + e.what());
    };
    for (const PlanRefusal& r : job.plan.refusals) refuse(FormatError(ErrorKind::Usage, in.path(), r.subject, r.what));
    size_t requantized = 0;
    const TensorPlan* first_requantized = nullptr;
    for (const auto& t : job.plan.tensors) {
        job.n_elements += static_cast<uint64_t>(t.n_elements);
        job.src_bytes += t.src_bytes;
        job.dst_bytes += t.dst_bytes;
        if (!t.convert()) continue;
        try {
            check_convertible(in, t);
        } catch (const FormatError& e) {
            refuse(e);
        }
        if (traits(t.src_type).quantized && !requantized++) first_requantized = &t;
        const std::string subject = "tensor '" + t.name + "'";
        if (auto it = job.imatrix.find(t.name); it != job.imatrix.end() && !job.imatrix_for(t)) {
            const std::string what = fmt::format("imatrix entry has {} values, the tensor needs {} ({} x {} matrices)",
                                                 it->second.size(), t.shape[0] * matrices(t), t.shape[0], matrices(t));
            // llama-quantize lets token_embd through: its imatrix entry never fits.
            if (t.name != "token_embd.weight" && t.name != "per_layer_token_embd.weight")
                refuse(FormatError(ErrorKind::BadDims, opt.imatrix_path, subject, what));
            else
                job.plan.warnings.push_back(escape_text(subject) + ": " + what + ": quantized without it");
        }
        if (!job.imatrix.empty() && traits(t.dst_type).quantized && !job.imatrix.contains(t.name))
            job.plan.warnings.push_back(  // llama-quantize's "did not find weights for ..."
                fmt::format("did not find imatrix weights for {}: quantized to {} without them", escape_text(subject),
                            type_name(t.dst_type)));
        if (t.requires_imatrix && !job.imatrix_for(t))
            refuse(FormatError(
                ErrorKind::Usage, in.path(), subject,
                fmt::format("{} needs an importance matrix{}", type_name(t.dst_type),
                            opt.imatrix_path.empty() ? " (pass --imatrix)" : ", and the imatrix has no entry for it")));
    }
    if (requantized && !opt.allow_requantize)
        refuse(FormatError(
            ErrorKind::Usage, in.path(), "tensor '" + first_requantized->name + "'",
            fmt::format("requantizing from {} to {} is disabled (pass --allow-requantize; {} tensor(s) are quantized)",
                        type_name(first_requantized->src_type), type_name(first_requantized->dst_type), requantized)));
    else if (requantized)
        job.plan.warnings.push_back(
            fmt::format("requantizing {} already-quantized tensor(s): quality is lower than "
                        "quantizing from F32/F16/BF16",
                        requantized));

    GgufWriter planned("(planned output)");
    describe_output(planned, job);
    job.file_size = planned.planned_size();
    GgufOutput out("(planned output)", job.split);
    describe_output(out, job);
    out.plan();
    job.out_sizes = out.sizes();
    for (size_t i = 0; i < job.plan.tensors.size(); ++i)
        if (out.writes(i)) job.written_src_bytes += job.plan.tensors[i].src_bytes;
    return job;
}

RequantJob prepare_requant(const Model& in, const RequantOptions& opt) { return prepare_requant(ModelInput(in), opt); }

void write_requant(const RequantInput& in, const RequantJob& job, const std::string& out_path, unsigned threads,
                   const RequantProgress& progress) {
    if (!job.writable)
        throw FormatError(ErrorKind::Usage, out_path, "", "the plan has refused tensors (see its warnings)");
    GgufOutput w(out_path, job.split, in.files());
    describe_output(w, job);
    w.plan();

    int64_t max_tasks = 0;  // no more threads than the largest conversion has tasks
    for (size_t i = 0; i < job.plan.tensors.size(); ++i)
        if (const TensorPlan& t = job.plan.tensors[i]; t.convert() && w.writes(i))
            max_tasks = std::max(max_tasks, TaskGrid(in.tensors()[t.input_index]).n_tasks);
    std::unique_ptr<ThreadPool> pool;
    if (max_tasks > 0) pool = std::make_unique<ThreadPool>(thread_count(threads, static_cast<uint64_t>(max_tasks)));
    std::vector<std::vector<float>> scratch(pool ? pool->size() : 0);

    uint64_t done = 0;
    for (size_t i = 0; i < job.plan.tensors.size(); ++i) {
        const TensorPlan& t = job.plan.tensors[i];
        if (!w.writes(i)) continue;
        // As the tensor's input is consumed: progress, and its input pages dropped every
        // kReleaseEvery bytes (pages still being read fault back in from the page cache), so
        // memory stays bounded whatever the tensor size.
        uint64_t released_at = 0;
        auto advance = [&](uint64_t consumed) {
            if (consumed >= released_at + kReleaseEvery) {
                in.release_pages(t.input_index);
                released_at = consumed;
            }
            if (progress) progress(i, done + consumed, t.name);
        };
        if (t.convert()) {
            convert_tensor(*pool, scratch, in, t, job.imatrix_for(t), job.reference_kernels, w, advance);
        } else {
            // Copied in pieces of whole rows, each validated as ggml validates input tensors.
            auto data = in.tensor_data(t.input_index);
            const uint64_t row = row_size(t.src_type, t.shape[0]);
            const size_t piece = static_cast<size_t>(std::max<uint64_t>(1, kCopyPiece / row) * row);
            for (size_t off = 0; off < data.size(); off += piece) {
                const size_t n = std::min(piece, data.size() - off);
                validate_rows(t.src_type, data.subspan(off, n), row, static_cast<int64_t>(off / row), in.path(), t.name,
                              "input");
                w.write_tensor_data(data.subspan(off, n));
                advance(off + n);
            }
        }
        in.done(t.input_index);
        done += t.src_bytes;
        if (progress) progress(i, done, t.name);
    }
    w.finish();
}

void write_requant(const Model& in, const RequantJob& job, const std::string& out_path, unsigned threads,
                   const RequantProgress& progress) {
    write_requant(ModelInput(in), job, out_path, threads, progress);
}

RequantJob requantize(const std::string& in_path, const std::string& out_path, const RequantOptions& opt,
                      unsigned threads) {
    Model in = open_model(in_path);
    RequantJob job = prepare_requant(in, opt);
    write_requant(in, job, out_path, threads);
    return job;
}

}  // namespace oiw
