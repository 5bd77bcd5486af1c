// The tokenizers against llama.cpp: every case of its tokenizer test files (texts in .inp
// separated by "\n__ggml_vocab_test__\n", ids in .out, one line per text), tokenized as
// test-tokenizer-0 does (add_special = false, parse_special = false).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <cstring>
#include <random>
#include <regex>
#include <tuple>

#include "converters/vocab/unicode.h"
#include "converters/vocab/vocab.h"
#include "libformat/model.h"
#include "tests/support/helpers.h"
#include "tests/vocab/fixture_cases.h"
#include "tests/vocab/gemma4_style.h"
#include "tests/vocab/stream_check.h"

namespace {

using oiw::test::streamed;
using oiw::vocab::TokenStream;
using oiw::vocab::Vocab;

Vocab load(const std::string& path) { return Vocab::load(oiw::open_model(path).metadata()); }

// A fixture vocabulary and its test texts.
std::pair<Vocab, std::string> vocab_fixture(const std::string& name) {
    const std::string path = oiw::test::data_path("vocab/" + name);
    return {load(path), path};
}
void check_stream_equals_tokenize(const std::pair<Vocab, std::string>& f) {
    oiw::test::check_stream_equals_tokenize(f.first, f.second);
}

// Tokenizes every case; returns how many match llama.cpp's ids.
size_t check_all(const std::string& name) {
    const std::string path = oiw::test::data_path("vocab/" + name);
    const Vocab v = load(path);
    const auto cases = oiw::test::read_tokenizer_cases(path);
    size_t pass = 0;
    for (const auto& c : cases) {
        const auto got = v.tokenize(c.text, false, false);
        EXPECT_EQ(got, c.ids) << name << ": '" << c.text << "'";
        pass += got == c.ids;
    }
    std::printf("%s: %zu/%zu cases match llama.cpp\n", name.c_str(), pass, cases.size());
    return pass;
}

TEST(VocabTokenizer, LlamaSpmMatchesLlamaCpp) { EXPECT_EQ(check_all("ggml-vocab-llama-spm.gguf"), 46u); }

TEST(VocabTokenizer, Gpt2BpeMatchesLlamaCpp) { EXPECT_EQ(check_all("ggml-vocab-gpt-2.gguf"), 46u); }

TEST(VocabTokenizer, SpmAddsBosWhenAskedAndParsesSpecialTokens) {
    const Vocab v = load(oiw::test::data_path("vocab/ggml-vocab-llama-spm.gguf"));
    // "Hello world" is 15043 3186 (a case above); <s> and </s> are control tokens 1 and 2.
    EXPECT_EQ(v.tokenize("Hello world", true, false), (std::vector<int32_t>{1, 15043, 3186}));
    EXPECT_EQ(v.tokenize("</s>Hello world", false, true),
              (std::vector<int32_t>{2, 15043, 3186}));  // dummy prefix after a special token
    EXPECT_NE(v.tokenize("</s>", false, false), (std::vector<int32_t>{2}));
}

TEST(VocabTokenizer, Gpt2HasNoBosByDefaultAndParsesEndOfText) {
    const Vocab v = load(oiw::test::data_path("vocab/ggml-vocab-gpt-2.gguf"));
    EXPECT_FALSE(v.add_bos());
    EXPECT_EQ(v.tokenize("Hello<|endoftext|>", true, true), (std::vector<int32_t>{15496, 50256}));
}

TEST(VocabTokenizer, UnsupportedModelIsNamed) {
    std::vector<oiw::GgufKV> kvs = {
        {"tokenizer.ggml.model", oiw::GgufValue::make_string("bert")},
        {"tokenizer.ggml.tokens", oiw::GgufValue::make_string_array({"a", "b"})},
    };
    const Vocab v = Vocab::load(oiw::Metadata(kvs, "x.gguf"));
    try {
        v.tokenize("ab", false, false);
        FAIL() << "expected an error";
    } catch (const oiw::FormatError& e) {
        EXPECT_NE(std::string(e.what()).find("unsupported tokenizer model bert"), std::string::npos) << e.what();
    }
}

// Returns the message of the error tokenize() throws for a vocabulary made of `kvs`.
std::string tokenize_error(const std::vector<oiw::GgufKV>& kvs) {
    try {
        Vocab::load(oiw::Metadata(kvs, "x.gguf")).tokenize("ab", false, false);
    } catch (const oiw::FormatError& e) {
        return e.what();
    }
    return "";
}

TEST(VocabTokenizer, OtherPreTokenizerAndDuplicateTokensAreRefused) {
    const auto s = [](const char* v) { return oiw::GgufValue::make_string(v); };
    const std::string pre = tokenize_error({{"tokenizer.ggml.model", s("gpt2")},
                                            {"tokenizer.ggml.pre", s("no-such-pre")},
                                            {"tokenizer.ggml.tokens", oiw::GgufValue::make_string_array({"a", "b"})}});
    EXPECT_NE(pre.find("unsupported tokenizer model gpt2 (pre-tokenizer 'no-such-pre')"), std::string::npos) << pre;
    const std::string dup =
        tokenize_error({{"tokenizer.ggml.model", s("llama")},
                        {"tokenizer.ggml.tokens", oiw::GgufValue::make_string_array({"a", "b", "a"})}});
    EXPECT_NE(dup.find("duplicate token 'a'"), std::string::npos) << dup;
}

TEST(VocabTokenizer, ByteToUnicodeIsGpt2Map) {
    EXPECT_EQ(oiw::vocab::byte_to_unicode(' '), "\xc4\xa0");  // 'Ġ' (U+0120)
    EXPECT_EQ(oiw::vocab::byte_to_unicode('A'), "A");
    EXPECT_EQ(oiw::vocab::byte_to_unicode(0), "\xc4\x80");     // U+0100
    EXPECT_EQ(oiw::vocab::byte_to_unicode(0xAD), "\xc5\x83");  // 0xAD is the 68th unprintable byte: U+0143
}

TEST(VocabTokenizer, Gpt2PretokenizerSplitsLikeTheRegex) {
    const auto w = oiw::vocab::pretokenize(oiw::vocab::PreTokenizer::Gpt2, "Hello, y'all!  3x\n");
    const std::vector<std::string> want = {"Hello",
                                           ",",
                                           "\xc4\xa0y",
                                           "'",
                                           "all",
                                           "!",
                                           "\xc4\xa0",
                                           "\xc4\xa0"
                                           "3",
                                           "x",
                                           "\xc4\x8a"};
    EXPECT_EQ(w, want);
}

// `utf8` as pretokenize returns a piece: each UTF-8 byte as byte_to_unicode.
std::string byte_encoded(std::string_view utf8) {
    std::string w;
    for (char ch : utf8) w += oiw::vocab::byte_to_unicode(static_cast<uint8_t>(ch));
    return w;
}

// llama.cpp's unicode_regex_split for a regex that names only \p{L} and \p{N} and has no custom
// splitter (tekken's): the text collapsed to one char per code point (ASCII kept, other
// whitespace 0x0B, other letters 0xD2, other numbers 0xD1, anything else a byte this regex
// treats as "other"), \p{L} and \p{N} rewritten to those bytes plus their ASCII members
// (bracketed outside a class), std::regex's ECMAScript over that, text between matches kept.
std::vector<std::string> llama_cpp_regex_split(std::string_view text, std::string_view regex_expr) {
    using namespace oiw::vocab;
    const std::vector<uint32_t> cpts = decode_utf8(text);
    std::string collapsed;
    for (uint32_t c : cpts)
        collapsed += c < 128            ? static_cast<char>(c)
                     : is_whitespace(c) ? '\x0B'
                     : is_letter(c)     ? '\xD2'
                     : is_number(c)     ? '\xD1'
                                        : '\xD0';
    std::string re;
    bool inside = false;
    for (size_t i = 0; i < regex_expr.size(); ++i) {
        const char ch = regex_expr[i];
        if (ch == '[' && (i == 0 || regex_expr[i - 1] != '\\')) inside = true;
        if (ch == ']' && inside && regex_expr[i - 1] != '\\') inside = false;
        const std::string_view rest = regex_expr.substr(i);
        if (rest.starts_with("\\p{L}") || rest.starts_with("\\p{N}")) {
            const std::string members = rest[3] == 'L' ? "\xD2\x41-\x5A\x61-\x7A" : "\xD1\x30-\x39";
            re += inside ? members : "[" + members + "]";
            i += 4;
            continue;
        }
        re += ch;
    }
    const std::regex expr(re, std::regex_constants::optimize | std::regex_constants::nosubs);
    std::vector<size_t> lengths;
    size_t at = 0;
    for (auto it = std::sregex_iterator(collapsed.begin(), collapsed.end(), expr); it != std::sregex_iterator(); ++it) {
        const auto pos = static_cast<size_t>(it->position());
        if (pos > at) lengths.push_back(pos - at);
        lengths.push_back(static_cast<size_t>(it->length()));
        at = pos + static_cast<size_t>(it->length());
    }
    if (at < cpts.size()) lengths.push_back(cpts.size() - at);
    std::vector<std::string> pieces;
    size_t b = 0;
    for (size_t n : lengths) {
        std::string piece;
        for (size_t i = b; i < b + n; ++i) piece += encode_utf8(cpts[i]);
        pieces.push_back(byte_encoded(piece));
        b += n;
    }
    return pieces;
}

// Code points where the tekken regex's categories matter: ASCII and non-ASCII cased letters, a
// titlecase and a modifier letter, caseless letters (CJK, Khmer, Devanagari) with their marks, a
// combining accent, digits of other scripts, Unicode spaces, '/', an emoji and ZWJ; with
// `contractions` also GPT-4o's contractions in both cases, U+017F and ASCII digit runs.
std::string random_tekken_text(std::mt19937& rng, bool contractions) {
    static const char* const kAlphabet[] = {"a",
                                            "q",
                                            "Z",
                                            "B",
                                            " ",
                                            " ",
                                            "\n",
                                            "\r",
                                            "\t",
                                            "/",
                                            "!",
                                            "'",
                                            ".",
                                            "3",
                                            "\xd9\xa3",
                                            "\xc2\xbd",
                                            "\xc3\xb1",
                                            "\xc3\x91",
                                            "\xc7\x85",
                                            "\xca\xb0",
                                            "\xe4\xb8\xad",
                                            "\xe1\x9e\x80",
                                            "\xe1\x9e\xb6",
                                            "\xe1\x9f\x8b",
                                            "\xcc\x81",
                                            "\xc2\xa0",
                                            "\xe3\x80\x80",
                                            "\xe2\x80\xa8",
                                            "\xf0\x9f\x98\x80",
                                            "\xe2\x80\x8d",
                                            "\xe0\xa4\x95",
                                            "\xe0\xa4\xbf"};
    static const char* const kContractions[] = {"'",  "'", "s", "S", "ll",       "LL", "re",
                                                "Ve", "d", "M", "t", "\xc5\xbf", "12", "4"};
    const size_t n = std::size(kAlphabet), m = contractions ? std::size(kContractions) : 0;
    std::uniform_int_distribution<size_t> pick(0, n + m - 1), len(1, 24);
    std::string t;
    for (size_t i = len(rng); i > 0; --i) {
        const size_t k = pick(rng);
        t += k < n ? kAlphabet[k] : kContractions[k - n];
    }
    return t;
}

// PreTokenizer::Tekken and Gpt4o are what llama.cpp's std::regex fallback does with its tekken
// and GPT-4o regexes (llama-vocab.cpp, LLAMA_VOCAB_PRE_TYPE_TEKKEN / _GPT4O), checked against
// std::regex itself.
TEST(VocabTokenizer, TekkenSplitsLikeLlamaCppsStdRegex) {
    const std::string_view kTekken =
        R"([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+)"
        R"(((?=[\p{L}])([^A-Z]))*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
    const std::string_view kGpt4o =
        R"([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|)"
        R"([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|)"
        R"(\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
    using oiw::vocab::PreTokenizer;
    // Where llama.cpp differs from the regex as written: "aÑ" is one piece (Ñ is a letter that is
    // not A-Z), a Khmer vowel sign (a mark) is not a letter, U+017F does not fold to s.
    EXPECT_EQ(oiw::vocab::pretokenize(PreTokenizer::Tekken, "a\xc3\x91"),
              std::vector<std::string>{byte_encoded("a\xc3\x91")});
    EXPECT_EQ(oiw::vocab::pretokenize(PreTokenizer::TekkenUnicode, "a\xc3\x91").size(), 2u);
    EXPECT_EQ(oiw::vocab::pretokenize(PreTokenizer::Tekken, "\xe1\x9e\x80\xe1\x9e\xb6").size(), 2u);
    EXPECT_EQ(oiw::vocab::pretokenize(PreTokenizer::TekkenUnicode, "\xe1\x9e\x80\xe1\x9e\xb6").size(), 1u);
    EXPECT_EQ(oiw::vocab::pretokenize(PreTokenizer::Gpt4o, "it'S 12345").size(), 4u);   // "it'S" " " "123" "45"
    EXPECT_EQ(oiw::vocab::pretokenize(PreTokenizer::Gpt4o, "it'\xc5\xbf").size(), 2u);  // "it" "'ſ"
    EXPECT_EQ(oiw::vocab::pretokenize(PreTokenizer::Gpt4oUnicode, "it'\xc5\xbf").size(), 1u);
    for (const auto& [pre, regex, contractions] :
         {std::tuple{PreTokenizer::Tekken, kTekken, false}, std::tuple{PreTokenizer::Gpt4o, kGpt4o, true}}) {
        std::mt19937 rng(7);
        size_t pieces = 0;
        for (int i = 0; i < 3000; ++i) {
            const std::string t = random_tekken_text(rng, contractions);
            const auto want = llama_cpp_regex_split(t, regex);
            ASSERT_EQ(oiw::vocab::pretokenize(pre, t), want) << "text '" << t << "'";
            pieces += want.size();
        }
        EXPECT_GT(pieces, 15000u);  // ~6 per text: the texts are cut, not taken whole
    }
}

// PreTokenizer::TekkenUnicode, Gpt4oUnicode, DeepseekV3Unicode and Smollm, the regexes as Hugging
// Face's tokenizers runs them (what the Python converter's chkhsh hashes), against Python's `regex`
// module on chktxt and 400 random texts each (tests/vocab/gen_tekken_splits.py wrote the file).
TEST(VocabTokenizer, TekkenAsWrittenSplitsLikeTheRegex) {
    const auto bytes = oiw::test::read_file(oiw::test::data_path("vocab/tekken-splits.json"));
    const auto j = nlohmann::json::parse(bytes.begin(), bytes.end());
    for (const auto& [name, pre] : {std::pair{"tekken", oiw::vocab::PreTokenizer::TekkenUnicode},
                                    std::pair{"gpt-4o", oiw::vocab::PreTokenizer::Gpt4oUnicode},
                                    std::pair{"deepseek-v3", oiw::vocab::PreTokenizer::DeepseekV3Unicode},
                                    std::pair{"smollm", oiw::vocab::PreTokenizer::Smollm}}) {
        size_t n = 0;
        for (const auto& c : j.at(name).at("cases")) {
            const auto text = c.at(0).get<std::string>();
            std::vector<std::string> want;
            for (const auto& p : c.at(1)) want.push_back(byte_encoded(p.get<std::string>()));
            EXPECT_EQ(oiw::vocab::pretokenize(pre, text), want) << name << ": text '" << text << "'";
            ++n;
        }
        EXPECT_EQ(n, 401u) << name;
    }
}

// DeepSeek-V3's and SmolLM's pre-tokenizers as llama.cpp runs them (regexes in sequence, through its
// collapsed std::regex, std::wregex and custom GPT-2 splitter): GPT-2's vocabulary with each pre
// name must give llama-tokenize's own ids (1348f67, tests/vocab/gen_llama_pre_ids.py) for chktxt and
// 300 random texts, whole and streamed.
// Each [text, ids] pair of `cases` tokenizes to its ids with `v` (BOS as the vocabulary asks, special
// tokens parsed or not), whole and streamed a byte at a time and in uneven chunks (the texts'
// alphabets hold the turning points: a piece is emitted only once no later byte changes it).
// Returns the number of pairs; stops at the first that fails.
size_t check_id_cases(const Vocab& v, const nlohmann::json& cases, bool parse_special) {
    size_t n = 0;
    for (const auto& c : cases) {
        const auto text = c.at(0).get<std::string>();
        const auto want = c.at(1).get<std::vector<int32_t>>();
        EXPECT_EQ(v.tokenize(text, true, parse_special), want) << "text '" << text << "'";
        for (const std::vector<size_t>& chunk : {std::vector<size_t>{1}, std::vector<size_t>{3, 1, 7}})
            EXPECT_EQ(oiw::test::streamed(v, text, true, parse_special, chunk), want) << "streamed '" << text << "'";
        if (::testing::Test::HasFailure()) break;
        ++n;
    }
    return n;
}

// GPT-2's vocabulary under tokenizer.ggml.pre `pre` gives llama-tokenize's ids for each text of
// tests/data/vocab/llama-pre-ids.json's list for that name (`count` of them), whole and streamed.
void check_llama_pre_ids(const char* pre, size_t count) {
    SCOPED_TRACE(pre);
    const std::string path = oiw::test::data_path("vocab/ggml-vocab-gpt-2.gguf");
    const auto bytes = oiw::test::read_file(oiw::test::data_path("vocab/llama-pre-ids.json"));
    const auto j = nlohmann::json::parse(bytes.begin(), bytes.end());
    oiw::Metadata md = oiw::open_model(path).metadata();
    md.set({"tokenizer.ggml.pre", oiw::GgufValue::make_string(pre)});
    const Vocab v = Vocab::load(md);
    EXPECT_EQ(check_id_cases(v, j.at(pre), false), count);
    oiw::test::check_stream_equals_tokenize(v, path);
}

TEST(VocabTokenizer, DeepseekV3AndSmollmTokenizeLikeLlamaCpp) {
    check_llama_pre_ids("deepseek-v3", 301);
    check_llama_pre_ids("smollm", 301);
    // Where llama.cpp's collapsed classes differ from the regex as written: ASCII '~' is neither
    // punctuation nor symbol there, so it may start a word ("~é" one piece) and is not one itself.
    using oiw::vocab::PreTokenizer;
    EXPECT_EQ(oiw::vocab::pretokenize(PreTokenizer::DeepseekV3, "~\xc3\xa9").size(), 1u);
    EXPECT_EQ(oiw::vocab::pretokenize(PreTokenizer::DeepseekV3Unicode, "~\xc3\xa9").size(), 2u);
    EXPECT_EQ(oiw::vocab::pretokenize(PreTokenizer::DeepseekV3, " ~~").size(), 2u);         // " " "~~"
    EXPECT_EQ(oiw::vocab::pretokenize(PreTokenizer::DeepseekV3Unicode, " ~~").size(), 1u);  // " ~~"
    // Digits in threes and CJK runs cut first; text no rule matches is a piece of its own.
    EXPECT_EQ(oiw::vocab::pretokenize(PreTokenizer::DeepseekV3,
                                      "a12345\xe4\xb8\xad"
                                      "b\x01\x01 c"),
              (std::vector<std::string>{"a", "123", "45", byte_encoded("\xe4\xb8\xad"), "b", byte_encoded("\x01\x01"),
                                        byte_encoded(" c")}));
    EXPECT_EQ(oiw::vocab::pretokenize(PreTokenizer::Smollm, " 12a"),
              (std::vector<std::string>{"\xc4\xa0", "1", "2", "a"}));
}

// Names that only name an expression implemented for others, one per family: dbrx (Llama 3's,
// merges applied to every word and no BOS, unlike llama-bpe), stablelm2 (Qwen2's), trillion (GPT-2's).
TEST(VocabTokenizer, NamesOfImplementedExpressionsTokenizeLikeLlamaCpp) {
    for (const char* pre : {"dbrx", "stablelm2", "trillion", "bailingmoe", "glm4"}) check_llama_pre_ids(pre, 101);
    // GLM-4's names have no default BOS id: without tokenizer.ggml.bos_token_id, a BOS asked for is
    // refused (llama.cpp aborts), where GPT-2's default id 11 is added.
    oiw::Metadata md = oiw::open_model(oiw::test::data_path("vocab/ggml-vocab-gpt-2.gguf")).metadata();
    ASSERT_TRUE(md.erase("tokenizer.ggml.bos_token_id"));
    md.set({"tokenizer.ggml.add_bos_token", oiw::GgufValue::make_bool(true)});
    EXPECT_EQ(Vocab::load(md).tokenize("a", true, false), (std::vector<int32_t>{11, 64}));
    md.set({"tokenizer.ggml.pre", oiw::GgufValue::make_string("glm4")});
    EXPECT_THROW(Vocab::load(md).tokenize("a", true, false), oiw::FormatError);
}

// The expressions that are a turn of Llama 3's or Qwen2's: Qwen 3.5's (marks inside words), Seed-Coder's
// (no newlines after other characters), Jais-2's (runs of spaces in powers of two) and EXAONE-MoE's
// (words over single spaces).
// The sizes of pretokenize's pieces in bytes after the byte-level encoding (a byte past ASCII, a
// space or a newline is two).
std::vector<size_t> sizes(oiw::vocab::PreTokenizer p, std::string_view text) {
    std::vector<size_t> n;
    for (const std::string& w : oiw::vocab::pretokenize(p, text)) n.push_back(w.size());
    return n;
}

TEST(VocabTokenizer, QwenLikeExpressionsTokenizeLikeLlamaCpp) {
    for (const char* pre : {"qwen35", "seed-coder", "exaone-moe"}) check_llama_pre_ids(pre, 101);
    check_llama_pre_ids("jais-2", 147);
    using oiw::vocab::PreTokenizer;
    // KA and the vowel sign I: one word for Qwen 3.5; for Qwen2 the mark is "other", with the "!\n".
    EXPECT_EQ(sizes(PreTokenizer::Qwen35, "\xe0\xa4\x95\xe0\xa4\xbf!\n"), (std::vector<size_t>{12, 3}));
    EXPECT_EQ(sizes(PreTokenizer::Qwen2, "\xe0\xa4\x95\xe0\xa4\xbf!\n"), (std::vector<size_t>{6, 9}));
    EXPECT_EQ(sizes(PreTokenizer::SeedCoder, "a!\n\nb"), (std::vector<size_t>{1, 1, 4, 1}));
    // 11 spaces before a word: 8, 2, then " b"; a run of 600 at the end: 512, 64, 16, 8.
    EXPECT_EQ(sizes(PreTokenizer::Jais2, "a           b"), (std::vector<size_t>{1, 16, 4, 3}));
    EXPECT_EQ(oiw::vocab::pretokenize(PreTokenizer::Jais2, std::string(600, ' ')).size(), 4u);
    // " ab c" is one word; "/" ends a run of others and one newline follows it.
    EXPECT_EQ(sizes(PreTokenizer::ExaoneMoe, " ab c  d/\n/"), (std::vector<size_t>{7, 2, 3, 3, 1}));
}

// BLOOM's regex (also Poro's, GPT-3 Finnish's) and Viking's (the same, then each \p{N} apart).
TEST(VocabTokenizer, BloomAndVikingTokenizeLikeLlamaCpp) {
    check_llama_pre_ids("bloom", 101);
    check_llama_pre_ids("viking", 101);
    using oiw::vocab::PreTokenizer;
    // "a\u00a0b, (c)12": "a", the no-break space (whitespace ends a word), "b", ", (" (the text
    // between two matches), "c", ")", then "12" whole for BLOOM, "1" and "2" for Viking.
    const std::string text =
        "a\xc2\xa0"
        "b, (c)12";
    EXPECT_EQ(oiw::vocab::pretokenize(PreTokenizer::Bloom, text),
              (std::vector<std::string>{"a", "\xc3\x82\xc5\x82", "b", ",\xc4\xa0(", "c", ")", "12"}));
    EXPECT_EQ(oiw::vocab::pretokenize(PreTokenizer::Viking, text).size(), 8u);
}

// Regexes in sequence, each splitting the pieces the one before left: Falcon's, llama.cpp's default,
// DeepSeek Coder's, DeepSeek LLM's, AFMoE's, Tiny Aya's, Youtu's, SuperBPE's and Chameleon's.
TEST(VocabTokenizer, SequencesOfRegexesTokenizeLikeLlamaCpp) {
    for (const char* pre :
         {"falcon", "default", "deepseek-coder", "deepseek-llm", "afmoe", "tiny_aya", "youtu", "chameleon"})
        check_llama_pre_ids(pre, 101);
    check_llama_pre_ids("superbpe", 139);
    using oiw::vocab::PreTokenizer;
    // Falcon: "a", "+=" (punctuation and ASCII symbols), "12345" cut into "123" and "45".
    EXPECT_EQ(sizes(PreTokenizer::Falcon, "a+=12345"), (std::vector<size_t>{1, 2, 3, 2}));
    // The default: '`' is not among its first regex's symbols (" `" is one GPT-2 piece), and a
    // number is cut in threes after GPT-2's " 12345".
    EXPECT_EQ(sizes(PreTokenizer::Default, "a+= `12345"), (std::vector<size_t>{1, 2, 3, 3, 2}));
    // A gpt2 vocabulary without tokenizer.ggml.pre tokenizes as llama.cpp's default, as llama.cpp does.
    oiw::Metadata md = oiw::open_model(oiw::test::data_path("vocab/ggml-vocab-gpt-2.gguf")).metadata();
    md.set({"tokenizer.ggml.pre", oiw::GgufValue::make_string("default")});
    const std::string text = "a+= `12345 x\xc2\xbd\xc2\xbd";
    const auto want = Vocab::load(md).tokenize(text, false, false);
    md.erase("tokenizer.ggml.pre");
    EXPECT_EQ(Vocab::load(md).tokenize(text, false, false), want);
    // DeepSeek Coder: the newline apart, then "ab\u4e2d\u6587" (letters) cut at the CJK range, digits one by one.
    EXPECT_EQ(sizes(PreTokenizer::DeepseekCoder, "ab\xe4\xb8\xad\xe6\x96\x87\n12"),
              (std::vector<size_t>{2, 12, 2, 1, 1}));
    // DeepSeek LLM: "\u03a9x" one run of its letters, cut again by its "punctuation" (":-~" holds
    // ASCII's letters), then ",", and the trailing spaces (U+3000 a space, not its punctuation).
    EXPECT_EQ(sizes(PreTokenizer::DeepseekLlm, "\xce\xa9x, \xe3\x80\x80"), (std::vector<size_t>{4, 1, 1, 8}));
    // AFMoE: digits in threes from the right, the text before a run joining its first group ("ab1",
    // "234", " 5"), then DeepSeek-V3's regex over each ("ab" "1", "234", " " "5").
    EXPECT_EQ(sizes(PreTokenizer::Afmoe, "ab1234 5"), (std::vector<size_t>{2, 1, 3, 2, 1}));
    // Tiny Aya: "it's 12" and "345", then "it's" (a word and its contraction), " ", "12", "345".
    EXPECT_EQ(sizes(PreTokenizer::TinyAya, "it's 12345"), (std::vector<size_t>{4, 2, 2, 3}));
    // Youtu: a run of Hangul, one of fullwidth punctuation (\uff0c\uff01), then "a" and digits one by one.
    EXPECT_EQ(sizes(PreTokenizer::Youtu,
                    "\xea\xb0\x80\xeb\x82\x98\xef\xbc\x8c\xef\xbc\x81"
                    "a12"),
              (std::vector<size_t>{12, 12, 1, 1, 1}));
    // SuperBPE: "a b, " whole (spaces do not cut), then the number run cut before each group of three
    // ASCII digits counted from its end, U+0663 joining the digits before it: "1", "234", "567\u0663", "890".
    EXPECT_EQ(sizes(PreTokenizer::Superbpe,
                    "a b, 1234567\xd9\xa3"
                    "890"),
              (std::vector<size_t>{7, 1, 3, 7, 3}));
    // Chameleon: the later regexes split "<sentinel:12>" again ("<" "sentinel" ":" "1" "2" ">": only the
    // special tokens keep it whole, as llama.cpp says); an image token is cut out of a word ("a",
    // "IMGIMGABZ", "b"); five spaces are four and " x".
    EXPECT_EQ(sizes(PreTokenizer::Chameleon, "<sentinel:12>aIMGIMGABZb     x1.5!"),
              (std::vector<size_t>{1, 8, 1, 1, 1, 1, 1, 9, 1, 8, 3, 1, 1, 1, 1}));
}

// Kimi K2's (llama.cpp's own splitter): Han runs apart from words, a mark is not in a word (it leads
// the next one), a contraction ends a word whatever its case, numbers in threes.
TEST(VocabTokenizer, KimiK2TokenizesLikeLlamaCpp) {
    check_llama_pre_ids("kimi-k2", 101);
    using oiw::vocab::PreTokenizer;
    // "ab", "\u4e2d\u6587", "c", " e", "\u0301x", " it'S", " ", "123", "45"
    EXPECT_EQ(sizes(PreTokenizer::KimiK2,
                    "ab\xe4\xb8\xad\xe6\x96\x87"
                    "c e\xcc\x81x it'S 12345"),
              (std::vector<size_t>{2, 12, 1, 3, 5, 6, 2, 3, 2}));
}

// llama.cpp's per-token attributes: under a Phi-3 general.name every special token but <unk>, <s>
// and <|endoftext|> takes the ASCII whitespace after it; under the jina-v2-* names <mask> takes the
// whitespace before it. 200 texts each with llama-tokenize's ids (tests/vocab/gen_llama_strip_ids.py
// renames one token of the vendored vocabularies as below), whole, streamed, and the stream's own
// random texts with and without special tokens parsed.
TEST(VocabTokenizer, SpecialTokensStripWhitespaceLikeLlamaCpp) {
    const auto bytes = oiw::test::read_file(oiw::test::data_path("vocab/llama-strip-ids.json"));
    const auto j = nlohmann::json::parse(bytes.begin(), bytes.end());
    struct Case {
        const char* name;
        const char* vocab;
        size_t renamed;
        const char* text;
        const char* key;
        const char* value;
    };
    for (const Case& c :
         {Case{"phi-3", "vocab/ggml-vocab-llama-spm.gguf", 3, "<|endoftext|>", "general.name", "Phi-3-mini"},
          Case{"jina-v2-code", "vocab/ggml-vocab-gpt-2.gguf", 50256, "<mask>", "tokenizer.ggml.pre", "jina-v2-code"}}) {
        SCOPED_TRACE(c.name);
        const std::string path = oiw::test::data_path(c.vocab);
        oiw::Metadata md = oiw::open_model(path).metadata();
        std::vector<std::string> tokens = md.find("tokenizer.ggml.tokens")->strings();
        tokens.at(c.renamed) = c.text;
        md.set({"tokenizer.ggml.tokens", oiw::GgufValue::make_string_array(std::move(tokens))});
        md.set({c.key, oiw::GgufValue::make_string(c.value)});
        const Vocab v = Vocab::load(md);
        EXPECT_EQ(check_id_cases(v, j.at(c.name), true), 200u);
        oiw::test::check_stream_equals_tokenize(v, path);
    }
    // Without those names nothing is stripped: "</s>  a" keeps its spaces (llama-tokenize: 2 259 263;
    // under the Phi-3 name: 2 263).
    const Vocab spm = load(oiw::test::data_path("vocab/ggml-vocab-llama-spm.gguf"));
    EXPECT_EQ(spm.tokenize("</s>  a", false, true), (std::vector<int32_t>{2, 259, 263}));
}

// Gemma 4's and Sarvam-MoE's SentencePiece-style BPE (spaces as U+2581, pieces [^\n]+|[\n]+ over
// UTF-8, <0xNN> byte fallback; Gemma 4 takes a run of newlines that is a token whole and always adds
// BOS) over a vocabulary made from llama-spm's (tests/vocab/gemma4_style.h): llama-tokenize's ids
// for chktxt and 200 random texts each (tests/vocab/gen_llama_gemma4_ids.py), whole and streamed,
// as tokenizer.ggml.model "gemma4" and as "gpt2" with either pre-tokenizer name.
TEST(VocabTokenizer, SentencePieceStyleBpeTokenizesLikeLlamaCpp) {
    const auto bytes = oiw::test::read_file(oiw::test::data_path("vocab/llama-gemma4-ids.json"));
    const auto j = nlohmann::json::parse(bytes.begin(), bytes.end());
    const std::string path = oiw::test::data_path("vocab/ggml-vocab-llama-spm.gguf");
    for (const auto& [name, model, pre] :
         {std::tuple{"gemma4-model", "gemma4", "default"}, std::tuple{"gemma4", "gpt2", "gemma4"},
          std::tuple{"sarvam-moe", "gpt2", "sarvam-moe"}}) {
        SCOPED_TRACE(name);
        const Vocab v = Vocab::load(oiw::test::gemma4_style_metadata(oiw::open_model(path).metadata(), model, pre));
        EXPECT_FALSE(v.byte_level());
        EXPECT_EQ(check_id_cases(v, j.at(name), true), 201u);
        oiw::test::check_stream_equals_tokenize(v, path);
    }
    // Eight newlines are token 31993 only by Gemma 4's rule (no merge makes it); a character the
    // vocabulary lacks is its <0xNN> tokens (U+1F40 was token 31990). llama-tokenize's ids.
    const oiw::Metadata spm = oiw::open_model(path).metadata();
    const Vocab gemma = Vocab::load(oiw::test::gemma4_style_metadata(spm, "gemma4", "default"));
    const Vocab sarvam = Vocab::load(oiw::test::gemma4_style_metadata(spm, "gpt2", "sarvam-moe"));
    const std::string eight(8, '\n');
    EXPECT_EQ(gemma.tokenize(eight, false, false), (std::vector<int32_t>{31993}));
    EXPECT_EQ(sarvam.tokenize(eight, false, false), (std::vector<int32_t>{31991, 31991, 31991, 31991}));
    EXPECT_EQ(gemma.tokenize("\xe1\xbd\x80", true, false), (std::vector<int32_t>{1, 228, 192, 131}));
}

TEST(VocabTokenizer, MalformedUtf8BecomesReplacementCharacters) {
    using oiw::vocab::decode_utf8;
    EXPECT_EQ(decode_utf8("a\xc3"), (std::vector<uint32_t>{'a', 0xFFFD}));           // truncated
    EXPECT_EQ(decode_utf8("\x80z"), (std::vector<uint32_t>{0xFFFD, 'z'}));           // stray continuation
    EXPECT_EQ(decode_utf8("\xf7\xbf\xbf\xbf"), (std::vector<uint32_t>(4, 0xFFFD)));  // above U+10FFFF
    EXPECT_EQ(decode_utf8("\xc0\xaf"), (std::vector<uint32_t>{0x2F}));               // overlong: as llama.cpp
    const Vocab v = load(oiw::test::data_path("vocab/ggml-vocab-gpt-2.gguf"));
    EXPECT_EQ(v.tokenize("\xf7\xbf\xbf\xbf", false, false),
              v.tokenize("\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", false, false));
}

// ---- TokenStream: tokenize() of the whole text, in pieces ----

TEST(TokenStream, SpmInPiecesEqualsWholeText) {
    check_stream_equals_tokenize(vocab_fixture("ggml-vocab-llama-spm.gguf"));
}

TEST(TokenStream, Gpt2InPiecesEqualsWholeText) { check_stream_equals_tokenize(vocab_fixture("ggml-vocab-gpt-2.gguf")); }

// GPT-2's vocabulary with the tekken pre-tokenizer (and ignore_merges, BOS), GPT-4o's, DeepSeek-V3's
// and SmolLM's: a piece the stream emits is one no later byte can change there too.
TEST(TokenStream, RegexPreTokenizersInPiecesEqualWholeText) {
    const std::string path = oiw::test::data_path("vocab/ggml-vocab-gpt-2.gguf");
    oiw::Metadata md = oiw::open_model(path).metadata();
    for (const char* pre : {"tekken", "gpt-4o", "deepseek-v3", "smollm"}) {
        SCOPED_TRACE(pre);
        md.set({"tokenizer.ggml.pre", oiw::GgufValue::make_string(pre)});
        oiw::test::check_stream_equals_tokenize(Vocab::load(md), path);
    }
}

// A made-up SPM vocabulary whose tokens span spaces ("a\u2581b", "\u2581\u2581\u2581") and
// newlines, with overlapping special tokens ("<x>", "x><x"): cuts must avoid every join a token
// holds. Random texts over its alphabet, in pieces, equal the whole-text ids.
TEST(TokenStream, SpmTokensSpanningSpacesAreNeverCut) {
    const auto s = [](const char* x) { return oiw::GgufValue::make_string(x); };
    const std::string sp = "\xe2\x96\x81";  // U+2581
    std::vector<std::string> toks = {"<unk>",        "<s>",        "</s>",   "a",   "b",   "\n",  sp,    "ab",
                                     "a" + sp + "b", sp + sp + sp, sp + "a", "b\n", "\nb", "<x>", "x><x"};
    std::vector<float> scores;
    std::vector<int32_t> types;
    for (size_t i = 0; i < toks.size(); ++i) {
        scores.push_back(static_cast<float>((i * 7919) % 13));
        types.push_back(i < 3 ? 3 : i >= 13 ? 4 : 1);  // control, normal, user-defined
    }
    for (int b = 0; b < 256; ++b) {  // byte fallback
        toks.push_back(fmt::format("<0x{:02X}>", b));
        scores.push_back(0);
        types.push_back(6);
    }
    const auto packed = [](const auto& v) {
        std::vector<uint8_t> b(v.size() * 4);
        std::memcpy(b.data(), v.data(), b.size());
        return b;
    };
    const Vocab v = Vocab::load(oiw::Metadata(
        {{"tokenizer.ggml.model", s("llama")},
         {"tokenizer.ggml.tokens", oiw::GgufValue::make_string_array(toks)},
         {"tokenizer.ggml.scores", oiw::GgufValue::make_array(oiw::GgufType::F32, packed(scores), scores.size())},
         {"tokenizer.ggml.token_type", oiw::GgufValue::make_array(oiw::GgufType::I32, packed(types), types.size())}},
        "toy.gguf"));
    std::mt19937 rng(11);
    const char* const alphabet[] = {"a", "b", " ", "\n", "<x>", "x>", "<", "</s>"};
    for (int i = 0; i < 2000; ++i) {
        std::string t;
        for (size_t k = 0, n = 1 + rng() % 60; k < n; ++k) t += alphabet[rng() % std::size(alphabet)];
        const auto want = v.tokenize(t, true, true);
        ASSERT_EQ(streamed(v, t, true, true, {1 + rng() % 4}), want) << "'" << t << "'";
    }
}

// A stretch with no safe cut longer than max_run is an error naming the text, not unbounded
// memory; a text whose cuts come often enough passes with the same small limit.
TEST(TokenStream, StretchWithoutCutBeyondLimitIsAnError) {
    const Vocab spm = load(oiw::test::data_path("vocab/ggml-vocab-llama-spm.gguf"));
    const Vocab gpt2 = load(oiw::test::data_path("vocab/ggml-vocab-gpt-2.gguf"));
    std::string words;
    for (int i = 0; i < 2000; ++i) words += " word";
    for (const Vocab* v : {&spm, &gpt2}) {
        EXPECT_EQ(streamed(*v, words, true, true, {64}, 256), v->tokenize(words, true, true));
        try {
            streamed(*v, std::string(4096, 'a'), true, true, {64}, 256);
            ADD_FAILURE() << v->model_name() << ": 4096 letters in a row passed a 256-byte limit";
        } catch (const oiw::FormatError& e) {
            EXPECT_EQ(e.kind(), oiw::ErrorKind::TooLarge);
            EXPECT_NE(std::string(e.what()).find("text.txt"), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find("more than 256 bytes"), std::string::npos) << e.what();
        }
    }
    // A sequence of regexes settles where its first splits it: Tiny Aya's and SuperBPE's at a digit,
    // Youtu's at a CJK character, Chameleon's at a sentinel token. Words with such a cut every few
    // pass the limit; the same words without one are refused, not split wrongly.
    oiw::Metadata md = oiw::open_model(oiw::test::data_path("vocab/ggml-vocab-gpt-2.gguf")).metadata();
    const auto every_tenth = [](const char* cut) {  // 2000 words, every tenth `cut`
        std::string t;
        for (int i = 0; i < 2000; ++i) t += i % 10 ? " word" : cut;
        return t;
    };
    const std::string numbered = every_tenth(" 7"), cjk = every_tenth("\xe4\xb8\xad"),
                      sentinels = every_tenth("<sentinel:7>");
    for (const char* pre : {"tiny_aya", "superbpe", "youtu", "chameleon"}) {
        md.set({"tokenizer.ggml.pre", oiw::GgufValue::make_string(pre)});
        const Vocab v = Vocab::load(md);
        const std::string_view name = pre;
        const std::string& cut = name == "chameleon" ? sentinels : name == "youtu" ? cjk : numbered;
        EXPECT_EQ(streamed(v, cut, true, true, {64}, 256), v.tokenize(cut, true, true)) << pre;
        try {
            streamed(v, words, true, true, {64}, 256);
            ADD_FAILURE() << pre << ": 10000 bytes without a cut passed a 256-byte limit";
        } catch (const oiw::FormatError& e) {
            EXPECT_EQ(e.kind(), oiw::ErrorKind::TooLarge) << e.what();
        }
    }
}

}  // namespace
