// gguf-inspect the tool: JSON schema (pinned), agreement with an independent header reader on
// every fixture, digests, output width, diff and error exit codes.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <limits>
#include <map>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "libformat/gguf/gguf.h"
#include "libformat/io/hash.h"
#include "libformat/json.h"
#include "tests/support/helpers.h"

namespace oiw {
namespace {

using Value = nlohmann::ordered_json;

std::string tool() { return test::tool_path("gguf-inspect"); }
std::string fixture(const std::string& name) { return test::shared_path("fixtures/" + name); }

// Runs gguf-inspect with `args`; returns the exit status, stdout in *out, stderr in *err.
int inspect(const std::string& args, std::string* out, std::string* err = nullptr) {
    const std::string errfile = (test::temp_dir() / "stderr.txt").string();
    const int rc = test::run(tool() + " " + args + " 2>" + errfile, out);
    if (err) {
        std::ifstream in(errfile);
        err->assign(std::istreambuf_iterator<char>(in), {});
    }
    return rc;
}

Value report_json(const std::string& args) {
    std::string out;
    EXPECT_EQ(inspect(args + " --json", &out), 0) << args;
    return Value::parse(out);
}

uint64_t u64(const Value& v) {
    EXPECT_TRUE(v.is_number_unsigned()) << "not an exact unsigned integer: " << v.dump();
    return v.is_number_unsigned() ? v.get<uint64_t>() : 0;
}

// ---------------------------------------------------------------------------------------------
// An independent GGUF header reader: its own cursor and its own ggml block table (ggml-common.h),
// sharing no code with libformat, to check the tool's figures on every fixture.

struct IndepTensor {
    std::string name, type;
    std::vector<uint64_t> shape;
    uint64_t n_elements = 1, n_bytes = 0, offset = 0;
};
struct IndepFile {
    uint64_t n_kv = 0;
    std::vector<IndepTensor> tensors;
};

IndepFile read_independently(const std::string& path) {
    // Headers of the fixtures are well under 8 MiB (the largest vocabulary is 50,257 tokens).
    std::ifstream in(path, std::ios::binary);
    std::vector<char> buf(8 << 20);
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    buf.resize(static_cast<size_t>(in.gcount()));
    size_t p = 0;
    auto take = [&](size_t n) {
        if (p + n > buf.size()) throw std::runtime_error("truncated");
        const char* at = buf.data() + p;
        p += n;
        return at;
    };
    auto u32 = [&] {
        uint32_t v;
        std::memcpy(&v, take(4), 4);
        return v;
    };
    auto u64v = [&] {
        uint64_t v;
        std::memcpy(&v, take(8), 8);
        return v;
    };
    auto str = [&] {
        const uint64_t n = u64v();
        return std::string(take(n), n);
    };
    static const size_t kScalar[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    std::function<void(uint32_t)> skip = [&](uint32_t t) {
        if (t == 8) {
            str();
            return;
        }
        if (t == 9) {
            const uint32_t et = u32();
            const uint64_t n = u64v();
            for (uint64_t i = 0; i < n; ++i) skip(et);
            return;
        }
        take(kScalar[t]);
    };
    // id -> (name, block elements, block bytes)
    static const std::map<uint32_t, std::tuple<const char*, uint64_t, uint64_t>> kTypes = {
        {0, {"F32", 1, 4}},         {1, {"F16", 1, 2}},        {2, {"Q4_0", 32, 18}},      {3, {"Q4_1", 32, 20}},
        {6, {"Q5_0", 32, 22}},      {7, {"Q5_1", 32, 24}},     {8, {"Q8_0", 32, 34}},      {10, {"Q2_K", 256, 84}},
        {11, {"Q3_K", 256, 110}},   {12, {"Q4_K", 256, 144}},  {13, {"Q5_K", 256, 176}},   {14, {"Q6_K", 256, 210}},
        {16, {"IQ2_XXS", 256, 66}}, {17, {"IQ2_XS", 256, 74}}, {18, {"IQ3_XXS", 256, 98}}, {19, {"IQ1_S", 256, 50}},
        {20, {"IQ4_NL", 32, 18}},   {21, {"IQ3_S", 256, 110}}, {22, {"IQ2_S", 256, 82}},   {23, {"IQ4_XS", 256, 136}},
        {26, {"I32", 1, 4}},        {29, {"IQ1_M", 256, 56}},  {30, {"BF16", 1, 2}},       {39, {"MXFP4", 32, 17}},
        {34, {"TQ1_0", 256, 54}},   {35, {"TQ2_0", 256, 66}},
    };
    if (std::string(take(4), 4) != "GGUF") throw std::runtime_error("magic");
    u32();
    IndepFile f;
    const uint64_t n_t = u64v();
    f.n_kv = u64v();
    for (uint64_t i = 0; i < f.n_kv; ++i) {
        str();
        skip(u32());
    }
    for (uint64_t i = 0; i < n_t; ++i) {
        IndepTensor t;
        t.name = str();
        const uint32_t nd = u32();
        for (uint32_t d = 0; d < nd; ++d) t.shape.push_back(u64v());
        const auto& [name, block, bytes] = kTypes.at(u32());
        t.type = name;
        t.offset = u64v();
        for (uint64_t d : t.shape) t.n_elements *= d;
        t.n_bytes = t.n_elements / block * bytes;
        f.tensors.push_back(t);
    }
    return f;
}

TEST(InspectCli, AgreesWithIndependentReaderOnEveryFixture) {
    const auto files = test::fixture_files();
    ASSERT_GE(files.size(), 8u);  // the vendored pack, plus ../shared/fixtures when present
    for (const auto& path : files) {
        SCOPED_TRACE(path);
        const IndepFile ref = read_independently(path);
        const Value r = report_json(path);
        EXPECT_EQ(u64(r.at("model").at("kv_count")), ref.n_kv);
        const Value& ts = r.at("tensors");
        ASSERT_EQ(ts.size(), ref.tensors.size());
        uint64_t elements = 0, bytes = 0, bpt = 0;
        std::map<std::string, uint64_t> type_bytes;
        for (size_t i = 0; i < ts.size(); ++i) {
            const Value& t = ts.at(i);
            const IndepTensor& e = ref.tensors[i];
            EXPECT_EQ(t.at("name").get<std::string>(), e.name);
            EXPECT_EQ(t.at("type").get<std::string>(), e.type);
            ASSERT_EQ(t.at("shape").size(), e.shape.size());
            for (size_t d = 0; d < e.shape.size(); ++d) EXPECT_EQ(u64(t.at("shape").at(d)), e.shape[d]);
            EXPECT_EQ(u64(t.at("n_elements")), e.n_elements);
            EXPECT_EQ(u64(t.at("n_bytes")), e.n_bytes);
            EXPECT_EQ(u64(t.at("offset")), e.offset);
            EXPECT_LE(u64(t.at("bytes_per_token")), e.n_bytes);
            elements += e.n_elements;
            bytes += e.n_bytes;
            bpt += u64(t.at("bytes_per_token"));
            type_bytes[e.type] += e.n_bytes;
        }
        EXPECT_EQ(u64(r.at("model").at("tensor_count")), ref.tensors.size());
        EXPECT_EQ(u64(r.at("model").at("n_elements")), elements);
        EXPECT_EQ(u64(r.at("model").at("n_bytes")), bytes);
        // Totals are the sums of the per-tensor figures, by type and by group.
        EXPECT_EQ(u64(r.at("traffic").at("bytes_per_token")), bpt);
        uint64_t by_group = 0;
        for (const auto& [g, v] : r.at("traffic").at("by_group").items()) by_group += u64(v);
        EXPECT_EQ(by_group, bpt);
        const Value& by_type = r.at("summary").at("by_type");
        EXPECT_EQ(by_type.size(), type_bytes.size());
        for (const auto& [type, n] : type_bytes) EXPECT_EQ(u64(by_type.at(type).at("n_bytes")), n) << type;
    }
}

// ---------------------------------------------------------------------------------------------
// JSON schema (docs/gguf-inspect.md): keys present with their types.

enum class Kind { String, Number, Bool, Array, Object };

bool is_kind(const Value& v, Kind k) {
    switch (k) {
        case Kind::String: return v.is_string();
        case Kind::Number: return v.is_number();
        case Kind::Bool: return v.is_boolean();
        case Kind::Array: return v.is_array();
        case Kind::Object: return v.is_object();
    }
    return false;
}

void expect_keys(const Value& obj, const std::map<std::string, Kind>& keys) {
    ASSERT_TRUE(obj.is_object());
    for (const auto& [k, kind] : keys) {
        ASSERT_TRUE(obj.contains(k)) << "missing key " << k;
        EXPECT_TRUE(is_kind(obj.at(k), kind)) << k << ": " << obj.at(k).dump();
    }
}

TEST(InspectCli, JsonSchemaIsPinned) {
    OIW_NEED_SHARED("fixtures");
    using K = Kind;
    const Value r = report_json(fixture("tiny-moe-Q4_K_M.gguf") + " --bandwidth 20GB/s");
    expect_keys(r, {{"schema", K::String},
                    {"file", K::Object},
                    {"model", K::Object},
                    {"kv", K::Object},
                    {"tensors", K::Array},
                    {"summary", K::Object},
                    {"traffic", K::Object},
                    {"audit", K::Object}});
    EXPECT_EQ(r.at("schema").get<std::string>(), "oiw.gguf-inspect.report/1");
    expect_keys(r.at("file"), {{"path", K::String},
                               {"size", K::Number},
                               {"version", K::Number},
                               {"alignment", K::Number},
                               {"header_size", K::Number},
                               {"data_offset", K::Number}});
    expect_keys(r.at("model"), {{"architecture", K::String},
                                {"name", K::String},
                                {"file_type", K::Object},
                                {"kv_count", K::Number},
                                {"tensor_count", K::Number},
                                {"n_elements", K::Number},
                                {"n_bytes", K::Number},
                                {"bpw", K::Number},
                                {"expert_count", K::Number},
                                {"expert_used_count", K::Number},
                                {"tied_embeddings", K::Bool}});
    EXPECT_EQ(r.at("model").at("file_type").at("name").get<std::string>(), "MOSTLY_Q4_K_M");
    EXPECT_EQ(u64(r.at("model").at("file_type").at("id")), 15u);

    const Value& kv = r.at("kv");
    EXPECT_EQ(kv.size(), 27u);
    expect_keys(kv.at("qwen3moe.expert_count"), {{"type", K::String}, {"value", K::Number}});
    EXPECT_EQ(kv.at("qwen3moe.expert_count").at("type").get<std::string>(), "u32");
    EXPECT_EQ(kv.at("general.name").at("value").get<std::string>(), "tiny-moe");
    EXPECT_TRUE(kv.at("tokenizer.ggml.add_bos_token").at("value").get<bool>());
    const Value& tokens = kv.at("tokenizer.ggml.tokens");
    expect_keys(tokens, {{"type", K::String},
                         {"elem_type", K::String},
                         {"count", K::Number},
                         {"value", K::Array},
                         {"truncated", K::Bool}});
    EXPECT_EQ(tokens.at("elem_type").get<std::string>(), "str");
    EXPECT_EQ(u64(tokens.at("count")), 32000u);
    EXPECT_EQ(tokens.at("value").size(), 8u);
    EXPECT_EQ(tokens.at("value").at(1).get<std::string>(), "<s>");
    EXPECT_TRUE(tokens.at("truncated").get<bool>());

    const Value& t = r.at("tensors").at(10);
    expect_keys(t, {{"name", K::String},
                    {"type", K::String},
                    {"shape", K::Array},
                    {"n_elements", K::Number},
                    {"n_bytes", K::Number},
                    {"offset", K::Number},
                    {"bytes_per_token", K::Number},
                    {"group", K::String},
                    {"layer", K::Number},
                    {"matmul", K::Bool}});
    EXPECT_EQ(t.at("name").get<std::string>(), "blk.0.ffn_down_exps.weight");
    EXPECT_EQ(t.at("type").get<std::string>(), "Q4_K");
    EXPECT_EQ(u64(t.at("shape").at(0)), 256u);  // ne0 first
    EXPECT_EQ(u64(t.at("shape").at(2)), 8u);
    EXPECT_EQ(u64(t.at("bytes_per_token")), 73'728u);
    EXPECT_EQ(t.at("group").get<std::string>(), "experts");
    EXPECT_TRUE(r.at("tensors").at(0).at("layer").is_null());  // output.weight

    const Value& by_type = r.at("summary").at("by_type");
    expect_keys(
        by_type.at("Q6_K"),
        {{"count", K::Number}, {"n_elements", K::Number}, {"n_bytes", K::Number}, {"bytes_per_token", K::Number}});
    EXPECT_EQ(u64(by_type.at("Q6_K").at("count")), 2u);
    EXPECT_EQ(u64(by_type.at("Q6_K").at("n_bytes")), 7'150'080u);
    const Value& by_group = r.at("summary").at("by_group");
    for (const char* g :
         {"embedding", "attention", "ffn", "experts", "shared_experts", "routers", "norms", "lm_head", "other"})
        expect_keys(by_group.at(g), {{"count", K::Number}, {"n_bytes", K::Number}, {"bytes_per_token", K::Number}});
    EXPECT_TRUE(r.at("summary").at("by_layer").is_array());

    const Value& tr = r.at("traffic");
    expect_keys(tr, {{"bytes_per_token", K::Number},
                     {"by_group", K::Object},
                     {"lm_head_share", K::Number},
                     {"expert_fraction", K::Number},
                     {"bandwidth_bytes_per_s", K::Number},
                     {"tokens_per_s_ceiling", K::Number}});
    EXPECT_EQ(u64(tr.at("bytes_per_token")), 7'521'936u);
    EXPECT_EQ(u64(tr.at("by_group").at("lm_head")), 6'720'000u);
    EXPECT_EQ(u64(tr.at("by_group").at("experts")), 476'160u);
    EXPECT_EQ(tr.at("by_group").size(), 9u);
    EXPECT_DOUBLE_EQ(tr.at("tokens_per_s_ceiling").get<double>(), 20e9 / 7'521'936.0);

    const Value& audit = r.at("audit");
    expect_keys(audit, {{"profile", K::Object}, {"flags", K::Array}});
    expect_keys(audit.at("profile"),
                {{"name", K::String}, {"runtime", K::String}, {"version", K::String}, {"source", K::String}});
    EXPECT_EQ(audit.at("profile").at("name").get<std::string>(), "ggml-x86-avx2");
    ASSERT_EQ(audit.at("flags").size(), 1u);
    const Value& fl = audit.at("flags").at(0);
    expect_keys(fl, {{"kind", K::String},
                     {"subject", K::String},
                     {"message", K::String},
                     {"suggestion", K::String},
                     {"source", K::String},
                     {"bytes_per_token", K::Number},
                     {"share", K::Number},
                     {"tensors", K::Array}});
    EXPECT_EQ(fl.at("kind").get<std::string>(), "lm-head-share");
    EXPECT_EQ(u64(fl.at("bytes_per_token")), 6'720'000u);

    // Without the audit, "audit" is null; --full shows whole arrays.
    const Value full = report_json(fixture("tiny-moe-Q4_K_M.gguf") + " --no-audit --full");
    EXPECT_TRUE(full.at("audit").is_null());
    EXPECT_TRUE(full.at("traffic").at("tokens_per_s_ceiling").is_null());
    EXPECT_EQ(full.at("kv").at("tokenizer.ggml.tokens").at("value").size(), 32000u);
    EXPECT_FALSE(full.at("kv").at("tokenizer.ggml.tokens").at("truncated").get<bool>());
}

TEST(InspectCli, HashesMatchDigestsOfTheTensorBytes) {
    OIW_NEED_SHARED("fixtures");
    const std::string path = fixture("tiny-moe-Q4_K_M.gguf");
    const GgufFile f = GgufFile::open(path);
    const Value sha = report_json(path + " --hash sha256 --no-audit");
    EXPECT_EQ(sha.at("hash_algorithm").get<std::string>(), "sha256");
    const Value xxh = report_json("--hash " + path + " --no-audit");  // bare --hash: xxh3
    EXPECT_EQ(xxh.at("hash_algorithm").get<std::string>(), "xxh3");
    ASSERT_EQ(sha.at("tensors").size(), f.tensors().size());
    for (size_t i = 0; i < f.tensors().size(); ++i) {
        EXPECT_EQ(sha.at("tensors").at(i).at("hash").get<std::string>(), sha256_hex(f.tensor_data(i)))
            << f.tensors()[i].name;
        EXPECT_EQ(xxh.at("tensors").at(i).at("hash").get<std::string>(), xxh3_hex(f.tensor_data(i)))
            << f.tensors()[i].name;
    }
    // Without --hash no digest is computed or shown.
    EXPECT_FALSE(report_json(path).at("tensors").at(0).contains("hash"));
}

TEST(InspectCli, HumanOutputFitsHundredColumnsWithoutColourWhenPiped) {
    for (const auto& path : test::fixture_files()) {
        for (const char* profile : {"ggml-x86-avx2", "candle-x86", "oiw4-avx1"}) {
            std::string out;
            ASSERT_EQ(inspect(path + " --profile " + profile + " --bandwidth 20GB/s --hash", &out), 0) << path;
            EXPECT_EQ(out.find('\x1b'), std::string::npos) << path;
            size_t start = 0;
            while (start < out.size()) {
                size_t end = out.find('\n', start);
                if (end == std::string::npos) end = out.size();
                EXPECT_LE(end - start, 100u) << path << ": " << out.substr(start, end - start);
                start = end + 1;
            }
        }
    }
    std::string out;
    ASSERT_EQ(inspect(test::data_path("models/mini-moe-f16.gguf") + " --color always", &out), 0);
    EXPECT_NE(out.find("\x1b["), std::string::npos);
}

TEST(InspectCli, HumanAndMarkdownReports) {
    OIW_NEED_SHARED("fixtures");
    std::string out;
    ASSERT_EQ(inspect(fixture("tiny-moe-Q4_K_M.gguf") + " --bandwidth 20GB/s", &out), 0);
    for (const char* want : {"== Header ==", "MOSTLY_Q4_K_M (15)", "qwen3moe", "== Metadata (27 key/value pairs) ==",
                             "\"<unk>\", \"<s>\"", "arr[str,32000]", "blk.0.ffn_down_exps.weight", "256x256x8",
                             "7521936", "2 of 8 experts", "[lm-head-share]", "2658.89 tokens/s"})
        EXPECT_NE(out.find(want), std::string::npos) << want;
    ASSERT_EQ(inspect(fixture("smol-like-f16.gguf") + " --markdown --profile candle-x86", &out), 0);
    for (const char* want : {"## Header", "| name | type | shape |", "| token_embd.weight | F16 | [576, 32000] |",
                             "36864000", "51031296", "[row-not-256]", "tied to token_embd"})
        EXPECT_NE(out.find(want), std::string::npos) << want;
    // The minimal foundation form: version, alignment, KVs, one line per tensor with type, shape,
    // bytes and offset.
    ASSERT_EQ(inspect(fixture("tiny-llama-Q4_K_M.gguf") + " --markdown --no-audit", &out), 0);
    EXPECT_NE(out.find("| blk.3.ffn_up.weight | Q4_K | [256, 768] | 196608 | 110592 | 4.50 | 13114368 | 110592 |"),
              std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// Exit codes and errors

TEST(InspectCli, DiffExitCodes) {
    OIW_NEED_SHARED("fixtures");
    const std::string a = fixture("tiny-llama-Q4_K_M.gguf");
    const std::string copy = (test::temp_dir() / "copy.gguf").string();
    const auto bytes = test::read_file(a);
    test::write_file(copy, bytes);
    std::string out, err;
    EXPECT_EQ(inspect("diff " + a + " " + copy, &out), 0) << out;
    EXPECT_EQ(inspect("diff " + a + " " + copy + " --data", &out), 0) << out;
    EXPECT_EQ(inspect("diff " + a + " " + fixture("tiny-llama-Q4_0.gguf"), &out), 1);
    EXPECT_NE(out.find("general.file_type"), std::string::npos);

    // Same header, one byte of tensor data changed: identical without --data, different with it.
    auto changed = bytes;
    changed[changed.size() - 1] ^= 0x5a;
    const std::string other = (test::temp_dir() / "changed.gguf").string();
    test::write_file(other, changed);
    EXPECT_EQ(inspect("diff " + a + " " + other, &out), 0);
    EXPECT_EQ(inspect("diff " + a + " " + other + " --data --json", &out), 1);
    const Value d = Value::parse(out);
    EXPECT_EQ(d.at("schema").get<std::string>(), "oiw.gguf-inspect.diff/1");
    EXPECT_FALSE(d.at("identical").get<bool>());
    ASSERT_EQ(d.at("data").at("different").size(), 1u);
    EXPECT_EQ(d.at("data").at("different").at(0).get<std::string>(), "blk.3.ffn_up.weight");  // the last tensor
    EXPECT_EQ(d.at("data").at("identical").size(), 38u);

    const std::string bad = (test::temp_dir() / "bad.gguf").string();
    test::write_file(bad, std::vector<uint8_t>(bytes.begin(), bytes.begin() + 100));
    EXPECT_EQ(inspect("diff " + a + " " + bad, &out, &err), 2);
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    EXPECT_EQ(inspect("diff " + a, &out, &err), 2);
}

TEST(InspectCli, MalformedFilesGiveOneLineAndExitTwo) {
    OIW_NEED_SHARED("fixtures");
    const auto bytes = test::read_file(fixture("tiny-moe-Q4_K_M.gguf"));
    struct Case {
        std::string name;
        std::vector<uint8_t> data;
        std::string needle;
    };
    std::vector<Case> cases;
    cases.push_back({"truncated.gguf", std::vector<uint8_t>(bytes.begin(), bytes.begin() + 4000), "truncated"});
    auto magic = bytes;
    std::memcpy(magic.data(), "GGML", 4);
    cases.push_back({"magic.gguf", magic, "bad magic"});
    cases.push_back(
        {"short-data.gguf", std::vector<uint8_t>(bytes.begin(), bytes.end() - 1000), "blk.1.ffn_up_exps.weight"});
    for (const auto& c : cases) {
        const std::string path = (test::temp_dir() / c.name).string();
        test::write_file(path, c.data);
        std::string out, err;
        EXPECT_EQ(inspect(path, &out, &err), 2) << c.name;
        EXPECT_TRUE(out.empty()) << c.name;
        EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
        EXPECT_EQ(err.rfind("gguf-inspect: error: ", 0), 0u) << err;
        EXPECT_NE(err.find(c.needle), std::string::npos) << err;
    }
    std::string out, err;
    EXPECT_EQ(inspect(fixture("tiny-moe-Q4_K_M.gguf") + " --profile no-such-runtime", &out, &err), 2);
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    EXPECT_EQ(inspect(fixture("tiny-moe-Q4_K_M.gguf") + " --bandwidth lots", &out, &err), 2);
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    EXPECT_EQ(inspect("--no-such-option x.gguf", &out, &err), 2);
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    EXPECT_EQ(inspect("/nonexistent.gguf", &out, &err), 2);
    EXPECT_NE(err.find("/nonexistent.gguf"), std::string::npos);
}

// The writer's output is RFC 8259 JSON that an independent parser (nlohmann) reads back exactly.
TEST(InspectJson, WriterOutputParsesBack) {
    json::Writer w;
    w.begin_object();
    w.key("s");
    w.value(std::string_view("a\"b\\c\n\x01 \xe2\x96\x81 \xff"));
    w.key("n");
    w.value(uint64_t{18446744073709551615u});
    w.key("f");
    w.value(0.1);
    w.key("inf");
    w.value(std::numeric_limits<double>::infinity());
    w.key("a");
    w.begin_array(true);
    w.value(1);
    w.begin_array(true);
    w.end_array();
    w.end_array();
    w.key("e");
    w.begin_object();
    w.end_object();
    w.end_object();
    const Value v = Value::parse(w.str());
    EXPECT_EQ(v.at("s").get<std::string>(),
              "a\"b\\c\n\x01 \xe2\x96\x81 \xf4\x8f\xbf\xbf");  // invalid byte 0xff -> U+10FFFF
    EXPECT_EQ(v.at("n").get<uint64_t>(), 18446744073709551615u);
    EXPECT_DOUBLE_EQ(v.at("f").get<double>(), 0.1);
    EXPECT_TRUE(v.at("inf").is_null());
    EXPECT_EQ(v.at("a").size(), 2u);
    EXPECT_NE(w.str().find("\"a\": [1, []]"), std::string::npos) << w.str();
    EXPECT_TRUE(v.at("e").is_object());
}

}  // namespace
}  // namespace oiw
