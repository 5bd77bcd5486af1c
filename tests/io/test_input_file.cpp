// Inputs: regular files only (a FIFO or device neither blocks nor reads without bound), text
// inputs capped, @FILE lines split as std::getline did.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>

#include "converters/requant/imatrix.h"
#include "converters/requant/requant_plan.h"
#include "inspect/profile.h"
#include "libformat/io/input_file.h"
#include "libformat/io/text_file.h"
#include "tests/support/helpers.h"
#include "tools/common/tool_support.h"

namespace oiw {
namespace {
namespace fs = std::filesystem;

using test::error_of;

// Every input reader refuses FIFOs and character devices at once, and directories.
TEST(InputFile, EveryReaderRefusesNonRegularFiles) {
    const fs::path dir = test::temp_dir();
    const std::string fifo = (dir / "fifo").string();
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    const std::vector<std::pair<std::string, std::function<void(const std::string&)>>> readers = {
        {"model", [](const std::string& p) { GgufFile::open(p); }},
        {"imatrix", [](const std::string& p) { load_imatrix(p); }},
        {"tensor type file", [](const std::string& p) { read_tensor_type_file(p); }},
        {"@FILE array", [](const std::string& p) { parse_string_array_assignment("k=str:@" + p); }},
        {"profile", [](const std::string& p) { inspect::load_profile(p); }},
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

TEST(InputFile, RegistersWhatItOpens) {
    const fs::path dir = test::temp_dir();
    const std::string p = (dir / "a").string();
    test::write_file(p, std::vector<uint8_t>{'a'});
    struct stat st {};
    ASSERT_EQ(::stat(p.c_str(), &st), 0);
    EXPECT_FALSE(registered_input(st.st_dev, st.st_ino));
    { InputFd in(p); }
    EXPECT_EQ(registered_input(st.st_dev, st.st_ino), p);
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
