// gguf-inspect hash against llama.cpp's llama-gguf-hash: stdout byte for byte and the exit status
// of every case in tests/data/hash (scripts/make-hash-goldens): flag combinations, --check runs,
// a split model (hashed as the merged file), one shard (--shard-only), and OIW4 files standing for
// the goldens' Q4_0 / Q4_K_M models (--name gives the source's name, so its manifest checks).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "tests/support/helpers.h"

namespace oiw {
namespace {

namespace fs = std::filesystem;

std::string q(const std::string& s) { return "'" + s + "'"; }

std::string slurp(const std::string& path) {
    const auto b = test::read_file(path);
    return {b.begin(), b.end()};
}

struct HashCase {
    std::string id, where, args;
    int exit_code = -1;
};

std::vector<HashCase> hash_cases() {
    std::vector<HashCase> out;
    std::ifstream in(test::data_path("hash/cases.tsv"));
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream ls(line);
        HashCase c;
        std::string rc;
        std::getline(ls, c.id, '\t');
        std::getline(ls, c.where, '\t');
        std::getline(ls, c.args, '\t');
        std::getline(ls, rc, '\t');
        c.exit_code = std::stoi(rc);
        out.push_back(c);
    }
    return out;
}

// The derived models the "work" cases name: split/ (gguf-edit --split-max-tensors 7 of mini-llama,
// byte-identical to llama-gguf-split's) and q/ (gguf-requant Q4_0 and Q4_K_M, byte-identical to
// llama-quantize's), plus their OIW4 conversions q/*.oiw4. Made once per process.
const fs::path& work_dir() {
    static const fs::path dir = [] {
        const fs::path d = test::temp_dir();
        fs::create_directories(d / "split");
        fs::create_directories(d / "q");
        const std::string src = q(test::data_path("models/mini-llama-f16.gguf"));
        std::string log;
        auto ok = [&](const std::string& cmd) {
            if (test::run(cmd, &log, true) != 0) throw std::runtime_error(cmd + ": " + log);
        };
        ok(test::tool_path("gguf-edit") + " -q " + src + " " + q((d / "split/mini-llama.gguf").string()) +
           " --split-max-tensors 7");
        for (std::string p : {"Q4_0", "Q4_K_M"}) {
            const std::string g = (d / ("q/mini-llama-" + p + ".gguf")).string();
            ok(test::tool_path("gguf-requant") + " " + src + " " + q(g) + " --preset " + p);
            ok(test::tool_path("oiw4-convert") + " " + q(g) + " " + q((d / ("q/mini-llama-" + p + ".oiw4")).string()));
        }
        return d;
    }();
    return dir;
}

// Runs gguf-inspect hash ARGS in `dir`; returns the exit status, stdout in `out`.
int run_hash(const fs::path& dir, const std::string& args, std::string& out) {
    return test::run("cd " + q(dir.string()) + " && " + test::tool_path("gguf-inspect") + " hash " + args, &out);
}

fs::path case_dir(const HashCase& c) {
    if (c.where == "data") return test::data_path("");
    if (c.where == "shared") return fs::path(test::shared_path("fixtures")).parent_path().parent_path();
    return work_dir();  // "work" and "merged": our split model is hashed as llama-gguf-hash hashes the merged file
}

// The "shared" cases name their models shared/fixtures/...: they run beside the ../shared directory.
bool shared_cases_runnable() {
    return test::shared_available() && fs::path(test::shared_path("fixtures")).parent_path().filename() == "shared";
}

TEST(HashCli, EveryGoldenCaseByteForByte) {
    const auto cases = hash_cases();
    ASSERT_GE(cases.size(), 28u);
    size_t ran = 0;
    for (const auto& c : cases) {
        if (c.where == "shared") continue;  // SharedFixtureCases
        // llama-gguf-hash hashes one file; ours hashes a split model as one unless --shard-only.
        const std::string args = c.id == "shard-all" ? c.args + " --shard-only" : c.args;
        std::string out;
        EXPECT_EQ(run_hash(case_dir(c), args, out), c.exit_code) << c.id;
        EXPECT_EQ(out, slurp(test::data_path("hash/" + c.id + ".out"))) << c.id << ": gguf-inspect hash " << args;
        ++ran;
    }
    EXPECT_EQ(ran, cases.size() - 2);
}

TEST(HashCli, SharedFixtureCases) {
    OIW_NEED_SHARED("fixtures");
    if (!shared_cases_runnable())
        GTEST_SKIP() << "../shared is not named 'shared' (the goldens name shared/fixtures/...)";
    size_t ran = 0;
    for (const auto& c : hash_cases()) {
        if (c.where != "shared") continue;
        std::string out;
        EXPECT_EQ(run_hash(case_dir(c), c.args + " --threads 1", out), c.exit_code) << c.id;
        EXPECT_EQ(out, slurp(test::data_path("hash/" + c.id + ".out"))) << c.id;
        ++ran;
    }
    EXPECT_EQ(ran, 2u);
}

TEST(HashCli, OneThreadGivesTheSameOutput) {
    std::string out;
    ASSERT_EQ(run_hash(test::data_path(""), "--all --uuid --threads 1 models/mini-moe-f16.gguf", out), 0);
    EXPECT_EQ(out, slurp(test::data_path("hash/moe-all.out")));
}

TEST(HashCli, SplitModelFromAnyShardIsTheMergedFile) {
    std::string first, last;
    ASSERT_EQ(run_hash(work_dir(), "--sha256 --name M split/mini-llama-00001-of-00003.gguf", first), 0);
    ASSERT_EQ(run_hash(work_dir(), "--sha256 --name M split/mini-llama-00003-of-00003.gguf", last), 0);
    EXPECT_EQ(first, last);
    // The set checks against the manifest llama-gguf-hash made of the merged file.
    std::string out;
    EXPECT_EQ(run_hash(work_dir(),
                       "--all --check " + q(test::data_path("hash/split-all.out")) +
                           " split/mini-llama-00002-of-00003.gguf --name split/mini-llama-00001-of-00003.gguf",
                       out),
              0);
    EXPECT_NE(out.find("Verification results for " + test::data_path("hash/split-all.out") + " - Success\n"),
              std::string::npos)
        << out;
    EXPECT_EQ(out.find("Not Found"), std::string::npos) << out;
    EXPECT_EQ(out.find("Mismatch"), std::string::npos) << out;
}

// A lossless OIW4 file hashes as its source GGUF: same lines as the real tool's on the source.
TEST(HashCli, Oiw4FileHashesAsItsSource) {
    std::string info;
    ASSERT_EQ(
        test::run(test::tool_path("gguf-inspect") + " " + q((work_dir() / "q/mini-llama-Q4_K_M.oiw4").string()), &info),
        0);
    ASSERT_NE(info.find("q4kx8"), std::string::npos) << "the Q4_K_M conversion should repack Q4_K tensors";
    ASSERT_EQ(
        test::run(test::tool_path("gguf-inspect") + " " + q((work_dir() / "q/mini-llama-Q4_0.oiw4").string()), &info),
        0);
    ASSERT_NE(info.find(" oiw4 "), std::string::npos) << "the Q4_0 conversion should hold oiw4 planes";
    for (std::string p : {"Q4_0", "Q4_K_M"}) {
        const std::string gguf = "q/mini-llama-" + p + ".gguf", oiw4 = "q/mini-llama-" + p + ".oiw4";
        const std::string golden = p == "Q4_0" ? "q4_0-all" : "q4_k_m-all";
        const std::string flags = p == "Q4_0" ? "--all --uuid" : "--all";
        std::string out;
        ASSERT_EQ(run_hash(work_dir(), flags + " --name " + gguf + " " + oiw4, out), 0) << p;
        EXPECT_EQ(out, slurp(test::data_path("hash/" + golden + ".out"))) << p;
        // Checked against the source's manifest (made by llama-gguf-hash): every line Ok.
        const std::string manifest = test::data_path("hash/" + golden + ".out");
        ASSERT_EQ(run_hash(work_dir(), "--all -c " + q(manifest) + " --name " + gguf + " " + oiw4, out), 0) << out;
        EXPECT_EQ(out.find("Not Found"), std::string::npos) << out;
        EXPECT_EQ(out.find("Mismatch"), std::string::npos) << out;
        // Without --name the entries are keyed by another file name: none found (exit 3).
        EXPECT_EQ(run_hash(work_dir(), "--all -c " + q(manifest) + " " + oiw4, out), 3) << out;
    }
}

TEST(HashCli, BadModelIsOneErrorLineExit2AndNothingOnStdout) {
    const fs::path d = test::temp_dir();
    test::write_file((d / "bad.gguf").string(), std::vector<uint8_t>{'G', 'G', 'U', 'F', 3, 0});
    std::string out, err;
    EXPECT_EQ(run_hash(d, "--all --check " + q(test::data_path("hash/llama-all.out")) + " bad.gguf", out), 2);
    EXPECT_EQ(out, "");
    EXPECT_EQ(
        test::run("cd " + q(d.string()) + " && " + test::tool_path("gguf-inspect") + " hash bad.gguf 2>&1 >/dev/null",
                  &err),
        2);
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    EXPECT_NE(err.find("bad.gguf"), std::string::npos) << err;
}

}  // namespace
}  // namespace oiw
