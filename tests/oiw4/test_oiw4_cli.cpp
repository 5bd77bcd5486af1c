// oiw4-convert and gguf-inspect on .oiw4 files, run as processes: exit codes, one-line errors,
// byte identity through the CLI, inspect's JSON planes (q4kx8 plane SHA-256 = ggml's golden).
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <xxhash.h>
#include <nlohmann/json.hpp>

#include "libformat/oiw4/oiw4.h"
#include "tests/support/helpers.h"
#include "tests/support/oiw4_fixtures.h"

namespace oiw {
namespace {

namespace fs = std::filesystem;

std::string tool() { return test::tool_path("oiw4-convert"); }

int run(const std::string& args, std::string* out = nullptr) { return test::run(tool() + " " + args, out, true); }

size_t lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

TEST(Oiw4Cli, ConvertVerifyBackToGguf) {
    const std::string src = test::mini_requant("mini-moe", "Q4_K_M");
    const auto dir = test::temp_dir();
    const std::string o = (dir / "m.oiw4").string(), g = (dir / "m.gguf").string();
    std::string out;
    ASSERT_EQ(run(src + " " + o, &out), 0) << out;
    ASSERT_EQ(run("--verify " + o, &out), 0) << out;
    EXPECT_NE(out.find(": ok ("), std::string::npos) << out;
    ASSERT_EQ(run("--to-gguf " + o + " " + g, &out), 0) << out;
    EXPECT_NE(out.find("byte-identical to the source GGUF"), std::string::npos) << out;
    EXPECT_EQ(test::sha256_hex(test::read_file(g)), test::sha256_hex(test::read_file(src)));
    // Refuses to overwrite its input.
    EXPECT_EQ(run("--to-gguf " + o + " " + o, &out), 2) << out;
    EXPECT_EQ(lines(out), 1u) << out;
}

TEST(Oiw4Cli, VerifyNamesTheDamagedPlane) {
    const std::string src = test::mini_requant("mini-llama", "Q4_0");
    const std::string o = (test::temp_dir() / "v.oiw4").string();
    ASSERT_EQ(run(src + " " + o), 0);
    auto b = test::read_file(o);
    const Oiw4File f = Oiw4File::parse(b, o);
    const auto i = static_cast<size_t>(f.find_tensor("blk.1.ffn_down.weight"));
    const auto& p = f.tensors()[i].planes.back();
    b[p.offset + 3] ^= 0x01;
    test::write_file(o, b);
    std::string out;
    EXPECT_EQ(run("--verify " + o, &out), 1) << out;
    EXPECT_NE(out.find("tensor 'blk.1.ffn_down.weight' plane '" + std::string(p.name) + "': checksum mismatch"),
              std::string::npos)
        << out;
    EXPECT_EQ(lines(out), 1u) << out;
}

TEST(Oiw4Cli, ErrorsAreOneLineExit2) {
    const auto dir = test::temp_dir();
    const std::string junk = (dir / "junk.oiw4").string();
    test::write_file(junk, std::vector<uint8_t>{'O', 'I', 'W', '4', 1, 0, 0});
    std::string out;
    for (const std::string& args :
         {"--verify " + junk, "--to-gguf " + junk + " " + (dir / "x.gguf").string(),
          "--verify " + (dir / "missing.oiw4").string(),
          test::data_path("models/mini-llama-f16.gguf") + " " + (dir / "y.oiw4").string() +
              " --encode 'token_embd=q4kx8'",
          test::data_path("models/mini-llama-f16.gguf") + " " + (dir / "y.oiw4").string() + " --encode 'x=zz'",
          "--compress=99 " + junk + " " + (dir / "z.oiw4").string()}) {
        EXPECT_EQ(run(args, &out), 2) << args << "\n" << out;
        EXPECT_EQ(lines(out), 1u) << args << "\n" << out;
        EXPECT_EQ(out.rfind("oiw4-convert: error: ", 0), 0u) << out;
    }
    EXPECT_FALSE(fs::exists(dir / "y.oiw4"));
}

TEST(Oiw4Cli, DryRunPrintsThePlanAndWritesNothing) {
    const std::string src = test::mini_requant("mini-llama", "Q4_K_M");
    const std::string o = (test::temp_dir() / "d.oiw4").string();
    std::string out;
    ASSERT_EQ(run(src + " " + o + " --dry-run --requant 'ffn_down=oiw4'", &out), 0) << out;
    EXPECT_FALSE(fs::exists(o));
    EXPECT_NE(out.find("blk.0.attn_q.weight"), std::string::npos);
    EXPECT_NE(out.find("-> q4kx8"), std::string::npos) << out;
    EXPECT_NE(out.find("-> oiw4 (requant)"), std::string::npos) << out;
    EXPECT_NE(out.find("qs 40960, d 10240"), std::string::npos) << out;  // ffn_down: 320 x 256
}

// Planes and bytes per encoding, summed from a file's directory.
std::map<std::string, std::pair<uint64_t, uint64_t>> plane_sums(const std::string& path) {
    std::map<std::string, std::pair<uint64_t, uint64_t>> m;
    const Oiw4File f = Oiw4File::open(path);
    for (const auto& t : f.tensors())
        for (const auto& p : t.planes) {
            auto& e = m[std::string(encoding_name(t.encoding))];
            ++e.first;
            e.second += p.size;
        }
    return m;
}

// The report's figures (JSON and text) against the planes of the files before and after.
void expect_codec_report(const std::string& text, const std::string& json, const std::string& plain,
                         const std::string& packed) {
    const auto dec = plane_sums(plain), com = plane_sums(packed);
    ASSERT_EQ(dec.size(), 4u);  // raw, oiw4, q4kx8, q4kx8-il4
    const auto j = nlohmann::json::parse(json);
    ASSERT_EQ(j.at("encodings").size(), dec.size());
    uint64_t planes = 0, d = 0, c = 0;
    for (const auto& e : j.at("encodings")) {
        const std::string enc = e.at("encoding");
        SCOPED_TRACE(enc);
        ASSERT_TRUE(dec.contains(enc));
        EXPECT_EQ(e.at("planes"), dec.at(enc).first);
        EXPECT_EQ(e.at("decoded_bytes"), dec.at(enc).second);
        EXPECT_EQ(e.at("compressed_bytes"), com.at(enc).second);
        EXPECT_DOUBLE_EQ(e.at("ratio").get<double>(),
                         static_cast<double>(dec.at(enc).second) / static_cast<double>(com.at(enc).second));
        EXPECT_LT(com.at(enc).second, dec.at(enc).second);
        // The text row: encoding, planes, decoded, compressed, ratio.
        const auto at = text.find("\n" + enc + " ");
        ASSERT_NE(at, std::string::npos) << text;
        std::istringstream row(text.substr(at + 1, text.find('\n', at + 1) - at - 1));
        std::string name;
        uint64_t rp = 0, rd = 0, rc = 0;
        double ratio = 0;
        row >> name >> rp >> rd >> rc >> ratio;
        EXPECT_EQ(rp, dec.at(enc).first);
        EXPECT_EQ(rd, dec.at(enc).second);
        EXPECT_EQ(rc, com.at(enc).second);
        EXPECT_NEAR(ratio, e.at("ratio").get<double>(), 5e-4);
        planes += dec.at(enc).first;
        d += dec.at(enc).second;
        c += com.at(enc).second;
    }
    EXPECT_EQ(j.at("total").at("planes"), planes);
    EXPECT_EQ(j.at("total").at("decoded_bytes"), d);
    EXPECT_EQ(j.at("total").at("compressed_bytes"), c);
    EXPECT_DOUBLE_EQ(j.at("total").at("ratio").get<double>(), static_cast<double>(d) / static_cast<double>(c));
    EXPECT_NE(text.find(fmt::format("\ntotal {:>12} {:>16} {:>16}", planes, d, c)), std::string::npos) << text;
}

TEST(Oiw4Cli, CompressDecompressReportRatiosPerEncoding) {
    const std::string src = test::mini_requant("mini-llama", "Q4_K_M");
    const auto dir = test::temp_dir();
    const std::string o = (dir / "c.oiw4").string(), z = (dir / "c.zst.oiw4").string(), u = (dir / "c.u.oiw4").string();
    std::string out, text, json, err;
    ASSERT_EQ(run(src + " " + o + " --requant ffn_down=oiw4 --encode attn_q=q4kx8-il4"), 0);
    std::vector<uint8_t> first;
    for (const std::string threads : {"1", "2", "4"}) {
        ASSERT_EQ(run("--compress=5 " + o + " " + z + " --threads " + threads, &text), 0) << text;
        if (first.empty()) first = test::read_file(z);
        EXPECT_TRUE(test::read_file(z) == first) << threads << " threads";
    }
    ASSERT_EQ(run("--compress=5 " + o + " " + z + " --json", &json), 0) << json;
    EXPECT_EQ(nlohmann::json::parse(json).at("level"), 5);
    expect_codec_report(text, json, o, z);
    ASSERT_EQ(run("--verify " + z, &out), 0) << out;
    ASSERT_EQ(run("--decompress " + z + " " + u, &text), 0) << text;
    ASSERT_EQ(run("--decompress " + z + " " + u + " --json --threads 1", &json), 0) << json;
    EXPECT_TRUE(nlohmann::json::parse(json).at("level").is_null());
    EXPECT_EQ(nlohmann::json::parse(json).at("threads"), 1);
    expect_codec_report(text, json, u, z);
    EXPECT_TRUE(test::read_file(u) == test::read_file(o));
    // Piped: no progress on stderr.
    const std::string e = (dir / "stderr.txt").string();
    ASSERT_EQ(test::run(tool() + " --compress " + o + " " + z + " 2>" + e + " >/dev/null"), 0);
    EXPECT_TRUE(test::read_file(e).empty());
}

TEST(Oiw4Cli, ProgressOnATerminal) {
    if (test::run("script -qec true /dev/null >/dev/null 2>&1") != 0)
        GTEST_SKIP() << "no script(1) to give the tool a terminal";
    const std::string src = test::mini_requant("mini-llama", "Q4_0");
    const auto dir = test::temp_dir();
    const std::string o = (dir / "p.oiw4").string(), z = (dir / "p.zst.oiw4").string();
    ASSERT_EQ(run(src + " " + o), 0);
    const size_t n = Oiw4File::open(o).tensors().size();
    for (const std::string& mode : {"--compress " + o + " " + z, "--decompress " + z + " " + o + ".u"}) {
        std::string out;
        ASSERT_EQ(test::run("script -qec '" + tool() + " " + mode + "' /dev/null", &out), 0) << out;
        const std::string bar = fmt::format("\r\x1b[2K{} [{}/{}] ", mode.substr(2, mode.find(' ') - 2), n, n);
        EXPECT_NE(out.find(bar), std::string::npos) << out;
    }
}

TEST(Oiw4Cli, JsonReports) {
    const std::string src = test::mini_requant("mini-llama", "Q4_0");
    const auto dir = test::temp_dir();
    const std::string o = (dir / "j.oiw4").string(), g = (dir / "j.gguf").string();
    std::string out;
    ASSERT_EQ(run(src + " " + o + " --dry-run --json", &out), 0) << out;
    const auto plan = nlohmann::json::parse(out);
    EXPECT_TRUE(plan.at("output").is_null());
    ASSERT_EQ(run(src + " " + o + " --json", &out), 0) << out;
    const auto conv = nlohmann::json::parse(out);
    const Oiw4File f = Oiw4File::open(o);
    EXPECT_EQ(conv.at("output"), o);
    EXPECT_EQ(conv.at("output_bytes"), fs::file_size(o));
    EXPECT_EQ(plan.at("output_bytes"), fs::file_size(o));
    EXPECT_EQ(conv.at("input_bytes"), fs::file_size(src));
    ASSERT_EQ(conv.at("tensors").size(), f.tensors().size());
    uint64_t planes = 0;
    for (size_t i = 0; i < f.tensors().size(); ++i) {
        const auto& t = f.tensors()[i];
        const auto& jt = conv.at("tensors")[i];
        EXPECT_EQ(jt.at("name"), t.info.name);
        EXPECT_EQ(jt.at("encoding"), encoding_name(t.encoding));
        ASSERT_EQ(jt.at("planes").size(), t.planes.size());
        for (size_t p = 0; p < t.planes.size(); ++p) EXPECT_EQ(jt.at("planes")[p].at("size"), t.planes[p].size);
        planes += t.planes.size();
    }
    ASSERT_EQ(run("--verify " + o + " --json", &out), 0) << out;
    auto v = nlohmann::json::parse(out);
    EXPECT_EQ(v.at("ok"), true);
    EXPECT_EQ(v.at("planes"), planes);
    EXPECT_EQ(v.at("header_xxh3"), fmt::format("{:016x}", f.header_xxh3()));
    ASSERT_EQ(test::run(tool() + " --to-gguf " + o + " " + g + " --json", &out), 0) << out;
    const auto back = nlohmann::json::parse(out);
    EXPECT_EQ(back.at("identical_to_source"), true);
    EXPECT_EQ(back.at("lossless"), true);
    EXPECT_TRUE(back.at("warnings").empty());
    auto b = test::read_file(o);
    const auto& p = f.tensors()[2].planes[0];
    b[p.offset] ^= 0x10;
    test::write_file(o, b);
    ASSERT_EQ(test::run(tool() + " --verify " + o + " --json 2>/dev/null", &out), 1) << out;
    v = nlohmann::json::parse(out);
    EXPECT_EQ(v.at("ok"), false);
    ASSERT_EQ(v.at("mismatches").size(), 1u);
    EXPECT_EQ(v.at("mismatches")[0].at("tensor"), f.tensors()[2].info.name);
    EXPECT_EQ(v.at("mismatches")[0].at("plane"), p.name);
}

// Every tool path that reads plane bytes refuses a damaged plane: exit 2, one line naming the
// file, tensor and plane, no output. gguf-inspect without --hash reads no plane and still works.
TEST(Oiw4Cli, DamagedPlaneIsExit2OnEveryPath) {
    const std::string src = test::mini_requant("mini-llama", "Q4_0");
    const auto dir = test::temp_dir();
    const std::string o = (dir / "c.oiw4").string(), bad = (dir / "bad.oiw4").string(), out = (dir / "out").string();
    ASSERT_EQ(run(src + " " + o), 0);
    auto b = test::read_file(o);
    const Oiw4File f = Oiw4File::parse(b, o);
    const auto& p = f.tensors()[static_cast<size_t>(f.find_tensor("blk.0.attn_q.weight"))].planes[1];
    ASSERT_EQ(p.name, "d");
    b[p.offset + 5] ^= 0x20;
    test::write_file(bad, b);
    const std::string inspect = test::tool_path("gguf-inspect") + " " + bad;
    const std::string where = bad + ": tensor 'blk.0.attn_q.weight' plane 'd': checksum mismatch";
    for (const std::string& cmd :
         {tool() + " --to-gguf " + bad + " " + out, tool() + " --compress " + bad + " " + out,
          tool() + " --decompress " + bad + " " + out, inspect + " --hash", inspect + " --hash sha256",
          inspect + " --json --hash xxh3", test::tool_path("oiw4-check") + " " + src + " " + bad}) {
        SCOPED_TRACE(cmd);
        std::string text;
        EXPECT_EQ(test::run(cmd, &text, true), 2) << text;
        EXPECT_EQ(lines(text), 1u) << text;
        EXPECT_NE(text.find(where), std::string::npos) << text;
        EXPECT_FALSE(fs::exists(out));
    }
    std::string text;
    EXPECT_EQ(test::run(inspect, &text, true), 0) << text;
    // A zstd plane: the frame is checked before it is decoded.
    const std::string z = (dir / "z.oiw4").string();
    ASSERT_EQ(run("--compress " + o + " " + z), 0);
    b = test::read_file(z);
    const Oiw4File zf = Oiw4File::parse(b, z);
    const auto& zp = zf.tensors()[3].planes[0];
    b[zp.offset + zp.size / 2] ^= 0x01;
    test::write_file(bad, b);
    const std::string zwhere =
        bad + ": tensor '" + zf.tensors()[3].info.name + "' plane '" + std::string(zp.name) + "': checksum mismatch";
    for (const std::string& cmd : {tool() + " --decompress " + bad + " " + out,
                                   tool() + " --compress=5 " + bad + " " + out, inspect + " --hash"}) {
        SCOPED_TRACE(cmd);
        EXPECT_EQ(test::run(cmd, &text, true), 2) << text;
        EXPECT_EQ(lines(text), 1u) << text;
        EXPECT_NE(text.find(zwhere), std::string::npos) << text;
        EXPECT_FALSE(fs::exists(out));
    }
}

// Plane `p` of `f` in image `b` with byte `at` flipped and its checksum (and the header's) made to
// match, as if the file had been written that way.
void rewrite_plane_byte(std::vector<uint8_t>& b, const Oiw4Plane& p, uint64_t at) {
    uint8_t key[24];
    std::memcpy(key, &p.offset, 8);
    std::memcpy(key + 8, &p.size, 8);
    std::memcpy(key + 16, &p.xxh3, 8);
    uint64_t dir_size;
    std::memcpy(&dir_size, b.data() + 24, 8);
    const auto entry = std::search(b.begin() + 64, b.begin() + 64 + static_cast<int64_t>(dir_size), key, key + 24);
    ASSERT_NE(entry, b.begin() + 64 + static_cast<int64_t>(dir_size));
    b[p.offset + at] ^= 0x01;
    const uint64_t h = XXH3_64bits(b.data() + p.offset, p.size);
    std::memcpy(&*entry + 16, &h, 8);
    test::reseal_oiw4(b);
}

// Planes intact but not the source's (checksums rewritten): --to-gguf exits 1 naming the tensor.
TEST(Oiw4Cli, ToGgufDifferingFromTheRecordedSourceIsExit1) {
    const std::string src = test::mini_requant("mini-llama", "Q4_K_M");
    const auto dir = test::temp_dir();
    const std::string o = (dir / "p.oiw4").string(), g = (dir / "p.gguf").string();
    ASSERT_EQ(run(src + " " + o), 0);
    auto b = test::read_file(o);
    const Oiw4File f = Oiw4File::parse(b, o);
    const auto i = static_cast<size_t>(f.find_tensor("blk.1.attn_v.weight"));
    rewrite_plane_byte(b, f.tensors()[i].planes[0], 100);
    test::write_file(o, b);
    std::string out;
    ASSERT_EQ(run("--verify " + o, &out), 0) << out;  // the planes are intact
    EXPECT_EQ(run("--to-gguf " + o + " " + g, &out), 1) << out;
    EXPECT_EQ(lines(out), 1u) << out;
    EXPECT_EQ(out.rfind("oiw4-convert: " + o + ": tensor 'blk.1.attn_v.weight': rebuilt bytes hash to ", 0), 0u) << out;
    EXPECT_FALSE(fs::exists(g));
    ASSERT_EQ(test::run(tool() + " --to-gguf " + o + " " + g + " --json 2>/dev/null", &out), 1) << out;
    const auto j = nlohmann::json::parse(out);
    EXPECT_EQ(j.at("identical_to_source"), false);
    EXPECT_EQ(j.at("tensors_checked"), true);
    EXPECT_NE(j.at("mismatch").get<std::string>().find("tensor 'blk.1.attn_v.weight'"), std::string::npos) << out;
    EXPECT_FALSE(fs::exists(g));
}

TEST(Oiw4Cli, InspectShowsEncodingsAndPlanes) {
    const std::string src = test::mini_requant("mini-llama", "Q4_K_M");
    const std::string o = (test::temp_dir() / "i.oiw4").string();
    ASSERT_EQ(run(src + " " + o), 0);
    std::string out;
    ASSERT_EQ(test::run(test::tool_path("gguf-inspect") + " " + o + " --json --hash sha256", &out), 0) << out;
    const auto j = nlohmann::json::parse(out);
    EXPECT_EQ(j.at("format"), "oiw4");
    std::ifstream gin(test::data_path("golden/q4kx8-mini.json"));
    const auto golden = nlohmann::json::parse(gin).at("mini-llama-Q4_K_M.gguf/il8");
    const auto bytes = test::read_file(o);
    size_t q4kx8 = 0;
    for (const auto& t : j.at("tensors")) {
        const auto& planes = t.at("planes");
        ASSERT_FALSE(planes.empty());
        for (const auto& p : planes) {
            const auto off = p.at("offset").get<size_t>(), size = p.at("size").get<size_t>();
            EXPECT_EQ(p.at("sha256"), test::sha256_hex(std::span(bytes).subspan(off, size)));
        }
        if (t.at("encoding") == "q4kx8") {
            EXPECT_EQ(planes.size(), 1u);
            EXPECT_EQ(planes[0].at("name"), "blocks");
            EXPECT_EQ(planes[0].at("sha256"), golden.at(t.at("name").get<std::string>()));
            ++q4kx8;
        }
        if (t.at("encoding") == "raw") {
            EXPECT_EQ(planes[0].at("name"), "data");
        }
    }
    EXPECT_EQ(q4kx8, 11u);  // every golden tensor but token_embd (a row lookup: raw by default)
    EXPECT_GT(j.at("bytes_per_token").get<uint64_t>(), 0u);
    ASSERT_EQ(test::run(test::tool_path("gguf-inspect") + " " + o, &out), 0) << out;
    EXPECT_NE(out.find("bytes per token: "), std::string::npos) << out;
    EXPECT_NE(out.find("q4kx8"), std::string::npos) << out;
}

}  // namespace
}  // namespace oiw
