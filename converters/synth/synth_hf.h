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
    // The family whose tensors and config.json keys are written: LlamaForCausalLM, MixtralForCausalLM
    // (o.n_expert experts, o.n_expert_used per token), Qwen2ForCausalLM (q/k/v biases) or
    // Qwen2MoeForCausalLM (Qwen2's with o.n_expert experts and a shared expert) or
    // Qwen3ForCausalLM (q/k norms, head_dim in config.json) or Qwen3MoeForCausalLM (Qwen3's with
    // o.n_expert experts, o.n_expert_used per token) or Gemma3ForCausalLM (q/k norms,
    // pre/post-feedforward norms, head_dim, sliding-window keys) or Gemma3ForConditionalGeneration
    // (Gemma3's text model under language_model., o.n_vocab embedding rows but no vocab_size, a
    // small vision tower and projector, the text keys in text_config) or Phi3ForCausalLM (fused
    // qkv_proj [Q + 2 KV, E] and gate_up_proj [2 F, E]).
    std::string arch = "LlamaForCausalLM";
    int64_t head_dim = 0;  // > 0: attention head width (config.json's head_dim); 0: n_embd / n_head
    // Qwen MoE families: each block's experts as mlp.experts.gate_up_proj [X, 2F, E] and
    // mlp.experts.down_proj [X, E, F] (newer transformers' fused form) instead of one tensor each.
    bool fused_experts = false;
    // Non-empty: an FP8 release's layout (quantization_config.quant_method "fp8"): every projection
    // (*_proj.weight, Mixtral's w1..w3) F8_E4M3 with an F32 <name>_scale_inv beside it, the values
    // those two decode to as dequant_simple decodes them. "RxC": scales per R x C block
    // (weight_block_size [R, C], the last block row/column cut to the matrix); "row": [rows, 1], one per
    // row; "tensor": [] (0-d), one per matrix (no weight_block_size).
    std::string fp8 = {};
};

// The architectures SynthHfOptions::arch takes, comma-separated.
const char* synth_hf_architectures();

// Writes the checkpoint of `o` (experts for Mixtral, Qwen2Moe and Qwen3Moe only; o.type F32, F16 or BF16 as the
// safetensors dtype) into
// the directory `dir`, created when missing; every file is published atomically as one set.
// Same options and seed give identical bytes. Tensors, outermost dimension first (D: head_dim, Q:
// n_head * D, KV: n_head_kv * D):
//   model.embed_tokens.weight [V, E], model.layers.N.{input_layernorm [E], self_attn.{q,k,v}_proj
//   [Q|KV|KV, E], self_attn.o_proj [E, Q], post_attention_layernorm [E], mlp.{gate,up}_proj [F, E],
//   mlp.down_proj [E, F]}, model.norm.weight [E], lm_head.weight [V, E] (absent with o.tied);
//   Qwen2: self_attn.{q,k,v}_proj.bias [Q|KV|KV]; Qwen3: self_attn.{q,k}_norm.weight [D]; Mixtral:
//   block_sparse_moe.gate.weight [X, E] and block_sparse_moe.experts.{0..X-1}.{w1 [F, E], w2 [E, F],
//   w3 [F, E]} in place of the mlp; Qwen3Moe: Qwen3's, with mlp.gate.weight [X, E] and
//   mlp.experts.{0..X-1}.{gate_proj [F, E], up_proj [F, E], down_proj [E, F]} in place of the mlp
//   projections; Qwen2Moe: Qwen2's, with Qwen3Moe's experts and mlp.shared_expert.{gate_proj
//   [2F, E], up_proj [2F, E], down_proj [E, 2F]}, mlp.shared_expert_gate.weight [1, E]; Gemma3:
//   self_attn.{q,k}_norm.weight [D], {pre,post}_feedforward_layernorm.weight [E];
//   Gemma3ForConditionalGeneration: Gemma3's named language_model.model.*, then
//   multi_modal_projector.{mm_input_projection_weight [E, E], mm_soft_emb_norm.weight [E]},
//   vision_tower.vision_model.{embeddings.patch_embedding.weight [E, 588], post_layernorm.weight [E]}.
// Returns the number of parameters; `written` gets the files written. Throws FormatError (Usage)
// on options it cannot honour.
uint64_t write_synth_hf(const std::string& dir, const SynthOptions& o, const SynthHfOptions& h = {},
                        std::vector<std::string>* written = nullptr);

}  // namespace oiw
