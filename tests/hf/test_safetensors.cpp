// The safetensors reader and the checkpoint (shards + index) layer: what valid files yield, and
// that every lie a header or an index can tell is refused with one line naming file and tensor.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "converters/hf/checkpoint.h"
#include "converters/hf/json_doc.h"
#include "converters/hf/safetensors.h"
#include "libformat/error.h"
#include "tests/support/helpers.h"
#include "tests/support/hf_fixtures.h"

namespace {

using namespace oiw;
using namespace oiw::test;
namespace fs = std::filesystem;

std::vector<uint8_t> iota_bytes(size_t n, uint8_t first = 1) {
    std::vector<uint8_t> b(n);
    for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(first + i);
    return b;
}

std::string write_image(const fs::path& dir, const std::string& name, const std::vector<uint8_t>& image) {
    std::string p = (dir / name).string();
    write_file(p, image);
    return p;
}

TEST(Safetensors, ReadsTensorsByNameWithAbsoluteOffsets) {
    const auto dir = temp_dir();
    const auto w = iota_bytes(2 * 3 * 2), b = iota_bytes(4 * 4, 50), f8 = iota_bytes(4, 200);
    const std::string p = write_image(
        dir, "m.safetensors",
        safetensors_image(
            {{"z.weight", "BF16", {2, 3}, w}, {"a.bias", "F32", {4}, b}, {"m.scale", "F8_E4M3", {2, 2}, f8}},
            {{"format", "pt"}}));
    const hf::File f(p);
    ASSERT_EQ(f.tensors().size(), 3u);
    EXPECT_EQ(f.tensors()[0].name, "a.bias");  // by name, not file order
    EXPECT_EQ(f.tensors()[1].name, "m.scale");
    EXPECT_EQ(f.tensors()[2].name, "z.weight");
    const hf::Tensor& z = *f.find("z.weight");
    EXPECT_EQ(z.dtype, hf::Dtype::BF16);
    EXPECT_EQ(z.shape, (std::vector<uint64_t>{2, 3}));
    EXPECT_EQ(z.elements, 6u);
    const auto zb = f.bytes(z);
    EXPECT_EQ(std::vector<uint8_t>(zb.begin(), zb.end()), w);
    const auto ab = f.bytes(*f.find("a.bias"));
    EXPECT_EQ(std::vector<uint8_t>(ab.begin(), ab.end()), b);
    EXPECT_EQ(f.find("m.scale")->dtype, hf::Dtype::F8E4M3);
    EXPECT_EQ(f.find("nope"), nullptr);
    EXPECT_EQ(f.metadata().at("format"), "pt");
    const auto image = read_file(p);
    EXPECT_EQ(0, std::memcmp(image.data() + z.offset, w.data(), w.size()));  // offsets are absolute
    EXPECT_EQ(std::string(hf::dtype_name(hf::Dtype::F8E4M3)), "F8_E4M3");
    EXPECT_EQ(hf::dtype_size(hf::Dtype::BF16), 2u);
}

TEST(Safetensors, AcceptsZeroSizedTensorsAndAnEmptyFile) {
    const auto dir = temp_dir();
    const hf::File f(write_image(dir, "a.safetensors",
                                 safetensors_image({{"e", "F32", {0, 4}, {}}, {"x", "F16", {2}, iota_bytes(4)}})));
    EXPECT_EQ(f.find("e")->size, 0u);
    EXPECT_EQ(f.find("x")->size, 4u);
    const hf::File g(write_image(dir, "b.safetensors", safetensors_raw("{}")));
    EXPECT_TRUE(g.tensors().empty());
}

struct BadHeader {
    const char* label;
    std::string header;
    size_t data_bytes;
    ErrorKind kind;
    const char* says;  // a substring of the message
};

// One lie per case; data_bytes of data follow the header.
std::vector<BadHeader> bad_headers() {
    const std::string ok = R"("dtype":"F32","shape":[2],"data_offsets":[0,8])";
    return {
        {"not an object", R"([1,2])", 0, ErrorKind::BadJson, "does not start with '{'"},
        {"malformed", R"({"a":{"dtype":"F32",)", 0, ErrorKind::BadJson, "not valid JSON"},
        {"trailing garbage", "{} x", 0, ErrorKind::BadJson, "not valid JSON"},
        {"bad utf-8", "{\"a\xff\":{" + ok + "}}", 8, ErrorKind::BadJson, "not valid JSON"},
        {"repeated tensor", "{\"a\":{" + ok + "},\"a\":{" + ok + "}}", 8, ErrorKind::BadJson, "repeated"},
        {"repeated field", R"({"a":{"dtype":"F32","dtype":"F16","shape":[2],"data_offsets":[0,8]}})", 8,
         ErrorKind::BadJson, "repeated"},
        {"too deep", R"({"__metadata__":{"a":[[[[[[[[[[1]]]]]]]]]]}})", 0, ErrorKind::BadJson, "nested deeper"},
        {"entry not object", R"({"a":3})", 0, ErrorKind::BadJson, "not a JSON object"},
        {"no dtype", R"({"a":{"shape":[2],"data_offsets":[0,8]}})", 8, ErrorKind::BadJson, "'dtype'"},
        {"unknown dtype", R"({"a":{"dtype":"F12","shape":[2],"data_offsets":[0,8]}})", 8, ErrorKind::BadType,
         "unknown dtype 'F12' (known: BOOL"},
        {"negative dim", R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8, ErrorKind::BadJson,
         "'shape' entry"},
        {"float dim", R"({"a":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}})", 8, ErrorKind::BadJson,
         "'shape' entry"},
        {"rank 9", R"({"a":{"dtype":"F32","shape":[1,1,1,1,1,1,1,1,2],"data_offsets":[0,8]}})", 8, ErrorKind::BadDims,
         "9 dimensions"},
        {"element overflow", R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", 8,
         ErrorKind::TooLarge, "overflows"},
        {"byte overflow", R"({"a":{"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,8]}})", 8,
         ErrorKind::TooLarge, "overflows"},
        {"shape vs span", R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8, ErrorKind::BadDims,
         "needs 12 bytes but data_offsets span 8"},
        {"offsets arity", R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", 8, ErrorKind::BadJson,
         "'data_offsets'"},
        {"backwards", R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", 8, ErrorKind::OutOfBounds,
         "run backwards"},
        {"past the data", R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 8, ErrorKind::OutOfBounds,
         "end past the 8-byte data section"},
        {"overlap",
         R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
         12, ErrorKind::Overlap, "overlap tensor 'a'"},
        {"gap",
         R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
         12, ErrorKind::OutOfBounds, "[4, 8) before it belong to no tensor"},
        {"left over", "{\"a\":{" + ok + "}}", 12, ErrorKind::OutOfBounds, "[8, 12) after the last tensor"},
        {"metadata not strings", R"({"__metadata__":{"v":1}})", 0, ErrorKind::BadJson, "value is not a string"},
        {"metadata not object", R"({"__metadata__":[]})", 0, ErrorKind::BadJson, "not a JSON object"},
    };
}

TEST(Safetensors, RefusesEveryLyingHeaderWithOneLineNamingTheFile) {
    const auto dir = temp_dir();
    int i = 0;
    for (const BadHeader& c : bad_headers()) {
        SCOPED_TRACE(c.label);
        const std::string p = write_image(dir, "bad" + std::to_string(i++) + ".safetensors",
                                          safetensors_raw(c.header, iota_bytes(c.data_bytes)));
        const FormatError e = format_error_of([&] { hf::File f(p); });
        EXPECT_EQ(e.kind(), c.kind) << e.what();
        const std::string what = e.what();
        EXPECT_NE(what.find(c.says), std::string::npos) << what;
        EXPECT_EQ(what.rfind(p + ": ", 0), 0u) << what;
        EXPECT_EQ(what.find('\n'), std::string::npos);
    }
}

TEST(Safetensors, RefusesBadLengthPrefixes) {
    const auto dir = temp_dir();
    const std::string shorter = write_image(dir, "short.safetensors", {1, 2, 3});
    EXPECT_EQ(format_error_of([&] { hf::File f(shorter); }).kind(), ErrorKind::Truncated);
    auto image = safetensors_raw("{}");
    const uint64_t lie = 1000;
    std::memcpy(image.data(), &lie, 8);
    const std::string past = write_image(dir, "past.safetensors", image);
    EXPECT_EQ(format_error_of([&] { hf::File f(past); }).kind(), ErrorKind::Truncated);
    const uint64_t huge = hf::kMaxHeaderBytes + 1;
    std::memcpy(image.data(), &huge, 8);
    const std::string big = write_image(dir, "big.safetensors", image);
    const FormatError e = format_error_of([&] { hf::File f(big); });
    EXPECT_EQ(e.kind(), ErrorKind::TooLarge);
    EXPECT_NE(std::string(e.what()).find("exceeds the limit of 100000000 bytes"), std::string::npos) << e.what();
}

TEST(Safetensors, ErrorsNameTheTensor) {
    const FormatError e = format_error_of([] {
        hf::parse_header(R"({"model.layers.0.mlp.up_proj.weight":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8,
                         "x.safetensors");
    });
    EXPECT_STREQ(e.what(),
                 "x.safetensors: tensor 'model.layers.0.mlp.up_proj.weight': shape [3] of F32 needs 12 bytes but "
                 "data_offsets span 8");
}

TEST(HfJson, ParsesStrictly) {
    EXPECT_EQ(hf::parse_json(R"( {"a": [1, {"b": 2}]} )", "f", 4)["a"][1]["b"], 2);
    EXPECT_EQ(format_error_of([] { hf::parse_json(R"({"a":[[[1]]]})", "f", 3); }).kind(), ErrorKind::BadJson);
    EXPECT_EQ(format_error_of([] { hf::parse_json(R"([{"a":1},{"a":2,"a":3}])", "f", 4); }).kind(), ErrorKind::BadJson);
    // The same key in two different objects is fine.
    EXPECT_NO_THROW(hf::parse_json(R"([{"a":1},{"a":2}])", "f", 4));
    const hf::Json j = hf::parse_json(R"({"n":7,"s":"x","neg":-1})", "f", 4);
    EXPECT_EQ(hf::get_u64(j, "n", "f", ""), 7u);
    EXPECT_EQ(format_error_of([&] { hf::get_u64(j, "neg", "f", "config"); }).kind(), ErrorKind::BadJson);
    EXPECT_STREQ(format_error_of([&] { hf::get_u64(j, "m", "f", "config"); }).what(), "f: config: 'm' is missing");
}

// ---------------------------------------------------------------- checkpoints

std::vector<uint8_t> part(const std::vector<std::string>& names) {
    std::vector<StEntry> e;
    e.reserve(names.size());
    uint8_t k = 1;
    for (const std::string& n : names) e.push_back({n, "F32", {2}, iota_bytes(8, k += 8)});
    return safetensors_image(e);
}

std::string index_json(const std::map<std::string, std::string>& map) {
    nlohmann::json j = {{"metadata", {{"total_size", 0}}}, {"weight_map", map}};
    return j.dump();
}

void write_text(const fs::path& p, const std::string& s) {
    write_file(p.string(), {reinterpret_cast<const uint8_t*>(s.data()), s.size()});
}

std::vector<std::string> names_of(const hf::Checkpoint& c) {
    std::vector<std::string> out;
    out.reserve(c.tensors().size());
    for (const hf::TensorRef& r : c.tensors())
        out.push_back(fs::path(r.part->path()).filename().string() + ":" + r.tensor->name);
    return out;
}

TEST(HfCheckpoint, ListsShardsInTheConvertersOrder) {
    const auto dir = temp_dir();
    write_file((dir / "model-00002-of-00002.safetensors").string(), part({"b", "a"}));
    write_file((dir / "model-00001-of-00002.safetensors").string(), part({"z", "c"}));
    write_text(dir / hf::kIndexName, index_json({{"a", "model-00002-of-00002.safetensors"},
                                                 {"b", "model-00002-of-00002.safetensors"},
                                                 {"c", "model-00001-of-00002.safetensors"},
                                                 {"z", "model-00001-of-00002.safetensors"}}));
    write_file((dir / "consolidated.safetensors").string(), part({"q"}));  // not a part: ignored
    const hf::Checkpoint c(dir.string());
    EXPECT_EQ(names_of(c),
              (std::vector<std::string>{"model-00001-of-00002.safetensors:c", "model-00001-of-00002.safetensors:z",
                                        "model-00002-of-00002.safetensors:a", "model-00002-of-00002.safetensors:b"}));
    ASSERT_NE(c.find("a").tensor, nullptr);
    EXPECT_EQ(c.find("a").tensor->name, "a");
    EXPECT_EQ(c.find("q").tensor, nullptr);
}

TEST(HfCheckpoint, WithoutAnIndexReadsEveryModelFile) {
    const auto dir = temp_dir();
    write_file((dir / "model.safetensors").string(), part({"y", "x"}));
    write_text(dir / "config.json", "{}");
    const hf::Checkpoint c(dir.string());
    EXPECT_EQ(names_of(c), (std::vector<std::string>{"model.safetensors:x", "model.safetensors:y"}));
}

struct BadCheckpoint {
    const char* label;
    std::function<void(const fs::path&)> make;
    ErrorKind kind;
    const char* says;
};

TEST(HfCheckpoint, RefusesInconsistentShardSets) {
    const std::string s1 = "model-00001-of-00002.safetensors", s2 = "model-00002-of-00002.safetensors";
    const std::vector<BadCheckpoint> cases = {
        {"no weights", [](const fs::path&) {}, ErrorKind::Io, "no model*.safetensors file"},
        {"missing shard",
         [&](const fs::path& d) {
             write_file((d / s1).string(), part({"a"}));
             write_text(d / hf::kIndexName, index_json({{"a", s1}, {"b", s2}}));
         },
         ErrorKind::Io, s2.c_str()},
        {"index names an absent tensor",
         [&](const fs::path& d) {
             write_file((d / s1).string(), part({"a"}));
             write_text(d / hf::kIndexName, index_json({{"a", s1}, {"ghost", s1}}));
         },
         ErrorKind::BadSplit, "tensor 'ghost': not in its shard"},
        {"shard holds an unindexed tensor",
         [&](const fs::path& d) {
             write_file((d / s1).string(), part({"a", "extra"}));
             write_text(d / hf::kIndexName, index_json({{"a", s1}}));
         },
         ErrorKind::BadSplit, "tensor 'extra': not in the weight map"},
        {"tensor in the wrong shard",
         [&](const fs::path& d) {
             write_file((d / s1).string(), part({"a", "b"}));
             write_file((d / s2).string(), part({"c"}));
             write_text(d / hf::kIndexName, index_json({{"a", s1}, {"b", s2}, {"c", s2}}));
         },
         ErrorKind::BadSplit, "places it in"},
        {"same tensor in two parts",
         [&](const fs::path& d) {
             write_file((d / s1).string(), part({"a"}));
             write_file((d / s2).string(), part({"a"}));
         },
         ErrorKind::DuplicateTensor, "also in"},
        {"shard path escapes",
         [&](const fs::path& d) {
             write_text(d / hf::kIndexName, index_json({{"a", "../model.safetensors"}}));
         },
         ErrorKind::BadSplit, "not a plain file name"},
        {"no weight_map", [&](const fs::path& d) { write_text(d / hf::kIndexName, R"({"metadata":{}})"); },
         ErrorKind::BadJson, "no 'weight_map'"},
        {"weight_map not strings",
         [&](const fs::path& d) { write_text(d / hf::kIndexName, R"({"weight_map":{"a":1}})"); }, ErrorKind::BadJson,
         "shard name is not a string"},
        {"truncated shard",
         [&](const fs::path& d) {
             auto img = part({"a", "b"});
             img.resize(img.size() - 3);
             write_file((d / s1).string(), img);
         },
         ErrorKind::OutOfBounds, "end past"},
    };
    for (const BadCheckpoint& c : cases) {
        SCOPED_TRACE(c.label);
        const auto dir = temp_dir();
        c.make(dir);
        const FormatError e = format_error_of([&] { hf::Checkpoint ck(dir.string()); });
        EXPECT_EQ(e.kind(), c.kind) << e.what();
        EXPECT_NE(std::string(e.what()).find(c.says), std::string::npos) << e.what();
    }
}

}  // namespace
