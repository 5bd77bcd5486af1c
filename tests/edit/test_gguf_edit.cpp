// gguf-edit: byte-exact copies, metadata edits that keep tensor bytes, bad arguments.
#include <gtest/gtest.h>

#include "converters/edit/gguf_edit.h"
#include "converters/synth/synth.h"
#include "tests/support/helpers.h"
#include "tools/common/tool_support.h"

namespace oiw {
namespace {

TEST(GgufEdit, NoEditIsByteExactCopyOfEveryFixture) {
    for (const auto& f : test::fixture_files()) {
        SCOPED_TRACE(f);
        std::string out = (test::temp_dir() / "o.gguf").string();
        std::string log;
        ASSERT_EQ(test::run(test::tool_path("gguf-edit") + " -q '" + f + "' '" + out + "'", &log, true), 0) << log;
        EXPECT_TRUE(test::read_file(f) == test::read_file(out));
    }
}

TEST(GgufEdit, SetRemoveRenameKeepTensorBytes) {
    std::string src = test::data_path("models/mini-moe-f16.gguf");
    GgufFile in = GgufFile::open(src);
    EditPlan plan;
    plan.set.push_back(parse_kv_assignment("general.name=str:renamed"));
    plan.set.push_back(parse_kv_assignment("oiw.test=u32:7"));
    plan.remove.push_back("general.file_type");
    plan.renames.push_back({"output.weight", "lm_head.weight"});
    std::string out = (test::temp_dir() / "edited.gguf").string();
    EditResult r = write_edited(in, plan, out);
    EXPECT_EQ(r.kv_set, 1u);
    EXPECT_EQ(r.kv_added, 1u);
    EXPECT_EQ(r.kv_removed, 1u);
    EXPECT_EQ(r.tensors_renamed, 1u);
    GgufFile o = GgufFile::open(out);
    EXPECT_EQ(*o.metadata().find("general.name")->as_string(), "renamed");
    EXPECT_EQ(o.metadata().find("oiw.test")->as_int(), 7);
    EXPECT_EQ(o.metadata().find("general.file_type"), nullptr);
    EXPECT_EQ(o.metadata().size(), in.metadata().size());
    // Position of an edited key is kept; the new key is appended.
    EXPECT_EQ(o.metadata()[1].key, in.metadata()[1].key);
    EXPECT_EQ(o.metadata().back().key, "oiw.test");
    ASSERT_EQ(o.tensors().size(), in.tensors().size());
    for (size_t i = 0; i < in.tensors().size(); ++i) {
        const std::string want = in.tensors()[i].name == "output.weight" ? "lm_head.weight" : in.tensors()[i].name;
        EXPECT_EQ(o.tensors()[i].name, want);
        auto a = in.tensor_data(i), b = o.tensor_data(i);
        ASSERT_EQ(a.size(), b.size());
        EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size()), 0) << want;
    }
}

TEST(GgufEdit, StringArrayFromFile) {
    auto dir = test::temp_dir();
    std::string list = (dir / "list.txt").string();
    std::string txt = "alpha\nbeta gamma\n\ndelta\n";
    test::write_file(list, {reinterpret_cast<const uint8_t*>(txt.data()), txt.size()});
    GgufKV kv = parse_string_array_assignment("my.list=str:@" + list);
    ASSERT_EQ(kv.value.count(), 4u);
    EXPECT_EQ(kv.value.strings(), (std::vector<std::string>{"alpha", "beta gamma", "", "delta"}));
    std::string out = (dir / "o.gguf").string(), log;
    ASSERT_EQ(test::run(test::tool_path("gguf-edit") + " -q " + test::data_path("models/mini-llama-f16.gguf") + " " +
                            out + " --set-array my.list=str:@" + list,
                        &log, true),
              0)
        << log;
    EXPECT_EQ(GgufFile::open(out).metadata().find("my.list")->strings().size(), 4u);
}

TEST(GgufEdit, BadArgumentsExitTwoWithOneLine) {
    std::string src = test::data_path("models/mini-llama-f16.gguf");
    auto dir = test::temp_dir();
    std::string out = (dir / "o.gguf").string();
    const std::pair<std::string, std::string> cases[] = {
        {"--set general.name=xyz:1", "unknown value type 'xyz'"},
        {"--set a.b=u8:256", "key 'a.b': '256' is not a base-10 integer from 0 to 255 (u8)"},
        {"--set a.b=bool:maybe", "not a bool"},
        {"--remove no.such.key", "key 'no.such.key': cannot remove"},
        {"--rename-tensor nope=x", "tensor 'nope': cannot rename"},
        {"--rename-tensor output_norm.weight=token_embd.weight", "name already exists"},
    };
    for (const auto& [args, msg] : cases) {
        std::string log;
        EXPECT_EQ(test::run(test::tool_path("gguf-edit") + " " + src + " " + out + " " + args, &log, true), 2) << args;
        EXPECT_NE(log.find(msg), std::string::npos) << args << " -> " << log;
        EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;
        EXPECT_FALSE(std::filesystem::exists(out));
    }
    std::string log;
    EXPECT_EQ(test::run(test::tool_path("gguf-edit") + " " + src + " " + src, &log, true), 2);
    EXPECT_NE(log.find("refusing to overwrite the input"), std::string::npos) << log;
    EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), {}), 0) << "temp files left behind";
}

TEST(Samples, BundledSampleIsRegeneratedByteForByte) {
    SynthOptions o;
    o.name = "oiw-sample";
    o.n_embd = 192;
    o.n_layer = 2;
    o.n_ff = 256;
    o.n_vocab = 512;
    o.n_head = 4;
    o.n_head_kv = 2;
    o.seed = 7;
    std::string out = (test::temp_dir() / "sample.gguf").string();
    write_synth_model(out, o);
    auto want = test::read_file(std::string(OIW_SOURCE_DIR) + "/samples/oiw-sample.gguf");
    EXPECT_LE(want.size(), 2u << 20);
    EXPECT_TRUE(test::read_file(out) == want) << "scripts/make-sample and this test disagree";
}

}  // namespace
}  // namespace oiw
