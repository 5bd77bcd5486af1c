#include "libformat/gguf/split.h"

#include <array>

#include "libformat/io/atomic_file.h"

#include <fmt/format.h>

namespace oiw {

namespace {

GgufKV u16_kv(std::string_view key, uint16_t v) {
    return {std::string(key), GgufValue::make_scalar<uint16_t>(GgufType::U16, v)};
}

// gguf_set_val_*: an existing key is dropped, the new value appended.
void reset_kv(Metadata& kvs, GgufKV kv) {
    kvs.erase(kv.key);
    kvs.add(std::move(kv));
}

}  // namespace

std::string split_path(const std::string& prefix, unsigned k, unsigned n) {
    return fmt::format("{}-{:05d}-of-{:05d}.gguf", prefix, k + 1, n);
}

std::string split_prefix_of(const std::string& out) {
    constexpr std::string_view ext = ".gguf";
    if (out.size() > ext.size() && out.ends_with(ext)) return out.substr(0, out.size() - ext.size());
    return out;
}

std::string output_path(const std::string& out, const SplitOptions& opt, unsigned k, unsigned n) {
    return opt.active() ? split_path(split_prefix_of(out), k, n) : out;
}

std::optional<std::string> split_prefix(const std::string& path, unsigned k, unsigned n) {
    const std::string tail = split_path("", k, n);
    if (path.size() <= tail.size() || !path.ends_with(tail)) return std::nullopt;
    return path.substr(0, path.size() - tail.size());
}

std::vector<ShardRange> plan_split(const std::vector<GgufTensorInfo>& tensors, const SplitOptions& opt) {
    std::vector<ShardRange> r;
    if (!opt.keep.empty()) {
        size_t begin = 0;
        for (size_t n : opt.keep) r.push_back({begin, begin += n});
        if (begin != tensors.size())
            throw FormatError(ErrorKind::Usage, "", "kept split",
                              fmt::format("the shards hold {} tensors, not {}", begin, tensors.size()));
        return r;
    }
    if (opt.no_tensor_first_split) r.push_back({0, 0});
    r.push_back({0, 0});
    uint64_t bytes = 0;  // of the current shard, each tensor padded to 32 as llama-gguf-split counts
    for (size_t i = 0; i < tensors.size(); ++i) {
        const uint64_t n = align_up(tensors[i].n_bytes, kDefaultAlignment);
        const bool full = r.back().end > r.back().begin &&
                          (opt.max_bytes ? bytes + n > opt.max_bytes : (i - r.back().begin) % opt.max_tensors == 0);
        if (full) {
            r.push_back({i, i});
            bytes = 0;
        }
        bytes += n;
        r.back().end = i + 1;
    }
    if (r.size() > kMaxShards)
        throw FormatError(ErrorKind::Usage, "", "split",
                          fmt::format("the split would make {} shards; at most {} can be named", r.size(), kMaxShards));
    return r;
}

Metadata shard_kvs(const Metadata& model, unsigned k, unsigned n, uint64_t n_tensors, bool quantize_layout) {
    if (n_tensors > INT32_MAX)
        throw FormatError(ErrorKind::TooLarge, model.source(), std::string(kSplitTensors),
                          fmt::format("{} tensors do not fit in an i32", n_tensors));
    Metadata kvs = k == 0 ? model : Metadata({}, model.source());
    if (quantize_layout && n == 1) return kvs;
    const GgufKV no = u16_kv(kSplitNo, static_cast<uint16_t>(k)), count = u16_kv(kSplitCount, static_cast<uint16_t>(n));
    const GgufKV tensors{std::string(kSplitTensors),
                         GgufValue::make_scalar<int32_t>(GgufType::I32, static_cast<int32_t>(n_tensors))};
    // llama-gguf-split sets split.count last (once the number of shards is known); llama-quantize
    // sets the three in order.
    for (const GgufKV* kv : quantize_layout ? std::array{&no, &count, &tensors} : std::array{&no, &tensors, &count})
        reset_kv(kvs, *kv);
    return kvs;
}

Metadata merged_kvs(const Metadata& first_shard) {
    Metadata kvs = first_shard;
    reset_kv(kvs, u16_kv(kSplitCount, 0));
    return kvs;
}

GgufOutput::GgufOutput(std::string path, SplitOptions split, std::vector<std::string> inputs, uint32_t version)
    : path_(std::move(path)),
      split_(std::move(split)),
      inputs_(std::move(inputs)),
      version_(version),
      kvs_({}, path_) {}

GgufOutput::~GgufOutput() = default;

void GgufOutput::add_tensor(const std::string& name, GgmlType type, std::span<const int64_t> shape) {
    if (planned_)
        throw FormatError(ErrorKind::Usage, path_, "tensor '" + name + "'",
                          "tensor added after the output was planned");
    tensors_.push_back(make_tensor_info(name, type, shape, path_));
}

std::unique_ptr<GgufWriter> GgufOutput::make_writer(size_t k, const std::string& path) const {
    const bool split = split_.active();
    auto w = std::make_unique<GgufWriter>(path, inputs_, split ? 3 : version_);
    w->set_pad_empty(split || pad_empty_);  // ggml's writer (llama-gguf-split) pads every header
    w->set_kvs(split ? shard_kvs(kvs_, static_cast<unsigned>(k), static_cast<unsigned>(ranges_.size()), tensors_.size(),
                                 !split_.keep.empty())
                     : kvs_);
    for (size_t i = ranges_[k].begin; i < ranges_[k].end; ++i)
        w->add_tensor(tensors_[i].name, tensors_[i].type, tensors_[i].shape());
    return w;
}

void GgufOutput::plan() {
    if (planned_) return;
    planned_ = true;
    ranges_ = split_.active() ? plan_split(tensors_, split_) : std::vector<ShardRange>{{0, tensors_.size()}};
    if (split_.shard && split_.shards != ranges_.size())
        throw FormatError(ErrorKind::Usage, path_,
                          "shard " + std::to_string(split_.shard) + "/" + std::to_string(split_.shards),
                          fmt::format("this split makes {} shard{}, not {}", ranges_.size(),
                                      ranges_.size() == 1 ? "" : "s", split_.shards));
    for (size_t k = 0; k < ranges_.size(); ++k) {
        paths_.push_back(output_path(path_, split_, static_cast<unsigned>(k), static_cast<unsigned>(ranges_.size())));
        auto w = make_writer(k, paths_.back());
        sizes_.push_back(w->planned_size());
        writers_.push_back(split_.writes_shard(k) ? std::move(w) : nullptr);
    }
}

std::vector<std::string> GgufOutput::written_paths() const {
    std::vector<std::string> v;
    for (size_t k = 0; k < paths_.size(); ++k)
        if (split_.writes_shard(k)) v.push_back(paths_[k]);
    return v;
}

uint64_t GgufOutput::planned_size() const {
    uint64_t n = 0;
    for (size_t k = 0; k < sizes_.size(); ++k)
        if (split_.writes_shard(k)) n += sizes_[k];
    return n;
}

bool GgufOutput::writes(size_t i) const {
    if (split_.shard == 0) return true;
    const ShardRange& r = ranges_.at(split_.shard - 1);
    return i >= r.begin && i < r.end;
}

void GgufOutput::advance() {
    while (cur_tensor_ < tensors_.size() && !writes(cur_tensor_)) ++cur_tensor_;
    for (; cur_ < ranges_.size() && ranges_[cur_].end <= cur_tensor_; ++cur_)
        if (writers_[cur_]) writers_[cur_]->complete();
}

void GgufOutput::write_tensor_data(std::span<const uint8_t> bytes) { put_tensor_data(bytes.data(), bytes.size()); }

void GgufOutput::write_tensor_zeros(uint64_t n) { put_tensor_data(nullptr, n); }

void GgufOutput::put_tensor_data(const uint8_t* p, uint64_t n) {
    plan();
    advance();
    while (n) {
        if (cur_tensor_ >= tensors_.size())
            throw FormatError(ErrorKind::Usage, path_, "", "more tensor data written than the tensor infos describe");
        const uint64_t k = std::min<uint64_t>(n, tensors_[cur_tensor_].n_bytes - cur_written_);
        if (p) {
            writers_[cur_]->write_tensor_data({p, static_cast<size_t>(k)});
            p += k;
        } else {
            writers_[cur_]->write_tensor_zeros(k);
        }
        n -= k;
        if ((cur_written_ += k) == tensors_[cur_tensor_].n_bytes) {
            ++cur_tensor_;
            cur_written_ = 0;
            advance();
        }
    }
}

void GgufOutput::finish() {
    plan();
    advance();
    if (cur_tensor_ < tensors_.size())
        throw FormatError(ErrorKind::Usage, path_, "tensor '" + tensors_[cur_tensor_].name + "'",
                          "data incomplete: output not written");
    publish();
}

namespace {

// "shard 2", "shards 1-3" (1-based, of [begin, end)).
std::string shard_span(size_t begin, size_t end) {
    return end - begin == 1 ? fmt::format("shard {}", begin + 1) : fmt::format("shards {}-{}", begin + 1, end);
}

}  // namespace

void GgufOutput::publish() {
    std::vector<AtomicFile*> files;
    for (auto& w : writers_)
        if (w) files.push_back(w->file());
    size_t published = 0;
    try {
        AtomicFile::publish_all(files, published);
    } catch (const FormatError& e) {
        if (published == 0) throw;  // every target untouched
        // Only a split run writing every shard gets here: file k is shard k.
        throw FormatError(
            ErrorKind::Io, path_, "",
            fmt::format("{}; {} of {} replaced by this run, {} not: the set is mixed, rerun the conversion", e.what(),
                        shard_span(0, published), files.size(), shard_span(published, files.size())));
    }
    writers_.clear();
}

}  // namespace oiw
