// Inputs: models regular files only (a FIFO or device neither blocks nor reads without bound),
// text inputs also from pipes and capped, @FILE lines split as std::getline did.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "converters/requant/imatrix.h"
#include "converters/requant/requant_plan.h"
#include "inspect/profile.h"
#include "libformat/io/atomic_file.h"
#include "libformat/io/input_file.h"
#include "libformat/io/text_file.h"
#include "tests/support/helpers.h"
#include "tools/common/requant_args.h"
#include "tools/common/tool_support.h"

namespace oiw {
namespace {
namespace fs = std::filesystem;

using test::error_of;

// Binary inputs (models, imatrices) refuse FIFOs and character devices at once, and directories.
TEST(InputFile, BinaryReadersRefuseNonRegularFiles) {
    const fs::path dir = test::temp_dir();
    const std::string fifo = (dir / "fifo").string();
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    const std::vector<std::pair<std::string, std::function<void(const std::string&)>>> readers = {
        {"model", [](const std::string& p) { GgufFile::open(p); }},
        {"imatrix", [](const std::string& p) { load_imatrix(p); }},
    };
    for (const auto& [what, read] : readers) {
        for (const std::string& p : {fifo, std::string("/dev/zero")}) {
            SCOPED_TRACE(what + " " + p);
            const std::string e = error_of([&] { read(p); });
            EXPECT_NE(e.find(p + ": not a regular file"), std::string::npos) << e;
        }
        SCOPED_TRACE(what + " directory");
        EXPECT_NE(error_of([&] { read(dir.string()); }).find("is a directory"), std::string::npos);
    }
}

// Text inputs also read pipes and FIFOs to their end (<(grep ...), /dev/stdin), within the cap: an
// endless device is refused when it passes kMaxTextFileBytes; a directory is refused.
TEST(InputFile, TextReadersTakePipesWithinTheCap) {
    const fs::path dir = test::temp_dir();
    const std::vector<std::pair<std::string, std::function<size_t(const std::string&)>>> readers = {
        {"tensor type file", [](const std::string& p) { return read_tensor_type_file(p).size(); }},
        {"@FILE array",
         [](const std::string& p) { return parse_string_array_assignment("k=str:@" + p).value.count(); }},
    };
    for (const auto& [what, read] : readers) {
        SCOPED_TRACE(what);
        const std::string fifo = (dir / (what + ".fifo")).string();
        ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
        std::thread writer([&] {  // opens after the reader: the reader waits for it
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            const std::string text = "attn_v=q8_0\n# a comment line\n\nffn_down=q5_0 ffn_up=q4_0\n";
            test::write_file(fifo, std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
        });
        const size_t n = read(fifo);
        writer.join();
        EXPECT_EQ(n, what == "tensor type file" ? 3u : 4u);
        const std::string e = error_of([&] { read("/dev/zero"); });
        EXPECT_NE(e.find("/dev/zero: text file is larger than 67108864 bytes"), std::string::npos) << e;
        EXPECT_NE(error_of([&] { read(dir.string()); }).find("is a directory"), std::string::npos);
    }
    const std::string e = error_of([] { inspect::load_profile("/dev/zero"); });
    EXPECT_NE(e.find("larger than"), std::string::npos) << e;
}

TEST(InputFile, RegistersWhatItOpens) {
    const fs::path dir = test::temp_dir();
    const std::string p = (dir / "a").string();
    test::write_file(p, std::vector<uint8_t>{'a'});
    struct stat st {};
    ASSERT_EQ(::stat(p.c_str(), &st), 0);
    const FileIdentity id = file_identity(p, st);
    EXPECT_FALSE(registered_input(id));
    { InputFd in(p); }
    EXPECT_EQ(registered_input(id), p);
    // An inode number reused by a later file (other birth time) is not the input any more; without a
    // birth time on either side, (dev, ino) alone decides.
    if (id.birth_ns >= 0) {
        EXPECT_FALSE(registered_input(FileIdentity{id.dev, id.ino, id.birth_ns + 1}));
        EXPECT_EQ(registered_input(FileIdentity{id.dev, id.ino, -1}), p);
    }
}

// A library caller that deletes an input and writes an output the filesystem gives the same inode
// number: the output is written (it is not the input), while the input itself stays refused.
TEST(InputFile, ReusedInodeIsNotTheInput) {
    const fs::path dir = test::temp_dir();
    const std::string in = (dir / "in").string(), out = (dir / "out").string();
    test::write_file(in, std::vector<uint8_t>{'a'});
    { InputFd fd(in); }
    EXPECT_NE(error_of([&] {
                  AtomicFile f(in);
                  f.commit();
              }).find("refusing to overwrite the input file"),
              std::string::npos);
    struct stat st {};
    ASSERT_EQ(::stat(in.c_str(), &st), 0);
    if (file_identity(in, st).birth_ns < 0) GTEST_SKIP() << "the filesystem of " << dir << " records no birth time";
    const ino_t ino = st.st_ino;
    fs::remove(in);
    bool reused = false;  // ext4 and tmpfs hand the freed inode number out again, usually at once
    for (int i = 0; i < 64 && !reused; ++i) {
        test::write_file(out, std::vector<uint8_t>{'b'});
        ASSERT_EQ(::stat(out.c_str(), &st), 0);
        reused = st.st_ino == ino;
        if (!reused) fs::rename(out, (dir / ("keep" + std::to_string(i))).string());
    }
    if (!reused) GTEST_SKIP() << "the inode number was not reused";
    AtomicFile f(out);
    f.write("c", 1);
    f.commit();
    EXPECT_EQ(test::read_file(out), std::vector<uint8_t>{'c'});
}

TEST(TextFile, SizeCapIsEnforced) {
    const fs::path dir = test::temp_dir();
    const std::string p = (dir / "t.txt").string();
    test::write_file(p, std::vector<uint8_t>(100, 'x'));
    EXPECT_EQ(read_text_file(p, 100), std::string(100, 'x'));
    try {
        read_text_file(p, 99);
        ADD_FAILURE() << "no error";
    } catch (const FormatError& e) {
        EXPECT_EQ(e.kind(), ErrorKind::TooLarge);
        EXPECT_NE(std::string(e.what()).find("larger than 99 bytes"), std::string::npos) << e.what();
    }
    EXPECT_EQ(kMaxTextFileBytes, size_t{64} << 20);
}

TEST(TextFile, SplitLinesAsGetline) {
    using V = std::vector<std::string>;
    EXPECT_EQ(split_lines(""), V{});
    EXPECT_EQ(split_lines("a"), V{"a"});
    EXPECT_EQ(split_lines("a\n"), V{"a"});
    EXPECT_EQ(split_lines("a\n\nb"), (V{"a", "", "b"}));
    EXPECT_EQ(split_lines("a\n\n"), (V{"a", ""}));
    EXPECT_EQ(split_lines("\n"), V{""});
    EXPECT_EQ(split_lines(std::string_view("x\0y\r\n", 5)), V{std::string("x\0y\r", 4)});
}

}  // namespace
}  // namespace oiw
