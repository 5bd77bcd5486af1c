// A SentencePiece-style BPE vocabulary (as Gemma 4's and Sarvam-MoE's are spelled: U+2581 for
// spaces, UTF-8 symbols, <0xNN> byte tokens) made from ggml-vocab-llama-spm.gguf exactly as
// tests/vocab/gen_llama_gemma4_ids.py makes the files it runs llama-tokenize on (tests and the
// tokenizer fuzz target).
#pragma once
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "libformat/gguf/metadata.h"

namespace oiw::test {

// `md` (ggml-vocab-llama-spm.gguf's metadata) with tokens 31990..31993 made "\n", "\n\n", "\n\n\n" and eight
// newlines, a merge "LEFT RIGHT" for each NORMAL token (in id order) at its first split from the
// left (at a code point) into two tokens, tokenizer.ggml.add_bos_token false, and
// tokenizer.ggml.model `model`, tokenizer.ggml.pre `pre`.
inline Metadata gemma4_style_metadata(Metadata md, const std::string& model, const std::string& pre) {
    std::vector<std::string> tokens = md.find("tokenizer.ggml.tokens")->strings();
    for (const auto& [id, n] : {std::pair{31990, 1}, {31991, 2}, {31992, 3}, {31993, 8}})
        tokens.at(id) = std::string(static_cast<size_t>(n), '\n');
    const std::unordered_set<std::string> ids(tokens.begin(), tokens.end());
    const GgufValue* types = md.find("tokenizer.ggml.token_type");
    std::vector<std::string> merges;
    for (size_t i = 0; i < tokens.size(); ++i) {
        const std::string& t = tokens[i];
        if (types->array_number(i) != 1) continue;  // NORMAL
        for (size_t k = 1; k < t.size(); ++k) {
            if ((static_cast<unsigned char>(t[k]) & 0xC0) == 0x80) continue;  // inside a code point
            if (ids.count(t.substr(0, k)) && ids.count(t.substr(k))) {
                merges.push_back(t.substr(0, k) + " " + t.substr(k));
                break;
            }
        }
    }
    md.set({"tokenizer.ggml.tokens", GgufValue::make_string_array(std::move(tokens))});
    md.set({"tokenizer.ggml.merges", GgufValue::make_string_array(std::move(merges))});
    md.set({"tokenizer.ggml.add_bos_token", GgufValue::make_bool(false)});
    md.set({"tokenizer.ggml.model", GgufValue::make_string(model)});
    md.set({"tokenizer.ggml.pre", GgufValue::make_string(pre)});
    return md;
}

}  // namespace oiw::test
