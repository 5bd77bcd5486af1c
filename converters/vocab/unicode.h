// The Unicode pieces of llama.cpp's tokenizers (src/unicode.cpp), reimplemented without a regex
// library: its lenient UTF-8 decoder, the GPT-2 byte-to-unicode map and the pre-tokenizers below
// (Mistral's tekken and GPT-4o's regexes both as llama.cpp runs them and as written).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace oiw::vocab {

struct CodepointRange {
    uint32_t first, last;
};  // inclusive

// Byte length of the UTF-8 sequence a lead byte announces (1 for continuation bytes), as
// llama.cpp's unicode_len_utf8: the SPM and BPE mergers split text into symbols with it.
size_t utf8_len(char lead);
// Code points of `text` as unicode_cpts_from_utf8 decodes them: a malformed sequence yields
// U+FFFD and skips one byte; overlong forms and surrogates are accepted as they are there.
// (A 4-byte form above U+10FFFF, on which llama.cpp throws, is malformed here.)
std::vector<uint32_t> decode_utf8(std::string_view text);
// UTF-8 of one code point; throws std::invalid_argument above U+10FFFF (as llama.cpp does).
std::string encode_utf8(uint32_t cpt);

// \p{L}, \p{N} (tables generated from Python's unicodedata, see gen_unicode_ranges.py) and \s
// (the White_Space property, llama.cpp's unicode_set_whitespace).
bool is_letter(uint32_t cpt);
bool is_number(uint32_t cpt);
bool is_whitespace(uint32_t cpt);
// \p{M}, \p{P}, \p{S} (same tables).
bool is_mark(uint32_t cpt);
bool is_punctuation(uint32_t cpt);
bool is_symbol(uint32_t cpt);
// The tekken regex's letter classes: [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] and [\p{Ll}\p{Lm}\p{Lo}\p{M}].
bool is_tekken_upper(uint32_t cpt);
bool is_tekken_lower(uint32_t cpt);

// GPT-2's bytes_to_unicode(): the UTF-8 text of the printable code point standing for byte b.
const std::string& byte_to_unicode(uint8_t b);

// The pre-tokenizers of llama.cpp implemented here, each one of its unicode_regex_split_custom_*
// functions, by the regex it stands for.
enum class PreTokenizer {
    Gpt2,    // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
    Llama3,  // (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
             // ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
    Qwen2,   // the Llama3 regex with \p{N} in place of \p{N}{1,3}
    // Qwen 3.5's: Qwen2's with [\p{L}\p{M}]+ for \p{L}+ and [^\s\p{L}\p{M}\p{N}] for [^\s\p{L}\p{N}].
    Qwen35,
    // Seed-Coder's: Qwen2's without the [\r\n]* after a run of other characters.
    SeedCoder,
    // Jais-2's: Llama3's with \s{512}(?!\S)|\s{256}(?!\S)|...|\s{4}(?!\S)|\s{1,2}(?!\S)|\s{1} for
    // \s+(?!\S)|\s+.
    Jais2,
    // EXAONE-MoE's: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?(?:\p{L}\p{M}*(?: \p{L}\p{M}*)*)+|\p{N}|
    //  ?[^\s\p{L}\p{N}]+[\r\n/]?|\s*[\r\n]|\s+(?!\S)|\s+ (words run on over single spaces).
    ExaoneMoe,
    // BLOOM's (also Poro, GPT-3 Finnish):  ?[^(\s|.,!?…。，、।۔،)]+ (the characters listed, '(' '|' ')'
    // among them, and whitespace end a word); the text between two matches is a piece of its own.
    Bloom,
    // Viking's: BLOOM's, then every \p{N} a piece of its own.
    Viking,
    // Regexes in sequence, each splitting the pieces the one before left (matches and the text
    // between them are both pieces). Falcon's: [\p{P}\$\+<=>\^~\|`]+ (ASCII's \p{P} and symbols but
    // none beyond), then the GPT-2 regex, then [0-9][0-9][0-9].
    Falcon,
    // DeepSeek Coder's: [\r\n], \s?\p{L}+, \s?\p{P}+, [一-龥ࠀ-一가-퟿]+ (U+0800-9FA5, U+AC00-D7FF but
    // whitespace, which llama.cpp turns to U+000B first), \p{N}.
    DeepseekCoder,
    // DeepSeek LLM's: [\r\n], \s?[A-Za-zµÀ-ÖØ-öø-ƺ…]+ (87 ranges of cased letters), \s?[!-/:-~！-／：-～‘-‟　-。]+,
    // \s+$, DeepSeek Coder's CJK ranges, \p{N}+.
    DeepseekLlm,
    // AFMoE's (Arcee): llama.cpp's \p{AFMoE_digits} (each run of \p{N} cut in threes from the right, the
    // text before a run joining its first group, as unicode_regex_split_custom_afmoe emits it), then
    // runs of its Asian scripts' ranges (U+0E40-0EFF, 1000-109F, 1100-11FF, 1780-17FF, 2F00-2FDF,
    // 3040-30FF, 3400-4DBF, 4E00-FAFF: its range from 豈 starts at U+8C48, FF65-FF9F), then
    // DeepSeek-V3's third regex as llama.cpp runs it.
    Afmoe,
    // Tiny Aya's: the same digit groups, then GPT-4o's regex over llama.cpp's collapsed classes, where
    // both letter classes are \p{L} or \p{M}: [^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+ and a contraction,
    // \p{N}{1,3},  ?[^\s\p{L}\p{N}]+[\r\n/]*, \s*[\r\n]+|\s+(?!\S)|\s+.
    TinyAya,
    // Youtu's: runs of one of four classes (Hangul U+AC00-D7A3 and U+3131-318E; CJK punctuation
    // U+3001-303F, FE30-FE4F and nine more; Bopomofo U+3105-312F; U+4E00-9FA5 and kana U+3040-30FF),
    // then Tiny Aya's second regex with \p{N} for \p{N}{1,3}.
    Youtu,
    // Kimi K2's: [\p{Han}]+|[^\r\n\p{L}\p{N}]?[...&&[^\p{Han}]]*[...&&[^\p{Han}]]+(?i:'s|...)?|...|\p{N}{1,3}|
    //  ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+ as llama.cpp's unicode_regex_split_custom_kimi_k2
    // runs it: Han is its CJK ideograph blocks, a word is letters but Han (no marks, no case).
    KimiK2,
    // SuperBPE's (OLMo 2 SuperBPE): \p{N}+, then (?=(\d{3})+(?!\d)) (an empty match before each group of
    // three ASCII digits counted from a run's end): words span spaces, only numbers cut the text.
    Superbpe,
    // Chameleon's: <sentinel:[0-9]+>, (IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z, ([\t\n]|    |  ) (a tab or
    // newline, else four spaces, else two), \p{N}, [\p{P}!-/:-@\[-`{-~], then the GPT-2 regex.
    Chameleon,
    // Mistral's tekken (Mistral-Nemo, Pixtral): [^\r\n\p{L}\p{N}]?U*L+|[^\r\n\p{L}\p{N}]?U+L*|\p{N}|
    // ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+ with U = [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] and
    // L = [\p{Ll}\p{Lm}\p{Lo}\p{M}], as llama.cpp runs it (std::regex over its collapsed code points:
    // U = \p{L} but a-z, L = \p{L} but A-Z, marks in neither). It differs from the regex as written
    // where marks sit among letters (Khmer, Devanagari ...) and where a non-ASCII letter's case
    // decides ("aÑ": one piece in llama.cpp, "a" and "Ñ" as written).
    Tekken,
    // The tekken regex as written, with the real categories: how Hugging Face's tokenizers splits,
    // so the ids the Python converter hashes to recognise the vocabulary (detect_bpe_pre).
    TekkenUnicode,
    // GPT-4o's (Phi-4-mini, Llama 4, MiniMax-M2, Kanana-2): tekken's with
    // (?i:'s|'t|'re|'ve|'m|'ll|'d)? after both letter alternatives and \p{N}{1,3} for \p{N}, as
    // llama.cpp runs it (its collapsed categories, the contractions ASCII-cased: '[sS]...) ...
    Gpt4o,
    // ... and as written (Hugging Face's tokenizers: (?i:) also folds U+017F to s).
    Gpt4oUnicode,
    // DeepSeek-V3's (also Hunyuan-Dense, JoyAI): three regexes, each splitting the pieces the one
    // before left (matches and the text between them are both pieces): \p{N}{1,3}, then
    // [一-龥぀-ゟ゠-ヿ]+ (U+4E00-9FA5, U+3040-30FF), then
    // [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+|
    // ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+ , as llama.cpp runs them (its collapsed categories
    // leave ASCII '~' in neither \p{P} nor \p{S}: "~é" is one piece there) ...
    DeepseekV3,
    // ... and as written ('~' a symbol: "~" and "é").
    DeepseekV3Unicode,
    // SmolLM's (also StarCoder 2, Refact, Command-R, CodeShell, EXAONE 3, Minerva): \p{N}, then the
    // GPT-2 regex over each piece (Hugging Face's Digits(individual_digits) before ByteLevel).
    Smollm,
    // Gemma 4's and Sarvam-MoE's (SentencePiece-style BPE): [^\n]+|[\n]+, pieces not byte-encoded.
    Lines,
    // llama.cpp's default (tokenizer.ggml.pre "default" or missing): Falcon's sequence without '`' in
    // its first regex and with \p{N}+ before [0-9][0-9][0-9].
    Default,
};

// Whether `p`'s pieces are byte-encoded (byte_to_unicode) for the merger, as GPT-2-style BPE
// vocabularies spell their tokens; false for Lines (raw UTF-8, llama.cpp's byte_encode = false).
bool byte_level(PreTokenizer p);

// Splits `text` as pre-tokenizer `p` does and returns each piece with every UTF-8 byte replaced by
// byte_to_unicode(byte) (the byte-level encoding that follows it in llama.cpp) where byte_level(p),
// else as UTF-8 (malformed bytes are U+FFFD in both).
// With `consumed`, `text` is a prefix of a longer text: only the pieces that no later byte can
// change are returned (every position their match read holds a code point decoded from bytes all
// inside `text`), and *consumed is the byte length they cover; the rest is split again once more
// text has arrived.
std::vector<std::string> pretokenize(PreTokenizer p, std::string_view text, size_t* consumed = nullptr);

}  // namespace oiw::vocab
