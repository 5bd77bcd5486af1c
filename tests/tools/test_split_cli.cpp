// One shard per machine, simulated with processes: N `gguf-requant --shard k/N` runs in parallel
// write the shards of one run, merged they are the unsplit output; a killed shard run leaves no
// file and its rerun completes the set. Also gguf-inspect and diff on a split model.
#include <gtest/gtest.h>

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "libformat/gguf/split.h"
#include "tests/support/helpers.h"

extern char** environ;

namespace oiw {
namespace {

namespace fs = std::filesystem;

using test::listing;
using test::open_into;
using test::spawn;
using test::wait_for;

std::string q(const std::string& s) { return "'" + s + "'"; }

// `got` holds the same files as `want`, byte for byte.
void expect_same_files(const fs::path& got, const fs::path& want) {
    const auto names = listing(want);
    ASSERT_EQ(listing(got), names);
    for (const auto& f : names)
        EXPECT_EQ(test::read_file((got / f).string()), test::read_file((want / f).string())) << f;
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
    for (size_t k = 1; k <= n; ++k)
        all += fmt::format("{} {} {} --shard {}/{} & ", tool, q((each / "q.gguf").string()), opts, k, n);
    ASSERT_EQ(test::run("sh -c " + q(all + "wait"), &log, true), 0) << log;
    expect_same_files(each, one);
    // Merged (from the last shard), the set is the unsplit conversion.
    ASSERT_EQ(test::run(tool + " " + q((plain / "q.gguf").string()) + " --preset Q4_0 --threads 1", &log, true), 0)
        << log;
    const std::string merged = (plain / "merged.gguf").string();
    ASSERT_EQ(test::run(test::tool_path("gguf-edit") + " -q " + q((each / names.back()).string()) + " " + q(merged),
                        &log, true),
              0)
        << log;
    const GgufFile m = GgufFile::open(merged), u = GgufFile::open((plain / "q.gguf").string());
    ASSERT_EQ(m.tensors().size(), u.tensors().size());
    const size_t header = m.data_offset();  // the merged header has split.* keys the unsplit one lacks
    auto a = m.bytes().subspan(header), b = u.bytes().subspan(u.data_offset());
    EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end()));
    // gguf-inspect sees one model; diff finds nothing between it and the unsplit output.
    ASSERT_EQ(test::run(test::tool_path("gguf-inspect") + " --no-audit " + q((each / names[1]).string()), &log, true),
              0)
        << log;
    EXPECT_NE(log.find(fmt::format("== Shards ({}) ==", n)), std::string::npos) << log;
    EXPECT_NE(log.find(fmt::format("shards           {} (file size: all shards)", n)), std::string::npos) << log;
    EXPECT_EQ(test::run(test::tool_path("gguf-inspect") + " diff --data " + q((each / names[0]).string()) + " " +
                            q((plain / "q.gguf").string()),
                        &log, true),
              0)
        << log;
    EXPECT_NE(log.find("verdict  identical"), std::string::npos) << log;
}

// Every GGUF writer splits its output as llama-gguf-split splits the single file (gguf-edit's
// split is pinned to llama-gguf-split's bytes by GgufSplit.SplitAndMergeMatchLlamaGgufSplit).
TEST(SplitCli, WritersSplitLikeGgufEditSplitsTheirSingleOutput) {
    const std::string in = test::data_path("models/mini-llama-f16.gguf");
    struct Writer {
        const char* tool;
        const char* args;
    };
    for (const Writer& w :
         {Writer{"gguf-prune-vocab", "--keep-range 0-99 -q"}, Writer{"gguf-requant", "--preset Q5_K_M"},
          Writer{"gguf-edit", "--set general.name=str:x -q"}}) {
        SCOPED_TRACE(w.tool);
        const fs::path single = test::temp_dir(), direct = test::temp_dir(), resplit = test::temp_dir();
        const std::string cmd = test::tool_path(w.tool) + " " + q(in) + " ";
        std::string log;
        ASSERT_EQ(test::run(cmd + q((single / "o.gguf").string()) + " " + w.args, &log, true), 0) << log;
        ASSERT_EQ(test::run(cmd + q((direct / "o.gguf").string()) + " " + w.args +
                                " --split-max-tensors 6 --no-tensor-first-split",
                            &log, true),
                  0)
            << log;
        ASSERT_EQ(test::run(test::tool_path("gguf-edit") + " -q " + q((single / "o.gguf").string()) + " " +
                                q((resplit / "o.gguf").string()) + " --split-max-tensors 6 --no-tensor-first-split",
                            &log, true),
                  0)
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
    ASSERT_EQ(
        test::run(test::tool_path("gguf-plan") + " " + q(in) + " --no-cache --target-bpw 5 -o " + q(plan), &log, true),
        0)
        << log;
    ASSERT_EQ(test::run(rq + q((dir / "o.gguf").string()) + " --plan " + q(plan), &log, true), 0) << log;
    ASSERT_EQ(test::run(test::tool_path("gguf-edit") + " -q " + q((dir / "o.gguf").string()) + " " +
                            q((resplit / "o.gguf").string()) + " --split-max-tensors 8",
                        &log, true),
              0)
        << log;
    for (int k = 1; k <= 3; ++k)
        ASSERT_EQ(test::run(rq + q((each / "o.gguf").string()) + " --plan " + q(plan) +
                                fmt::format(" --split-max-tensors 8 --shard {}/3", k),
                            &log, true),
                  0)
            << log;
    EXPECT_EQ(listing(each).size(), 3u);
    expect_same_files(each, resplit);
}

// OIW4 from a split model (opened from a middle shard): checked bit-identical against the split
// GGUF, and back to one GGUF file with the same tensors.
TEST(SplitCli, Oiw4FromASplitModel) {
    const fs::path dir = test::temp_dir();
    const std::string q4 = (dir / "q.gguf").string(), o4 = (dir / "q.oiw4").string(),
                      back = (dir / "back.gguf").string();
    std::string log;
    ASSERT_EQ(test::run(test::tool_path("gguf-requant") + " " + q(test::data_path("models/mini-llama-f16.gguf")) + " " +
                            q(q4) + " --preset Q4_0 --split-max-tensors 8",
                        &log, true),
              0)
        << log;
    const std::string shard2 = (dir / "q-00002-of-00003.gguf").string();
    ASSERT_EQ(test::run(test::tool_path("oiw4-convert") + " " + q(shard2) + " " + q(o4), &log, true), 0) << log;
    ASSERT_EQ(test::run(test::tool_path("oiw4-check") + " " + q(shard2) + " " + q(o4), &log, true), 0) << log;
    // The whole model (all 3 shards), not the 6 matrices of the shard named.
    EXPECT_NE(log.find("overall: 21 tensors, 21 bit-identical, 0 failed (0 missing in converted, 0 extra)"),
              std::string::npos)
        << log;
    ASSERT_EQ(test::run(test::tool_path("oiw4-convert") + " --to-gguf " + q(o4) + " " + q(back), &log, true), 0) << log;
    EXPECT_EQ(test::run(test::tool_path("gguf-inspect") + " diff --data " + q(back) + " " + q(shard2), &log, true), 0)
        << log;
    // --to-gguf with a split option: the shards gguf-edit makes of the single file.
    const fs::path direct = test::temp_dir(), resplit = test::temp_dir();
    ASSERT_EQ(test::run(test::tool_path("oiw4-convert") + " --to-gguf " + q(o4) + " " +
                            q((direct / "b.gguf").string()) + " --split-max-tensors 5",
                        &log, true),
              0)
        << log;
    EXPECT_NE(log.find("b-00001-of-00005.gguf .. "), std::string::npos) << log;
    ASSERT_EQ(test::run(test::tool_path("gguf-edit") + " -q " + q(back) + " " + q((resplit / "b.gguf").string()) +
                            " --split-max-tensors 5",
                        &log, true),
              0)
        << log;
    expect_same_files(direct, resplit);
    EXPECT_EQ(test::run(test::tool_path("oiw4-convert") + " " + q(shard2) + " " + q((dir / "x.oiw4").string()) +
                            " --split-max-tensors 5",
                        &log, true),
              2)
        << log;
}

// One shard alone (the first, downloaded to read the metadata): refused as a model, inspected
// as a file with --shard-only.
TEST(SplitCli, InspectOneShardAlone) {
    const fs::path dir = test::temp_dir();
    std::string log;
    ASSERT_EQ(test::run(test::tool_path("gguf-edit") + " -q " + q(test::data_path("models/mini-llama-f16.gguf")) + " " +
                            q((dir / "m.gguf").string()) + " --split-max-tensors 8",
                        &log, true),
              0)
        << log;
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
    const std::string base =
        test::tool_path("gguf-requant") + " " + q(in) + " " + q((dir / "q.gguf").string()) + " --preset Q8_0 ";
    struct Case {
        const char* args;
        const char* says;
    };
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

TEST(SplitCli, KilledShardRunLeavesNoFileAndItsRerunCompletesTheSet) {
    const fs::path dir = test::temp_dir(), out = dir / "out", ref = dir / "ref";
    fs::create_directories(out);
    fs::create_directories(ref);
    const std::string in = (dir / "in.gguf").string();
    std::string log;
    ASSERT_EQ(test::run(test::tool_path("gguf-synth") + " " + q(in) +
                            " --n-embd 512 --n-layer 2 --n-ff 1536 --n-vocab 8000 --type F32",
                        &log, true),
              0)
        << log;
    const std::string opts = " --preset Q4_K_M --threads 1 --reference-kernels --split-max-size 4M";
    const std::string tool = test::tool_path("gguf-requant");
    ASSERT_EQ(test::run(tool + " " + q(in) + " " + q((ref / "q.gguf").string()) + opts, &log, true), 0) << log;
    const auto names = listing(ref);
    const unsigned n = static_cast<unsigned>(names.size());
    ASSERT_GE(n, 2u);
    // Shard 1 (the largest: token_embd) is killed while it writes.
    const std::string out_path = (out / "q.gguf").string(), shard = "1/" + std::to_string(n);
    const pid_t pid = spawn({tool, in, out_path, "--preset", "Q4_K_M", "--threads", "1", "--reference-kernels",
                             "--split-max-size", "4M", "--shard", shard});
    ASSERT_GT(pid, 0);
    const bool seen = wait_for([&] { return open_into(pid, out) > 0; });
    ::kill(pid, SIGKILL);
    int st = 0;
    ::waitpid(pid, &st, 0);
    ASSERT_TRUE(seen) << "the shard run never opened its output";
    ASSERT_TRUE(WIFSIGNALED(st));
    EXPECT_TRUE(listing(out).empty()) << listing(out).front();
    // Every other shard, then the rerun of the killed one: the set is complete and identical.
    for (unsigned k = 2; k <= n; ++k)
        ASSERT_EQ(test::run(fmt::format("{} {} {}{} --shard {}/{}", tool, q(in), q(out_path), opts, k, n), &log, true),
                  0)
            << log;
    ASSERT_EQ(listing(out).size(), n - 1);
    ASSERT_EQ(test::run(fmt::format("{} {} {}{} --shard {}", tool, q(in), q(out_path), opts, shard), &log, true), 0)
        << log;
    expect_same_files(out, ref);
}

// A tool writing gguf-split shards: the command before the output name, and after it.
struct SplitWriter {
    std::string name, before, after;
};

// Every GGUF writer, each writing one shard per tensor of the same small synthetic model (its
// FFN tensors larger than shard 1, which holds the embeddings: see FailedSplitRunLeaves...).
std::vector<SplitWriter> split_writers(const fs::path& dir) {
    const std::string synth = " --n-embd 64 --n-layer 2 --n-ff 1024 --n-vocab 64 --tied --type F16",
                      split = " --split-max-tensors 1";
    const std::string src = (dir / "src.gguf").string(), shards = (dir / "s" / "s.gguf").string(),
                      o4 = (dir / "src.oiw4").string();
    std::string log;
    fs::create_directories(dir / "s");
    for (const std::string& cmd :
         {test::tool_path("gguf-synth") + " " + q(src) + synth,
          test::tool_path("gguf-edit") + " -q " + q(src) + " " + q(shards) + split,
          test::tool_path("gguf-requant") + " " + q(src) + " " + q((dir / "q4.gguf").string()) + " --preset Q4_0",
          test::tool_path("oiw4-convert") + " " + q((dir / "q4.gguf").string()) + " " + q(o4)})
        EXPECT_EQ(test::run(cmd, &log, true), 0) << cmd << "\n" << log;
    const std::string first = q(split_path((dir / "s" / "s").string(), 0, 20));
    return {{"gguf-edit", test::tool_path("gguf-edit") + " -q " + q(src), split},
            {"gguf-requant", test::tool_path("gguf-requant") + " " + q(src), " --preset Q8_0 --threads 1" + split},
            {"gguf-requant --keep-split", test::tool_path("gguf-requant") + " " + first,
             " --preset Q8_0 --threads 1 --keep-split"},
            {"gguf-prune-vocab", test::tool_path("gguf-prune-vocab") + " " + q(src), " --keep-range 0-31 -q" + split},
            {"gguf-synth", test::tool_path("gguf-synth"), synth + split},
            {"oiw4-convert --to-gguf", test::tool_path("oiw4-convert") + " --to-gguf " + q(o4), split}};
}

// Every writer, with the unnamed and the named temp file, fails in shard 3 or later (a write
// refused past RLIMIT_FSIZE, as on a full disk) over the set an earlier run of the same command
// wrote: that set is left as it was (same inodes, same bytes) with no temp file beside it, though
// shards 1 and 2 were complete; into an empty directory, nothing is left.
TEST(SplitCli, FailedSplitRunLeavesTheOldSetAsItWas) {
    const fs::path dir = test::temp_dir();
    const auto writers = split_writers(dir);
    ASSERT_TRUE(fs::exists(dir / "s" / "s-00020-of-00020.gguf"))
        << fmt::format("{}", fmt::join(listing(dir / "s"), " "));
    for (const SplitWriter& w : writers) {
        for (const std::string env : {"", "env OIW_ATOMIC_NO_TMPFILE=1 "}) {
            SCOPED_TRACE(env + w.name);
            const fs::path out = test::temp_dir();
            const std::string cmd = w.before + " " + q((out / "o.gguf").string()) + w.after;
            std::string log;
            ASSERT_EQ(test::run(cmd, &log, true), 0) << log;
            const auto old = test::dir_snapshot(out);
            ASSERT_GE(old.size(), 3u);
            // The smallest limit that shards 1 and 2 fit in; the first later shard past it fails.
            uint64_t limit = 0, fails = 0;
            size_t k = 0;
            for (const auto& [name, f] : old) {
                if (k++ < 2 || f.bytes.size() <= limit)
                    limit = std::max<uint64_t>(limit, f.bytes.size());
                else if (!fails)
                    fails = k;
            }
            ASSERT_GT(fails, 2u) << "no shard after the second is larger than the first two";
            const std::string limited =
                "sh -c \"trap '' XFSZ; exec " + env + "prlimit --fsize=" + std::to_string(limit) + " " + cmd + "\"";
            for (const fs::path& d : {out, test::temp_dir()}) {
                const auto before = test::dir_snapshot(d);
                EXPECT_EQ(test::run(limited, &log, true), 2) << log;
                EXPECT_NE(log.find("File too large"), std::string::npos) << log;
                EXPECT_TRUE(test::dir_snapshot(d) == before) << fmt::format("{}", fmt::join(listing(d), " "));
            }
        }
    }
}

// A split run stopped by SIGINT, SIGTERM or SIGKILL once shard 1 is complete (its temp file still
// held, shard 2's being written) leaves the set an earlier run wrote as it was, and no temp file.
TEST(SplitCli, InterruptedSplitRunLeavesTheOldSetAsItWas) {
    const fs::path dir = test::temp_dir(), ref = dir / "ref";
    fs::create_directories(ref);
    const std::string in = (dir / "in.gguf").string(), tool = test::tool_path("gguf-requant");
    std::string log;
    ASSERT_EQ(test::run(test::tool_path("gguf-synth") + " " + q(in) +
                            " --n-embd 512 --n-layer 2 --n-ff 1536 --n-vocab 8000 --type F32",
                        &log, true),
              0)
        << log;
    const std::vector<std::string> opts = {"--preset",         "Q4_K_M", "--threads", "1", "--reference-kernels",
                                           "--split-max-size", "1M"};
    ASSERT_EQ(test::run(tool + " " + q(in) + " " + q((ref / "q.gguf").string()) + " " +
                            fmt::format("{}", fmt::join(opts, " ")),
                        &log, true),
              0)
        << log;
    ASSERT_GE(listing(ref).size(), 4u);
    struct Case {
        int sig;
        bool named;
    };
    for (const Case c : {Case{SIGINT, false}, Case{SIGINT, true}, Case{SIGTERM, true}, Case{SIGKILL, false}}) {
        SCOPED_TRACE(fmt::format("{}, {} temp files", strsignal(c.sig), c.named ? "named" : "unnamed"));
        const fs::path out = test::temp_dir();
        for (const auto& f : listing(ref)) fs::copy_file(ref / f, out / f);
        const auto old = test::dir_snapshot(out);
        std::vector<std::string> args = {tool, in, (out / "q.gguf").string()};
        args.insert(args.end(), opts.begin(), opts.end());
        const pid_t pid =
            spawn(args, c.named ? std::vector<std::string>{"OIW_ATOMIC_NO_TMPFILE=1"} : std::vector<std::string>{});
        ASSERT_GT(pid, 0);
        const auto hidden = [&] {
            size_t n = 0;
            for (const auto& f : listing(out)) n += f.starts_with(".");
            return n;
        };
        const bool seen = wait_for([&] { return std::max(open_into(pid, out), hidden()) >= 2; });
        ::kill(pid, c.sig);
        int st = 0;
        ::waitpid(pid, &st, 0);
        ASSERT_TRUE(seen) << "the run never completed shard 1";
        EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == c.sig) << st;
        EXPECT_TRUE(test::dir_snapshot(out) == old) << fmt::format("{}", fmt::join(listing(out), " "));
    }
}

}  // namespace
}  // namespace oiw
