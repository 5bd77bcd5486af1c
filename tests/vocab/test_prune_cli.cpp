// gguf-prune-vocab on the command line: `tokenize` prints what llama-tokenize --ids prints,
// reports (text and --json) carry the accounting, --map-out and --dry-run, bad input is one
// error line with exit status 2 and no output file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "converters/vocab/prune.h"
#include "libformat/model.h"
#include "tests/support/helpers.h"

namespace {

namespace fs = std::filesystem;
using oiw::test::data_path;
using oiw::test::run;
using oiw::test::tool_path;

const std::string kSpm = data_path("vocab/ggml-vocab-llama-spm.gguf");
const std::string kGpt2 = data_path("vocab/ggml-vocab-gpt-2.gguf");
const std::string kMini = data_path("models/mini-llama-f16.gguf");

std::string write_text(const fs::path& dir, const std::string& name, const std::string& text) {
    const std::string p = (dir / name).string();
    std::ofstream(p, std::ios::binary) << text;
    return p;
}

std::string tool() { return tool_path("gguf-prune-vocab"); }

TEST(VocabPruneCli, TokenizePrintsIdsLikeLlamaTokenize) {
    const auto dir = oiw::test::temp_dir();
    const std::string f = write_text(dir, "t.txt", "Hello world");
    std::string out;
    ASSERT_EQ(run(tool() + " tokenize " + kSpm + " " + f, &out), 0);
    EXPECT_EQ(out, "[1, 15043, 3186]\n");  // BOS (add_bos_token is true) + the fixture case's ids
    ASSERT_EQ(run(tool() + " tokenize " + kSpm + " " + f + " --no-bos", &out), 0);
    EXPECT_EQ(out, "[15043, 3186]\n");
    ASSERT_EQ(run(tool() + " tokenize " + kGpt2 + " " + f, &out), 0);
    EXPECT_EQ(out, "[15496, 995]\n");  // gpt2 adds no BOS
    // Escapes are processed as llama-tokenize does: "\n" in the file is a newline.
    const std::string e = write_text(dir, "e.txt", "\\n</s>");
    ASSERT_EQ(run(tool() + " tokenize " + kSpm + " " + e + " --no-bos", &out), 0);
    EXPECT_EQ(out, "[29871, 13, 2]\n");
    ASSERT_EQ(run(tool() + " tokenize " + kSpm + " " + e + " --no-bos --no-escape --no-parse-special", &out), 0);
    EXPECT_NE(out, "[29871, 13, 2]\n");
}

TEST(VocabPruneCli, JsonReportAndMap) {
    const auto dir = oiw::test::temp_dir();
    const std::string ids = write_text(dir, "ids.txt", "[1, 500, 600]\n700\n");
    const std::string out = (dir / "out.gguf").string(), map = (dir / "map.json").string();
    std::string text;
    ASSERT_EQ(
        run(tool() + " " + kMini + " " + out + " --json --keep-ids " + ids + " --keep-range 300-302 --map-out " + map,
            &text),
        0)
        << text;
    const auto j = nlohmann::json::parse(text);
    EXPECT_EQ(j.at("n_vocab_before").get<int>(), 1024);
    const int after = j.at("n_vocab_after").get<int>();
    EXPECT_EQ(j.at("requested").get<int>(), 7);  // 1 500 600 700 300 301 302
    EXPECT_EQ(after, j.at("requested").get<int>() + j.at("always_kept").get<int>() + j.at("closure_added").get<int>())
        << "each kept id is counted once (BOS is requested, so not also 'always kept')";
    EXPECT_EQ(j.at("always_kept").get<int>(), 258);  // <unk>, </s> and the 256 byte tokens
    // F16 rows of 256 elements: 512 bytes per token saved in each of token_embd and output.
    EXPECT_EQ(j.at("embedding_bytes_before").get<uint64_t>() - j.at("embedding_bytes_after").get<uint64_t>(),
              (1024u - after) * 512u);
    EXPECT_EQ(j.at("lm_head_bytes_before").get<uint64_t>() - j.at("lm_head_bytes_after").get<uint64_t>(),
              (1024u - after) * 512u);
    EXPECT_EQ(j.at("bytes_per_token_before").get<uint64_t>() - j.at("bytes_per_token_after").get<uint64_t>(),
              (1024u - after) * 512u)
        << "untied: the embedding lookup reads one row, the lm_head all of them";
    EXPECT_EQ(j.at("gathered_tensors"), nlohmann::json::array({"token_embd.weight", "output.weight"}));
    std::ifstream mf(map);
    const auto m = nlohmann::json::parse(mf);
    const oiw::Model o = oiw::open_model(out);
    const oiw::GgufValue* key = o.metadata().find(oiw::vocab::kOriginalIdsKey);
    ASSERT_NE(key, nullptr);
    ASSERT_EQ(m.at("original_ids").size(), key->count());
    for (size_t i = 0; i < key->count(); ++i) EXPECT_EQ(m.at("original_ids")[i].get<double>(), key->array_number(i));
}

TEST(VocabPruneCli, DryRunWritesNothingAndCountsTopN) {
    const auto dir = oiw::test::temp_dir();
    const std::string counts = write_text(dir, "c.txt", "900 5\n901 50\n902 7\n903 1\n");
    const std::string out = (dir / "out.gguf").string();
    std::string text;
    ASSERT_EQ(run(tool() + " " + kMini + " " + out + " --dry-run --json --counts " + counts + " --top 2", &text), 0)
        << text;
    EXPECT_FALSE(fs::exists(out));
    const auto j = nlohmann::json::parse(text);
    EXPECT_TRUE(j.at("dry_run").get<bool>());
    EXPECT_EQ(j.at("requested").get<int>(), 2);  // 901 and 902
    ASSERT_EQ(run(tool() + " " + kMini + " " + out + " --counts " + counts + " --top 2 -q --map-out " +
                      (dir / "m.json").string(),
                  &text),
              0);
    std::ifstream mf(dir / "m.json");
    const auto ids = nlohmann::json::parse(mf).at("original_ids");
    EXPECT_NE(std::find(ids.begin(), ids.end(), 901), ids.end());
    EXPECT_NE(std::find(ids.begin(), ids.end(), 902), ids.end());
    EXPECT_EQ(std::find(ids.begin(), ids.end(), 900), ids.end());
}

TEST(VocabPruneCli, BadInputIsOneErrorLine) {
    const auto dir = oiw::test::temp_dir();
    const std::string out = (dir / "out.gguf").string();
    const std::string bad_ids = write_text(dir, "bad-ids.txt", "5 1024\n");
    struct Case {
        std::string args, want;
    };
    const std::vector<Case> cases = {
        {kMini + " " + out + " --keep-ids " + bad_ids, "bad-ids.txt: id 1024: out of range"},
        {kMini + " " + out + " --keep-range 1000-1030", "--keep-range 1000-1030: id 1030: out of range"},
        {kMini + " " + out + " --keep-ids " + write_text(dir, "nan.txt", "12 x3\n"), "'x3': not an integer"},
        {kMini + " " + out + " --counts " + bad_ids, "--counts/--top"},
        {data_path("models/mini-llama.imatrix.gguf") + " " + out + " --keep-range 0-1", "no tokenizer"},
        {kMini + " " + kMini + " --keep-range 0-1", "mini-llama-f16.gguf"},
        {"tokenize " + kMini + " " + dir.string(), "is a directory"},
    };
    for (const Case& c : cases) {
        std::string err;
        EXPECT_EQ(run(tool() + " " + c.args + " 2>&1 >/dev/null", &err), 2) << c.args;
        EXPECT_NE(err.find(c.want), std::string::npos) << c.args << ": " << err;
        EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
        EXPECT_FALSE(fs::exists(out)) << c.args;
    }
}

TEST(VocabPruneCli, ArraysOfDifferentLengthsAreRefused) {
    const auto dir = oiw::test::temp_dir();
    const std::string bad = (dir / "bad.gguf").string(), out = (dir / "out.gguf").string();
    std::string log;
    ASSERT_EQ(run(tool_path("gguf-edit") + " -q " + kMini + " " + bad + " --set-array tokenizer.ggml.scores=str:@" +
                      write_text(dir, "s.txt", "a\nb\n"),
                  &log, true),
              0)
        << log;
    ASSERT_EQ(run(tool() + " " + bad + " " + out + " --keep-range 0-3 2>&1", &log), 2);
    EXPECT_NE(log.find("tokenizer.ggml.scores"), std::string::npos) << log;
    EXPECT_FALSE(fs::exists(out));
}

// --keep-text reads its text in blocks: a 12 MB corpus keeps the same ids as two copies of the
// two lines it repeats, in an address space of 384 MiB (the whole-text tokenizer needed ~100
// bytes per text byte, ~1.2 GB here). A line of 2 MiB without a space is one error line.
TEST(VocabPruneCli, KeepTextMemoryFollowsTheVocabularyNotTheText) {
#ifdef OIW_UNDER_SANITIZER
    GTEST_SKIP() << "RLIMIT_AS cannot be used under a sanitizer";
#else
    const auto dir = oiw::test::temp_dir();
    const std::string two = "the quick brown fox jumps over the lazy dog.\nA model's weights, quantized: 4-bit.\n";
    const std::string small = write_text(dir, "small.txt", two + two);  // also the join of one copy to the next
    std::string big_text;
    while (big_text.size() < (12u << 20)) big_text += two;
    const std::string big = write_text(dir, "big.txt", big_text);
    big_text.clear();
    big_text.shrink_to_fit();
    for (const std::string& model : {kMini, kGpt2}) {
        std::string want, got;
        ASSERT_EQ(run(tool() + " " + model + " --dry-run --json --keep-text " + small, &want), 0) << want;
        ASSERT_EQ(
            run("ulimit -v 393216; " + tool() + " " + model + " --dry-run --json --keep-text " + big + " 2>&1", &got),
            0)
            << got;
        const auto w = nlohmann::json::parse(want), g = nlohmann::json::parse(got);
        EXPECT_EQ(g.at("n_vocab_after"), w.at("n_vocab_after")) << model;
        EXPECT_EQ(g.at("requested"), w.at("requested")) << model;
        EXPECT_GT(w.at("requested").get<int>(), 10) << model;
    }
    const std::string word = write_text(dir, "word.txt", "a " + std::string(2u << 20, 'x') + " b\n");
    std::string err;
    EXPECT_EQ(run(tool() + " " + kGpt2 + " --dry-run --keep-text " + word + " 2>&1 >/dev/null", &err), 2);
    EXPECT_NE(err.find("word.txt: more than 1048576 bytes without a place the tokenizer can be cut"), std::string::npos)
        << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
#endif
}

}  // namespace
