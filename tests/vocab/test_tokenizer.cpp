// The tokenizers against llama.cpp: every case of its tokenizer test files (texts in .inp
// separated by "\n__ggml_vocab_test__\n", ids in .out, one line per text), tokenized as
// test-tokenizer-0 does (add_special = false, parse_special = false).
#include <gtest/gtest.h>

#include "converters/vocab/unicode.h"
#include "converters/vocab/vocab.h"
#include "libformat/model.h"
#include "tests/support/helpers.h"
#include "tests/vocab/fixture_cases.h"

namespace {

using oiw::vocab::Vocab;

Vocab load(const std::string& path) {
    return Vocab::load(oiw::open_model(path).metadata());
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
    EXPECT_EQ(v.tokenize("</s>Hello world", false, true), (std::vector<int32_t>{2, 15043, 3186}));  // dummy prefix after a special token
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
                                            {"tokenizer.ggml.pre", s("llama-bpe")},
                                            {"tokenizer.ggml.tokens", oiw::GgufValue::make_string_array({"a", "b"})}});
    EXPECT_NE(pre.find("unsupported tokenizer model gpt2 (pre-tokenizer 'llama-bpe')"), std::string::npos) << pre;
    const std::string dup = tokenize_error({{"tokenizer.ggml.model", s("llama")},
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
    const auto w = oiw::vocab::gpt2_pretokenize("Hello, y'all!  3x\n");
    const std::vector<std::string> want = {"Hello", ",", "\xc4\xa0y", "'", "all", "!", "\xc4\xa0", "\xc4\xa0" "3", "x", "\xc4\x8a"};
    EXPECT_EQ(w, want);
}

TEST(VocabTokenizer, MalformedUtf8BecomesReplacementCharacters) {
    using oiw::vocab::decode_utf8;
    EXPECT_EQ(decode_utf8("a\xc3"), (std::vector<uint32_t>{'a', 0xFFFD}));                   // truncated
    EXPECT_EQ(decode_utf8("\x80z"), (std::vector<uint32_t>{0xFFFD, 'z'}));                    // stray continuation
    EXPECT_EQ(decode_utf8("\xf7\xbf\xbf\xbf"), (std::vector<uint32_t>(4, 0xFFFD)));           // above U+10FFFF
    EXPECT_EQ(decode_utf8("\xc0\xaf"), (std::vector<uint32_t>{0x2F}));                        // overlong: as llama.cpp
    const Vocab v = load(oiw::test::data_path("vocab/ggml-vocab-gpt-2.gguf"));
    EXPECT_EQ(v.tokenize("\xf7\xbf\xbf\xbf", false, false), v.tokenize("\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", false, false));
}

}  // namespace
