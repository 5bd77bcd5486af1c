// Split models, as llama.cpp's tools/gguf-split writes and reads them.
//
//   OUT-00001-of-00003.gguf   every key of the model, then split.no=0 split.tensors.count=T
//                             split.count=3; tensor infos and data of shard 1
//   OUT-00002-of-00003.gguf   only split.no=1 split.tensors.count=T split.count=3; its tensors
//   OUT-00003-of-00003.gguf   ... (split.no, split.count: u16; split.tensors.count: i32)
//
// Each shard is a complete GGUF v3 file; tensors keep the model's order and each lies whole in
// one shard. A merged file keeps shard 1's keys with split.count moved to the end and set to 0.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "libformat/gguf/gguf.h"

namespace oiw {

inline constexpr std::string_view kSplitNo = "split.no", kSplitCount = "split.count",
                                  kSplitTensors = "split.tensors.count";
// split.count is a u16 and shard numbers are printed with five digits.
inline constexpr unsigned kMaxShards = 65535;

// "PREFIX-00002-of-00003.gguf" for shard index k (0-based) of n.
std::string split_path(const std::string& prefix, unsigned k, unsigned n);
// The prefix of an output name: "OUT.gguf" and "OUT" both give "OUT".
std::string split_prefix_of(const std::string& out);
// The prefix when `path` is named as shard index k of n, else nullopt.
std::optional<std::string> split_prefix(const std::string& path, unsigned k, unsigned n);

// How to cut an output into shards (llama-gguf-split's options), and which shard this run writes.
struct SplitOptions {
    uint64_t max_bytes = 0;              // --split-max-size: tensor bytes (each padded to 32) per shard; 0: off
    uint64_t max_tensors = 0;            // --split-max-tensors: tensors per shard; 0: off
    bool no_tensor_first_split = false;  // shard 1 holds only the metadata
    unsigned shard = 0, shards = 0;      // --shard K/N: write only shard K (1-based) of N; 0: all
    // llama-quantize --keep-split: the number of tensors of each shard (the input's shards), and
    // its layout: keys split.no, split.count, split.tensors.count (none with one shard, which is
    // still named PREFIX-00001-of-00001.gguf). Empty: off.
    std::vector<size_t> keep;
    bool active() const { return max_bytes > 0 || max_tensors > 0 || !keep.empty(); }
    // True when this run writes shard k (0-based).
    bool writes_shard(size_t k) const { return shard == 0 || shard == k + 1; }
};

// Output file k of n for the output named `out`: `out` itself unless split, else its shard k.
std::string output_path(const std::string& out, const SplitOptions& opt, unsigned k, unsigned n);

// The tensor range [begin, end) of each shard, computed from the tensor sizes alone as
// llama-gguf-split does; no shard is empty except shard 1 with no_tensor_first_split.
struct ShardRange {
    size_t begin, end;
};
std::vector<ShardRange> plan_split(const std::vector<GgufTensorInfo>& tensors, const SplitOptions& opt);

// Keys of shard k of n for a model whose single-file keys are `model` (see the diagram; with
// `quantize_layout`, llama-quantize --keep-split's order and no keys for a single shard).
Metadata shard_kvs(const Metadata& model, unsigned k, unsigned n, uint64_t n_tensors, bool quantize_layout = false);
// Keys of the single file llama-gguf-split --merge writes from a split model's first shard.
Metadata merged_kvs(const Metadata& first_shard);

// One GGUF output written either as one file or as gguf-split shards, with the interface of
// GgufWriter: keys and tensor infos first, then tensor bytes in info order. Split, every shard is
// byte-identical to what llama-gguf-split --split makes of the single file. With --shard K/N only
// shard K is written: callers skip the tensors for which writes() is false. The files of a run
// are one transaction: each shard is completed (written and fsynced to its temp file) as soon as
// its last tensor is written, and finish() publishes them all together (AtomicFile::publish_all:
// renames back to back, signals held). A run that fails or is killed before then leaves every
// existing file as it was and no temp file; see docs/scale.md for the window between renames.
class GgufOutput {
public:
    GgufOutput(std::string path, SplitOptions split, std::vector<std::string> inputs = {}, uint32_t version = 3);
    ~GgufOutput();

    void set_kvs(const Metadata& kvs) { kvs_ = kvs; }
    void add_tensor(const std::string& name, GgmlType type, std::span<const int64_t> shape);
    void set_pad_empty(bool pad) { pad_empty_ = pad; }

    // Cuts the output into shards (after the last add_tensor; implied by the first write).
    // Throws FormatError(Usage) when --shard names a shard count the split does not produce.
    void plan();
    // The output files (one, or every shard), and each one's size once written.
    const std::vector<std::string>& paths() const { return paths_; }
    const std::vector<uint64_t>& sizes() const { return sizes_; }
    // The files this run writes (all of paths(), or shard K's with --shard K/N).
    std::vector<std::string> written_paths() const;
    // Total size of what this run writes.
    uint64_t planned_size() const;
    // True when this run writes tensor i.
    bool writes(size_t i) const;
    // Appends bytes of the next written tensor (may be called in pieces, as GgufWriter's).
    void write_tensor_data(std::span<const uint8_t> bytes);
    // As write_tensor_data with n zero bytes left as a hole (GgufWriter::write_tensor_zeros).
    void write_tensor_zeros(uint64_t n);
    // Writes what is left (shards without tensors) and publishes every file this run writes. A
    // rename failing after others succeeded throws naming the shards replaced and those not.
    void finish();

private:
    std::string path_;
    SplitOptions split_;
    std::vector<std::string> inputs_;
    uint32_t version_;
    Metadata kvs_;
    std::vector<GgufTensorInfo> tensors_;
    bool pad_empty_ = false, planned_ = false;
    std::vector<ShardRange> ranges_;
    std::vector<std::string> paths_;
    std::vector<uint64_t> sizes_;
    std::vector<std::unique_ptr<GgufWriter>> writers_;  // per shard (null: not written by this run)
    size_t cur_ = 0;                                    // shard receiving data
    size_t cur_tensor_ = 0;                             // tensor receiving data
    uint64_t cur_written_ = 0;
    // Skips the tensors this run does not write and completes each shard left behind.
    void advance();
    // Renames every completed file of this run into place (finish()).
    void publish();
    // Appends n bytes of tensor data from p, or n zeros (a hole) when p is null.
    void put_tensor_data(const uint8_t* p, uint64_t n);
    std::unique_ptr<GgufWriter> make_writer(size_t k, const std::string& path) const;
};

}  // namespace oiw
