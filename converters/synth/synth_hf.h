// Deterministic synthetic Hugging Face checkpoints (LlamaForCausalLM layout): config.json and
// model.safetensors, or shards with model.safetensors.index.json. The input side of gguf-convert's
// tests and benchmarks (scripts/bench-convert makes multi-GB ones with `sparse`).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "converters/synth/synth.h"

namespace oiw {

struct SynthHfOptions {
    uint64_t max_shard_bytes = 0;  // > 0: shards of at most this many tensor bytes (one tensor may exceed it)
};

// Writes the checkpoint of `o` (dense only; o.type F32, F16 or BF16 as the safetensors dtype) into
// the directory `dir`, created when missing; every file is published atomically as one set.
// Same options and seed give identical bytes. Tensors, outermost dimension first:
//   model.embed_tokens.weight [V, E], model.layers.N.{input_layernorm [E], self_attn.{q,k,v,o}_proj
//   [E|KV, E], post_attention_layernorm [E], mlp.{gate,up}_proj [F, E], mlp.down_proj [E, F]},
//   model.norm.weight [E], lm_head.weight [V, E] (absent with o.tied).
// Returns the number of parameters; `written` gets the files written. Throws FormatError (Usage)
// on options it cannot honour.
uint64_t write_synth_hf(const std::string& dir, const SynthOptions& o, const SynthHfOptions& h = {},
                        std::vector<std::string>* written = nullptr);

}  // namespace oiw
