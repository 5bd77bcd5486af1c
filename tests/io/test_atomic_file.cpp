// AtomicFile and the GgufWriter that uses it: special files refused, symlinks written through,
// modes kept, every input of the run protected, long names, no temp file after errors or signals.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "libformat/io/atomic_file.h"
#include "libformat/io/text_file.h"
#include "tests/support/helpers.h"

namespace oiw {
namespace {
namespace fs = std::filesystem;

const std::vector<uint8_t> kBytes = {'n', 'e', 'w', '\n'};

using test::listing;

// Writes kBytes to `path` through an AtomicFile and commits.
void write_atomic(const std::string& path) {
    AtomicFile f(path);
    f.write(kBytes.data(), kBytes.size());
    f.commit();
}

using test::error_of;

// Runs the test body once with O_TMPFILE and once with the named temp file.
class AtomicFileModes : public ::testing::TestWithParam<bool> {
protected:
    void SetUp() override {
        if (GetParam())
            ::setenv("OIW_ATOMIC_NO_TMPFILE", "1", 1);
        else
            ::unsetenv("OIW_ATOMIC_NO_TMPFILE");
    }
    void TearDown() override { ::unsetenv("OIW_ATOMIC_NO_TMPFILE"); }
};
INSTANTIATE_TEST_SUITE_P(TempKinds, AtomicFileModes, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? std::string("Named") : std::string("Unnamed"); });

TEST_P(AtomicFileModes, CommitReplacesAndLeavesNothingElse) {
    const fs::path dir = test::temp_dir();
    const std::string out = (dir / "out.bin").string();
    test::write_file(out, std::vector<uint8_t>{'o', 'l', 'd'});
    {
        AtomicFile f(out);
        f.write(kBytes.data(), kBytes.size());
        EXPECT_EQ(test::read_file(out), (std::vector<uint8_t>{'o', 'l', 'd'}));  // untouched until commit
        f.commit();
        EXPECT_EQ(f.size(), kBytes.size());
    }
    EXPECT_EQ(test::read_file(out), kBytes);
    EXPECT_EQ(listing(dir), std::vector<std::string>{"out.bin"});
}

// A file at a path the tool chose (gguf-plan's sidecar): a symlink there is refused, never followed.
TEST_P(AtomicFileModes, NoFollowRefusesASymlinkAndWritesNothing) {
    const fs::path dir = test::temp_dir();
    const std::string link = (dir / "side").string(), target = (dir / "planted").string();
    fs::create_symlink("planted", link);
    EXPECT_NE(
        error_of([&] { AtomicFile f(link, {}, false); }).find("side: is a symbolic link, not followed for this file"),
        std::string::npos);
    EXPECT_FALSE(fs::exists(target));
    fs::remove(link);
    {
        AtomicFile f(link, {}, false);  // a plain path: written as usual
        f.write(kBytes.data(), kBytes.size());
        f.commit();
    }
    EXPECT_EQ(read_text_file(link), "new\n");
    EXPECT_EQ(listing(dir), (std::vector<std::string>{"side"}));
    fs::remove_all(dir);
}

TEST_P(AtomicFileModes, AbandonedWriteLeavesNoTempFile) {
    const fs::path dir = test::temp_dir();
    {
        AtomicFile f((dir / "out.bin").string());
        f.write(kBytes.data(), kBytes.size());
    }
    EXPECT_TRUE(listing(dir).empty());
}

// A 255-byte name (NAME_MAX): the temp name must still fit.
TEST_P(AtomicFileModes, LongestNameWorks) {
    const fs::path dir = test::temp_dir();
    const std::string name(NAME_MAX, 'n');
    write_atomic((dir / name).string());
    EXPECT_EQ(test::read_file((dir / name).string()), kBytes);
    EXPECT_EQ(listing(dir), std::vector<std::string>{name});
}

// SIGINT/SIGTERM/SIGHUP in the middle of a write: the process dies of the signal, no temp file.
TEST_P(AtomicFileModes, SignalLeavesNoTempFile) {
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
        SCOPED_TRACE(strsignal(sig));
        const fs::path dir = test::temp_dir();
        const std::string out = (dir / "out.bin").string();
        const pid_t pid = ::fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            AtomicFile f(out);
            f.write(kBytes.data(), kBytes.size());
            ::raise(sig);
            ::_exit(0);
        }
        int status = 0;
        ASSERT_EQ(::waitpid(pid, &status, 0), pid);
        EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig) << status;
        EXPECT_TRUE(listing(dir).empty());
    }
}

// complete() leaves the target as it was; an AtomicFile dropped then leaves no temp file.
TEST_P(AtomicFileModes, CompletedButUnpublishedLeavesTheTargetAsItWas) {
    const fs::path dir = test::temp_dir();
    const std::string out = (dir / "out.bin").string();
    const std::vector<uint8_t> old = {'o', 'l', 'd'};
    test::write_file(out, old);
    {
        AtomicFile f(out);
        f.write(kBytes.data(), kBytes.size());
        f.complete();
        EXPECT_NE(error_of([&] { f.write(kBytes.data(), 1); }).find("written after it was completed"),
                  std::string::npos);
        EXPECT_EQ(test::read_file(out), old);
    }
    EXPECT_EQ(test::read_file(out), old);
    EXPECT_EQ(listing(dir), std::vector<std::string>{"out.bin"});
}

// publish_all() renames a set of completed files onto their targets; nothing else is left.
TEST_P(AtomicFileModes, PublishAllReplacesEveryTarget) {
    const fs::path dir = test::temp_dir();
    std::vector<std::unique_ptr<AtomicFile>> files;
    std::vector<AtomicFile*> set;
    for (const char* name : {"a", "b", "c"}) {
        test::write_file((dir / name).string(), std::vector<uint8_t>{'o'});
        files.push_back(std::make_unique<AtomicFile>((dir / name).string()));
        files.back()->write(kBytes.data(), kBytes.size());
        files.back()->complete();
        set.push_back(files.back().get());
    }
    EXPECT_EQ(test::read_file((dir / "a").string()), std::vector<uint8_t>{'o'});
    size_t published = 9;
    AtomicFile::publish_all(set, published);
    EXPECT_EQ(published, 3u);
    files.clear();
    EXPECT_EQ(listing(dir), (std::vector<std::string>{"a", "b", "c"}));
    for (const char* name : {"a", "b", "c"}) EXPECT_EQ(test::read_file((dir / name).string()), kBytes) << name;
}

// The number of open descriptors of this process that point into `dir`.
size_t fds_into(const fs::path& dir) {
    size_t n = 0;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator("/proc/self/fd", ec))
        if (fs::read_symlink(e.path(), ec).string().starts_with(dir.string() + "/")) ++n;
    return n;
}

// Past held_temp_cap() (half the RLIMIT_NOFILE soft limit) completed unnamed temp files are
// named and closed: 40 complete files with a limit of 64 hold 32 open and name 8.
TEST(AtomicFile, CompletedTempFilesPastTheCapAreNamedAndClosed) {
    const fs::path dir = test::temp_dir();
    const int probe = ::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
    if (probe < 0) GTEST_SKIP() << "no O_TMPFILE on " << dir;
    ::close(probe);
    struct rlimit saved {};
    ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
    struct rlimit low = saved;
    low.rlim_cur = 64;
    ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
    EXPECT_EQ(AtomicFile::held_temp_cap(), 32u);
    {
        std::vector<std::unique_ptr<AtomicFile>> files;
        std::vector<AtomicFile*> set;
        for (int i = 0; i < 40; ++i) {
            files.push_back(std::make_unique<AtomicFile>((dir / fmt::format("f{:02d}", i)).string()));
            files.back()->write(kBytes.data(), kBytes.size());
            files.back()->complete();
            set.push_back(files.back().get());
        }
        EXPECT_EQ(fds_into(dir), 32u);
        const auto hidden = listing(dir);
        EXPECT_EQ(hidden.size(), 8u);
        for (const auto& h : hidden) EXPECT_TRUE(h.starts_with(".f") && h.find(".tmp.") != std::string::npos) << h;
        size_t published = 0;
        AtomicFile::publish_all(set, published);
        EXPECT_EQ(published, 40u);
        EXPECT_EQ(fds_into(dir), 0u);
    }
    ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &saved), 0);
    const auto names = listing(dir);
    ASSERT_EQ(names.size(), 40u);
    EXPECT_EQ(names.front(), "f00");
    EXPECT_EQ(names.back(), "f39");
}

// A SIGINT that arrives while publish_all() renames (sent by a thread once the first target has
// changed and the last has not) is held until the last rename: the process then dies of it with
// every target replaced and no temp file left. The race is retried; the test is skipped if the
// signal never lands inside the renames.
TEST(AtomicFile, SignalDuringPublishIsHeldUntilTheLastRename) {
    constexpr int kFiles = 800;
    for (int attempt = 0; attempt < 5; ++attempt) {
        const fs::path dir = test::temp_dir();
        const auto target = [&](int i) { return (dir / fmt::format("f{:04d}", i)).string(); };
        for (int i = 0; i < kFiles; ++i) test::write_file(target(i), std::vector<uint8_t>{'o'});
        const pid_t pid = ::fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            std::vector<std::unique_ptr<AtomicFile>> files;
            std::vector<AtomicFile*> set;
            for (int i = 0; i < kFiles; ++i) {
                files.push_back(std::make_unique<AtomicFile>(target(i)));
                files.back()->write(kBytes.data(), kBytes.size());
                files.back()->complete();
                set.push_back(files.back().get());
            }
            std::atomic<bool> inside{false};
            std::thread watcher([&] {
                struct stat st {};
                while (::stat(target(0).c_str(), &st) == 0 && st.st_size == 1) {}
                if (::stat(target(kFiles - 1).c_str(), &st) == 0 && st.st_size == 1) {
                    inside = true;
                    ::kill(::getpid(), SIGINT);
                }
            });
            size_t published = 0;
            AtomicFile::publish_all(set, published);  // dies here when the signal came inside
            watcher.join();
            ::_exit(inside ? 4 : 3);
        }
        int status = 0;
        ASSERT_EQ(::waitpid(pid, &status, 0), pid);
        if (WIFEXITED(status) && WEXITSTATUS(status) == 3) continue;  // the signal came too late
        ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT) << status;
        const auto names = listing(dir);
        ASSERT_EQ(names.size(), static_cast<size_t>(kFiles)) << names.front();
        for (int i = 0; i < kFiles; ++i) ASSERT_EQ(test::read_file(target(i)), kBytes) << i;
        return;
    }
    GTEST_SKIP() << "the signal never arrived during the renames";
}

TEST(AtomicFile, RefusesDevicesFifosSocketsAndDirectories) {
    const fs::path dir = test::temp_dir();
    const std::string fifo = (dir / "fifo").string(), sock = (dir / "sock").string();
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    const int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", sock.c_str());
    ASSERT_EQ(::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    for (const std::string& p : {std::string("/dev/null"), fifo, sock}) {
        SCOPED_TRACE(p);
        EXPECT_NE(error_of([&] { AtomicFile f(p); }).find("not a regular file"), std::string::npos);
    }
    ::close(s);
    EXPECT_TRUE(fs::is_fifo(fifo));
    EXPECT_TRUE(fs::is_socket(sock));
    EXPECT_NE(error_of([&] { AtomicFile f(dir.string()); }).find("output path is a directory"), std::string::npos);
    EXPECT_EQ(listing(dir), (std::vector<std::string>{"fifo", "sock"}));
}

// GgufWriter goes through AtomicFile: a FIFO named as OUT stays a FIFO.
TEST(AtomicFile, GgufWriterRefusesFifo) {
    const fs::path dir = test::temp_dir();
    const std::string fifo = (dir / "out.gguf").string();
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    EXPECT_NE(error_of([&] {
                  GgufWriter w(fifo);
                  w.finish();
              }).find("not a regular file"),
              std::string::npos);
    EXPECT_TRUE(fs::is_fifo(fifo));
}

TEST(AtomicFile, SymlinksAreWrittenThrough) {
    const fs::path dir = test::temp_dir();
    fs::create_directory(dir / "real");
    test::write_file((dir / "real" / "target.bin").string(), std::vector<uint8_t>{'o'});
    fs::create_symlink("real/target.bin", dir / "link1");  // relative, into another directory
    fs::create_symlink(dir / "link1", dir / "link2");      // a chain
    fs::create_symlink("real/new.bin", dir / "dangling");
    write_atomic((dir / "link2").string());
    EXPECT_TRUE(fs::is_symlink(dir / "link1"));
    EXPECT_TRUE(fs::is_symlink(dir / "link2"));
    EXPECT_EQ(test::read_file((dir / "real" / "target.bin").string()), kBytes);
    write_atomic((dir / "dangling").string());
    EXPECT_TRUE(fs::is_symlink(dir / "dangling"));
    EXPECT_EQ(test::read_file((dir / "real" / "new.bin").string()), kBytes);
    EXPECT_EQ(listing(dir / "real"), (std::vector<std::string>{"new.bin", "target.bin"}));
}

TEST(AtomicFile, KeepsModeAndOwnerOfReplacedFile) {
    const fs::path dir = test::temp_dir();
    const std::string out = (dir / "out.bin").string();
    test::write_file(out, std::vector<uint8_t>{'o'});
    ASSERT_EQ(::chmod(out.c_str(), 0640), 0);
    const bool root = ::geteuid() == 0;
    if (root) {
        ASSERT_EQ(::chown(out.c_str(), 1234, 5678), 0);
    }
    write_atomic(out);
    struct stat st {};
    ASSERT_EQ(::stat(out.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0640u);
    if (root) {
        EXPECT_EQ(st.st_uid, 1234u);
        EXPECT_EQ(st.st_gid, 5678u);
    }
    // A new file: 0666 minus the umask.
    const mode_t um = ::umask(022);
    const std::string fresh = (dir / "fresh.bin").string();
    write_atomic(fresh);
    ::umask(um);
    ASSERT_EQ(::stat(fresh.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0644u);
}

// Every file the process read as an input is protected, under any name.
TEST(AtomicFile, RefusesEveryInputOfTheRun) {
    const fs::path dir = test::temp_dir();
    const std::string text = (dir / "rules.txt").string();
    test::write_file(text, std::vector<uint8_t>{'x', '\n'});
    read_text_file(text);
    fs::create_hard_link(text, dir / "hard");
    fs::create_symlink(text, dir / "soft");
    for (const auto& out :
         {text, (dir / "hard").string(), (dir / "soft").string(), (dir / "." / "rules.txt").string()}) {
        SCOPED_TRACE(out);
        EXPECT_NE(error_of([&] { write_atomic(out); }).find("refusing to overwrite the input file '" + text + "'"),
                  std::string::npos);
    }
    EXPECT_EQ(test::read_file(text), (std::vector<uint8_t>{'x', '\n'}));
    EXPECT_EQ(listing(dir), (std::vector<std::string>{"hard", "rules.txt", "soft"}));
}

// The target is checked again at commit: an input opened after the writer started is protected too.
TEST(AtomicFile, InputOpenedDuringTheWriteIsProtected) {
    const fs::path dir = test::temp_dir();
    const std::string text = (dir / "late.txt").string();
    test::write_file(text, std::vector<uint8_t>{'x'});
    AtomicFile f(text);
    f.write(kBytes.data(), kBytes.size());
    read_text_file(text);
    EXPECT_NE(error_of([&] { f.commit(); }).find("refusing to overwrite the input file"), std::string::npos);
    EXPECT_EQ(test::read_file(text), (std::vector<uint8_t>{'x'}));
}

}  // namespace
}  // namespace oiw
