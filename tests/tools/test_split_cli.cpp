// One shard per machine, simulated with processes: N `gguf-requant --shard k/N` runs in parallel
// write the shards of one run, merged they are the unsplit output; a killed shard run leaves no
// file and its rerun completes the set. Also gguf-inspect and diff on a split model.
#include <gtest/gtest.h>

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include <fmt/format.h>

#include "libformat/gguf/split.h"
#include "tests/support/helpers.h"

extern char** environ;

namespace oiw {
namespace {

namespace fs = std::filesystem;

using test::listing;

std::string q(const std::string& s) { return "'" + s + "'"; }

// `got` holds the same files as `want`, byte for byte.
void expect_same_files(const fs::path& got, const fs::path& want) {
    const auto names = listing(want);
    ASSERT_EQ(listing(got), names);
    for (const auto& f : names) EXPECT_EQ(test::read_file((got / f).string()), test::read_file((want / f).string())) << f;
}

TEST(SplitCli, ParallelShardRunsEqualOneRunAndMergeToTheUnsplitOutput) {
    const std::string in = test::data_path("models/mini-moe-f16.gguf");
    const std::string tool = test::tool_path("gguf-requant") + " " + q(in);
    const std::string opts = " --preset Q4_0 --threads 1 --split-max-size 700K";
    const fs::path one = test::temp_dir(), each = test::temp_dir(), plain = test::temp_dir();
    std::string log;
    ASSERT_EQ(test::run(tool + " " + q((one / "q.gguf").string()) + opts, &log, true), 0) << log;
    const auto names = listing(one);
    const size_t n = names.size();
    ASSERT_GE(n, 3u);
    std::string all;
    for (size_t k = 1; k <= n; ++k) all += fmt::format("{} {} {} --shard {}/{} & ", tool, q((each / "q.gguf").string()), opts, k, n);
    ASSERT_EQ(test::run("sh -c " + q(all + "wait"), &log, true), 0) << log;
    expect_same_files(each, one);
    // Merged (from the last shard), the set is the unsplit conversion.
    ASSERT_EQ(test::run(tool + " " + q((plain / "q.gguf").string()) + " --preset Q4_0 --threads 1", &log, true), 0) << log;
    const std::string merged = (plain / "merged.gguf").string();
    ASSERT_EQ(test::run(test::tool_path("gguf-edit") + " -q " + q((each / names.back()).string()) + " " + q(merged), &log, true), 0) << log;
    const GgufFile m = GgufFile::open(merged), u = GgufFile::open((plain / "q.gguf").string());
    ASSERT_EQ(m.tensors().size(), u.tensors().size());
    const size_t header = m.data_offset();  // the merged header has split.* keys the unsplit one lacks
    auto a = m.bytes().subspan(header), b = u.bytes().subspan(u.data_offset());
    EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end()));
    // gguf-inspect sees one model; diff finds nothing between it and the unsplit output.
    ASSERT_EQ(test::run(test::tool_path("gguf-inspect") + " --no-audit " + q((each / names[1]).string()), &log, true), 0) << log;
    EXPECT_NE(log.find(fmt::format("== Shards ({}) ==", n)), std::string::npos) << log;
    EXPECT_NE(log.find(fmt::format("shards           {} (file size: all shards)", n)), std::string::npos) << log;
    EXPECT_EQ(test::run(test::tool_path("gguf-inspect") + " diff --data " + q((each / names[0]).string()) + " " + q((plain / "q.gguf").string()),
                        &log, true), 0)
        << log;
    EXPECT_NE(log.find("verdict  identical"), std::string::npos) << log;
}

// Every GGUF writer splits its output as llama-gguf-split splits the single file (gguf-edit's
// split is pinned to llama-gguf-split's bytes by GgufSplit.SplitAndMergeMatchLlamaGgufSplit).
TEST(SplitCli, WritersSplitLikeGgufEditSplitsTheirSingleOutput) {
    const std::string in = test::data_path("models/mini-llama-f16.gguf");
    struct Writer { const char* tool; const char* args; };
    for (const Writer& w : {Writer{"gguf-prune-vocab", "--keep-range 0-99 -q"}, Writer{"gguf-requant", "--preset Q5_K_M"},
                            Writer{"gguf-edit", "--set general.name=str:x -q"}}) {
        SCOPED_TRACE(w.tool);
        const fs::path single = test::temp_dir(), direct = test::temp_dir(), resplit = test::temp_dir();
        const std::string cmd = test::tool_path(w.tool) + " " + q(in) + " ";
        std::string log;
        ASSERT_EQ(test::run(cmd + q((single / "o.gguf").string()) + " " + w.args, &log, true), 0) << log;
        ASSERT_EQ(test::run(cmd + q((direct / "o.gguf").string()) + " " + w.args + " --split-max-tensors 6 --no-tensor-first-split", &log, true), 0)
            << log;
        ASSERT_EQ(test::run(test::tool_path("gguf-edit") + " -q " + q((single / "o.gguf").string()) + " " + q((resplit / "o.gguf").string()) +
                                " --split-max-tensors 6 --no-tensor-first-split", &log, true), 0)
            << log;
        EXPECT_EQ(listing(direct).size(), 5u);
        expect_same_files(direct, resplit);
    }
}

// A gguf-plan plan executed shard by shard: the shards of the planned conversion.
TEST(SplitCli, PlanExecutedShardByShard) {
    const std::string in = test::data_path("models/mini-llama-f16.gguf");
    const fs::path dir = test::temp_dir(), each = test::temp_dir(), resplit = test::temp_dir();
    const std::string plan = (dir / "p.plan").string(), rq = test::tool_path("gguf-requant") + " " + q(in) + " ";
    std::string log;
    ASSERT_EQ(test::run(test::tool_path("gguf-plan") + " " + q(in) + " --no-cache --target-bpw 5 -o " + q(plan), &log, true), 0) << log;
    ASSERT_EQ(test::run(rq + q((dir / "o.gguf").string()) + " --plan " + q(plan), &log, true), 0) << log;
    ASSERT_EQ(test::run(test::tool_path("gguf-edit") + " -q " + q((dir / "o.gguf").string()) + " " + q((resplit / "o.gguf").string()) +
                            " --split-max-tensors 8", &log, true), 0)
        << log;
    for (int k = 1; k <= 3; ++k)
        ASSERT_EQ(test::run(rq + q((each / "o.gguf").string()) + " --plan " + q(plan) + fmt::format(" --split-max-tensors 8 --shard {}/3", k), &log, true), 0)
            << log;
    EXPECT_EQ(listing(each).size(), 3u);
    expect_same_files(each, resplit);
}

// OIW4 from a split model (opened from a middle shard): checked bit-identical against the split
// GGUF, and back to one GGUF file with the same tensors.
TEST(SplitCli, Oiw4FromASplitModel) {
    const fs::path dir = test::temp_dir();
    const std::string q4 = (dir / "q.gguf").string(), o4 = (dir / "q.oiw4").string(), back = (dir / "back.gguf").string();
    std::string log;
    ASSERT_EQ(test::run(test::tool_path("gguf-requant") + " " + q(test::data_path("models/mini-llama-f16.gguf")) + " " + q(q4) +
                            " --preset Q4_0 --split-max-tensors 8", &log, true), 0) << log;
    const std::string shard2 = (dir / "q-00002-of-00003.gguf").string();
    ASSERT_EQ(test::run(test::tool_path("oiw4-convert") + " " + q(shard2) + " " + q(o4), &log, true), 0) << log;
    ASSERT_EQ(test::run(test::tool_path("oiw4-check") + " " + q(shard2) + " " + q(o4), &log, true), 0) << log;
    // The whole model (all 3 shards), not the 6 matrices of the shard named.
    EXPECT_NE(log.find("overall: 21 tensors, 21 bit-identical, 0 failed (0 missing in converted, 0 extra)"), std::string::npos) << log;
    ASSERT_EQ(test::run(test::tool_path("oiw4-convert") + " --to-gguf " + q(o4) + " " + q(back), &log, true), 0) << log;
    EXPECT_EQ(test::run(test::tool_path("gguf-inspect") + " diff --data " + q(back) + " " + q(shard2), &log, true), 0) << log;
    // --to-gguf with a split option: the shards gguf-edit makes of the single file.
    const fs::path direct = test::temp_dir(), resplit = test::temp_dir();
    ASSERT_EQ(test::run(test::tool_path("oiw4-convert") + " --to-gguf " + q(o4) + " " + q((direct / "b.gguf").string()) + " --split-max-tensors 5",
                        &log, true), 0) << log;
    EXPECT_NE(log.find("b-00001-of-00005.gguf .. "), std::string::npos) << log;
    ASSERT_EQ(test::run(test::tool_path("gguf-edit") + " -q " + q(back) + " " + q((resplit / "b.gguf").string()) + " --split-max-tensors 5", &log, true), 0)
        << log;
    expect_same_files(direct, resplit);
    EXPECT_EQ(test::run(test::tool_path("oiw4-convert") + " " + q(shard2) + " " + q((dir / "x.oiw4").string()) + " --split-max-tensors 5", &log, true), 2)
        << log;
}

// One shard alone (the first, downloaded to read the metadata): refused as a model, inspected
// as a file with --shard-only.
TEST(SplitCli, InspectOneShardAlone) {
    const fs::path dir = test::temp_dir();
    std::string log;
    ASSERT_EQ(test::run(test::tool_path("gguf-edit") + " -q " + q(test::data_path("models/mini-llama-f16.gguf")) + " " +
                            q((dir / "m.gguf").string()) + " --split-max-tensors 8", &log, true), 0) << log;
    fs::remove(dir / "m-00002-of-00003.gguf");
    const std::string first = q((dir / "m-00001-of-00003.gguf").string());
    EXPECT_EQ(test::run(test::tool_path("gguf-inspect") + " " + first, &log, true), 2) << log;
    EXPECT_NE(log.find("missing: shard 2 of 3"), std::string::npos) << log;
    EXPECT_NE(log.find("(--shard-only inspects the given file alone)"), std::string::npos) << log;
    ASSERT_EQ(test::run(test::tool_path("gguf-inspect") + " --shard-only --no-audit " + first, &log, true), 0) << log;
    EXPECT_NE(log.find("tensors          8\n"), std::string::npos) << log;
    EXPECT_NE(log.find("split.count"), std::string::npos) << log;
}

TEST(SplitCli, UsageErrorsWriteNothing) {
    const std::string in = test::data_path("models/mini-llama-f16.gguf");
    const fs::path dir = test::temp_dir();
    const std::string base = test::tool_path("gguf-requant") + " " + q(in) + " " + q((dir / "q.gguf").string()) + " --preset Q8_0 ";
    struct Case { const char* args; const char* says; };
    for (const Case& c : {Case{"--shard 1/2", "--shard: needs --split-max-size or --split-max-tensors"},
                          Case{"--split-max-tensors 7 --shard 1/9", "this split makes 3 shards, not 9"},
                          Case{"--split-max-size 1.5G", "--split-max-size '1.5G': expected a positive whole number"},
                          Case{"--split-max-size 1G --split-max-tensors 3", "excludes"},
                          Case{"--split-max-tensors 7 --shard 4/3", "expected K/N with 1 <= K <= N"}}) {
        SCOPED_TRACE(c.args);
        std::string log;
        EXPECT_EQ(test::run(base + c.args, &log, true), 2) << log;
        EXPECT_NE(log.find(c.says), std::string::npos) << log;
        EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;
        EXPECT_TRUE(listing(dir).empty());
    }
}

// The output directory holds an open (unnamed O_TMPFILE) temp file of process `pid`.
bool writing_into(pid_t pid, const fs::path& dir) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(fmt::format("/proc/{}/fd", pid), ec)) {
        const std::string target = fs::read_symlink(e.path(), ec).string();
        if (!ec && target.rfind(dir.string() + "/", 0) == 0) return true;
    }
    return false;
}

TEST(SplitCli, KilledShardRunLeavesNoFileAndItsRerunCompletesTheSet) {
    const fs::path dir = test::temp_dir(), out = dir / "out", ref = dir / "ref";
    fs::create_directories(out);
    fs::create_directories(ref);
    const std::string in = (dir / "in.gguf").string();
    std::string log;
    ASSERT_EQ(test::run(test::tool_path("gguf-synth") + " " + q(in) +
                            " --n-embd 512 --n-layer 2 --n-ff 1536 --n-vocab 8000 --type F32", &log, true), 0) << log;
    const std::string opts = " --preset Q4_K_M --threads 1 --reference-kernels --split-max-size 4M";
    const std::string tool = test::tool_path("gguf-requant");
    ASSERT_EQ(test::run(tool + " " + q(in) + " " + q((ref / "q.gguf").string()) + opts, &log, true), 0) << log;
    const auto names = listing(ref);
    const unsigned n = static_cast<unsigned>(names.size());
    ASSERT_GE(n, 2u);
    // Shard 1 (the largest: token_embd) is killed while it writes.
    const std::string out_path = (out / "q.gguf").string(), shard = "1/" + std::to_string(n);
    std::vector<std::string> args = {tool, in, out_path, "--preset", "Q4_K_M", "--threads", "1", "--reference-kernels",
                                     "--split-max-size", "4M", "--shard", shard};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = 0;
    ASSERT_EQ(posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ), 0);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    bool seen = false;
    while (!(seen = writing_into(pid, out)) && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    ::kill(pid, SIGKILL);
    int st = 0;
    ::waitpid(pid, &st, 0);
    ASSERT_TRUE(seen) << "the shard run never opened its output";
    ASSERT_TRUE(WIFSIGNALED(st));
    EXPECT_TRUE(listing(out).empty()) << listing(out).front();
    // Every other shard, then the rerun of the killed one: the set is complete and identical.
    for (unsigned k = 2; k <= n; ++k)
        ASSERT_EQ(test::run(fmt::format("{} {} {}{} --shard {}/{}", tool, q(in), q(out_path), opts, k, n), &log, true), 0) << log;
    ASSERT_EQ(listing(out).size(), n - 1);
    ASSERT_EQ(test::run(fmt::format("{} {} {}{} --shard {}", tool, q(in), q(out_path), opts, shard), &log, true), 0) << log;
    expect_same_files(out, ref);
}

}  // namespace
}  // namespace oiw
