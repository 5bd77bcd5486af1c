// The requantizer (gguf-requant): llama-quantize's output, byte for byte, from a streaming,
// multi-threaded engine with bounded memory.
//
//   prepare_requant  plan every tensor, build the output metadata, load and check the imatrix,
//                    refuse what cannot be converted -- before anything is written;
//   write_requant    stream tensors in output order: rows are converted to f32 and quantized in
//                    chunks on a thread pool into a small ring of buffers that the calling thread
//                    writes in order; input pages are released after each tensor.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "converters/requant/requant_plan.h"
#include "libformat/gguf/split.h"
#include "libformat/model.h"

namespace oiw {

// What the requantizer reads: a model's keys and tensor infos, and each tensor's bytes when its turn
// comes. A Model (open_model) is read through its mapping; gguf-convert --preset feeds tensors it
// converts one at a time (converters/hf/convert_requant.h).
class RequantInput {
public:
    virtual ~RequantInput() = default;
    virtual const Metadata& metadata() const = 0;
    virtual const std::vector<GgufTensorInfo>& tensors() const = 0;
    // Names the input in errors.
    virtual const std::string& path() const = 0;
    // Every file the run reads (outputs never overwrite one).
    virtual std::vector<std::string> files() const = 0;
    // Tensor i's bytes (tensors()[i].n_bytes of them), valid until done(i).
    virtual std::span<const uint8_t> tensor_data(size_t i) const = 0;
    // Called every so often while tensor i is consumed: the pages read so far may be dropped.
    virtual void release_pages(size_t i) const = 0;
    // Tensor i is written.
    virtual void done(size_t i) const = 0;
    // --keep-split: the input shard tensor i is in, and how many there are.
    virtual size_t shard_of(size_t i) const = 0;
    virtual size_t shard_count() const = 0;
};

struct RequantOptions {
    PlanOptions plan;                          // preset, rules, overrides (has_imatrix is set here)
    std::string imatrix_path;                  // --imatrix (empty: none); written as given to quantize.imatrix.file
    std::vector<std::string> include_weights;  // --include-weights (substrings of imatrix entry names)
    std::vector<std::string> exclude_weights;  // --exclude-weights
    std::vector<GgufKV> override_kv;           // --override-kv, applied in order after general.file_type
    bool allow_requantize = false;             // quantized sources: dequantize, then quantize
    bool dry_run = false;                      // plan only: what a conversion would refuse becomes a warning
    bool reference_kernels = false;            // scalar reference quantizers (benchmark baseline; same bytes)
    SplitOptions split;                        // write gguf-split shards (or one of them) instead of one file
    bool keep_split = false;  // --keep-split: one output shard per input shard, llama-quantize's layout
};

struct RequantJob {
    RequantPlan plan;                                       // tensors in output order, warnings
    Metadata kvs;                                           // output metadata
    std::map<std::string, std::vector<float>> imatrix;      // importance weights by tensor name (filtered)
    uint32_t ftype = 0;                                     // general.file_type
    uint64_t file_size = 0;                                 // exact output size as one file
    SplitOptions split;                                     // from RequantOptions
    std::vector<uint64_t> out_sizes;                        // exact size of each output file (one, or every shard)
    uint64_t written_src_bytes = 0;                         // input bytes of the tensors this run writes
    uint64_t n_elements = 0, src_bytes = 0, dst_bytes = 0;  // over all tensors
    bool writable = true;                                   // false: a dry run found something a conversion refuses
    bool reference_kernels = false;                         // from RequantOptions

    // Importance weights for a planned tensor (nullptr when none).
    const float* imatrix_for(const TensorPlan& t) const;
};

// Plans the conversion of `in`. Throws FormatError for anything the conversion would refuse:
// bad options, a requantization without allow_requantize, a source type that cannot be converted,
// a missing or mis-sized imatrix entry (naming the tensor); with opt.dry_run the per-tensor
// refusals become warnings. Warnings go to job.plan.warnings.
RequantJob prepare_requant(const RequantInput& in, const RequantOptions& opt);
RequantJob prepare_requant(const Model& in, const RequantOptions& opt);

// Called on the writing thread after each tensor: its position in output order, the input bytes
// consumed so far, its name.
using RequantProgress = std::function<void(size_t index, uint64_t src_bytes_done, std::string_view name)>;

// Writes the planned conversion of `in` to `out_path` (or its shards, job.split) through AtomicFile
// (no input of the run is ever overwritten); with --shard only that shard's tensors are computed. Worker threads:
// thread_count(threads, tasks of the largest conversion), so `threads` = 0 uses every hardware thread; FormatError when
// a thread cannot be created.
void write_requant(const RequantInput& in, const RequantJob& job, const std::string& out_path, unsigned threads = 0,
                   const RequantProgress& progress = {});
void write_requant(const Model& in, const RequantJob& job, const std::string& out_path, unsigned threads = 0,
                   const RequantProgress& progress = {});

// prepare_requant + write_requant.
RequantJob requantize(const std::string& in_path, const std::string& out_path, const RequantOptions& opt,
                      unsigned threads = 0);

}  // namespace oiw
