// The tokenizers against llama.cpp: every case of its tokenizer test files (texts in .inp
// separated by "\n__ggml_vocab_test__\n", ids in .out, one line per text), tokenized as
// test-tokenizer-0 does (add_special = false, parse_special = false).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstring>
#include <random>

#include "converters/vocab/unicode.h"
#include "converters/vocab/vocab.h"
#include "libformat/model.h"
#include "tests/support/helpers.h"
#include "tests/vocab/fixture_cases.h"
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
                                            {"tokenizer.ggml.pre", s("deepseek-llm")},
                                            {"tokenizer.ggml.tokens", oiw::GgufValue::make_string_array({"a", "b"})}});
    EXPECT_NE(pre.find("unsupported tokenizer model gpt2 (pre-tokenizer 'deepseek-llm')"), std::string::npos) << pre;
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
}

}  // namespace
