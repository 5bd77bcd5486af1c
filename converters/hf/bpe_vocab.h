// A Hugging Face fast tokenizer's BPE vocabulary (tokenizer.json) read as convert_hf_to_gguf.py
// (llama.cpp 1348f67) reads it for _set_vocab_gpt2: get_vocab_base for the tokens and their
// types, SpecialVocab(load_merges=True) for the merges, get_vocab_base_pre for
// tokenizer.ggml.pre (a SHA-256 of the ids a fixed text tokenizes to).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "converters/hf/json_doc.h"

namespace oiw::hf {

struct BpeVocab {
    std::vector<std::string> tokens;  // by id; ids no token has are "[PADi]" (UNUSED)
    std::vector<int32_t> types;       // llama_token_type: NORMAL, CONTROL, USER_DEFINED, UNUSED
    std::vector<std::string> merges;  // "left right" (spaces inside a pair's parts as U+0120)
};

// The vocabulary of tokenizer.json `tok`: model.vocab plus added_tokens, `vocab_size` entries
// (default: the number of distinct ids, as len(tokenizer.vocab)). An added token is CONTROL when
// special or when it looks special (does_token_look_special), else USER_DEFINED with U+2581 read
// as a space. Throws FormatError naming `file`: Unsupported for a model other than BPE, BadJson for
// a missing or mistyped field, BadData for an id at or past vocab_size.
BpeVocab read_bpe_vocab(const Json& tok, std::optional<uint64_t> vocab_size, const std::string& file);

// get_vocab_base_pre's fixed text (chktxt), UTF-8.
const std::string& bpe_check_text();

// The ids tokenizer.json's post-processor puts around an encoded text (TemplateProcessing's
// `single` template, alone or in a Sequence): what tokenizer.encode(text) adds to the tokens.
struct BpeTemplate {
    std::vector<int32_t> prefix, suffix;
};
BpeTemplate read_bpe_template(const Json& tok);
// What tokenizer.encode adds with tokenizer_config.json `config` (nullopt: absent) beside it:
// transformers' LlamaTokenizerFast and GemmaTokenizerFast (tokenizer_class Llama/GemmaTokenizer, Fast
// or not) replace the post-processor by their own (update_post_processor: bos_token first when
// add_bos_token, default true; eos_token last when add_eos_token, default false); any other class
// keeps read_bpe_template(tok). Throws FormatError naming `config_file` where transformers raises
// (add_bos_token with a null bos_token) or the token is not in `v`.
BpeTemplate encode_template(const Json& tok, const std::optional<Json>& config, const BpeVocab& v,
                            const std::string& config_file);

// tokenizer.ggml.pre for `v`: the name whose recorded hash (get_vocab_base_pre's table) equals the
// SHA-256 of the ids that `tmpl` around our tokenization of bpe_check_text() gives (Python's str()
// of the id list), trying each pre-tokenizer implemented (GPT-2, Llama 3, Qwen2, tekken, GPT-4o,
// DeepSeek-V3, SmolLM). Any other
// vocabulary throws FormatError(Unsupported) naming `file` and the hashes.
std::string detect_bpe_pre(const BpeVocab& v, const BpeTemplate& tmpl, const std::string& file);

}  // namespace oiw::hf
