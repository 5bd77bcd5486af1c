// gguf-convert's engine: a Hugging Face checkpoint to GGUF as llama.cpp's convert_hf_to_gguf.py
// (1348f67) writes it: the same keys in the same order, the same tensor names, order, types and
// bytes. Planning reads only headers and JSON; writing streams one tensor at a time from the
// mapped shards (pages released behind it), so memory stays flat.
//
//   checkpoint dir --plan_convert--> ConvertPlan (keys, tensors: source, GGUF name/type/shape,
//                                                 row permutation) --write_convert--> OUT.gguf
//
// convert_tensor_into converts one tensor into memory instead: gguf-convert --preset feeds the
// requantizer that way (converters/hf/convert_requant.h).
//
// Architectures (supported_architectures()): LlamaForCausalLM / MistralForCausalLM (the q/k RoPE
// permutation), MixtralForCausalLM (as llama, experts stacked into 3-D tensors), Qwen2ForCausalLM,
// Qwen2MoeForCausalLM (experts stacked, a shared expert), Qwen3ForCausalLM, Qwen3MoeForCausalLM,
// Gemma3ForCausalLM and Gemma3ForConditionalGeneration's text model (norms shifted by 1),
// Phi3ForCausalLM (fused projections kept), each with the vocabulary its converter class reads (a
// SentencePiece tokenizer.model, or tokenizer.json BPE). Others are refused in one line naming the
// supported ones.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "converters/hf/checkpoint.h"
#include "libformat/gguf/metadata.h"
#include "libformat/gguf/split.h"
#include "libformat/parallel.h"
#include "libformat/types.h"

namespace oiw::hf {

// --outtype: the type of the weight matrices (1-D tensors, norms and biases stay F32). Auto takes
// the first 2-D+ BF16 or F16 tensor's dtype, else F16 (the Python converter's default and rule).
// Q8_0 quantizes each matrix from its source values (not from F16) as gguf-py's Q8_0 does, bit
// for bit ggml's reference; a matrix whose rows are not a multiple of 32 falls back to F16.
enum class OutType { F32, F16, BF16, Auto, Q8_0 };
std::optional<OutType> out_type_from_name(std::string_view name);  // "f32", "f16", "bf16", "auto", "q8_0"

// The architectures plan_convert takes, comma-separated (for errors and --help).
const char* supported_architectures();

struct PlannedTensor {
    std::string name;  // GGUF name
    GgmlType type = GgmlType::F32;
    std::vector<int64_t> ne;  // ggml order: ne[0] is the row length (the source shape reversed)
    TensorRef source;
    int64_t permute_heads = 0;  // > 0: rows regrouped as LlamaModel.permute does for this many heads
    // Non-empty: the tensor is these sources stacked in order (torch.stack, dim 0: Mixtral's experts
    // merged into one 3-D tensor), each of the same shape and dtype; source is stacked[0].
    std::vector<TensorRef> stacked;
    // Added to every value before the output type (Gemma3's norms: its RMSNorm scales by 1 + w); an
    // F16 source is rounded back to F16 after the addition, as torch adds in the tensor's dtype.
    float shift = 0.0f;
    // Non-empty: a tensor the converter computes (generate_extra_tensors: Llama 3's rope_freqs,
    // Phi3's LongRoPE factors), these F32 values in place of any source; `source` is unset.
    std::vector<float> computed;
    // Views the plan made of source tensors, which source.tensor / stacked then point to: the first
    // rows of one (Gemma3Model drops embedding rows past the vocabulary), or each expert's half of a
    // fused gate_up_proj (Qwen2MoeModel splits it).
    std::vector<std::shared_ptr<const Tensor>> views;

    // Elements of the tensor (all of its sources).
    uint64_t elements() const;
    // Its sources: stacked, or {source}; none when computed.
    std::vector<TensorRef> sources() const {
        if (!computed.empty()) return {};
        return stacked.empty() ? std::vector<TensorRef>{source} : stacked;
    }
    // What a report names as its source: the (first) source tensor, or "(computed)".
    std::string source_name() const { return computed.empty() ? source.tensor->name : "(computed)"; }
};

struct ConvertPlan {
    std::string arch;  // GGUF architecture ("llama", "qwen2", ...)
    Metadata kvs;      // in the converter's order
    std::vector<PlannedTensor> tensors;
    std::vector<std::string> notes;  // what the Python converter would add that this one does not (one line each)
    uint64_t total_params = 0;
    // What gguf-py's naming_convention builds the default file name from: the metadata as
    // prepare_metadata leaves it, and the output type's name ("F16", "Q8_0").
    std::optional<std::string> name, basename, finetune, version, size_label;
    std::string output_type;
    bool vocab_only = false;  // PlanOptions::vocab_only: no tensors

    // Bytes of the tensors' data as planned (what write_convert's progress counts).
    uint64_t total_bytes() const;
};

// gguf.naming_convention: "<basename, else name, else ggml-model>[-<size label>][-<finetune>]
// [-<version>]-<OUTPUT_TYPE>" (spaces as '-', and '/' in the name), e.g. "Qwen3-0.6B-F16"; a
// vocab-only plan's is "<name>[-<finetune>][-<version>]-vocab".
std::string default_file_name(const ConvertPlan& plan, const std::string& output_type);

// gguf.fill_templated_filename: `name` with {ftype} / {outtype} / {} as the output type in lower
// case, {FTYPE} / {OUTTYPE} in upper case, {{ and }} as braces (Python's str.format). Throws
// FormatError(Usage) for any other field, as Python fails on it.
std::string fill_templated_filename(const std::string& name, const std::string& output_type);

// Plans the conversion of `ck` (its directory's config.json, tokenizer files and
// generation_config.json). Throws FormatError naming the file and key or tensor: Unsupported for
// an architecture, tokenizer or dtype not handled, BadJson for a missing or mistyped key.
// `opt` takes the Python converter's --metadata, --model-name and --vocab-only.
struct PlanOptions {
    std::optional<std::string> metadata_file;  // a JSON object of general.* keys over the card's and heuristics'
    std::optional<std::string> model_name;     // general.name whatever else says ("" writes none)
    // write_vocab: the keys only; the tensors are neither planned nor read (0 parameters, no size
    // label from them), as the Python converter's --vocab-only never reaches them.
    bool vocab_only = false;
};
ConvertPlan plan_convert(const Checkpoint& ck, OutType outtype, const PlanOptions& opt = {});

// How write_convert runs.
struct WriteOptions {
    unsigned threads = 0;  // worker threads converting chunks (0: every core); the output order is fixed
    // Shards, cut and keyed as convert_hf_to_gguf.py makes them (docs/gguf-convert.md), not as
    // llama-gguf-split does; --shard K/N writes only shard K. Inactive and no_tensor_first_split off: one file.
    SplitOptions split;
    bool reference = false;  // element by element with the scalar conversions (what the fast paths are checked against)
    // Called on the writing thread after each tensor written: its index, the output bytes so far, its name.
    std::function<void(size_t index, uint64_t bytes_done, std::string_view name)> progress;
};

// Writes `plan` to `out` (or its shards, named as the Python converter names them), converting each
// tensor from its source in chunks on opt.threads threads, bytes identical for every thread count.
// Atomic: on error nothing appears (every shard of a run is published together). NaN or infinite
// weights throw FormatError(BadData) naming the tensor and its first such element in source order.
// Returns the files written.
std::vector<std::string> write_convert(const ConvertPlan& plan, const std::string& out, const WriteOptions& opt = {});

// Tensor t's output bytes into `out` (resized to them), converted on `pool` exactly as write_convert
// writes them, with the same NaN/Inf refusal; the source's pages are released behind it.
void convert_tensor_into(ThreadPool& pool, const PlannedTensor& t, std::vector<uint8_t>& out);

}  // namespace oiw::hf
