// A GGUF vocabulary (tokenizer.ggml.*) and llama.cpp's tokenizers for three of its models:
// "llama" (SentencePiece-style: dummy prefix, U+2581 for spaces, score-ordered bigram merges,
// <0xNN> byte fallback), "gpt2" (BPE with merge ranks after the pre-tokenizer tokenizer.ggml.pre
// names: byte-level for GPT-2's, Llama 3's, Qwen2's ... (unicode.h), SentencePiece-style over UTF-8
// for Gemma 4's and Sarvam-MoE's) and "gemma4" (the latter under Gemma 4's).
// Follows llama.cpp's src/llama-vocab.cpp (llm_tokenizer_spm_session, llm_tokenizer_bpe_session,
// tokenizer_st_partition, llama_vocab::impl::tokenize).
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "converters/vocab/unicode.h"
#include "libformat/gguf/metadata.h"

namespace oiw::vocab {

// llama.cpp's llama_token_type (the values of tokenizer.ggml.token_type).
enum class TokenType : int32_t {
    Undefined = 0,
    Normal = 1,
    Unknown = 2,
    Control = 3,
    UserDefined = 4,
    Unused = 5,
    Byte = 6
};

enum class Model { Spm, Bpe, Other };

class Vocab {
public:
    // Reads the tokenizer.ggml.* keys of `md`. Throws FormatError naming md.source() and the key
    // when there is no token list, or a per-token array (scores, token_type) is not as long as it,
    // or a value has the wrong type. Other tokenizer models load too (for pruning by id).
    static Vocab load(const Metadata& md);
    // The vocabulary's tokenizer.ggml.pre taken as `name`: the pre-tokenizer and ignore_merges as
    // load() chooses them for that name (add_bos stays as loaded). For trying candidate names.
    // `as_written`: the regex the name stands for as Hugging Face's tokenizers runs it where
    // llama.cpp approximates it (tekken, GPT-4o: PreTokenizer::TekkenUnicode, Gpt4oUnicode).
    void set_pre(std::string_view name, bool as_written = false);

    size_t size() const { return texts_.size(); }
    const std::string& text(int32_t id) const { return texts_[static_cast<size_t>(id)]; }
    TokenType type(int32_t id) const { return types_[static_cast<size_t>(id)]; }
    // Token id of `text`, if any.
    std::optional<int32_t> find(std::string_view text) const;
    Model model() const { return model_; }
    // A byte-level BPE (symbols are byte_to_unicode's, GPT-2-style): false for SPM and for the
    // SentencePiece-style BPE of Gemma 4 and Sarvam-MoE (UTF-8 symbols, <0xNN> byte tokens).
    bool byte_level() const { return model_ == Model::Bpe && oiw::vocab::byte_level(pre_kind_); }
    const std::string& model_name() const { return model_name_; }
    // Control, user-defined and unknown tokens (control includes tokens llama.cpp treats as
    // end-of-generation by their text): the ones matched before the merger runs.
    bool is_special(int32_t id) const { return special_[static_cast<size_t>(id)] != 0; }
    // A byte token: type BYTE or text "<0xNN>".
    bool is_byte_token(int32_t id) const;
    bool add_bos() const { return add_bos_; }
    // tokenizer.ggml.bos_token_id, else llama.cpp's default for the model, or -1 when there is none.
    int32_t bos_id() const { return bos_; }
    // llama.cpp's special ids for keys the file may lack, as (key, id): its defaults for the
    // tokenizer model (llama: unk 0, bos 1, eos 2; gpt2: bos = eos = 11 but no BOS for GLM-4's
    // pre-tokenizers; bert, t5, plamo2; none for gemma4 and rwkv). Ids may lie past the vocabulary.
    const std::vector<std::pair<std::string, int32_t>>& default_special_ids() const { return defaults_; }
    // BPE merges in rank order (empty for SPM).
    const std::vector<std::pair<std::string, std::string>>& merges() const { return merges_; }

    // llama_tokenize(text, add_special, parse_special): special tokens are split out first
    // (control/unknown ones only when parse_special), BOS/EOS added when add_special and the model
    // asks for them. Throws FormatError(Unsupported) "unsupported tokenizer model X" for models
    // other than "llama", "gemma4" and "gpt2" with a pre-tokenizer implemented here (unicode.h).
    std::vector<int32_t> tokenize(std::string_view text, bool add_special, bool parse_special) const;

    // The merges the merger performs on `symbol_text` alone (SPM: the session on the raw text,
    // no prefix; BPE: one already byte-encoded word), as (left, right) texts in the order
    // applied. A token's text yields how llama.cpp builds that token: its intermediate symbols
    // (every left+right) and, for BPE, the merges used.
    std::vector<std::pair<std::string, std::string>> merge_trace(std::string_view symbol_text) const;

private:
    friend class TokenStream;
    // A piece of tokenizer_st_partition's output: a special token, or raw text [off, off + len).
    struct Fragment {
        int32_t token;  // -1: raw text
        size_t off, len;
    };

    std::string file_, model_name_, pre_;
    Model model_ = Model::Other;
    bool pre_supported_ = false;
    PreTokenizer pre_kind_ = PreTokenizer::Gpt2;
    bool ignore_merges_ = false;   // a pre-tokenizer word that is a token is that token (Llama 3, tekken)
    bool spm_spaces_ = false;      // ' ' is U+2581 before the pre-tokenizer (Gemma 4, Sarvam-MoE)
    bool newline_tokens_ = false;  // a word of newlines that is a token is that token (Gemma 4)
    std::string duplicate_;        // first duplicated token text, if any (llama.cpp refuses such vocabs)
    std::vector<std::string> texts_;
    std::vector<float> scores_;
    std::vector<TokenType> types_;
    std::vector<uint8_t> special_;  // 2: control or unknown, 1: user-defined, 0: other
    // llama.cpp's per-token attributes LSTRIP/RSTRIP (set by name at load, see strip_attributes):
    // a parsed special token takes the ASCII whitespace before / after it in its raw fragment.
    enum : uint8_t { kLstrip = 1, kRstrip = 2 };
    std::vector<uint8_t> strip_;
    uint8_t strips_ = 0;  // the union of strip_
    std::unordered_map<std::string, int32_t> ids_;
    std::vector<std::pair<std::string, std::string>> merges_;
    std::unordered_map<std::string, int32_t> ranks_;         // merge_key(left, right) -> rank
    std::vector<std::pair<std::string, int32_t>> defaults_;  // llama.cpp's ids for keys the file lacks
    int32_t bos_ = -1, eos_ = -1;
    bool add_bos_ = false, add_eos_ = false, add_space_prefix_ = false;
    std::vector<int32_t> special_order_;      // special tokens, longest text first
    std::unordered_set<uint64_t> spm_joins_;  // SPM: (byte, symbol after it) at symbol boundaries inside tokens

    void check_tokenizable() const;
    void strip_attributes(const Metadata& md);
    // tokenizer_st_partition of `text`: split at every occurrence of each special token, longest first,
    // dropping the whitespace a token strips next to it within the fragment it splits.
    std::vector<Fragment> partition(std::string_view text, bool parse_special) const;
    // Appends raw text as the SPM merger (and the SentencePiece-style BPE) sees it: ' ' as U+2581.
    static void spm_escape(std::string_view raw, std::string* out);
    // BOS (at the start) and EOS (at the end) when add_special and the model asks for them.
    void begin_tokens(std::vector<int32_t>* out, bool add_special) const;
    void end_tokens(std::vector<int32_t>* out, bool add_special) const;
    std::optional<int32_t> rank(const std::string& left, const std::string& right) const;
    int32_t byte_token(uint8_t b) const;
    void spm_fragment(std::string_view text, std::vector<int32_t>* out,
                      std::vector<std::pair<std::string, std::string>>* trace) const;
    void bpe_word(const std::string& word, std::vector<int32_t>* out,
                  std::vector<std::pair<std::string, std::string>>* trace) const;
};

// Vocab::tokenize over a text that arrives in pieces, in memory bounded by the longest stretch
// without a safe cut (not by the text): what feed() and finish() emit, concatenated, is exactly
// tokenize(whole text). The text is cut only where the whole-text tokenization provably splits:
// no special token's occurrence crosses the cut, no whitespace a special token may strip (or
// stripping token) is just before it, and inside raw text an SPM cut is a symbol
// boundary that no vocabulary token spans (its byte before and symbol after never meet inside a
// token), a BPE cut a pre-tokenizer word boundary that no later byte can move.
class TokenStream {
public:
    // Longest stretch without a safe cut (a "word" for this purpose) before feed() throws, in
    // bytes of the text the merger sees (SPM: a space is U+2581, 3 bytes).
    static constexpr size_t kDefaultMaxRun = size_t{1} << 20;

    // Throws as tokenize() does for a vocabulary it cannot tokenize with. `source` names the text
    // in errors.
    TokenStream(const Vocab& v, bool add_special, bool parse_special, std::string source,
                size_t max_run = kDefaultMaxRun);
    // Appends the tokens that `bytes` settles to *out. Throws FormatError(TooLarge) naming the
    // source when more than max_run bytes have no safe cut.
    void feed(std::string_view bytes, std::vector<int32_t>* out);
    // The rest of the tokens (and EOS when asked for). The stream is then done.
    void finish(std::vector<int32_t>* out);

private:
    const Vocab& v_;
    bool add_special_, parse_special_;
    std::string source_;
    size_t max_run_;
    size_t max_special_ = 0;  // longest special text matched by the partition
    bool started_ = false, prev_special_ = true, raw_open_ = false;
    std::string text_;        // not yet partitioned
    std::string raw_;         // the open raw fragment's unsettled part (SPM: escaped)
    size_t raw_scanned_ = 0;  // raw_[0, raw_scanned_) holds no cut (SPM)

    size_t special_cut() const;
    void emit(std::string_view text, std::vector<int32_t>* out);
    void raw_feed(std::string_view raw, std::vector<int32_t>* out);
    void raw_close(std::vector<int32_t>* out);
    size_t spm_cut() const;
    void too_long(std::string_view what) const;
};

// SentencePiece's byte token text for `b`: "<0xNN>" (upper-case hex).
std::string byte_text(uint8_t b);

// A tokenizer.ggml.merges entry split as llama.cpp does (at the first space after the first
// byte); both empty when there is no such space.
std::pair<std::string, std::string> split_merge(const std::string& entry);

}  // namespace oiw::vocab
