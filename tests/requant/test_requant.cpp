// gguf-requant engine: llama-quantize's outputs reproduced byte for byte (golden SHA-256 per tensor,
// whole fixture files), requantization, atomic output, metadata.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <sstream>

#include "converters/quant/quants.h"
#include "converters/requant/requant.h"
#include "libformat/io/hash.h"
#include "tools/common/tool_support.h"
#include "tests/support/helpers.h"

namespace oiw {
namespace {
using Json = nlohmann::ordered_json;
namespace fs = std::filesystem;

// Runs the body with the working directory set to `dir` (the golden arguments use relative paths,
// and quantize.imatrix.file records the path as given).
struct InDir {
    fs::path old;
    explicit InDir(const fs::path& dir) : old(fs::current_path()) { fs::current_path(dir); }
    ~InDir() { fs::current_path(old); }
};

// llama-quantize arguments "[--imatrix FILE] IN OUT PRESET" as our options.
RequantOptions options_from_args(const std::string& args, std::string& input) {
    std::istringstream ss(args);
    std::vector<std::string> tok{std::istream_iterator<std::string>(ss), {}};
    RequantOptions o;
    size_t i = 0;
    for (; i < tok.size() && tok[i].rfind("--", 0) == 0; ++i) {
        if (tok[i] == "--imatrix") o.imatrix_path = tok.at(++i);
        else ADD_FAILURE() << "unhandled llama-quantize option " << tok[i];
    }
    EXPECT_EQ(tok.size() - i, 3u) << args;
    input = tok.at(i);
    o.plan.preset = &find_preset(tok.at(i + 2));
    return o;
}

std::string tensor_sha(const GgufFile& f, const std::string& name) {
    const int64_t i = f.find_tensor(name);
    return i < 0 ? "(missing)" : sha256_hex(f.tensor_data(static_cast<size_t>(i)));
}

void expect_kv(const GgufFile& f, const std::string& key, const Json& want) {
    SCOPED_TRACE(key);
    const GgufValue* v = f.find(key);
    ASSERT_NE(v, nullptr);
    if (want.is_string()) {
        ASSERT_NE(v->as_string(), nullptr);
        EXPECT_EQ(*v->as_string(), want.get<std::string>());
    } else if (want.is_boolean()) {
        EXPECT_EQ(v->type, GgufType::BOOL);
        EXPECT_EQ(v->as_int(), want.get<bool>() ? 1 : 0);
    } else if (v->type == GgufType::F32 || v->type == GgufType::F64) {
        EXPECT_EQ(v->as_double(), want.get<double>());
    } else {
        EXPECT_EQ(v->as_int(), static_cast<int64_t>(want.get<double>()));
    }
}

Json golden() {
    auto bytes = test::read_file(test::shared_path("golden/llama-quantize.json"));
    return Json::parse(std::string(bytes.begin(), bytes.end()));
}

// Every golden llama-quantize output: same tensor order, types, shapes, data (SHA-256) and listed
// key/values. Outputs that are also whole fixture files must be byte-identical to them.
TEST(Requant, GoldenLlamaQuantizeOutputs) {
    const Json g = golden();
    ASSERT_EQ(g.size(), 5u);
    const fs::path fixtures = test::shared_path("fixtures");
    size_t whole_files = 0;
    for (const auto& [name, entry] : g.items()) {
        SCOPED_TRACE(name);
        std::string input;
        RequantOptions o = options_from_args(entry.at("llama_quantize_args").get<std::string>(), input);
        ASSERT_EQ(input, entry.at("source").get<std::string>());
        const std::string out = (test::temp_dir() / name).string();
        {
            InDir cd(fixtures);
            RequantJob job = requantize(input, out, o, 2);
            EXPECT_TRUE(job.plan.warnings.empty());
        }
        GgufFile f = GgufFile::open(out);
        std::vector<std::string> order;
        for (const auto& t : f.tensors()) order.push_back(t.name);
        std::vector<std::string> want_order;
        for (const auto& v : entry.at("tensor_order")) want_order.push_back(v.get<std::string>());
        EXPECT_EQ(order, want_order);
        for (const auto& [tname, want] : entry.at("tensors").items()) {
            SCOPED_TRACE(tname);
            const int64_t i = f.find_tensor(tname);
            ASSERT_GE(i, 0);
            const GgufTensorInfo& t = f.tensors()[static_cast<size_t>(i)];
            EXPECT_EQ(type_name(t.type), want.at("type").get<std::string>());
            std::vector<int64_t> shape;
            for (const auto& d : want.at("shape")) shape.push_back(static_cast<int64_t>(d.get<double>()));
            EXPECT_EQ(t.shape(), shape);
            EXPECT_EQ(tensor_sha(f, tname), want.at("sha256").get<std::string>());
        }
        for (const auto& [key, want] : entry.at("kv_scalars").items()) expect_kv(f, key, want);
        const fs::path fixture = fixtures / name;
        if (fs::exists(fixture)) {
            ++whole_files;
            EXPECT_TRUE(test::read_file(fixture.string()) == test::read_file(out)) << "not byte-identical to " << fixture;
        }
    }
    EXPECT_EQ(whole_files, 2u);
}

// 3-D expert tensors, F32 routers, q/k norms: the MoE fixture is reproduced byte for byte.
TEST(Requant, MoeFixtureIsByteIdentical) {
    RequantOptions o;
    o.plan.preset = &find_preset("Q4_K_M");
    const std::string out = (test::temp_dir() / "moe.gguf").string();
    requantize(test::shared_path("fixtures/tiny-moe-f16.gguf"), out, o, 3);
    EXPECT_TRUE(test::read_file(test::shared_path("fixtures/tiny-moe-Q4_K_M.gguf")) == test::read_file(out));
}

// The benchmark baseline (scalar reference kernels) writes the very same file.
TEST(Requant, ReferenceKernelsWriteTheSameFile) {
    RequantOptions o;
    o.plan.preset = &find_preset("Q4_K_M");
    o.reference_kernels = true;
    const std::string out = (test::temp_dir() / "ref.gguf").string();
    requantize(test::shared_path("fixtures/tiny-llama-f16.gguf"), out, o, 2);
    EXPECT_TRUE(test::read_file(test::shared_path("fixtures/tiny-llama-Q4_K_M.gguf")) == test::read_file(out));
}

std::string error_of(const std::function<void()>& fn) {
    try {
        fn();
    } catch (const std::exception& e) {
        return e.what();
    }
    return "(no error)";
}

TEST(Requant, RequantizeNeedsPermission) {
    const std::string src = test::shared_path("fixtures/tiny-llama-Q4_0.gguf");
    GgufFile in = GgufFile::open(src);
    RequantOptions o;
    o.plan.preset = &find_preset("Q8_0");
    const std::string e = error_of([&] { prepare_requant(in, o); });
    EXPECT_NE(e.find("requantizing from Q6_K to Q8_0 is disabled"), std::string::npos) << e;
    EXPECT_NE(e.find("--allow-requantize; 30 tensor(s) are quantized"), std::string::npos) << e;

    o.allow_requantize = true;
    const std::string out = (test::temp_dir() / "requant.gguf").string();
    RequantJob job = requantize(src, out, o, 2);
    ASSERT_FALSE(job.plan.warnings.empty());
    EXPECT_NE(job.plan.warnings.back().find("requantizing"), std::string::npos);
    GgufFile f = GgufFile::open(out);
    // Dequantize, then quantize: compare one tensor with the kernels applied directly.
    const std::string name = "blk.1.attn_q.weight";
    const auto& t = in.tensors()[static_cast<size_t>(in.find_tensor(name))];
    std::vector<float> x(static_cast<size_t>(t.n_elements()));
    dequantize_row(t.type, in.tensor_data(static_cast<size_t>(in.find_tensor(name))).data(), x.data(), t.n_elements());
    std::vector<uint8_t> want(row_size(GgmlType::Q8_0, t.ne[0]) * static_cast<uint64_t>(t.ne[1]));
    quantize_chunk(GgmlType::Q8_0, x.data(), want.data(), t.ne[1], t.ne[0], nullptr);
    EXPECT_EQ(tensor_sha(f, name), sha256_hex(want));
    EXPECT_EQ(f.tensors()[static_cast<size_t>(f.find_tensor("output.weight"))].type, GgmlType::Q8_0);  // was Q6_K
    EXPECT_EQ(f.find("general.file_type")->as_int(), 7);
}

TEST(Requant, OutputIsAtomicAndNeverTheInput) {
    const fs::path dir = test::temp_dir();
    const std::string src = (dir / "in.gguf").string();
    fs::copy_file(test::shared_path("fixtures/tiny-llama-f16.gguf"), src);
    const std::string before = sha256_hex(test::read_file(src));
    RequantOptions o;
    o.plan.preset = &find_preset("Q8_0");
    const std::string e = error_of([&] { requantize(src, src, o, 2); });
    EXPECT_NE(e.find("refusing to overwrite the input"), std::string::npos) << e;
    fs::create_hard_link(src, dir / "alias.gguf");
    EXPECT_NE(error_of([&] { requantize(src, (dir / "alias.gguf").string(), o, 2); }).find("refusing"), std::string::npos);
    EXPECT_EQ(sha256_hex(test::read_file(src)), before);

    // A failed conversion leaves an existing output alone and no temp file behind.
    const std::string out = (dir / "out.gguf").string();
    test::write_file(out, std::vector<uint8_t>{'o', 'l', 'd'});
    o.imatrix_path = (dir / "missing.imatrix").string();
    EXPECT_NE(error_of([&] { requantize(src, out, o, 2); }).find("missing.imatrix"), std::string::npos);
    EXPECT_EQ(test::read_file(out), (std::vector<uint8_t>{'o', 'l', 'd'}));
    o.imatrix_path.clear();
    requantize(src, out, o, 1);
    std::vector<std::string> names;
    for (const auto& e2 : fs::directory_iterator(dir)) names.push_back(e2.path().filename().string());
    std::sort(names.begin(), names.end());
    EXPECT_EQ(names, (std::vector<std::string>{"alias.gguf", "in.gguf", "out.gguf"}));
    EXPECT_EQ(GgufFile::open(out).find("general.file_type")->as_int(), 7);
    EXPECT_EQ(sha256_hex(test::read_file(src)), before);
}

// Thread count and scheduling never change the bytes; F32 and F16/BF16 targets go through too.
TEST(Requant, ThreadsDoNotChangeBytes) {
    const std::string src = test::shared_path("fixtures/tiny-llama-f16.gguf");
    RequantOptions o;
    o.plan.preset = &find_preset("BF16");
    o.plan.output_tensor_type = GgmlType::F32;
    const std::string a = (test::temp_dir() / "a.gguf").string(), b = (test::temp_dir() / "b.gguf").string();
    requantize(src, a, o, 1);
    requantize(src, b, o, 5);
    EXPECT_TRUE(test::read_file(a) == test::read_file(b));
    GgufFile f = GgufFile::open(a);
    EXPECT_EQ(f.tensors()[static_cast<size_t>(f.find_tensor("output.weight"))].type, GgmlType::F32);
    EXPECT_EQ(f.tensors()[static_cast<size_t>(f.find_tensor("blk.0.attn_q.weight"))].type, GgmlType::BF16);
    EXPECT_EQ(f.find("general.file_type")->as_int(), 32);
}

TEST(Requant, MetadataOrderAndOverrides) {
    GgufFile in = GgufFile::open(test::shared_path("fixtures/tiny-llama-f16.gguf"));
    RequantOptions o;
    o.plan.preset = &find_preset("Q4_0");
    o.override_kv = {parse_kv_assignment("general.name=str:renamed"), parse_kv_assignment("oiw.extra=u32:7")};
    RequantJob job = prepare_requant(in, o);
    std::vector<std::string> tail;
    for (size_t i = job.kvs.size() - 4; i < job.kvs.size(); ++i) tail.push_back(job.kvs[i].key);
    EXPECT_EQ(tail, (std::vector<std::string>{"general.quantization_version", "general.file_type", "general.name", "oiw.extra"}));
    EXPECT_EQ(job.kvs.size(), in.kvs().size() + 2);
    EXPECT_EQ(job.kvs[0].key, "general.architecture");
}

}  // namespace
}  // namespace oiw
