// The tools' I/O contract: a failing stdout is exit 2, --threads is bounded and fails cleanly,
// special files are neither read nor replaced.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "tests/support/helpers.h"

namespace oiw {
namespace {
namespace fs = std::filesystem;

const std::string kModel = test::data_path("models/mini-llama-f16.gguf");

size_t lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

std::string q(const std::string& s) { return "'" + s + "'"; }

TEST(ToolIo, FailingStdoutIsAnError) {
    const std::string out = (test::temp_dir() / "o.gguf").string();
    std::string log;
    EXPECT_EQ(test::run(test::tool_path("gguf-edit") + " " + q(kModel) + " " + q(out) + " 2>&1 >/dev/full", &log), 2);
    EXPECT_EQ(log, "gguf-edit: error: cannot write to standard output: No space left on device\n");
    for (const char* flag : {"", "--json", "--markdown"}) {
        EXPECT_EQ(test::run(test::tool_path("gguf-inspect") + " " + flag + " " + q(kModel) + " 2>&1 >/dev/full", &log),
                  2);
        EXPECT_EQ(lines(log), 1u) << log;
    }
}

// --threads means the same in every tool: 0 uses all cores (the bytes do not depend on it), a
// negative count is refused in one line.
TEST(ToolIo, ThreadsZeroIsAllCoresNegativeIsRefused) {
    const fs::path dir = test::temp_dir();
    const std::string a = (dir / "a.gguf").string(), b = (dir / "b.gguf").string();
    const std::string requant = test::tool_path("gguf-requant") + " " + q(kModel) + " ";
    ASSERT_EQ(test::run(requant + q(a) + " --preset Q4_K_M --threads 1"), 0);
    ASSERT_EQ(test::run(requant + q(b) + " --preset Q4_K_M --threads 0"), 0);
    EXPECT_EQ(test::read_file(a), test::read_file(b));
    const std::vector<std::string> commands = {
        requant + q((dir / "c.gguf").string()) + " --preset Q8_0",
        test::tool_path("gguf-inspect") + " hash " + q(kModel),
        test::tool_path("gguf-inspect") + " " + q(kModel) + " --hash sha256",
        test::tool_path("gguf-plan") + " " + q(kModel) + " --target-bpw 5 --no-cache",
        test::tool_path("oiw4-convert") + " --compress " + q(a) + " " + q((dir / "z.oiw4").string()),
        test::tool_path("oiw4-check") + " " + q(kModel) + " " + q(kModel),
        test::tool_path("oiw4-check") + " --self " + q(kModel),
        test::tool_path("oiw4-check") + " bench --rows 8 --cols 256",
    };
    for (const auto& c : commands) {
        SCOPED_TRACE(c);
        std::string log;
        EXPECT_EQ(test::run(c + " --threads -1", &log, true), 2);
        EXPECT_NE(log.find("--threads: must be 0 (all cores) or more"), std::string::npos) << log;
        EXPECT_EQ(lines(log), 1u) << log;
    }
    EXPECT_FALSE(fs::exists(dir / "c.gguf"));
}

// More threads than cores or work are not started: 10000 behaves as the hardware count.
TEST(ToolIo, HugeThreadCountIsCapped) {
#if defined(__SANITIZE_ADDRESS__)
    GTEST_SKIP() << "an address-space limit cannot hold ASan's shadow memory";
#endif
    const fs::path dir = test::temp_dir();
    const std::string a = (dir / "a.gguf").string(), b = (dir / "b.gguf").string();
    const std::string tool = test::tool_path("gguf-requant") + " " + q(kModel) + " ";
    ASSERT_EQ(test::run(tool + q(a) + " --preset Q4_K_M --threads 1"), 0);
    // ~8 MB of stack each would need 80 GB of address space for 10000 threads.
    ASSERT_EQ(test::run("prlimit --as=4000000000 " + tool + q(b) + " --preset Q4_K_M --threads 10000"), 0);
    EXPECT_EQ(test::read_file(a), test::read_file(b));
}

// No thread can be created (RLIMIT_NPROC 1 as an unprivileged user): one line, exit 2, no output.
// As root the tool runs as nobody, which may not reach the build tree (a clone in a 0700
// directory): the tool and the model are copied into a directory everyone can use.
TEST(ToolIo, ThreadCreationFailureIsOneLine) {
    std::string tmpl = "/tmp/oiw-nproc-XXXXXX";
    ASSERT_TRUE(::mkdtemp(tmpl.data()));
    const fs::path dir = tmpl, out_dir = dir / "out";
    fs::create_directory(out_dir);
    fs::permissions(dir, fs::perms::all);
    fs::permissions(out_dir, fs::perms::all);
    const fs::path tool = dir / "gguf-requant", model = dir / "m.gguf";
    fs::copy_file(test::tool_path("gguf-requant"), tool);
    fs::copy_file(kModel, model);
    fs::permissions(model, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
    const std::string drop = ::geteuid() == 0 ? "setpriv --reuid=65534 --regid=65534 --clear-groups " : "";
    std::string log;
    EXPECT_EQ(test::run("ASAN_OPTIONS=detect_leaks=0 timeout 60 prlimit --nproc=1 " + drop + q(tool.string()) + " " +
                            q(model.string()) + " " + q((out_dir / "o.gguf").string()) + " --preset Q8_0 --threads 2",
                        &log, true),
              2);
    EXPECT_EQ(log.rfind("gguf-requant: error: threads: cannot create worker thread 1 of ", 0), 0u) << log;
    EXPECT_EQ(lines(log), 1u) << log;
    EXPECT_TRUE(fs::is_empty(out_dir));
    fs::remove_all(dir);
}

TEST(ToolIo, SpecialOutputsAreRefused) {
    const fs::path dir = test::temp_dir();
    const std::string fifo = (dir / "fifo").string();
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    std::string log;
    EXPECT_EQ(test::run(test::tool_path("gguf-edit") + " " + q(kModel) + " " + q(fifo), &log, true), 2);
    EXPECT_NE(log.find("not a regular file"), std::string::npos) << log;
    EXPECT_TRUE(fs::is_fifo(fifo));
}

// Any input of the run, not only the model, is protected from being named as OUT.
TEST(ToolIo, EveryInputIsProtected) {
    const fs::path dir = test::temp_dir();
    const std::string rules = (dir / "rules.txt").string(), arr = (dir / "arr.txt").string();
    test::write_file(rules, std::vector<uint8_t>{'x', '=', 'q', '8', '_', '0', '\n'});
    test::write_file(arr, std::vector<uint8_t>{'a', '\n'});
    const std::string imatrix = (dir / "im.gguf").string();
    fs::copy_file(test::data_path("models/mini-llama.imatrix.gguf"), imatrix);
    struct Case {
        std::string cmd, victim;
    };
    const std::vector<Case> cases = {
        {test::tool_path("gguf-requant") + " " + q(kModel) + " " + q(rules) + " --preset Q8_0 --tensor-type-file " +
             q(rules),
         rules},
        {test::tool_path("gguf-requant") + " " + q(kModel) + " " + q(imatrix) + " --preset Q4_K_M --imatrix " +
             q(imatrix),
         imatrix},
        {test::tool_path("gguf-edit") + " " + q(kModel) + " " + q(arr) + " --set-array k=str:@" + q(arr), arr},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.cmd);
        const auto before = test::read_file(c.victim);
        std::string log;
        EXPECT_EQ(test::run(c.cmd, &log, true), 2);
        const std::string error = log.substr(log.find(": error: "));
        EXPECT_EQ(error, ": error: " + c.victim + ": refusing to overwrite the input file '" + c.victim + "'\n") << log;
        EXPECT_EQ(test::read_file(c.victim), before);
    }
}

}  // namespace
}  // namespace oiw
