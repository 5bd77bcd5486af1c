#include "converters/hf/convert.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "converters/hf/dequant.h"
#include "converters/quant/dispatch.h"
#include "converters/quant/quants.h"
#include "libformat/error.h"
#include "libformat/fp16.h"
#include "libformat/parallel.h"

namespace oiw::hf {

namespace {

constexpr uint64_t kChunkBytes = 1 << 20;     // output bytes per task (source bytes when copied)
constexpr uint64_t kReleaseEvery = 32 << 20;  // source bytes consumed between releases of its pages
constexpr size_t kBlock = 2048;               // elements converted through float at a time

// True when the source's raw bits decide finiteness (any_non_finite): F32, F16 or BF16 without a scale.
bool raw_checked(const TensorRef& r) {
    const Dtype d = r.tensor->dtype;
    return !r.scale && (d == Dtype::F32 || d == Dtype::F16 || d == Dtype::BF16);
}

// Source element i (row-major, `cols` per row) as the converter computes it: decoded, times its scale.
float element(const TensorRef& r, const uint8_t* p, uint64_t i, uint64_t cols) {
    const float x = decode_element(p, r.tensor->dtype, i);
    return r.scale ? x * r.scale->at(i / cols, i % cols) : x;
}

// Output row r's source row under LlamaModel.permute: rows (head, pair half j, i) are read as
// (head, i, j), i.e. the two halves of each head's rows interleaved.
uint64_t source_row(uint64_t r, uint64_t rows, int64_t heads) {
    if (heads == 0) return r;
    const uint64_t per_head = rows / static_cast<uint64_t>(heads), half = per_head / 2;
    const uint64_t h = r / per_head, within = r % per_head, i = within / 2, j = within % 2;
    return h * per_head + j * half + i;
}

// True when one of the n elements at p (dtype F32, F16 or BF16) is NaN or infinite, decided on the
// raw bits: its exponent all ones. Eight bytes at a time: a lane's exponent plus its lowest bit
// carries into the lane's sign bit only when the exponent is all ones.
bool any_non_finite(const uint8_t* p, uint64_t n, Dtype d) {
    const bool f32 = d == Dtype::F32;
    const uint64_t mask =
        f32 ? 0x7f8000007f800000ull : (d == Dtype::F16 ? 0x7c00ull : 0x7f80ull) * 0x0001000100010001ull;
    const uint64_t low = mask & ~(mask << 1), sign = f32 ? 0x8000000080000000ull : 0x8000800080008000ull;
    const uint64_t bytes = n * (f32 ? 4 : 2), whole = bytes & ~uint64_t{7};
    uint64_t acc = 0;
    for (uint64_t i = 0; i < whole; i += 8) {
        uint64_t w;
        std::memcpy(&w, p + i, 8);
        acc |= (w & mask) + low;
    }
    for (uint64_t i = whole / (f32 ? 4 : 2); i < n; ++i)
        if (!std::isfinite(decode_element(p, d, i))) return true;
    return (acc & sign) != 0;
}

// The index of the first NaN or infinite value of the source's n elements at p (n when there is none).
uint64_t first_non_finite(const TensorRef& r, const uint8_t* p, uint64_t n, uint64_t cols) {
    uint64_t i = 0;
    while (i < n && std::isfinite(element(r, p, i, cols))) ++i;
    return i;
}

// n (<= kBlock) source elements at s as floats at f (F16 through convert_f16_to_f32: F16C when
// the active instruction set has it; the 8-bit dtypes through decode_run).
void to_f32(const uint8_t* s, Dtype d, float* f, size_t n) {
    uint16_t h[kBlock];
    if (d == Dtype::F32) {
        std::memcpy(f, s, 4 * n);
    } else if (d == Dtype::F16) {
        std::memcpy(h, s, 2 * n);  // s may be unaligned
        convert_f16_to_f32(h, f, static_cast<int64_t>(n));
    } else if (d == Dtype::BF16) {
        uint32_t w[kBlock];
        std::memcpy(h, s, 2 * n);
        for (size_t i = 0; i < n; ++i) w[i] = static_cast<uint32_t>(h[i]) << 16;  // bf16_to_fp32
        std::memcpy(f, w, 4 * n);
    } else {
        decode_run(s, d, f, n);
    }
}

// n finite floats at f to `type` (F32, F16, BF16, or Q8_0 for whole blocks) at out: F16, BF16 and
// Q8_0 through the kernel table's row (quantize_chunk: the active ISA's kernel, byte-identical to
// fp32_to_fp16 / fp32_to_bf16 / ggml's quantize_row_q8_0_ref).
void from_f32(const float* f, GgmlType type, uint8_t* out, size_t n) {
    if (type == GgmlType::F32)
        std::memcpy(out, f, 4 * n);
    else
        quantize_chunk(type, f, out, 1, static_cast<int64_t>(n), nullptr);
}

// x + shift as torch computes it in the source's tensor (Gemma3's norms): in float, rounded back to
// F16 for an unscaled F16 source (BF16 and 8-bit sources were widened to F32 first, scaled ones are
// F32 after dequant_simple).
float shifted(float x, const TensorRef& r, float shift) {
    const float y = x + shift;
    return r.tensor->dtype == Dtype::F16 && !r.scale ? fp16_to_fp32(fp32_to_fp16(y)) : y;
}

// n contiguous source elements of `r` at s, the first being source element `first` (`cols` per
// row), decoded, scaled and shifted, to `type` at out, through float a block at a time. Returns
// false when a value was NaN or infinite (checked here only where raw_checked does not hold;
// any_non_finite checks the others on their raw bits).
bool convert_run(const uint8_t* s, const TensorRef& r, float shift, uint64_t first, uint64_t cols, GgmlType type,
                 uint8_t* out, uint64_t n) {
    float f[kBlock];
    const Dtype d = r.tensor->dtype;
    const uint64_t in = dtype_size(d);
    const bool check = !raw_checked(r);
    for (uint64_t i = 0; i < n; i += kBlock) {
        const size_t m = static_cast<size_t>(std::min<uint64_t>(kBlock, n - i));
        to_f32(s + i * in, d, f, m);
        if (r.scale) r.scale->apply(f, m, first + i, cols);
        if (check)
            for (size_t j = 0; j < m; ++j)
                if (!std::isfinite(f[j])) return false;
        if (shift != 0.0f)
            for (size_t j = 0; j < m; ++j) f[j] = shifted(f[j], r, shift);
        from_f32(f, type, out + row_size(type, static_cast<int64_t>(i)), m);
    }
    return true;
}

// True when the output bytes are the source bytes: same type, rows in order, no scale.
bool copies(const PlannedTensor& t) {
    const Dtype d = t.source.tensor->dtype;
    const bool same = (d == Dtype::F32 && t.type == GgmlType::F32) || (d == Dtype::F16 && t.type == GgmlType::F16) ||
                      (d == Dtype::BF16 && t.type == GgmlType::BF16);
    return same && !t.source.scale && t.permute_heads == 0 && t.shift == 0.0f;
}

// One tensor's conversion cut into tasks of `per_task` output elements (whole rows when permuted).
struct TensorJob {
    const PlannedTensor& t;
    const Tensor& src;
    const uint8_t* p;
    uint64_t cols, rows, per_task, n_tasks;
    bool copy;

    explicit TensorJob(const PlannedTensor& pt)
        : t(pt),
          src(*pt.source.tensor),
          p(pt.source.part->bytes(src).data()),
          cols(std::max<uint64_t>(static_cast<uint64_t>(pt.ne[0]), 1)),
          rows(src.elements / cols),
          copy(copies(pt)) {
        const uint64_t unit = t.permute_heads > 0 || traits(t.type).block_size > 1 ? cols : 1;  // Q8_0: whole rows
        const uint64_t bytes = copy ? unit * dtype_size(src.dtype) : row_size(t.type, static_cast<int64_t>(unit));
        per_task = unit * std::max<uint64_t>(1, kChunkBytes / bytes);
        n_tasks = std::max<uint64_t>(1, (src.elements + per_task - 1) / per_task);
    }
    uint64_t begin(uint64_t k) const { return k * per_task; }
    uint64_t end(uint64_t k) const { return std::min(src.elements, (k + 1) * per_task); }

    // Converts task k's output elements into out; returns the bytes written, or nothing when a
    // value was not finite (convert_run).
    std::optional<size_t> convert(uint64_t k, uint8_t* out) const {
        const uint64_t a = begin(k), b = end(k), in = dtype_size(src.dtype);
        if (t.permute_heads == 0) {
            if (!convert_run(p + a * in, t.source, t.shift, a, cols, t.type, out, b - a)) return std::nullopt;
        } else {
            for (uint64_t r = a / cols; r < b / cols; ++r) {
                const uint64_t from = source_row(r, rows, t.permute_heads) * cols;
                if (!convert_run(p + from * in, t.source, t.shift, from, cols, t.type,
                                 out + row_size(t.type, static_cast<int64_t>(r * cols - a)), cols))
                    return std::nullopt;
            }
        }
        return static_cast<size_t>(row_size(t.type, static_cast<int64_t>(b - a)));
    }

    // The error for the tensor's first non-finite value in source order.
    FormatError non_finite() const {
        const uint64_t i = first_non_finite(t.source, p, src.elements, cols);
        return FormatError(ErrorKind::BadData, t.source.part->path(), "tensor '" + src.name + "'",
                           fmt::format("non-finite value {} at element {}", element(t.source, p, i, cols), i));
    }
};

// Converts one tensor: tasks checked (source range [begin, end), raw bits) and converted on the
// pool, handed to `emit` in order on this thread; a copied task's bytes go straight from the mapping.
template <typename Emit>
void convert_source(ThreadPool& pool, const PlannedTensor& t, Emit&& emit) {
    const TensorJob job(t);
    std::vector<char> bad(job.n_tasks, 0);  // each task writes only its own flag
    const uint64_t in = dtype_size(job.src.dtype);
    auto compute = [&](int64_t task, unsigned, uint8_t* out) -> size_t {
        const auto k = static_cast<uint64_t>(task);
        if (raw_checked(t.source) &&
            any_non_finite(job.p + job.begin(k) * in, job.end(k) - job.begin(k), job.src.dtype)) {
            bad[k] = 1;
            return 0;
        }
        if (job.copy) return 0;
        const std::optional<size_t> n = job.convert(k, out);
        bad[k] = n ? 0 : 1;
        return n.value_or(0);
    };
    uint64_t released_at = 0;
    auto sink = [&](int64_t task, std::span<const uint8_t> out) {
        const auto k = static_cast<uint64_t>(task);
        if (bad[k]) throw job.non_finite();
        const uint64_t a = job.begin(k), b = job.end(k);
        if (job.copy)
            emit(std::span<const uint8_t>(job.p + a * in, static_cast<size_t>((b - a) * in)));
        else
            emit(out);
        if (b * in >= released_at + kReleaseEvery) {
            t.source.part->release(job.src);  // pages still being read fault back in from the page cache
            released_at = b * in;
        }
    };
    const size_t slot = job.copy ? 0 : static_cast<size_t>(row_size(t.type, static_cast<int64_t>(job.per_task)));
    pool.run_ordered(static_cast<int64_t>(job.n_tasks), slot, compute, sink);
}

// The tensor as each of its sources in turn (one for all but stacked tensors): `t` with that source.
template <typename Fn>
void for_each_source(const PlannedTensor& t, Fn&& fn) {
    if (t.stacked.empty()) return fn(t);
    for (const TensorRef& r : t.stacked) {
        PlannedTensor part = t;
        part.stacked.clear();
        part.source = r;
        fn(part);
    }
}

// A computed tensor's bytes (its F32 values as they are).
std::span<const uint8_t> computed_bytes(const PlannedTensor& t) {
    return {reinterpret_cast<const uint8_t*>(t.computed.data()), t.computed.size() * sizeof(float)};
}

template <typename Emit>
void convert_tensor(ThreadPool& pool, const PlannedTensor& t, Emit&& emit) {
    if (!t.computed.empty()) return emit(computed_bytes(t));
    for_each_source(t, [&](const PlannedTensor& part) { convert_source(pool, part, emit); });
}

void release_sources(const PlannedTensor& t) {
    for (const TensorRef& r : t.sources()) r.part->release(*r.tensor);
}

// One tensor element by element with the scalar conversions (WriteOptions::reference).
void write_source_reference(const PlannedTensor& t, GgufOutput& w) {
    const Tensor& src = *t.source.tensor;
    const uint8_t* p = t.source.part->bytes(src).data();
    const uint64_t cols = static_cast<uint64_t>(t.ne[0]), rows = src.elements / std::max<uint64_t>(cols, 1);
    std::vector<uint8_t> buf(row_size(t.type, t.ne[0]));
    std::vector<float> row(cols);
    for (uint64_t r = 0; r < rows; ++r) {
        const uint64_t base = source_row(r, rows, t.permute_heads) * cols;
        for (uint64_t c = 0; c < cols; ++c) {
            float x = element(t.source, p, base + c, cols);
            if (!std::isfinite(x)) throw TensorJob(t).non_finite();
            if (t.shift != 0.0f) x = shifted(x, t.source, t.shift);
            row[c] = x;
            if (t.type == GgmlType::F32) {
                std::memcpy(buf.data() + 4 * c, &x, 4);
            } else if (t.type != GgmlType::Q8_0) {
                const uint16_t h = t.type == GgmlType::F16 ? fp32_to_fp16(x) : fp32_to_bf16(x);
                std::memcpy(buf.data() + 2 * c, &h, 2);
            }
        }
        if (t.type == GgmlType::Q8_0)
            quantize_chunk_ref(t.type, row.data(), buf.data(), 1, static_cast<int64_t>(cols), nullptr);
        w.write_tensor_data(buf);
    }
}

void write_tensor_reference(const PlannedTensor& t, GgufOutput& w) {
    if (!t.computed.empty()) return w.write_tensor_data(computed_bytes(t));
    for_each_source(t, [&](const PlannedTensor& part) { write_source_reference(part, w); });
}

// Tensors per shard as gguf-py's GGUFWriter.add_tensor_info cuts them: a new shard when the current
// one holds a tensor and either max_tensors of them, or bytes (unpadded) that with the next tensor's
// exceed max_bytes; no_tensor_first_split puts a shard without tensors first.
std::vector<size_t> python_split(const ConvertPlan& plan, const SplitOptions& s) {
    std::vector<size_t> counts(s.no_tensor_first_split ? 2 : 1, 0);
    uint64_t bytes = 0;
    for (const PlannedTensor& t : plan.tensors) {
        const uint64_t n = row_size(t.type, static_cast<int64_t>(t.elements()));
        if (counts.back() > 0 &&
            ((s.max_tensors && counts.back() >= s.max_tensors) || (s.max_bytes && bytes + n > s.max_bytes))) {
            counts.push_back(0);
            bytes = 0;
        }
        ++counts.back();
        bytes += n;
    }
    if (counts.size() > kMaxShards)
        throw FormatError(
            ErrorKind::Usage, "", "split",
            fmt::format("the split would make {} shards; at most {} can be named", counts.size(), kMaxShards));
    return counts;
}

// The output as the Python converter lays it out: one file `out` when the split makes one shard
// (it then writes no split keys), else its shards as llama-quantize --keep-split keys them
// (split.no, split.count, split.tensors.count) named from out's stem as gguf-py names them.
std::unique_ptr<GgufOutput> open_output(const ConvertPlan& plan, const std::string& out, const SplitOptions& s) {
    std::vector<std::string> inputs;
    for (const PlannedTensor& t : plan.tensors)
        for (const TensorRef& r : t.sources()) inputs.push_back(r.part->path());
    SplitOptions layout;
    layout.keep = python_split(plan, s);
    std::string path = out;
    if (layout.keep.size() == 1) {
        if (s.shard && s.shards != 1)
            throw FormatError(ErrorKind::Usage, out, fmt::format("shard {}/{}", s.shard, s.shards),
                              "this split makes 1 shard");
        layout.keep.clear();
    } else {
        const std::filesystem::path p(out);
        path = (p.parent_path() / p.stem()).string() + ".gguf";
        layout.shard = s.shard;
        layout.shards = s.shards;
    }
    auto w = std::make_unique<GgufOutput>(path, layout, inputs);
    w->set_kvs(plan.kvs);
    for (const PlannedTensor& t : plan.tensors) w->add_tensor(t.name, t.type, t.ne);
    w->plan();
    return w;
}

}  // namespace

std::vector<std::string> write_convert(const ConvertPlan& plan, const std::string& out, const WriteOptions& opt) {
    const auto w = open_output(plan, out, opt.split);
    uint64_t max_tasks = 1;
    for (const PlannedTensor& t : plan.tensors)
        if (t.computed.empty())
            for_each_source(
                t, [&](const PlannedTensor& part) { max_tasks = std::max(max_tasks, TensorJob(part).n_tasks); });
    std::unique_ptr<ThreadPool> pool;
    if (!opt.reference) pool = std::make_unique<ThreadPool>(thread_count(opt.threads, max_tasks));
    uint64_t done = 0;
    for (size_t i = 0; i < plan.tensors.size(); ++i) {
        const PlannedTensor& t = plan.tensors[i];
        if (!w->writes(i)) continue;
        if (opt.reference)
            write_tensor_reference(t, *w);
        else
            convert_tensor(*pool, t, [&](std::span<const uint8_t> b) { w->write_tensor_data(b); });
        release_sources(t);
        done += row_size(t.type, static_cast<int64_t>(t.elements()));
        if (opt.progress) opt.progress(i, done, t.name);
    }
    w->finish();
    return w->written_paths();
}

uint64_t PlannedTensor::elements() const {
    uint64_t n = computed.size();
    for (const TensorRef& r : sources()) n += r.tensor->elements;
    return n;
}

uint64_t ConvertPlan::total_bytes() const {
    uint64_t n = 0;
    for (const PlannedTensor& t : tensors) n += row_size(t.type, static_cast<int64_t>(t.elements()));
    return n;
}

void convert_tensor_into(ThreadPool& pool, const PlannedTensor& t, std::vector<uint8_t>& out) {
    out.resize(static_cast<size_t>(row_size(t.type, static_cast<int64_t>(t.elements()))));
    size_t at = 0;
    convert_tensor(pool, t, [&](std::span<const uint8_t> b) {
        std::memcpy(out.data() + at, b.data(), b.size());
        at += b.size();
    });
    release_sources(t);
}

}  // namespace oiw::hf
