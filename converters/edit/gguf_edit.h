// Metadata surgery on a GGUF file without touching tensor bytes (gguf-py's gguf_new_metadata.py).
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "libformat/gguf/split.h"
#include "libformat/model.h"

namespace oiw {

struct EditPlan {
    std::vector<GgufKV> set;                                   // replace in place, or append
    std::vector<std::string> remove;                           // keys to drop (must exist)
    std::vector<std::pair<std::string, std::string>> renames;  // tensor OLD -> NEW
};

struct EditResult {
    size_t kv_set = 0, kv_added = 0, kv_removed = 0, tensors_renamed = 0;
    bool relaid_out = false;           // input layout was not canonical: offsets were recomputed
    std::vector<std::string> written;  // files written (one, or the shards of this run); none in a dry run
    std::vector<std::string> paths;    // the output files planned (one, or every shard)
    std::vector<uint64_t> sizes;       // their exact sizes
};

// Applies `plan` to the metadata of `in` (throws FormatError(Usage) naming a missing key/tensor).
// A split model's keys are first merged as llama-gguf-split --merge merges them.
Metadata edited_kvs(const Model& in, const EditPlan& plan, EditResult* res);
// Writes `in` with `plan` applied to `out_path`, or to its shards with `split` (atomic; refuses to
// overwrite `in`). With an empty plan the output is byte-identical to a canonical input; from a
// split model, to llama-gguf-split --merge's file; split, to llama-gguf-split --split's shards.
// With `dry_run`, plans the files (paths, sizes) and writes nothing.
EditResult write_edited(const Model& in, const EditPlan& plan, const std::string& out_path,
                        const SplitOptions& split = {}, bool dry_run = false);

}  // namespace oiw
