// Vocabulary pruning: kept tokens and rows equal the originals, special ids keep their strings,
// the closure property holds (a text whose original tokens are all kept tokenizes to the same,
// remapped, tokens), and keeping every id changes nothing but the added map key.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <numeric>
#include <optional>
#include <random>

#include "converters/vocab/prune.h"
#include "converters/vocab/unicode.h"
#include "converters/vocab/vocab.h"
#include "libformat/model.h"
#include "tests/support/helpers.h"
#include "tests/support/hf_fixtures.h"
#include "tests/vocab/fixture_cases.h"
#include "tests/vocab/gemma4_style.h"

namespace {

using oiw::GgufKV;
using oiw::vocab::Model;
using oiw::vocab::PruneOptions;
using oiw::vocab::PrunePlan;
using oiw::vocab::Vocab;

struct Pruned {
    oiw::Model in;
    Vocab vin;
    PrunePlan plan;
    oiw::Model out;
    Vocab vout;
};

Pruned prune(const std::string& model, const std::vector<int64_t>& ids, const PruneOptions& opt = {}) {
    oiw::Model in = oiw::open_model(model);
    Vocab vin = Vocab::load(in.metadata());
    PrunePlan plan = oiw::vocab::plan_prune(in, vin, ids, opt);
    const std::string out_path = (oiw::test::temp_dir() / "pruned.gguf").string();
    oiw::vocab::write_pruned(in, plan, out_path);
    oiw::Model out = oiw::open_model(out_path);
    Vocab vout = Vocab::load(out.metadata());
    return {std::move(in), std::move(vin), std::move(plan), std::move(out), std::move(vout)};
}

// The fixture texts of llama.cpp's tokenizer tests (the same texts for both vocabularies).
std::vector<std::string> fixture_texts() {
    std::vector<std::string> t;
    for (const auto& c : oiw::test::read_tokenizer_cases(oiw::test::data_path("vocab/ggml-vocab-llama-spm.gguf")))
        t.push_back(c.text);
    return t;
}

// Ids of the first `n` fixture texts, tokenized with the model's own tokenizer.
std::vector<int64_t> ids_of_texts(const Vocab& v, size_t n) {
    std::vector<int64_t> ids;
    const auto texts = fixture_texts();
    for (size_t i = 0; i < n && i < texts.size(); ++i)
        for (int32_t id : v.tokenize(texts[i], true, true)) ids.push_back(id);
    return ids;
}

// Raw text a token stands for (SPM and SentencePiece-style BPE: U+2581 is a space; byte-level BPE:
// undo the byte-to-unicode map).
std::string raw_text(const Vocab& v, int32_t id) {
    const std::string& t = v.text(id);
    std::string out;
    if (!v.byte_level()) {
        for (size_t i = 0; i < t.size(); ++i) {
            if (t.compare(i, 3, "\xe2\x96\x81") == 0)
                out += ' ', i += 2;
            else
                out += t[i];
        }
        return out;
    }
    static const std::map<std::string, uint8_t> inverse = [] {
        std::map<std::string, uint8_t> m;
        for (int b = 0; b < 256; ++b) m[oiw::vocab::byte_to_unicode(static_cast<uint8_t>(b))] = static_cast<uint8_t>(b);
        return m;
    }();
    for (uint32_t c : oiw::vocab::decode_utf8(t)) {
        auto it = inverse.find(oiw::vocab::encode_utf8(c));
        if (it != inverse.end()) out += static_cast<char>(it->second);
    }
    return out;
}

// Seeded random texts made of kept tokens' texts, separators and random printable characters.
std::vector<std::string> random_texts(const Pruned& p, size_t count, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<int32_t> normal, other;  // special and byte tokens' texts also go through the merger
    for (int32_t old : p.plan.original_ids)
        (p.vin.is_special(old) || p.vin.is_byte_token(old) ? other : normal).push_back(old);
    std::vector<std::string> texts;
    const char* seps[] = {"", "", " ", "\n", "  ", "."};
    for (size_t i = 0; i < count && !normal.empty(); ++i) {
        std::string t;
        const int k = 1 + static_cast<int>(rng() % 5);
        for (int j = 0; j < k; ++j) {
            t += raw_text(
                p.vin, rng() % 6 == 0 && !other.empty() ? other[rng() % other.size()] : normal[rng() % normal.size()]);
            t += seps[rng() % 6];
            if (rng() % 8 == 0) t += static_cast<char>(' ' + rng() % 95);
        }
        texts.push_back(t);
    }
    return texts;
}

// Texts whose original tokenization uses only kept tokens, and how many of those the pruned
// tokenizer reproduces (remapped).
struct ClosureCount {
    size_t eligible = 0, same = 0;
};

ClosureCount closure_property(const Pruned& p, const std::vector<std::string>& texts) {
    std::vector<int32_t> old_to_new(p.plan.n_vocab_before, -1);
    for (size_t i = 0; i < p.plan.original_ids.size(); ++i)
        old_to_new[static_cast<size_t>(p.plan.original_ids[i])] = static_cast<int32_t>(i);
    ClosureCount c;
    for (const std::string& t : texts) {
        for (bool parse_special : {false, true}) {
            const auto orig = p.vin.tokenize(t, true, parse_special);
            std::vector<int32_t> want;
            for (int32_t id : orig) want.push_back(old_to_new[static_cast<size_t>(id)]);
            if (std::find(want.begin(), want.end(), -1) != want.end()) continue;
            ++c.eligible;
            const auto got = p.vout.tokenize(t, true, parse_special);
            c.same += got == want;
            if (p.plan.closure_skipped.empty()) {
                EXPECT_EQ(got, want) << "text '" << t << "'";
            }
        }
    }
    return c;
}

const oiw::GgufValue* kv(const oiw::Model& f, const std::string& key) { return f.metadata().find(key); }

// Kept token strings, scores, types and rows equal the originals; special ids resolve to the
// same strings; the map key and <arch>.vocab_size are right; other tensors are untouched.
void check_kept_equal(const Pruned& p) {
    const auto& ids = p.plan.original_ids;
    ASSERT_EQ(p.vout.size(), ids.size());
    for (size_t i = 0; i < ids.size(); ++i) {
        ASSERT_EQ(p.vout.text(static_cast<int32_t>(i)), p.vin.text(ids[i])) << i;
        ASSERT_EQ(p.vout.type(static_cast<int32_t>(i)), p.vin.type(ids[i])) << i;
    }
    if (const oiw::GgufValue* s = kv(p.in, "tokenizer.ggml.scores")) {
        const oiw::GgufValue* so = kv(p.out, "tokenizer.ggml.scores");
        ASSERT_NE(so, nullptr);
        for (size_t i = 0; i < ids.size(); ++i)
            ASSERT_EQ(so->array_number(i), s->array_number(static_cast<uint64_t>(ids[i])));
    }
    size_t n_special = 0;
    for (const auto& k : p.in.metadata()) {
        if (k.key.rfind("tokenizer.ggml.", 0) != 0 || k.key.find("_token_id") == std::string::npos) continue;
        const oiw::GgufValue* o = kv(p.out, k.key);
        ASSERT_NE(o, nullptr) << k.key;
        EXPECT_EQ(o->type(), k.value.type()) << k.key;
        EXPECT_EQ(p.vout.text(static_cast<int32_t>(*o->as_int())), p.vin.text(static_cast<int32_t>(*k.value.as_int())))
            << k.key;
        ++n_special;
    }
    EXPECT_GE(n_special, 2u);
    const oiw::GgufValue* map = kv(p.out, oiw::vocab::kOriginalIdsKey);
    ASSERT_NE(map, nullptr);
    ASSERT_EQ(map->count(), ids.size());
    for (size_t i = 0; i < ids.size(); ++i) ASSERT_EQ(map->array_number(i), ids[i]);
    const std::string arch = *kv(p.in, "general.architecture")->as_string();
    if (kv(p.in, arch + ".vocab_size")) {
        EXPECT_EQ(*kv(p.out, arch + ".vocab_size")->as_int(), static_cast<int64_t>(ids.size()));
    }

    size_t gathered = 0;
    ASSERT_EQ(p.out.tensors().size(), p.in.tensors().size());
    for (size_t t = 0; t < p.in.tensors().size(); ++t) {
        const auto& ti = p.in.tensors()[t];
        const auto& to = p.out.tensors()[t];
        ASSERT_EQ(to.name, ti.name);
        ASSERT_EQ(to.type, ti.type);
        const auto din = p.in.tensor_data(t), dout = p.out.tensor_data(t);
        if (ti.ne[1] != static_cast<int64_t>(p.plan.n_vocab_before)) {
            EXPECT_TRUE(std::equal(din.begin(), din.end(), dout.begin(), dout.end())) << ti.name;
            continue;
        }
        ++gathered;
        ASSERT_EQ(to.ne[1], static_cast<int64_t>(ids.size())) << ti.name;
        const uint64_t row = oiw::row_size(ti.type, ti.ne[0]);
        for (size_t i = 0; i < ids.size(); ++i)
            ASSERT_TRUE(std::equal(dout.begin() + i * row, dout.begin() + (i + 1) * row, din.begin() + ids[i] * row))
                << ti.name << " row " << i;
    }
    EXPECT_EQ(gathered, static_cast<size_t>(std::count_if(p.plan.vocab_dim.begin(), p.plan.vocab_dim.end(),
                                                          [](int d) { return d >= 0; })));
}

// Keeping every id: the same file except the added map key.
void check_full_set_is_identity(const std::string& model) {
    std::vector<int64_t> all(Vocab::load(oiw::open_model(model).metadata()).size());
    std::iota(all.begin(), all.end(), 0);
    const Pruned p = prune(model, all);
    EXPECT_EQ(p.plan.n_vocab_after, p.plan.n_vocab_before);
    std::vector<GgufKV> kvs = p.out.metadata().entries();
    ASSERT_EQ(kvs.back().key, oiw::vocab::kOriginalIdsKey);
    kvs.pop_back();
    EXPECT_TRUE(kvs == p.in.metadata().entries());
    ASSERT_EQ(p.out.tensors().size(), p.in.tensors().size());
    for (size_t t = 0; t < p.in.tensors().size(); ++t) {
        EXPECT_EQ(p.out.tensors()[t].shape(), p.in.tensors()[t].shape());
        const auto a = p.in.tensor_data(t), b = p.out.tensor_data(t);
        EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end())) << p.in.tensors()[t].name;
    }
}

// All acceptance checks on one model: prune to the tokens of half the fixture texts.
void check_model(const std::string& model, size_t min_gathered) {
    const Vocab v = Vocab::load(oiw::open_model(model).metadata());
    const Pruned p = prune(model, ids_of_texts(v, 23));
    EXPECT_LT(p.plan.n_vocab_after, p.plan.n_vocab_before);
    EXPECT_GE(static_cast<size_t>(
                  std::count_if(p.plan.vocab_dim.begin(), p.plan.vocab_dim.end(), [](int d) { return d >= 0; })),
              min_gathered);
    check_kept_equal(p);
    const ClosureCount fixture = closure_property(p, fixture_texts());
    const ClosureCount random = closure_property(p, random_texts(p, 300, 42));
    EXPECT_GE(fixture.eligible, 46u) << "the 23 kept texts, both ways of parsing specials";
    EXPECT_GE(random.eligible, 100u);
    std::printf("%s: n_vocab %zu -> %zu (closure +%zu); closure property on %zu fixture and %zu random tokenizations\n",
                model.c_str(), p.plan.n_vocab_before, p.plan.n_vocab_after, p.plan.closure_added, fixture.eligible,
                random.eligible);
    check_full_set_is_identity(model);
}

TEST(VocabPrune, MiniLlamaF16) { check_model(oiw::test::data_path("models/mini-llama-f16.gguf"), 2); }
TEST(VocabPrune, SpmVocabOnly) { check_model(oiw::test::data_path("vocab/ggml-vocab-llama-spm.gguf"), 0); }
TEST(VocabPrune, Gpt2VocabOnly) { check_model(oiw::test::data_path("vocab/ggml-vocab-gpt-2.gguf"), 0); }

// A Qwen2 BPE vocabulary (Qwen2's pre-tokenizer): Qwen2.5's tokenizer.json converted by gguf-convert
// with a small synthetic model around it (tied embeddings).
TEST(VocabPrune, Qwen2ConvertedBf16) {
    const auto root = oiw::test::temp_dir();
    const auto ck = oiw::test::make_hf_case("Qwen2.5-0.5B-Instruct", root);
    const std::string model = (root / "qwen2.gguf").string();
    std::string log;
    ASSERT_EQ(oiw::test::run(oiw::test::tool_path("gguf-convert") + " -q " + ck.string() + " " + model, &log, true), 0)
        << log;
    check_model(model, 1);
}

TEST(VocabPrune, TinyLlamaQ4KM) {
    OIW_NEED_SHARED("fixtures/tiny-llama-Q4_K_M.gguf");
    check_model(oiw::test::shared_path("fixtures/tiny-llama-Q4_K_M.gguf"), 2);
}
TEST(VocabPrune, BpeTinyQ8_0Tied) {
    OIW_NEED_SHARED("fixtures/bpe-tiny-Q8_0.gguf");
    check_model(oiw::test::shared_path("fixtures/bpe-tiny-Q8_0.gguf"), 1);
}
TEST(VocabPrune, Llama2TinyRandomF16) {
    OIW_NEED_SHARED("fixtures/llama-2-tiny-random.gguf");
    check_model(oiw::test::shared_path("fixtures/llama-2-tiny-random.gguf"), 2);
}

// Without the closure the property fails: the closure is what makes it hold.
void check_closure_needed(const std::string& model) {
    const Vocab v = Vocab::load(oiw::open_model(model).metadata());
    const auto ids = ids_of_texts(v, 23);
    const Pruned with = prune(model, ids);
    const Pruned without = prune(model, ids, PruneOptions{.closure = false});
    EXPECT_GT(with.plan.closure_added, 0u);
    EXPECT_EQ(without.plan.closure_added, 0u);
    const ClosureCount c = closure_property(without, fixture_texts());
    EXPECT_LT(c.same, c.eligible) << "pruning without the closure should break some kept text";
}

TEST(VocabPrune, ClosureIsNeededSpm) { check_closure_needed(oiw::test::data_path("vocab/ggml-vocab-llama-spm.gguf")); }
TEST(VocabPrune, ClosureIsNeededBpe) { check_closure_needed(oiw::test::data_path("vocab/ggml-vocab-gpt-2.gguf")); }

// Gemma 4's SentencePiece-style BPE (tests/vocab/gemma4_style.h): <0xNN> byte tokens kept, not
// GPT-2's byte symbols (which would be characters of their own here), and no default special ids.
TEST(VocabPrune, SentencePieceStyleBpeVocabOnly) {
    const std::string path = (oiw::test::temp_dir() / "gemma4-style.gguf").string();
    {
        oiw::GgufWriter w(path);
        const std::string spm = oiw::test::data_path("vocab/ggml-vocab-llama-spm.gguf");
        w.set_kvs(oiw::test::gemma4_style_metadata(oiw::open_model(spm).metadata(), "gemma4", "default"));
        w.finish();
    }
    check_model(path, 0);
    check_closure_needed(path);
    const Pruned p = prune(path, {1, 2, 31993});
    // <unk>, <s>, </s>, the 256 byte tokens and the eight newlines (which no merge builds).
    EXPECT_EQ(p.plan.n_vocab_after, 260u);
    EXPECT_EQ(p.vout.tokenize(std::string(8, '\n'), false, false), (std::vector<int32_t>{259}));
}

TEST(VocabPrune, BpeKeepsByteSymbolsAndOnlyMergesOfKeptTokens) {
    const std::string model = oiw::test::data_path("vocab/ggml-vocab-gpt-2.gguf");
    const Pruned p = prune(model, {15496});  // "Hello"
    for (int b = 0; b < 256; ++b) EXPECT_TRUE(p.vout.find(oiw::vocab::byte_to_unicode(static_cast<uint8_t>(b)))) << b;
    EXPECT_EQ(p.vout.tokenize("Hello", false, false), (std::vector<int32_t>{*p.vout.find("Hello")}));
    for (const auto& [l, r] : p.vout.merges()) {
        EXPECT_TRUE(p.vout.find(l) && p.vout.find(r) && p.vout.find(l + r)) << l << " " << r;
    }
    EXPECT_EQ(p.plan.merges_after, p.vout.merges().size());
    EXPECT_GT(p.plan.merges_after, 0u);
    EXPECT_LT(p.plan.merges_after, 50u);
}

// llama.cpp's default special ids (llama_vocab::impl::load) for a file without the keys: kept, and
// written renumbered where they move; GLM-4's pre-tokenizers have no default BOS (only EOS 11).
TEST(VocabPrune, KeepsAndRenumbersLlamaCppDefaultSpecialIds) {
    const std::string k = "tokenizer.ggml.";
    struct Case {
        std::string model, pre;
        std::map<std::string, uint32_t> ids;  // key -> old id llama.cpp uses
    };
    const std::vector<Case> cases = {
        {"llama", "", {{k + "unknown_token_id", 0}, {k + "bos_token_id", 1}, {k + "eos_token_id", 2}}},
        {"gpt2", "gpt-2", {{k + "bos_token_id", 11}, {k + "eos_token_id", 11}}},
        {"gpt2", "glm4", {{k + "eos_token_id", 11}}},
        {"gpt2", "chatglm-bpe", {{k + "eos_token_id", 11}}},
        {"gemma4", "", {}},
        {"bert",
         "",
         {{k + "bos_token_id", 101},
          {k + "unknown_token_id", 100},
          {k + "seperator_token_id", 102},
          {k + "padding_token_id", 0},
          {k + "mask_token_id", 103}}},
        {"t5", "", {{k + "eos_token_id", 1}, {k + "unknown_token_id", 2}, {k + "padding_token_id", 0}}},
        {"plamo2",
         "",
         {{k + "bos_token_id", 1}, {k + "eos_token_id", 2}, {k + "unknown_token_id", 0}, {k + "padding_token_id", 3}}},
        {"rwkv", "", {}},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.model + " " + c.pre);
        std::vector<std::string> tokens;
        tokens.reserve(120);
        for (int i = 0; i < 120; ++i) tokens.push_back("t" + std::to_string(i));
        std::vector<GgufKV> kvs = {{k + "model", oiw::GgufValue::make_string(c.model)},
                                   {k + "tokens", oiw::GgufValue::make_string_array(tokens)}};
        if (!c.pre.empty()) kvs.push_back({k + "pre", oiw::GgufValue::make_string(c.pre)});
        const std::string path = (oiw::test::temp_dir() / "defaults.gguf").string();
        {
            oiw::GgufWriter w(path);
            w.set_kvs(kvs);
            w.finish();
        }
        const Pruned p = prune(path, {50}, PruneOptions{.closure = false});  // "t50" is "t5" + "0" for SPM
        std::vector<int32_t> kept = {50};
        for (const auto& [key, id] : c.ids) kept.push_back(static_cast<int32_t>(id));
        std::sort(kept.begin(), kept.end());
        kept.erase(std::unique(kept.begin(), kept.end()), kept.end());
        EXPECT_EQ(p.plan.original_ids, kept);
        std::map<std::string, uint32_t> defaults;
        for (const auto& [key, id] : p.vin.default_special_ids()) defaults[key] = static_cast<uint32_t>(id);
        EXPECT_EQ(defaults, c.ids);
        // What llama.cpp reads from the output (the key, else its default) names the same token.
        for (const auto& [key, id] : c.ids) {
            const auto written = p.out.metadata().get_uint(key, UINT32_MAX);
            const uint32_t now = written ? static_cast<uint32_t>(*written) : id;
            ASSERT_LT(now, p.plan.original_ids.size()) << key;
            EXPECT_EQ(p.plan.original_ids[now], static_cast<int32_t>(id)) << key;
        }
        for (const std::string key : {"bos_token_id", "eos_token_id", "unknown_token_id", "padding_token_id"}) {
            if (!c.ids.count(k + key)) {
                EXPECT_FALSE(p.out.metadata().contains(k + key)) << key;
            }
        }
        EXPECT_EQ(p.vin.bos_id(),
                  c.ids.count(k + "bos_token_id") ? static_cast<int32_t>(c.ids.at(k + "bos_token_id")) : -1);
    }
}

TEST(VocabPrune, SpecialIdOutOfRangeIsAnError) {
    std::vector<GgufKV> kvs = {
        {"general.architecture", oiw::GgufValue::make_string("llama")},
        {"tokenizer.ggml.model", oiw::GgufValue::make_string("llama")},
        {"tokenizer.ggml.tokens", oiw::GgufValue::make_string_array({"<unk>", "<s>", "</s>", "a"})},
        {"tokenizer.ggml.bos_token_id", oiw::GgufValue::make_scalar(oiw::GgufType::U32, uint32_t{7})},
    };
    const std::string path = (oiw::test::temp_dir() / "bad-special.gguf").string();
    {
        oiw::GgufWriter w(path);
        w.set_kvs(kvs);
        w.finish();
    }
    const oiw::Model f = oiw::open_model(path);
    try {
        oiw::vocab::plan_prune(f, Vocab::load(f.metadata()), {3});
        FAIL() << "expected an error";
    } catch (const oiw::FormatError& e) {
        EXPECT_NE(std::string(e.what()).find("tokenizer.ggml.bos_token_id"), std::string::npos) << e.what();
    }
}

// A 4-token vocabulary with the given tensors (F32, zero data) and optional <arch>.vocab_size.
std::string tiny_model(const std::string& name,
                       const std::vector<std::pair<std::string, std::vector<int64_t>>>& tensors,
                       std::optional<uint32_t> vocab_size = std::nullopt) {
    std::vector<GgufKV> kvs = {
        {"general.architecture", oiw::GgufValue::make_string("llama")},
        {"tokenizer.ggml.model", oiw::GgufValue::make_string("llama")},
        {"tokenizer.ggml.tokens", oiw::GgufValue::make_string_array({"<unk>", "<s>", "</s>", "a"})},
    };
    if (vocab_size) kvs.push_back({"llama.vocab_size", oiw::GgufValue::make_scalar(oiw::GgufType::U32, *vocab_size)});
    const std::string path = (oiw::test::temp_dir() / name).string();
    oiw::GgufWriter w(path);
    w.set_kvs(kvs);
    for (const auto& [n, shape] : tensors) w.add_tensor(n, oiw::GgmlType::F32, shape);
    for (const auto& [n, shape] : tensors) {
        int64_t count = 1;
        for (int64_t d : shape) count *= d;
        w.write_tensor_zeros(static_cast<uint64_t>(count) * 4);
    }
    w.finish();
    return path;
}

std::string prune_error(const std::string& path) {
    const oiw::Model f = oiw::open_model(path);
    try {
        oiw::vocab::plan_prune(f, Vocab::load(f.metadata()), {3});
    } catch (const oiw::FormatError& e) {
        EXPECT_EQ(e.kind(), oiw::ErrorKind::BadData);
        return e.what();
    }
    return "(no error)";
}

TEST(VocabPrune, RefusesAModelWhoseEmbeddingsOrVocabSizeDisagreeWithTheVocabulary) {
    EXPECT_NE(prune_error(tiny_model("rows.gguf", {{"token_embd.weight", {8, 6}}}))
                  .find("tensor 'token_embd.weight': it has 6 entries along its last dimension, but the vocabulary has "
                        "4 tokens"),
              std::string::npos);
    EXPECT_NE(prune_error(tiny_model("out.gguf", {{"token_embd.weight", {8, 4}}, {"output.weight", {8, 5}}}))
                  .find("tensor 'output.weight'"),
              std::string::npos);
    EXPECT_NE(prune_error(tiny_model("vs.gguf", {{"token_embd.weight", {8, 4}}}, 6))
                  .find("key 'llama.vocab_size': it says 6"),
              std::string::npos);
}

TEST(VocabPrune, GathersVocabularyRolesByNameNeverByACoincidenceOfSizes) {
    const std::string path = tiny_model("roles.gguf",
                                        {{"token_embd.weight", {8, 4}},
                                         {"blk.0.ffn_gate_shexp.weight", {8, 4}},
                                         {"blk.0.attn_q.weight", {4, 4}},
                                         {"output.bias", {4}},
                                         {"output.weight", {8, 4}}},
                                        4);
    const oiw::Model f = oiw::open_model(path);
    const PrunePlan plan = oiw::vocab::plan_prune(f, Vocab::load(f.metadata()), {3}, PruneOptions{false});
    ASSERT_EQ(plan.n_vocab_after, 4u) << "unk, bos, eos are always kept, 3 requested";
    const PrunePlan two = oiw::vocab::plan_prune(f, Vocab::load(f.metadata()), {}, PruneOptions{false});
    ASSERT_EQ(two.n_vocab_after, 3u);
    EXPECT_EQ(two.vocab_dim, (std::vector<int>{1, -1, -1, 0, 1}));
    EXPECT_EQ(two.tensors[0].shape(), (std::vector<int64_t>{8, 3}));
    EXPECT_EQ(two.tensors[1].shape(), (std::vector<int64_t>{8, 4}));  // [8, n_vocab] by coincidence: untouched
    EXPECT_EQ(two.tensors[2].shape(), (std::vector<int64_t>{4, 4}));
    EXPECT_EQ(two.tensors[3].shape(), (std::vector<int64_t>{3}));
    EXPECT_EQ(two.tensors[4].shape(), (std::vector<int64_t>{8, 3}));
    EXPECT_EQ(two.kvs.get_uint("llama.vocab_size", UINT32_MAX), 3u);
}

TEST(VocabPrune, PruningTwiceComposesTheMap) {
    const std::string model = oiw::test::data_path("models/mini-llama-f16.gguf");
    const Pruned once = prune(model, {500, 600, 700});
    std::vector<int64_t> keep;
    for (size_t i = 0; i < once.plan.original_ids.size(); ++i)
        if (once.plan.original_ids[i] != 600) keep.push_back(static_cast<int64_t>(i));
    const Pruned twice = prune(once.out.path(), keep);
    const oiw::GgufValue* map = kv(twice.out, oiw::vocab::kOriginalIdsKey);
    ASSERT_NE(map, nullptr);
    std::vector<int64_t> got;
    for (uint64_t i = 0; i < map->count(); ++i) got.push_back(static_cast<int64_t>(map->array_number(i)));
    EXPECT_TRUE(std::find(got.begin(), got.end(), 700) != got.end());
    EXPECT_TRUE(std::find(got.begin(), got.end(), 600) == got.end());
    EXPECT_EQ(got.size(), twice.plan.n_vocab_after);
}

// A control token whose text the SPM merger can build ("<" + "s" -> "<s", "<s" + ">" -> "<s>"):
// with parse_special off, "<s>" tokenizes to it through the merger, so the closure keeps "<s".
TEST(VocabPrune, ClosureCoversSpecialTokensTheMergerBuilds) {
    const std::vector<std::string> texts = {"<unk>", "<s>", "</s>", "<0x3C>", "<0x73>", "<0x3E>",
                                            "<",     "s",   ">",    "<s",     "x"};
    const std::vector<int32_t> types = {2, 3, 3, 6, 6, 6, 1, 1, 1, 1, 1};
    const std::vector<float> scores = {0, 0, 0, 0, 0, 0, -5, -5, -5, -1, -5};
    std::vector<uint8_t> t(types.size() * 4), sc(scores.size() * 4);
    std::memcpy(t.data(), types.data(), t.size());
    std::memcpy(sc.data(), scores.data(), sc.size());
    const std::string path = (oiw::test::temp_dir() / "spm-special.gguf").string();
    {
        oiw::GgufWriter w(path);
        w.set_kvs(oiw::Metadata(
            {{"general.architecture", oiw::GgufValue::make_string("llama")},
             {"tokenizer.ggml.model", oiw::GgufValue::make_string("llama")},
             {"tokenizer.ggml.tokens", oiw::GgufValue::make_string_array(texts)},
             {"tokenizer.ggml.scores", oiw::GgufValue::make_array(oiw::GgufType::F32, sc, scores.size())},
             {"tokenizer.ggml.token_type", oiw::GgufValue::make_array(oiw::GgufType::I32, t, types.size())},
             {"tokenizer.ggml.add_space_prefix", oiw::GgufValue::make_bool(false)}}));
        w.finish();
    }
    const Pruned with = prune(path, {10});
    const Pruned without = prune(path, {10}, PruneOptions{.closure = false});
    ASSERT_EQ(with.vin.tokenize("<s>", false, false), (std::vector<int32_t>{1}));
    EXPECT_EQ(with.vout.tokenize("<s>", false, false), (std::vector<int32_t>{*with.vout.find("<s>")}));
    EXPECT_TRUE(with.vout.find("<s"));
    EXPECT_NE(without.vout.tokenize("<s>", false, false), (std::vector<int32_t>{*without.vout.find("<s>")}));
}

}  // namespace
