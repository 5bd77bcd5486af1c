// The model view (open_model) and the writer's scale: tools see a model through one function; a
// parsed image owns its bytes; writing 100k keys and 50k tensors is linear.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "libformat/gguf/gguf.h"
#include "libformat/model.h"
#include "tests/support/helpers.h"

namespace oiw {
namespace {

TEST(Model, OpenModelSeesTheFileTensorsMetadataAndBytes) {
    const std::string path = test::data_path("models/mini-llama-f16.gguf");
    const Model m = open_model(path);
    const GgufFile f = GgufFile::open(path);
    EXPECT_TRUE(m.metadata() == f.metadata());
    ASSERT_EQ(m.tensors().size(), f.tensors().size());
    ASSERT_FALSE(m.tensors().empty());
    EXPECT_EQ(m.files(), std::vector<std::string>{path});
    EXPECT_EQ(m.file_size(), std::filesystem::file_size(path));
    EXPECT_TRUE(m.canonical_layout());
    for (size_t i = 0; i < m.tensors().size(); ++i) {
        EXPECT_EQ(m.tensors()[i].name, f.tensors()[i].name);
        EXPECT_EQ(m.find_tensor(m.tensors()[i].name), static_cast<int64_t>(i));
        EXPECT_EQ(m.tensor_file(i), path);
        auto a = m.tensor_data(i), b = f.tensor_data(i);
        EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end())) << m.tensors()[i].name;
    }
    EXPECT_THROW(m.tensor_file(m.tensors().size()), std::out_of_range);
}

// parse() used to keep a view of the caller's buffer: views died with it.
TEST(Model, ParsedImageOwnsItsBytes) {
    auto img = std::make_unique<std::vector<uint8_t>>(test::read_file(test::data_path("models/mini-llama-f16.gguf")));
    const GgufFile f = GgufFile::parse_copy(*img, "mem.gguf");
    const GgufFile ref = GgufFile::open(test::data_path("models/mini-llama-f16.gguf"));
    std::fill(img->begin(), img->end(), 0xAB);
    img.reset();
    ASSERT_EQ(f.tensors().size(), ref.tensors().size());
    for (size_t i = 0; i < f.tensors().size(); ++i) {
        auto a = f.tensor_data(i), b = ref.tensor_data(i);
        EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end())) << f.tensors()[i].name;
    }
    EXPECT_EQ(f.bytes().size(), ref.bytes().size());
    EXPECT_TRUE(std::equal(f.bytes().begin(), f.bytes().end(), ref.bytes().begin()));
}

// Writing 100,000 keys and 50,000 tensors took 21 s (linear scans per add, offsets re-assigned
// per tensor). Linear now: this runs in well under a second; the bound is only a guard against
// going quadratic again, generous enough for sanitizer builds.
TEST(GgufWriterScale, HundredThousandKeysFiftyThousandTensorsAreLinear) {
    const std::string out = (test::temp_dir() / "many.gguf").string();
    const auto start = std::chrono::steady_clock::now();
    GgufWriter w(out);
    for (uint32_t i = 0; i < 100000; ++i)
        w.add_kv({fmt::format("k.{}", i), GgufValue::make_scalar<uint32_t>(GgufType::U32, i)});
    const int64_t shape[] = {32};
    for (uint32_t i = 0; i < 50000; ++i) w.add_tensor(fmt::format("t.{}", i), GgmlType::F32, shape);
    w.add_kv({"general.alignment", GgufValue::make_scalar<uint32_t>(GgufType::U32, 64)});  // re-derives offsets once
    const uint64_t planned = w.planned_size();
    const std::vector<uint8_t> data(128, 1);
    for (uint32_t i = 0; i < 50000; ++i) w.write_tensor_data(data);
    w.finish();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(seconds, 5.0);
    const GgufFile f = GgufFile::open(out);
    EXPECT_EQ(f.file_size(), planned);
    ASSERT_EQ(f.metadata().size(), 100001u);
    EXPECT_EQ(f.metadata()[99999].key, "k.99999");
    ASSERT_EQ(f.tensors().size(), 50000u);
    EXPECT_EQ(f.tensors()[49999].offset, 49999u * 128u);  // 128-byte tensors at 64-byte alignment
    EXPECT_EQ(f.find_tensor("t.31337"), 31337);
}

// general.alignment is capped (kMaxAlignment): a tool setting 2^31 fails with one line instead
// of padding every tensor to 2 GiB.
TEST(GgufWriterScale, AlignmentAboveTheCapIsRefusedByTheWriterAndGgufEdit) {
    const std::string out = (test::temp_dir() / "a.gguf").string();
    GgufWriter w(out);
    try {
        w.add_kv({"general.alignment", GgufValue::make_scalar<uint32_t>(GgufType::U32, 1u << 31)});
        ADD_FAILURE() << "no error";
    } catch (const FormatError& e) {
        EXPECT_EQ(e.kind(), ErrorKind::BadAlignment);
        EXPECT_NE(std::string(e.what()).find("value 2147483648 exceeds the maximum of 65536"), std::string::npos)
            << e.what();
    }
    EXPECT_NO_THROW(w.add_kv({"general.alignment", GgufValue::make_scalar<uint32_t>(GgufType::U32, 65536)}));

    std::string log;
    const std::string edited = (test::temp_dir() / "e.gguf").string();
    EXPECT_EQ(test::run(test::tool_path("gguf-edit") + " " + test::data_path("models/mini-llama-f16.gguf") + " " +
                            edited + " --set general.alignment=u32:2147483648",
                        &log, true),
              2);
    EXPECT_NE(log.find("key 'general.alignment': value 2147483648 exceeds the maximum of 65536"), std::string::npos)
        << log;
    EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;
    EXPECT_FALSE(std::filesystem::exists(edited));
}

// A file without tensors ends at its last key, as gguf-py writes it (a 2^31 alignment used to turn
// 160 bytes into 2 GiB); ggml's padding is kept on request (gguf-requant, gguf-edit of a padded input).
TEST(GgufWriterScale, NoTensorsMeansNoPaddingUnlessAsked) {
    const Metadata kvs({{"general.alignment", GgufValue::make_scalar<uint32_t>(GgufType::U32, 65536)},
                        {"general.name", GgufValue::make_string("vocab")}});
    const uint64_t header = serialize_gguf_header(3, kvs, {}).size();
    for (bool pad : {false, true}) {
        const std::string out = (test::temp_dir() / (pad ? "padded.gguf" : "bare.gguf")).string();
        GgufWriter w(out);
        w.set_kvs(kvs);
        if (pad) w.set_pad_empty(true);
        EXPECT_EQ(w.planned_size(), pad ? 65536u : header);
        w.finish();
        EXPECT_EQ(std::filesystem::file_size(out), pad ? 65536u : header);
        EXPECT_TRUE(GgufFile::open(out).canonical_layout());
    }
}

}  // namespace
}  // namespace oiw
