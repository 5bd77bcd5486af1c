// Importance matrices as llama-quantize loads and uses them: the GGUF format of the fixtures, the
// legacy .dat format, filters, malformed files, entries of the wrong length, per-expert slices.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <tuple>

#include "converters/quant/quants.h"
#include "converters/requant/imatrix.h"
#include "converters/requant/requant.h"
#include "libformat/gguf/gguf.h"
#include "libformat/io/hash.h"
#include "tests/support/helpers.h"

namespace oiw {
namespace {
using Json = nlohmann::ordered_json;

using test::error_of;

std::span<const float> floats(const GgufFile& f, const std::string& name) {
    auto b = f.tensor_data(static_cast<size_t>(f.find_tensor(name)));
    return {reinterpret_cast<const float*>(b.data()), b.size() / 4};
}

TEST(RequantImatrix, GgufFixture) {
    OIW_NEED_SHARED("fixtures");
    const std::string path = test::shared_path("fixtures/tiny-llama.imatrix.gguf");
    Imatrix m = load_imatrix(path);
    EXPECT_EQ(m.entries.size(), 28u);
    EXPECT_EQ(m.datasets, std::vector<std::string>{"calib.txt"});
    EXPECT_EQ(m.chunk_count, 16);
    GgufFile raw = GgufFile::open(path);
    auto sums = floats(raw, "blk.3.ffn_down.weight.in_sum2");
    const float count = floats(raw, "blk.3.ffn_down.weight.counts")[0];
    const auto& v = m.entries.at("blk.3.ffn_down.weight");
    ASSERT_EQ(v.size(), 768u);
    for (size_t i = 0; i < v.size(); ++i) ASSERT_EQ(v[i], sums[i] / count) << i;
}

// Writes a GGUF imatrix with the given F32 tensors and (optionally) the imatrix.* metadata.
void write_gguf_imatrix(const std::string& path, const std::vector<std::pair<std::string, std::vector<float>>>& tensors,
                        bool metadata) {
    GgufWriter w(path);
    if (metadata) {
        w.add_kv({"imatrix.datasets", GgufValue::make_string_array({"a.txt", "b.txt"})});
        w.add_kv({"imatrix.chunk_count", GgufValue::make_scalar<uint32_t>(GgufType::U32, 5)});
        w.add_kv({"imatrix.chunk_size", GgufValue::make_scalar<uint32_t>(GgufType::U32, 512)});
    }
    for (const auto& [name, v] : tensors) {
        const std::vector<int64_t> shape = {static_cast<int64_t>(v.size())};
        w.add_tensor(name, GgmlType::F32, shape);
    }
    for (const auto& [name, v] : tensors)
        w.write_tensor_data({reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(float)});
    w.finish();
}

TEST(RequantImatrix, GgufPerExpertCountsAndMalformedFiles) {
    // A fresh file per case: a file this process read is an input of the run, never rewritten.
    const std::filesystem::path dir = test::temp_dir();
    std::string path = (dir / "m.gguf").string();
    // Two matrices of 4 columns, each divided by its own count.
    write_gguf_imatrix(path, {{"x.weight.in_sum2", {2, 4, 6, 8, 1, 2, 3, 4}}, {"x.weight.counts", {2, 4}}}, true);
    Imatrix m = load_imatrix(path);
    EXPECT_EQ(m.entries.at("x.weight"), (std::vector<float>{1, 2, 3, 4, 0.25f, 0.5f, 0.75f, 1}));
    EXPECT_EQ(m.datasets, (std::vector<std::string>{"a.txt", "b.txt"}));
    EXPECT_EQ(m.chunk_count, 5);

    path = (dir / "m2.gguf").string();
    write_gguf_imatrix(path, {{"x.weight.in_sum2", {1, 2}}}, true);
    std::string e = error_of([&] { load_imatrix(path); });
    EXPECT_NE(e.find("'x.weight'"), std::string::npos) << e;
    EXPECT_NE(e.find("in_sum2 without counts"), std::string::npos) << e;

    path = (dir / "m3.gguf").string();
    write_gguf_imatrix(path, {{"x.weight.in_sum2", {1, 2}}, {"x.weight.counts", {1}}}, false);
    EXPECT_NE(error_of([&] { load_imatrix(path); }).find("missing imatrix metadata"), std::string::npos);

    path = (dir / "m4.gguf").string();
    write_gguf_imatrix(path, {{"x.weight.in_sum2", {1, 2, 3}}, {"x.weight.counts", {1, 1}}}, true);
    EXPECT_NE(error_of([&] { load_imatrix(path); }).find("do not split"), std::string::npos);
}

struct LegacyEntry {
    std::string name;
    int32_t ncall;
    std::vector<float> sums;
};

// A legacy .dat image; `trailer` = (chunk count, data set name) of newer files.
std::vector<uint8_t> legacy(const std::vector<LegacyEntry>& entries,
                            const std::optional<std::pair<int32_t, std::string>>& trailer = std::nullopt) {
    std::vector<uint8_t> b;
    auto put = [&](const void* p, size_t n) {
        b.insert(b.end(), static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n);
    };
    auto i32 = [&](int32_t v) { put(&v, 4); };
    i32(static_cast<int32_t>(entries.size()));
    for (const auto& e : entries) {
        i32(static_cast<int32_t>(e.name.size()));
        put(e.name.data(), e.name.size());
        i32(e.ncall);
        i32(static_cast<int32_t>(e.sums.size()));
        put(e.sums.data(), e.sums.size() * 4);
    }
    if (trailer) {
        i32(trailer->first);
        i32(static_cast<int32_t>(trailer->second.size()));
        put(trailer->second.data(), trailer->second.size());
    }
    return b;
}

// Writes importance `values` as a legacy .dat whose sums are values * ncall.
void write_legacy(const std::string& path, const std::map<std::string, std::vector<float>>& values, int32_t ncall) {
    std::vector<LegacyEntry> entries;
    for (const auto& [name, v] : values) {
        LegacyEntry e{name, ncall, v};
        for (float& x : e.sums) x *= static_cast<float>(ncall);
        entries.push_back(std::move(e));
    }
    test::write_file(path, legacy(entries, std::make_pair(16, std::string("calib.txt"))));
}

TEST(RequantImatrix, LegacyFormat) {
    const std::string path = (test::temp_dir() / "m.dat").string();
    test::write_file(path, legacy({{"a.weight", 3, {3, 6, 1}}, {"b.weight", 1, {5, 7}}},
                                  std::make_pair(42, std::string("wiki.txt"))));
    Imatrix m = load_imatrix(path);
    EXPECT_EQ(m.entries.at("a.weight"), (std::vector<float>{1, 2, 1.0f / 3}));
    EXPECT_EQ(m.entries.at("b.weight"), (std::vector<float>{5, 7}));
    EXPECT_EQ(m.chunk_count, 42);
    EXPECT_EQ(m.datasets, std::vector<std::string>{"wiki.txt"});

    test::write_file(path, legacy({{"a.weight", 1, {1}}}));
    m = load_imatrix(path);
    EXPECT_EQ(m.chunk_count, 0);
    EXPECT_TRUE(m.datasets.empty());

    auto bytes = legacy({{"a.weight", 1, {1, 2, 3, 4}}});
    bytes.resize(bytes.size() - 3);
    test::write_file(path, bytes);
    std::string e = error_of([&] { load_imatrix(path); });
    EXPECT_NE(e.find("truncated"), std::string::npos) << e;
    EXPECT_NE(e.find(path), std::string::npos) << e;
    test::write_file(path, legacy({}));
    EXPECT_NE(error_of([&] { load_imatrix(path); }).find("no imatrix entries"), std::string::npos);
}

// Statistics that would zero or poison the weighted tensors are refused, naming the entry: in
// GGUF files (per matrix) and legacy files alike.
TEST(RequantImatrix, PoisonedValuesAndCountsAreRefused) {
    const float inf = std::numeric_limits<float>::infinity();
    const std::vector<std::tuple<std::vector<float>, std::vector<float>, std::string>> gguf_cases = {
        {{1, 2, 3, 4}, {0, 1}, "entry 'x.weight': the count of matrix 0 is 0 (must be positive)"},
        {{1, 2, 3, 4}, {1, -2}, "entry 'x.weight': the count of matrix 1 is -2 (must be positive)"},
        {{1, 2, 3, 4}, {1, NAN}, "entry 'x.weight': the count of matrix 1 is nan (must be positive)"},
        {{1, 2, 3, 4}, {1, inf}, "entry 'x.weight': the count of matrix 1 is inf (must be positive)"},
        {{1, -2, 3, 4}, {1, 1}, "entry 'x.weight': negative importance value -2 at index 1"},
        {{1, 2, NAN, 4}, {1, 1}, "entry 'x.weight': non-finite importance value nan at index 2"},
        {{1, 2, 3, inf}, {1, 1}, "entry 'x.weight': non-finite importance value inf at index 3"},
        {{1, 2, 0, 0}, {1, 1}, "entry 'x.weight': importance values of matrix 1 are all zero"},
        {{0, 0}, {1}, "entry 'x.weight': importance values are all zero"},
    };
    for (size_t i = 0; i < gguf_cases.size(); ++i) {
        const auto& [sums, counts, want] = gguf_cases[i];
        // A fresh file per case: a file this process read is an input of the run, never rewritten.
        const std::string path = (test::temp_dir() / fmt::format("bad{}.gguf", i)).string();
        write_gguf_imatrix(path, {{"x.weight.in_sum2", sums}, {"x.weight.counts", counts}}, true);
        EXPECT_EQ(error_of([&] { load_imatrix(path); }), path + ": " + want);
    }
    const std::string dat = (test::temp_dir() / "bad.dat").string();
    const std::vector<std::tuple<int32_t, std::vector<float>, std::string>> legacy_cases = {
        {0, {1, 2}, "entry 'x.weight': the call count is 0 (must be positive)"},
        {-3, {1, 2}, "entry 'x.weight': the call count is -3 (must be positive)"},
        {1, {-1, 2}, "entry 'x.weight': negative importance value -1 at index 0"},
        {1, {1, inf}, "entry 'x.weight': non-finite importance value inf at index 1"},
        {2, {0, 0, 0}, "entry 'x.weight': importance values are all zero"},
    };
    for (const auto& [ncall, sums, want] : legacy_cases) {
        test::write_file(dat, legacy({{"x.weight", ncall, sums}}));
        EXPECT_EQ(error_of([&] { load_imatrix(dat); }), dat + ": " + want);
    }
}

// An imatrix written with general.alignment = 1 places its F32 data at odd file offsets: the
// loader copies the bytes out instead of reading floats through a misaligned pointer (UBSan
// flags that in the sanitizer build).
TEST(RequantImatrix, AlignmentOneFileIsReadByteExact) {
    const std::vector<float> sums = {2, 4, 6, 8, 10, 12}, counts = {2};
    std::string path;
    for (size_t pad = 0; pad < 4; ++pad) {
        path = (test::temp_dir() / fmt::format("align1-{}.gguf", pad)).string();  // fresh: opened files are inputs
        GgufWriter w(path);
        w.add_kv({"general.alignment", GgufValue::make_scalar<uint32_t>(GgufType::U32, 1)});
        w.add_kv({"imatrix.datasets", GgufValue::make_string_array({std::string(pad + 1, 'd')})});
        w.add_kv({"imatrix.chunk_count", GgufValue::make_scalar<uint32_t>(GgufType::U32, 1)});
        w.add_kv({"imatrix.chunk_size", GgufValue::make_scalar<uint32_t>(GgufType::U32, 512)});
        const int64_t ns[] = {6}, nc[] = {1};
        w.add_tensor("x.weight.counts", GgmlType::F32, nc);
        w.add_tensor("x.weight.in_sum2", GgmlType::F32, ns);
        w.write_tensor_data({reinterpret_cast<const uint8_t*>(counts.data()), 4});
        w.write_tensor_data({reinterpret_cast<const uint8_t*>(sums.data()), sums.size() * 4});
        w.finish();
        GgufFile f = GgufFile::open(path);
        if (f.data_offset() % 4 != 0) break;
    }
    GgufFile f = GgufFile::open(path);
    ASSERT_EQ(f.alignment(), 1u);
    ASSERT_NE(f.data_offset() % 4, 0u) << "the test needs misaligned data";
    Imatrix m = load_imatrix(path);
    EXPECT_EQ(m.entries.at("x.weight"), (std::vector<float>{1, 2, 3, 4, 5, 6}));
}

TEST(RequantImatrix, IncludeExcludeFilters) {
    OIW_NEED_SHARED("fixtures");
    Imatrix m = load_imatrix(test::shared_path("fixtures/tiny-llama.imatrix.gguf"));
    Imatrix inc = m;
    filter_imatrix(inc, {"attn_v", "blk.0.ffn_down"}, {});
    EXPECT_EQ(inc.entries.size(), 5u);
    Imatrix exc = m;
    filter_imatrix(exc, {}, {"ffn_"});
    EXPECT_EQ(exc.entries.size(), 16u);

    RequantOptions o;
    o.plan.preset = &find_preset("Q4_K_M");
    o.imatrix_path = test::shared_path("fixtures/tiny-llama.imatrix.gguf");
    o.include_weights = {"attn_v"};
    o.exclude_weights = {"ffn_"};
    GgufFile in = GgufFile::open(test::shared_path("fixtures/tiny-llama-f16.gguf"));
    EXPECT_NE(error_of([&] { prepare_requant(in, o); }).find("cannot be used together"), std::string::npos);
    // Everything filtered out: no imatrix at all, and no quantize.imatrix.* keys.
    o.include_weights = {"no-such-tensor"};
    o.exclude_weights.clear();
    RequantJob job = prepare_requant(in, o);
    EXPECT_TRUE(job.imatrix.empty());
    for (const auto& kv : job.kvs) EXPECT_EQ(kv.key.rfind("quantize.", 0), std::string::npos) << kv.key;
}

TEST(RequantImatrix, NonFiniteValuesAreRefused) {
    const std::string path = (test::temp_dir() / "nan.dat").string();
    write_legacy(path, {{"blk.0.attn_q.weight", std::vector<float>(256, NAN)}}, 1);
    RequantOptions o;
    o.plan.preset = &find_preset("Q8_0");
    o.imatrix_path = path;
    GgufFile in = GgufFile::open(test::data_path("models/mini-llama-f16.gguf"));
    std::string e = error_of([&] { prepare_requant(in, o); });
    EXPECT_NE(e.find("blk.0.attn_q.weight"), std::string::npos) << e;
    EXPECT_NE(e.find("non-finite"), std::string::npos) << e;
}

// llama-quantize refuses to write IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S and IQ3_XXS tensors without
// importance data (tensor_requires_imatrix; token_embd and output are exempt): every IQ1/IQ2
// preset, IQ3_XXS (attn_k: IQ2_S) and IQ3_XS (attn_k: IQ3_XXS). The first such tensor in output
// order is named; a dry run reports it as a warning. IQ3_S, IQ3_M and the ternaries need none.
TEST(RequantImatrix, LowBitIQuantsNeedAnImatrix) {
    GgufFile in = GgufFile::open(test::data_path("models/mini-llama-f16.gguf"));
    const std::pair<const char*, const char*> needs[] = {
        {"IQ2_XXS", "IQ2_XXS"}, {"IQ2_XS", "IQ2_XS"}, {"IQ2_S", "IQ2_XS"},  {"IQ2_M", "IQ2_S"},
        {"IQ1_S", "IQ1_S"},     {"IQ1_M", "IQ1_M"},   {"IQ3_XXS", "IQ2_S"}, {"IQ3_XS", "IQ3_XXS"}};
    for (const auto& [preset, type] : needs) {
        SCOPED_TRACE(preset);
        RequantOptions o;
        o.plan.preset = &find_preset(preset);
        EXPECT_EQ(error_of([&] { prepare_requant(in, o); }),
                  fmt::format("{}: tensor 'blk.0.attn_k.weight': {} needs an importance matrix (pass --imatrix)",
                              in.path(), type));
        o.dry_run = true;
        const RequantJob job = prepare_requant(in, o);
        EXPECT_FALSE(job.writable);
        ASSERT_FALSE(job.plan.warnings.empty());
        EXPECT_NE(job.plan.warnings.back().find("needs an importance matrix"), std::string::npos)
            << job.plan.warnings.back();
    }
    for (const char* preset : {"IQ3_S", "IQ3_M", "TQ1_0", "TQ2_0", "MXFP4_MOE"}) {
        RequantOptions o;
        o.plan.preset = &find_preset(preset);
        EXPECT_TRUE(prepare_requant(in, o).writable) << preset;
    }
    // An imatrix without the tensor's entry does not do either.
    RequantOptions o;
    o.plan.preset = &find_preset("IQ2_XXS");
    o.imatrix_path = test::data_path("models/mini-llama.imatrix.gguf");
    EXPECT_TRUE(prepare_requant(in, o).writable);
    o.exclude_weights = {"blk.1.attn_q"};
    EXPECT_EQ(
        error_of([&] { prepare_requant(in, o); }),
        in.path() +
            ": tensor 'blk.1.attn_q.weight': IQ2_XXS needs an importance matrix, and the imatrix has no entry for it");
}

std::string tensor_sha(const GgufFile& f, const std::string& name) {
    const int64_t i = f.find_tensor(name);
    return i < 0 ? "(missing)" : sha256_hex(f.tensor_data(static_cast<size_t>(i)));
}

// The legacy .dat format carries the same statistics: same quantized bytes as the GGUF imatrix.
TEST(RequantImatrix, LegacyImatrixGivesTheSameTensors) {
    OIW_NEED_SHARED("fixtures");
    OIW_NEED_SHARED("golden/llama-quantize.json");
    Imatrix m = load_imatrix(test::shared_path("fixtures/tiny-llama.imatrix.gguf"));
    const std::string dat = (test::temp_dir() / "legacy.dat").string();
    write_legacy(dat, m.entries, 4);
    RequantOptions o;
    o.plan.preset = &find_preset("Q4_K_M");
    o.imatrix_path = dat;
    const std::string out = (test::temp_dir() / "legacy-imat.gguf").string();
    requantize(test::shared_path("fixtures/tiny-llama-f16.gguf"), out, o, 2);
    GgufFile f = GgufFile::open(out);
    auto text = test::read_file(test::shared_path("golden/llama-quantize.json"));
    const Json want = Json::parse(std::string(text.begin(), text.end())).at("tiny-llama-Q4_K_M-imat.gguf");
    for (const auto& [tname, t] : want.at("tensors").items())
        EXPECT_EQ(tensor_sha(f, tname), t.at("sha256").get<std::string>()) << tname;
    EXPECT_EQ(*f.metadata().find("quantize.imatrix.file")->as_string(), dat);
    EXPECT_EQ(*f.metadata().find("quantize.imatrix.dataset")->as_string(), "calib.txt");
    EXPECT_EQ(f.metadata().find("quantize.imatrix.entries_count")->as_int(), 28);
    EXPECT_EQ(f.metadata().find("quantize.imatrix.chunks_count")->as_int(), 16);
}

TEST(RequantImatrix, ImatrixWithWrongLengthNamesTheTensor) {
    OIW_NEED_SHARED("fixtures");
    Imatrix m = load_imatrix(test::shared_path("fixtures/tiny-llama.imatrix.gguf"));
    m.entries["blk.2.ffn_up.weight"].resize(128);
    const std::string dat = (test::temp_dir() / "short.dat").string();
    write_legacy(dat, m.entries, 1);
    RequantOptions o;
    o.plan.preset = &find_preset("Q4_K_M");
    o.imatrix_path = dat;
    GgufFile in = GgufFile::open(test::shared_path("fixtures/tiny-llama-f16.gguf"));
    const std::string e = error_of([&] { prepare_requant(in, o); });
    EXPECT_NE(e.find("blk.2.ffn_up.weight"), std::string::npos) << e;
    EXPECT_NE(e.find("128"), std::string::npos) << e;
    // Excluding the entry makes the imatrix usable again, and is reflected in entries_count.
    o.exclude_weights = {"blk.2.ffn_up"};
    RequantJob job = prepare_requant(in, o);
    EXPECT_EQ(job.imatrix.size(), 27u);
    bool counted = false;
    for (const auto& kv : job.kvs) counted |= kv.key == "quantize.imatrix.entries_count" && kv.value.as_int() == 27;
    EXPECT_TRUE(counted);
}

// Q4_K_M's expert tensors get each expert's own slice of the importance weights.
TEST(RequantImatrix, ExpertImatrixSlicesPerExpert) {
    OIW_NEED_SHARED("fixtures");
    const std::string src = test::shared_path("fixtures/tiny-moe-f16.gguf");
    GgufFile in = GgufFile::open(src);
    const std::string name = "blk.1.ffn_up_exps.weight";
    const GgufTensorInfo& t = in.tensors()[static_cast<size_t>(in.find_tensor(name))];
    const int64_t ne0 = t.ne[0], ne1 = t.ne[1], n_exp = t.ne[2];
    std::vector<float> w(static_cast<size_t>(ne0 * n_exp));
    for (size_t i = 0; i < w.size(); ++i) w[i] = 0.25f + static_cast<float>((i * 7919) % 97) / 8.0f;
    const std::string dat = (test::temp_dir() / "moe.dat").string();
    write_legacy(dat, {{name, w}}, 1);
    RequantOptions o;
    o.plan.preset = &find_preset("Q4_K_M");
    o.imatrix_path = dat;
    const std::string out = (test::temp_dir() / "moe-imat.gguf").string();
    requantize(src, out, o, 2);
    GgufFile f = GgufFile::open(out);
    const GgufTensorInfo& q = f.tensors()[static_cast<size_t>(f.find_tensor(name))];
    ASSERT_EQ(q.type, GgmlType::Q4_K);

    std::vector<float> rows(static_cast<size_t>(ne0 * ne1 * n_exp));
    dequantize_row(t.type, in.tensor_data(static_cast<size_t>(in.find_tensor(name))).data(), rows.data(),
                   ne0 * ne1 * n_exp);
    std::vector<uint8_t> want(q.n_bytes);
    const uint64_t per_expert = row_size(GgmlType::Q4_K, ne0) * static_cast<uint64_t>(ne1);
    for (int64_t e = 0; e < n_exp; ++e)
        quantize_chunk(GgmlType::Q4_K, rows.data() + e * ne0 * ne1, want.data() + e * per_expert, ne1, ne0,
                       w.data() + e * ne0);
    auto got = f.tensor_data(static_cast<size_t>(f.find_tensor(name)));
    EXPECT_TRUE(std::equal(got.begin(), got.end(), want.begin(), want.end()));
}

}  // namespace
}  // namespace oiw
