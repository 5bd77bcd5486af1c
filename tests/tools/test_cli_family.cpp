// The tools as one family that llama.cpp users already know: llama-quantize's positional form,
// one value per repeatable option (positionals anywhere), "did you mean", --threads, -q and the
// summary line, rule files with comments read from a pipe. Runs on the vendored pack.
#include <gtest/gtest.h>

#include <filesystem>

#include "libformat/gguf/gguf.h"
#include "tests/support/helpers.h"

namespace oiw {
namespace {
namespace fs = std::filesystem;

const std::string kMini = test::data_path("models/mini-llama-f16.gguf");

std::string q(const std::string& s) { return "'" + s + "'"; }

int requant(const std::string& args, std::string* out = nullptr, bool merge_stderr = true) {
    return test::run(test::tool_path("gguf-requant") + " " + args, out, merge_stderr);
}

// llama-quantize [options] IN OUT TYPE [NTHREADS] writes the bytes of IN OUT --preset TYPE
// --threads N; IN TYPE writes <dir>/ggml-model-TYPE.gguf as llama-quantize names it.
TEST(CliFamily, LlamaQuantizePositionalFormIsByteIdentical) {
    const fs::path dir = test::temp_dir();
    const std::string a = (dir / "a.gguf").string(), b = (dir / "b.gguf").string();
    ASSERT_EQ(requant(q(kMini) + " " + q(a) + " --preset Q4_K_M --threads 2 --tensor-type attn_v=q8_0", nullptr), 0);
    ASSERT_EQ(requant("--tensor-type attn_v=q8_0 " + q(kMini) + " " + q(b) + " Q4_K_M 2", nullptr), 0);
    EXPECT_EQ(test::read_file(a), test::read_file(b));
    const std::string plain = (dir / "plain.gguf").string();
    ASSERT_EQ(requant(q(kMini) + " " + q(plain) + " --preset Q4_K_M", nullptr), 0);
    fs::copy_file(kMini, dir / "m.gguf");
    std::string log;
    ASSERT_EQ(requant(q((dir / "m.gguf").string()) + " q4_k_m", &log), 0) << log;
    ASSERT_TRUE(fs::exists(dir / "ggml-model-Q4_K_M.gguf")) << log;
    ASSERT_EQ(requant(q((dir / "m.gguf").string()) + " 15 1", &log), 0) << log;  // ftype number, threads
    EXPECT_EQ(test::read_file((dir / "ggml-model-Q4_K_M.gguf").string()), test::read_file(plain));
}

// Repeatable options take one value each, so files may follow them; every occurrence counts.
TEST(CliFamily, RepeatableOptionsLeavePositionalsAlone) {
    const fs::path dir = test::temp_dir();
    const std::string a = (dir / "a.gguf").string(), b = (dir / "b.gguf").string();
    ASSERT_EQ(requant(q(kMini) + " " + q(a) + " --preset Q4_K_M --keep attn_q --keep attn_k", nullptr), 0);
    std::string log;
    ASSERT_EQ(requant("--keep attn_q " + q(kMini) + " --keep attn_k " + q(b) + " --preset Q4_K_M", &log), 0) << log;
    EXPECT_EQ(test::read_file(a), test::read_file(b));
    GgufFile f = GgufFile::open(b);
    EXPECT_EQ(f.tensors()[static_cast<size_t>(f.find_tensor("blk.0.attn_k.weight"))].type, GgmlType::F16);
}

// A misspelt option is named with the nearest real one; usage errors exit 2 in one line.
TEST(CliFamily, UnknownOptionsGetDidYouMean) {
    struct Case {
        std::string tool, args, expect;
    };
    const std::vector<Case> cases = {
        {"gguf-requant", q(kMini) + " --prest Q8_0",
         "gguf-requant: error: unknown option --prest (did you mean --preset?)"},
        {"gguf-requant", q(kMini) + " --tensor-typ=a=q8_0",
         "unknown option --tensor-typ (did you mean --tensor-type?)"},
        {"gguf-inspect", q(kMini) + " --jsn", "gguf-inspect: error: unknown option --jsn (did you mean --json?)"},
        {"gguf-requant", q(kMini) + " --zzzzzzzz", "gguf-requant: error: unknown option --zzzzzzzz\n"},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.args);
        std::string log;
        EXPECT_EQ(test::run(test::tool_path(c.tool) + " " + c.args, &log, true), 2);
        EXPECT_NE(log.find(c.expect), std::string::npos) << log;
        EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;
    }
}

// A piped run prints one summary line (path, bytes, seconds) on stdout; -q prints nothing.
TEST(CliFamily, SummaryLineOnStdoutAndQuiet) {
    const fs::path dir = test::temp_dir();
    const std::string a = (dir / "a.gguf").string();
    std::string out;
    ASSERT_EQ(requant(q(kMini) + " " + q(a) + " Q8_0 0", &out, false), 0);
    EXPECT_EQ(out.rfind("gguf-requant: wrote " + a + " (" + std::to_string(fs::file_size(a)) + " bytes) in ", 0), 0u)
        << out;
    EXPECT_TRUE(out.ends_with(" s\n")) << out;
    ASSERT_EQ(requant(q(kMini) + " " + q(a) + ".2 Q8_0 -q", &out, false), 0);
    EXPECT_EQ(out, "");
}

// --tensor-type-file: '#' comments and blank lines (a gguf-plan plan file reads as one), from a
// pipe; errors name the file and line.
TEST(CliFamily, TensorTypeFileFromAPipeWithComments) {
    const fs::path dir = test::temp_dir();
    const std::string a = (dir / "a.gguf").string(), b = (dir / "b.gguf").string();
    ASSERT_EQ(requant(q(kMini) + " " + q(a) + " Q4_K_M --tensor-type attn_v=q8_0 --tensor-type ffn_down=q5_0", nullptr),
              0);
    std::string log;
    ASSERT_EQ(test::run("printf '# rules\\n\\nattn_v=q8_0  # values\\nffn_down=q5_0\\n' | " +
                            test::tool_path("gguf-requant") + " " + q(kMini) + " " + q(b) +
                            " Q4_K_M --tensor-type-file /dev/stdin",
                        &log, true),
              0)
        << log;
    EXPECT_EQ(test::read_file(a), test::read_file(b));
    ASSERT_EQ(test::run("printf 'attn_v=q8_0\\n\\nffn=q9_9\\n' | " + test::tool_path("gguf-requant") + " " + q(kMini) +
                            " " + q(b) + ".x Q4_K_M --tensor-type-file /dev/stdin",
                        &log, true),
              2);
    EXPECT_NE(log.find("/dev/stdin: line 3: rule 'ffn=q9_9': unknown type 'q9_9'"), std::string::npos) << log;
}

// An imatrix without entries for tensors being quantized: each is named, by gguf-requant as
// llama-quantize does ("did not find weights for ...") and by gguf-plan.
TEST(CliFamily, ImatrixGapsAreNamedPerTensor) {
    const std::string imatrix = test::data_path("models/mini-llama.imatrix.gguf");
    std::string log;
    ASSERT_EQ(requant(q(kMini) + " Q4_K_M --dry-run --imatrix " + q(imatrix) + " 2>&1 >/dev/null", &log, false), 0);
    EXPECT_TRUE(log.ends_with(
        "gguf-requant: warning: did not find imatrix weights for tensor 'output.weight': quantized to Q6_K without "
        "them\n"
        "gguf-requant: warning: did not find imatrix weights for tensor 'token_embd.weight': quantized to Q4_K without "
        "them\n"))
        << log;
    EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 4) << log;  // and the two row-length fallbacks
    ASSERT_EQ(
        requant(q(kMini) + " Q4_K_M --dry-run --imatrix " + q(imatrix) + " --include-weights attn_v 2>&1 >/dev/null",
                &log, false),
        0);
    EXPECT_NE(log.find("did not find imatrix weights for tensor 'blk.0.ffn_up.weight'"), std::string::npos) << log;
    EXPECT_EQ(log.find("did not find imatrix weights for tensor 'blk.0.attn_v.weight'"), std::string::npos) << log;
    ASSERT_EQ(test::run(test::tool_path("gguf-plan") + " " + q(kMini) + " --no-cache --target-bpw 5 --imatrix " +
                            q(imatrix) + " 2>&1 >/dev/null",
                        &log),
              0);
    EXPECT_NE(log.find("gguf-plan: warning: did not find imatrix weights for tensor 'output.weight': its error is "
                       "measured with unit weights\n"),
              std::string::npos)
        << log;
}

// gguf-plan's error-table sidecar made with an imatrix is simply replaced by a run without one
// (and back), without a warning.
TEST(CliFamily, StaleSidecarIsReplaced) {
    const fs::path dir = test::temp_dir();
    const std::string m = (dir / "m.gguf").string();
    fs::copy_file(kMini, m);
    const std::string plan =
        test::tool_path("gguf-plan") + " " + q(m) + " --target-bpw 5 -q -o " + q((dir / "p.plan").string()) + " ";
    const std::string imatrix = " --imatrix " + q(test::data_path("models/mini-llama.imatrix.gguf"));
    std::string log;
    for (const std::string& extra : {imatrix, std::string(), imatrix}) {
        ASSERT_EQ(test::run(plan + extra + " 2>&1 | grep -v 'did not find imatrix weights'", &log), 0);
        EXPECT_EQ(log.find("warning"), std::string::npos) << log;
        EXPECT_EQ(log.find("error table from"), std::string::npos) << log;  // measured: the key changed
    }
    ASSERT_EQ(test::run(plan + imatrix + " 2>&1", &log), 0);
    EXPECT_NE(log.find("gguf-plan: error table from " + m + ".errtable"), std::string::npos) << log;
}

// A plan records its imatrix by content: the same bytes under another path execute; a missing or
// different imatrix is refused naming the plan's (nothing written).
TEST(CliFamily, PlanKnowsItsImatrixByContent) {
    const fs::path dir = test::temp_dir();
    const std::string imatrix = test::data_path("models/mini-llama.imatrix.gguf");
    const std::string copy = (dir / "copy.imatrix").string(), plan = (dir / "p.plan").string();
    fs::copy_file(imatrix, copy);
    ASSERT_EQ(test::run(test::tool_path("gguf-plan") + " " + q(kMini) + " " + q(plan) +
                        " --target-bpw 5 --no-cache -q --imatrix " + q(imatrix) + " 2>/dev/null"),
              0);
    const auto bytes = test::read_file(plan);
    EXPECT_NE(std::string(bytes.begin(), bytes.end()).find("# imatrix: xxh3:"), std::string::npos);
    const std::string a = (dir / "a.gguf").string(), b = (dir / "b.gguf").string(), c = (dir / "c.gguf").string();
    ASSERT_EQ(requant(q(kMini) + " " + q(a) + " --plan " + q(plan) + " --imatrix " + q(imatrix) + " -q 2>/dev/null"),
              0);
    ASSERT_EQ(requant(q(kMini) + " " + q(b) + " --plan " + q(plan) + " --imatrix " + q(copy) + " -q 2>/dev/null"), 0);
    {  // only the quantize.imatrix.file value differs: every tensor's type and bytes are the same
        const GgufFile fa = GgufFile::open(a), fb = GgufFile::open(b);
        ASSERT_EQ(fa.tensors().size(), fb.tensors().size());
        for (size_t i = 0; i < fa.tensors().size(); ++i) {
            EXPECT_EQ(fa.tensors()[i].type, fb.tensors()[i].type);
            const auto da = fa.tensor_data(i), db = fb.tensor_data(i);
            EXPECT_TRUE(std::equal(da.begin(), da.end(), db.begin(), db.end())) << fa.tensors()[i].name;
        }
    }
    std::string log;
    EXPECT_EQ(requant(q(kMini) + " " + q(c) + " --plan " + q(plan), &log), 2);
    EXPECT_NE(log.find("--plan: this plan was made with imatrix " + imatrix + " (xxh3:"), std::string::npos) << log;
    EXPECT_NE(log.find("pass it with --imatrix"), std::string::npos) << log;
    EXPECT_EQ(requant(q(kMini) + " " + q(c) + " --plan " + q(plan) + " --imatrix " +
                          q(test::data_path("models/mini-moe.imatrix.gguf")),
                      &log),
              2);
    EXPECT_NE(log.find("is another file (xxh3:"), std::string::npos) << log;
    EXPECT_FALSE(fs::exists(c));
}

// A gguf-plan plan file is a --tensor-type-file: same bytes as gguf-requant --plan. gguf-plan
// takes OUT positionally as well as with -o.
TEST(CliFamily, PlanFileReadsAsTensorTypeFile) {
    const fs::path dir = test::temp_dir();
    const std::string plan = (dir / "p.plan").string(), a = (dir / "a.gguf").string(), b = (dir / "b.gguf").string();
    std::string log;
    ASSERT_EQ(
        test::run(test::tool_path("gguf-plan") + " " + q(kMini) + " " + q(plan) + " --target-bpw 5 --no-cache -t 1",
                  &log, false),
        0);
    EXPECT_EQ(log.rfind("gguf-plan: wrote " + plan + " (", 0), 0u) << log;
    ASSERT_EQ(requant(q(kMini) + " " + q(a) + " --plan " + q(plan)), 0);
    const auto bytes = test::read_file(plan);
    const std::string text(bytes.begin(), bytes.end());
    const size_t at = text.find("# preset: ");
    ASSERT_NE(at, std::string::npos) << text;
    const std::string preset = text.substr(at + 10, text.find('\n', at) - at - 10);
    ASSERT_EQ(requant(q(kMini) + " " + q(b) + " " + preset + " --tensor-type-file " + q(plan)), 0);
    EXPECT_EQ(test::read_file(a), test::read_file(b));
}

// gguf-edit answers llama-gguf-split's --split / --merge and plans a split with --dry-run
// (nothing written) or reports it as JSON.
TEST(CliFamily, EditSpeaksGgufSplit) {
    const fs::path dir = test::temp_dir();
    const std::string edit = test::tool_path("gguf-edit") + " ";
    const std::string prefix = (dir / "s.gguf").string();
    std::string out;
    ASSERT_EQ(test::run(edit + q(kMini) + " " + q(prefix) + " --split --split-max-tensors 8 --dry-run", &out), 0);
    EXPECT_EQ(test::listing(dir), std::vector<std::string>{});
    EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 3) << out;
    EXPECT_NE(out.find("would write " + (dir / "s-00003-of-00003.gguf").string() + " ("), std::string::npos) << out;
    ASSERT_EQ(test::run(edit + q(kMini) + " " + q(prefix) + " --split --split-max-tensors 8", &out), 0);
    EXPECT_EQ(test::listing(dir).size(), 3u);
    const std::string merged = (dir / "m.gguf").string();
    ASSERT_EQ(test::run(edit + q((dir / "s-00001-of-00003.gguf").string()) + " " + q(merged) + " --merge --json", &out),
              0);
    EXPECT_NE(out.find("\"bytes\": " + std::to_string(fs::file_size(merged))), std::string::npos) << out;
    EXPECT_EQ(test::run(edit + q(kMini) + " " + q((dir / "x.gguf").string()) + " --merge", &out, true), 2);
    EXPECT_NE(out.find("--merge: is not a split model"), std::string::npos) << out;
    EXPECT_EQ(test::run(edit + q(kMini) + " " + q((dir / "x.gguf").string()) + " --split", &out, true), 2);
    EXPECT_NE(out.find("--split: needs --split-max-size or --split-max-tensors"), std::string::npos) << out;
}

// gguf-synth: --json, -q, the summary line, and its defaults in --help.
TEST(CliFamily, SynthReportsWhatItWrote) {
    const fs::path dir = test::temp_dir();
    const std::string synth = test::tool_path("gguf-synth") + " ";
    const std::string a = (dir / "a.gguf").string();
    std::string out;
    ASSERT_EQ(test::run(synth + q(a) + " --n-layer 1", &out), 0);
    EXPECT_NE(out.find("gguf-synth: wrote " + a + " (" + std::to_string(fs::file_size(a)) + " bytes)"),
              std::string::npos)
        << out;
    ASSERT_EQ(test::run(synth + q(a) + " --n-layer 1 -q", &out), 0);
    EXPECT_EQ(out, "");
    ASSERT_EQ(test::run(synth + q(a) + " --n-layer 1 --json", &out), 0);
    EXPECT_NE(out.find("\"parameters\": "), std::string::npos) << out;
    EXPECT_EQ(test::run(synth + q(a) + " --n-expert-used 2", &out, true), 2);
    EXPECT_NE(out.find("--n-expert-used: needs --n-expert"), std::string::npos) << out;
    ASSERT_EQ(test::run(synth + "--help", &out), 0);
    EXPECT_NE(out.find("=256"), std::string::npos) << out;  // --n-embd's default
    ASSERT_EQ(test::run(test::tool_path("oiw4-check") + " --help", &out), 0);
    EXPECT_NE(out.find("Usage: oiw4-check [OPTIONS] SOURCE CONVERTED | --self FILE | bench"), std::string::npos) << out;
    EXPECT_NE(out.find("=4"), std::string::npos) << out;  // --vectors' default
}

// gguf-prune-vocab refuses to run without a keep set and reads --keep-range as its help writes it.
TEST(CliFamily, PruneNeedsAKeepSet) {
    const fs::path dir = test::temp_dir();
    const std::string pv = test::tool_path("gguf-prune-vocab") + " " + q(kMini) + " ";
    std::string out;
    EXPECT_EQ(test::run(pv + q((dir / "o.gguf").string()), &out, true), 2);
    EXPECT_NE(out.find("keep set: none given"), std::string::npos) << out;
    EXPECT_FALSE(fs::exists(dir / "o.gguf"));
    std::string dots, dash;
    ASSERT_EQ(test::run(pv + "--dry-run --json --keep-range 10..40", &dots), 0);
    ASSERT_EQ(test::run(pv + "--dry-run --json --keep-range 10-40", &dash), 0);
    EXPECT_EQ(dots, dash);
    EXPECT_NE(dots.find("\"requested\": 31"), std::string::npos) << dots;
    // Tied embeddings: the report says so instead of "embeddings 0 -> 0 bytes".
    const std::string tied = (dir / "tied.gguf").string();
    ASSERT_EQ(test::run(test::tool_path("gguf-synth") + " " + q(tied) + " --tied --n-layer 1 -q"), 0);
    ASSERT_EQ(test::run(test::tool_path("gguf-prune-vocab") + " " + q(tied) + " --dry-run --keep-range 0..100", &out),
              0);
    EXPECT_NE(out.find("embeddings   tied: token_embd.weight is also the lm_head"), std::string::npos) << out;
    EXPECT_NE(out.find("lm_head      524288 -> 132608 bytes"), std::string::npos) << out;
}

// oiw4-convert: "--compress 19" as "--compress=19"; an OIW4 input without --to-gguf is told so.
TEST(CliFamily, Oiw4ConvertSpellings) {
    const fs::path dir = test::temp_dir();
    const std::string conv = test::tool_path("oiw4-convert") + " ";
    const std::string q4 = (dir / "q4.gguf").string(), o = (dir / "m.oiw4").string();
    ASSERT_EQ(requant(q(kMini) + " " + q(q4) + " Q4_0"), 0);
    ASSERT_EQ(test::run(conv + q(q4) + " " + q(o)), 0);
    std::string a, b;
    ASSERT_EQ(test::run(conv + "--compress 19 " + q(o) + " " + q(o + ".a") + " --json", &a), 0);
    ASSERT_EQ(test::run(conv + "--compress=19 " + q(o) + " " + q(o + ".b") + " --json", &b), 0);
    EXPECT_EQ(test::read_file(o + ".a"), test::read_file(o + ".b"));
    EXPECT_NE(a.find("19"), std::string::npos) << a;
    std::string log;
    EXPECT_EQ(test::run(conv + q(o) + " " + q((dir / "back.gguf").string()), &log, true), 2);
    EXPECT_NE(log.find("is an OIW4 file: pass --to-gguf"), std::string::npos) << log;
}

// gguf-inspect diff takes an OIW4 file on either side, compared as the GGUF it stands for.
TEST(CliFamily, DiffReadsOiw4OnEitherSide) {
    const fs::path dir = test::temp_dir();
    const std::string q4 = (dir / "q4.gguf").string(), o = (dir / "q4.oiw4").string();
    ASSERT_EQ(requant(q(kMini) + " " + q(q4) + " Q4_0 -q"), 0);
    ASSERT_EQ(test::run(test::tool_path("oiw4-convert") + " " + q(q4) + " " + q(o) + " -q"), 0);
    const std::string diff = test::tool_path("gguf-inspect") + " diff ";
    std::string out;
    EXPECT_EQ(test::run(diff + q(q4) + " " + q(o) + " --data", &out), 0) << out;
    EXPECT_NE(out.find("identical (metadata, tensor infos and data)"), std::string::npos) << out;
    EXPECT_NE(out.find(o + " (OIW4)"), std::string::npos) << out;
    EXPECT_EQ(test::run(diff + q(o) + " " + q(kMini) + " --json", &out), 1) << out;
    EXPECT_NE(out.find("\"path\": \"" + o + " (OIW4)\""), std::string::npos) << out;
}

}  // namespace
}  // namespace oiw
