// gguf-requant engine: llama-quantize's outputs reproduced byte for byte (golden SHA-256 per tensor,
// whole fixture files), requantization, atomic output, metadata.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cctype>
#include <filesystem>
#include <set>
#include <sstream>

#include "converters/quant/quants.h"
#include "converters/requant/requant.h"
#include "libformat/io/hash.h"
#include "tests/support/helpers.h"
#include "tools/common/tool_support.h"

namespace oiw {
namespace {

using test::error_of;
using Json = nlohmann::ordered_json;
namespace fs = std::filesystem;

// Runs the body with the working directory set to `dir` (the golden arguments use relative paths,
// and quantize.imatrix.file records the path as given).
struct InDir {
    fs::path old;
    explicit InDir(const fs::path& dir) : old(fs::current_path()) { fs::current_path(dir); }
    ~InDir() { fs::current_path(old); }
};

// llama-quantize arguments "[OPTIONS] IN OUT PRESET" as our options (the options the goldens use).
RequantOptions options_from_args(const std::string& args, std::string& input) {
    std::istringstream ss(args);
    std::vector<std::string> tok{std::istream_iterator<std::string>(ss), {}};
    RequantOptions o;
    size_t i = 0;
    const auto next = [&] { return tok.at(++i); };
    for (; i < tok.size() && tok[i].rfind("--", 0) == 0; ++i) {
        const std::string opt = tok[i];
        if (opt == "--imatrix")
            o.imatrix_path = next();
        else if (opt == "--output-tensor-type")
            o.plan.output_tensor_type = parse_target_type(next(), opt);
        else if (opt == "--token-embedding-type")
            o.plan.token_embedding_type = parse_target_type(next(), opt);
        else if (opt == "--tensor-type")
            o.plan.tensor_types.push_back(parse_type_rule(next(), "rule"));
        else if (opt == "--leave-output-tensor")
            o.plan.leave_output_tensor = true;
        else
            ADD_FAILURE() << "unhandled llama-quantize option " << opt;
    }
    EXPECT_EQ(tok.size() - i, 3u) << args;
    input = tok.at(i);
    o.plan.preset = &find_preset(tok.at(i + 2));
    return o;
}

// The preset name of a golden entry (the last llama-quantize argument).
std::string preset_of(const Json& entry) {
    const std::string args = entry.at("llama_quantize_args").get<std::string>();
    return args.substr(args.find_last_of(' ') + 1);
}

std::string tensor_sha(const GgufFile& f, const std::string& name) {
    const int64_t i = f.find_tensor(name);
    return i < 0 ? "(missing)" : sha256_hex(f.tensor_data(static_cast<size_t>(i)));
}

void expect_kv(const GgufFile& f, const std::string& key, const Json& want) {
    SCOPED_TRACE(key);
    const GgufValue* v = f.metadata().find(key);
    ASSERT_NE(v, nullptr);
    if (want.is_string()) {
        ASSERT_NE(v->as_string(), nullptr);
        EXPECT_EQ(*v->as_string(), want.get<std::string>());
    } else if (want.is_boolean()) {
        EXPECT_EQ(v->type(), GgufType::BOOL);
        EXPECT_EQ(v->as_int(), want.get<bool>() ? 1 : 0);
    } else if (v->type() == GgufType::F32 || v->type() == GgufType::F64) {
        EXPECT_EQ(v->as_double(), want.get<double>());
    } else {
        EXPECT_EQ(v->as_int(), want.get<int64_t>());
    }
}

Json read_json(const std::string& path) {
    const auto bytes = test::read_file(path);
    return Json::parse(bytes.begin(), bytes.end());
}

// Runs golden entry `name` (its llama-quantize arguments, relative to `dir`) through requantize()
// and checks the output against it: tensor order, and per tensor type, shape and SHA-256 of the
// data; every listed key/value. Returns the output path; *warnings gets the plan's warnings.
std::string expect_golden_output(const std::string& name, const Json& entry, const fs::path& dir,
                                 std::vector<std::string>* warnings = nullptr) {
    SCOPED_TRACE(name);
    std::string input;
    RequantOptions o = options_from_args(entry.at("llama_quantize_args").get<std::string>(), input);
    EXPECT_EQ(input, entry.at("source").get<std::string>());
    const std::string out = (test::temp_dir() / name).string();
    {
        InDir cd(dir);
        RequantJob job = requantize(input, out, o, 2);
        if (warnings) *warnings = job.plan.warnings;
    }
    GgufFile f = GgufFile::open(out);
    std::vector<std::string> order;
    for (const auto& t : f.tensors()) order.push_back(t.name);
    EXPECT_EQ(order, entry.at("tensor_order").get<std::vector<std::string>>());
    for (const auto& [tname, want] : entry.at("tensors").items()) {
        SCOPED_TRACE(tname);
        const int64_t i = f.find_tensor(tname);
        if (i < 0) {
            ADD_FAILURE() << "missing tensor";
            continue;
        }
        const GgufTensorInfo& t = f.tensors()[static_cast<size_t>(i)];
        EXPECT_EQ(type_name(t.type), want.at("type").get<std::string>());
        EXPECT_EQ(t.shape(), want.at("shape").get<std::vector<int64_t>>());
        EXPECT_EQ(tensor_sha(f, tname), want.at("sha256").get<std::string>());
    }
    for (const auto& [key, want] : entry.at("kv_scalars").items()) expect_kv(f, key, want);
    return out;
}

// Every golden llama-quantize output of the tiny fixtures (../shared). Outputs that are also
// whole fixture files must be byte-identical to them.
TEST(Requant, GoldenLlamaQuantizeOutputs) {
    OIW_NEED_SHARED("fixtures");
    OIW_NEED_SHARED("golden/llama-quantize.json");
    const Json g = read_json(test::shared_path("golden/llama-quantize.json"));
    ASSERT_EQ(g.size(), 5u);
    const fs::path fixtures = test::shared_path("fixtures");
    size_t whole_files = 0;
    for (const auto& [name, entry] : g.items()) {
        std::vector<std::string> warnings;
        const std::string out = expect_golden_output(name, entry, fixtures, &warnings);
        // The tiny imatrix has no entries for the embedding and the output (llama-imatrix skips
        // them): named per tensor, as llama-quantize's "did not find weights for ...".
        std::vector<std::string> missing;
        for (const auto& w : warnings)
            if (w.starts_with("did not find imatrix weights for ")) missing.push_back(w.substr(0, w.find(':')));
        EXPECT_EQ(warnings.size(), missing.size()) << name;
        if (name.find("-imat") != std::string::npos)
            EXPECT_EQ(missing,
                      (std::vector<std::string>{"did not find imatrix weights for tensor 'output.weight'",
                                                "did not find imatrix weights for tensor 'token_embd.weight'"}))
                << name;
        else
            EXPECT_TRUE(missing.empty()) << name;
        const fs::path fixture = fixtures / name;
        if (fs::exists(fixture)) {
            ++whole_files;
            EXPECT_TRUE(test::read_file(fixture.string()) == test::read_file(out))
                << "not byte-identical to " << fixture;
        }
    }
    EXPECT_EQ(whole_files, 2u);
}

// The vendored goldens (tests/data/golden/llama-quantize-mini.json): llama-quantize's outputs of
// the two mini models, every preset, plain and with the imatrix, and custom rules.
const Json& mini_golden() {
    static const Json g = read_json(test::data_path("golden/llama-quantize-mini.json"));
    return g;
}

bool preset_supported(std::string_view name) {
    for (const RequantPreset& p : requant_presets())
        if (p.name == name) return true;
    return false;
}

// Names of the mini golden entries whose preset gguf-requant supports (or does not), in file order.
std::vector<std::string> mini_entries(bool supported) {
    std::vector<std::string> v;
    for (const auto& [name, entry] : mini_golden().items())
        if (preset_supported(preset_of(entry)) == supported) v.push_back(name);
    return v;
}

class RequantMiniGolden : public testing::TestWithParam<std::string> {};

TEST_P(RequantMiniGolden, ReproducesLlamaQuantize) {
    expect_golden_output(GetParam(), mini_golden().at(GetParam()), test::data_path("models"));
}

INSTANTIATE_TEST_SUITE_P(Mini, RequantMiniGolden, testing::ValuesIn(mini_entries(true)),
                         [](const testing::TestParamInfo<std::string>& info) {
                             std::string n = info.param.substr(0, info.param.size() - 5);  // ".gguf"
                             for (char& c : n)
                                 if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                             return n;
                         });

// Every golden entry runs (112: all 34 of llama-quantize's presets, each supported here) and
// every supported preset has an entry; none is left out.
TEST(RequantMiniGolden, EveryEntryAndEveryPresetIsCovered) {
    std::set<std::string> covered;
    for (const auto& name : mini_entries(true)) covered.insert(preset_of(mini_golden().at(name)));
    EXPECT_EQ(mini_golden().size(), 112u);
    EXPECT_EQ(mini_entries(true).size(), 112u);
    EXPECT_EQ(requant_presets().size(), 34u);
    EXPECT_EQ(covered.size(), requant_presets().size());
    EXPECT_EQ(mini_entries(false), std::vector<std::string>{});
}

// 3-D expert tensors, F32 routers, q/k norms: the MoE fixture is reproduced byte for byte.
TEST(Requant, MoeFixtureIsByteIdentical) {
    OIW_NEED_SHARED("fixtures");
    RequantOptions o;
    o.plan.preset = &find_preset("Q4_K_M");
    const std::string out = (test::temp_dir() / "moe.gguf").string();
    requantize(test::shared_path("fixtures/tiny-moe-f16.gguf"), out, o, 3);
    EXPECT_TRUE(test::read_file(test::shared_path("fixtures/tiny-moe-Q4_K_M.gguf")) == test::read_file(out));
}

// The benchmark baseline (scalar reference kernels) writes the very same file, imatrix included.
TEST(Requant, ReferenceKernelsWriteTheSameFile) {
    RequantOptions o;
    o.plan.preset = &find_preset("Q4_K_M");
    o.imatrix_path = test::data_path("models/mini-llama.imatrix.gguf");
    const std::string fast = (test::temp_dir() / "fast.gguf").string(), ref = (test::temp_dir() / "ref.gguf").string();
    requantize(test::data_path("models/mini-llama-f16.gguf"), fast, o, 2);
    o.reference_kernels = true;
    requantize(test::data_path("models/mini-llama-f16.gguf"), ref, o, 2);
    EXPECT_TRUE(test::read_file(fast) == test::read_file(ref));
}

TEST(Requant, RequantizeNeedsPermission) {
    OIW_NEED_SHARED("fixtures");
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
    EXPECT_EQ(f.metadata().find("general.file_type")->as_int(), 7);
}

TEST(Requant, OutputIsAtomicAndNeverTheInput) {
    const fs::path dir = test::temp_dir();
    const std::string src = (dir / "in.gguf").string();
    fs::copy_file(test::data_path("models/mini-llama-f16.gguf"), src);
    const std::string before = sha256_hex(test::read_file(src));
    RequantOptions o;
    o.plan.preset = &find_preset("Q8_0");
    const std::string e = error_of([&] { requantize(src, src, o, 2); });
    EXPECT_NE(e.find("refusing to overwrite the input"), std::string::npos) << e;
    fs::create_hard_link(src, dir / "alias.gguf");
    EXPECT_NE(error_of([&] { requantize(src, (dir / "alias.gguf").string(), o, 2); }).find("refusing"),
              std::string::npos);
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
    EXPECT_EQ(GgufFile::open(out).metadata().find("general.file_type")->as_int(), 7);
    EXPECT_EQ(sha256_hex(test::read_file(src)), before);
}

// Thread count and scheduling never change the bytes; F32 and F16/BF16 targets go through too.
TEST(Requant, ThreadsDoNotChangeBytes) {
    const std::string src = test::data_path("models/mini-llama-f16.gguf");
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
    EXPECT_EQ(f.metadata().find("general.file_type")->as_int(), 32);
}

TEST(Requant, MetadataOrderAndOverrides) {
    GgufFile in = GgufFile::open(test::data_path("models/mini-llama-f16.gguf"));
    RequantOptions o;
    o.plan.preset = &find_preset("Q4_0");
    o.override_kv = {parse_kv_assignment("general.name=str:renamed"), parse_kv_assignment("oiw.extra=u32:7")};
    RequantJob job = prepare_requant(in, o);
    std::vector<std::string> tail;
    for (size_t i = job.kvs.size() - 4; i < job.kvs.size(); ++i) tail.push_back(job.kvs[i].key);
    EXPECT_EQ(tail, (std::vector<std::string>{"general.quantization_version", "general.file_type", "general.name",
                                              "oiw.extra"}));
    EXPECT_EQ(job.kvs.size(), in.metadata().size() + 2);
    EXPECT_EQ(job.kvs[0].key, "general.architecture");
}

}  // namespace
}  // namespace oiw
