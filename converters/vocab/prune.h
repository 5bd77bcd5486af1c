// Vocabulary pruning: keep a set of token ids (plus what keeps every text encodable and every
// kept token reachable), rewrite the tokenizer metadata and gather the rows of every tensor that
// has a vocabulary dimension. Rows are copied byte for byte, never requantized.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "converters/vocab/vocab.h"
#include "libformat/gguf/gguf.h"
#include "libformat/gguf/split.h"
#include "libformat/model.h"

namespace oiw::vocab {

inline constexpr const char* kOriginalIdsKey = "vocab_prune.original_ids";

// Throws FormatError(BadData) naming the tensor or key when a vocabulary-role tensor's last
// dimension (token_embd, output, per_layer_token_embd, the NextN heads) or <arch>.vocab_size
// differs from n_vocab: pruning such a model would leave it inconsistent.
void check_consistent(const oiw::Model& in, size_t n_vocab);

// Throws FormatError(Usage) naming `source` and the first id outside [0, n_vocab).
void check_ids(const std::vector<int64_t>& ids, size_t n_vocab, const std::string& source);

struct PruneOptions {
    bool closure = true;  // off only in tests that show what the closure is for
};

struct PrunePlan {
    size_t n_vocab_before = 0, n_vocab_after = 0;
    size_t requested = 0;      // distinct requested ids
    size_t always_kept = 0;    // ids added because they are always kept (not requested)
    size_t closure_added = 0;  // ids added by the closure
    size_t merges_before = 0, merges_after = 0;
    std::string closure_skipped;          // why no closure was computed ("" when it was)
    std::vector<int32_t> original_ids;    // new id -> old id, ascending
    Metadata kvs;                         // output metadata
    std::vector<GgufTensorInfo> tensors;  // output tensor infos (offsets not assigned)
    std::vector<int> vocab_dim;           // per tensor: the dimension gathered, -1 if none
};

// Always kept: control, user-defined and unknown tokens, byte tokens <0xNN>, every id named by a
// tokenizer.ggml.*_token_id key (or llama.cpp's default when the key is absent), and for BPE the
// 256 byte symbols. Closure (SPM and BPE): every symbol the merger creates when it tokenizes a
// kept token's text and ends with that token, recursively. A BPE merge is kept, in its original
// order, unless one of its parts or its result is a dropped token. Then every tokenizer.ggml.* array as long as the
// vocabulary, the merges, the special ids, <arch>.vocab_size and the last dimension of each vocabulary-role tensor (by
// name: token_embd, output, output.bias, per_layer_token_embd, the NextN heads; never a tensor that only happens to
// have a dimension of n_vocab) are rewritten, and vocab_prune.original_ids is added (composed with an existing one).
// Throws FormatError for an inconsistent model (check_consistent), a requested id out of range (check_ids naming the
// model; callers check ids against their own source first), a special id out of range, or a vocabulary dimension that
// cannot be gathered (ne0 of a block type).
PrunePlan plan_prune(const oiw::Model& in, const Vocab& vocab, const std::vector<int64_t>& requested,
                     const PruneOptions& opt = {});

// Writes the planned file (or its gguf-split shards, `split`) atomically, copying kept rows byte for byte.
// Returns the files written.
std::vector<std::string> write_pruned(const oiw::Model& in, const PrunePlan& plan, const std::string& out_path,
                                      const SplitOptions& split = {});

}  // namespace oiw::vocab
