// Deterministic synthetic llama-style / MoE models (random heavy-tailed weights, SPM-like vocab),
// written with our own GgufWriter. Used for samples/, benchmarks and tests.
#pragma once
#include <cstdint>
#include <string>

#include "libformat/gguf/split.h"
#include "libformat/types.h"

namespace oiw {

struct SynthOptions {
    std::string name = "synth-llama";
    int64_t n_embd = 256, n_layer = 2, n_ff = 768, n_vocab = 1024;
    int64_t n_head = 4, n_head_kv = 2;
    int64_t n_expert = 0, n_expert_used = 0;  // > 0: qwen3moe-style 3-D expert tensors + F32 routers
    bool tied = false;                        // no output.weight: token_embd doubles as lm_head
    GgmlType type = GgmlType::F16;            // type of 2-D+ weight matrices (norms/routers stay F32)
    uint64_t seed = 1;
    bool sparse = false;  // tensor data left as holes (all zeros): full-size files costing only their headers on disk
};

// Writes the model to `path` (atomically), as one file or as gguf-split shards (`split`; with
// --shard K/N the values of the other shards' tensors are still generated, then dropped, so every
// shard holds the bytes of the full run). Same options and seed give identical bytes.
// Returns the number of parameters of the model; `written` (when given) gets the files written.
uint64_t write_synth_model(const std::string& path, const SynthOptions& o, const SplitOptions& split = {},
                           std::vector<std::string>* written = nullptr);

}  // namespace oiw
