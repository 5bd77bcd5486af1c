// Output hygiene: key and tensor names with control bytes (ESC sequences, CR, LF, NUL) never
// reach the terminal raw (text, Markdown, requant dry run, error messages), and --json keeps
// keys that differ only in invalid UTF-8 bytes distinct.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <functional>

#include "libformat/error.h"
#include "libformat/escape.h"
#include "libformat/gguf/gguf.h"
#include "libformat/json.h"
#include "tests/support/helpers.h"

namespace oiw {
namespace {

constexpr char kEvilKeyBytes[] = "evil.\x1b[2J\rkey\n|x";
constexpr char kEvilTensorBytes[] = "blk.0.\x1b]0;pwn\x07\0zz|.weight";  // with a NUL
const std::string kEvilKey(kEvilKeyBytes, sizeof kEvilKeyBytes - 1);
const std::string kEvilTensor(kEvilTensorBytes, sizeof kEvilTensorBytes - 1);

// A file with a control-laden key and tensor name, plus two keys differing in invalid bytes.
std::string write_evil(const std::string& name) {
    const std::string path = (test::temp_dir() / name).string();
    GgufWriter w(path);
    w.add_kv({"general.architecture", GgufValue::make_string("llama")});
    w.add_kv({"llama.block_count", GgufValue::make_scalar<uint32_t>(GgufType::U32, 1)});
    w.add_kv({kEvilKey, GgufValue::make_string("v")});
    w.add_kv({"dup.\xff", GgufValue::make_scalar<uint32_t>(GgufType::U32, 1)});
    w.add_kv({"dup.\xfe", GgufValue::make_scalar<uint32_t>(GgufType::U32, 2)});
    const int64_t shape[] = {32, 2};
    w.add_tensor(kEvilTensor, GgmlType::F32, shape);
    std::vector<uint8_t> zeros(32 * 2 * 4);
    w.write_tensor_data(zeros);
    w.finish();
    return path;
}

// True when `s` has no control byte other than the line feeds ending its lines.
bool clean(const std::string& s) {
    return std::none_of(s.begin(), s.end(), [](char c) {
        const auto u = static_cast<unsigned char>(c);
        return c != '\n' && (u < 0x20 || u == 0x7f);
    });
}

int run_tool(const std::string& tool, const std::string& args, std::string* out, std::string* err) {
    const std::string errfile = (test::temp_dir() / "stderr.txt").string();
    const int rc = test::run(test::tool_path(tool) + " " + args + " 2>" + errfile, out);
    std::ifstream in(errfile);
    err->assign(std::istreambuf_iterator<char>(in), {});
    return rc;
}

TEST(Hygiene, EscapeText) {
    EXPECT_EQ(escape_text("plain name.weight ▁"), "plain name.weight ▁");
    EXPECT_EQ(escape_text(std::string("a\nb\rc\x1b[0m\x7f\\d\0e", 14)), "a\\nb\\x0dc\\x1b[0m\\x7f\\\\d\\x00e");
    EXPECT_EQ(escape_text("say \"hi\"", '"'), "say \\\"hi\\\"");
    EXPECT_EQ(escape_text("say \"hi\""), "say \"hi\"");
}

TEST(Hygiene, UnescapeTextInvertsEscapeText) {
    for (const std::string& s : {std::string("a\nb\rc\x1b[0m\x7f\\d\0e\xff", 15), std::string("\\x41"), std::string()})
        EXPECT_EQ(unescape_text(escape_text(s)), s);
    EXPECT_FALSE(unescape_text("a\\"));    // lone backslash
    EXPECT_FALSE(unescape_text("a\\q"));   // unknown escape
    EXPECT_FALSE(unescape_text("a\\x4"));  // short hex
    EXPECT_FALSE(unescape_text("a\nb"));   // a raw line feed escape_text never writes
}

TEST(Hygiene, ErrorMessagesAreOneLine) {
    const FormatError e(ErrorKind::DuplicateKey, "m.gguf", "key '" + kEvilKey + "'", "duplicate key");
    EXPECT_STREQ(e.what(), "m.gguf: key 'evil.\\x1b[2J\\x0dkey\\n|x': duplicate key");
    EXPECT_EQ(e.subject(), "key '" + kEvilKey + "'");  // the raw subject stays available
}

TEST(Hygiene, InspectTextAndMarkdownEscapeNames) {
    const std::string path = write_evil("evil.gguf");
    for (const char* mode : {"", "--markdown", "--full", "--diff"}) {
        SCOPED_TRACE(mode);
        std::string out, err;
        const std::string args = std::string(mode) == "--diff"
                                     ? "diff " + path + " " + test::data_path("models/mini-llama-f16.gguf")
                                     : path + " " + mode;
        const int rc = run_tool("gguf-inspect", args, &out, &err);
        EXPECT_LE(rc, 1) << err;
        EXPECT_TRUE(clean(out)) << out;
        EXPECT_TRUE(clean(err)) << err;
        EXPECT_NE(out.find("evil.\\x1b[2J\\x0dkey\\n"), std::string::npos) << out;
        EXPECT_NE(out.find("blk.0.\\x1b]0;pwn\\x07\\x00zz"), std::string::npos) << out;
    }
    std::string md, err;
    ASSERT_EQ(run_tool("gguf-inspect", path + " --markdown", &md, &err), 0) << err;
    EXPECT_NE(md.find("\\x00zz\\|.weight"), std::string::npos) << md;  // Markdown escapes the cell separator
}

TEST(Hygiene, JsonKeepsKeysWithDifferentInvalidBytesDistinct) {
    const std::string path = write_evil("evil-json.gguf");
    std::string out, err;
    ASSERT_EQ(run_tool("gguf-inspect", path + " --json", &out, &err), 0) << err;
    EXPECT_NE(out.find("\"dup.\\udbff\\udfff\""), std::string::npos) << out;
    EXPECT_NE(out.find("\"dup.\\udbff\\udffe\""), std::string::npos) << out;
    const nlohmann::ordered_json v = nlohmann::ordered_json::parse(out);
    std::vector<std::string> keys;
    std::function<void(const nlohmann::ordered_json&)> walk = [&](const nlohmann::ordered_json& x) {
        if (x.is_object())
            for (const auto& [k, m] : x.items()) {
                if (k.rfind("dup.", 0) == 0) keys.push_back(k);
                walk(m);
            }
        else if (x.is_array())
            for (const auto& i : x) walk(i);
    };
    walk(v);
    std::sort(keys.begin(), keys.end());
    EXPECT_EQ(keys, (std::vector<std::string>{"dup.\xf4\x8f\xbf\xbe", "dup.\xf4\x8f\xbf\xbf"}));  // U+10FFFE, U+10FFFF
}

// Reversible: each invalid byte maps to its own code point, and a genuine U+10FFxx character
// is escaped byte by byte, so it cannot be confused with an escaped byte.
TEST(Hygiene, JsonByteEscapesAreReversible) {
    auto lit = [](std::string_view s) {
        std::string o;
        json::append_string(o, s);
        return o;
    };
    EXPECT_EQ(lit("\x80"), "\"\\udbff\\udf80\"");
    EXPECT_EQ(lit("\xc3\xa9"), "\"\xc3\xa9\"");  // valid UTF-8 unchanged
    EXPECT_EQ(lit("\xf4\x8f\xbe\x80"), "\"\\udbff\\udff4\\udbff\\udf8f\\udbff\\udfbe\\udbff\\udf80\"");  // U+10FF80
    EXPECT_EQ(lit("\xf4\x8f\xbd\xbf"), "\"\xf4\x8f\xbd\xbf\"");  // U+10FF7F: outside the escape range
    EXPECT_NE(lit("\xff"), lit("\xfe"));
}

TEST(Hygiene, RequantDryRunEscapesNames) {
    const std::string path = write_evil("evil-requant.gguf");
    std::string out, err;
    run_tool("gguf-requant", path + " --preset Q8_0 --dry-run", &out, &err);
    EXPECT_TRUE(clean(out)) << out;
    EXPECT_TRUE(clean(err)) << err;
    EXPECT_NE(out.find("blk.0.\\x1b]0;pwn\\x07\\x00zz|.weight"), std::string::npos) << out;
}

}  // namespace
}  // namespace oiw
