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
        {"gguf-requant", q(kMini) + " --prest Q8_0", "gguf-requant: error: unknown option --prest (did you mean --preset?)"},
        {"gguf-requant", q(kMini) + " --tensor-typ=a=q8_0", "unknown option --tensor-typ (did you mean --tensor-type?)"},
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

}  // namespace
}  // namespace oiw
