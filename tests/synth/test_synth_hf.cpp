// gguf-synth --hf: synthetic Hugging Face checkpoints, read back through the checkpoint reader.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "converters/hf/checkpoint.h"
#include "converters/hf/json_doc.h"
#include "converters/synth/synth_hf.h"
#include "libformat/error.h"
#include "libformat/fp16.h"
#include "tests/support/helpers.h"

namespace {

using namespace oiw;
using namespace oiw::test;
namespace fs = std::filesystem;

SynthOptions small(GgmlType type = GgmlType::BF16) {
    SynthOptions o;
    o.n_embd = 64;
    o.n_ff = 96;
    o.n_vocab = 300;
    o.n_layer = 2;
    o.type = type;
    return o;
}

TEST(SynthHf, WritesALlamaCheckpointTheReaderAccepts) {
    const auto dir = temp_dir() / "ck";
    std::vector<std::string> files;
    const uint64_t params = write_synth_hf(dir.string(), small(), {}, &files);
    EXPECT_EQ(listing(dir), (std::vector<std::string>{"config.json", "model.safetensors"}));
    EXPECT_EQ(files.size(), 2u);
    const hf::Checkpoint c(dir.string());
    ASSERT_EQ(c.tensors().size(), 2u + 2 * 9 + 1);
    uint64_t elements = 0;
    for (const hf::TensorRef& r : c.tensors()) {
        EXPECT_EQ(r.tensor->dtype, hf::Dtype::BF16) << r.tensor->name;
        elements += r.tensor->elements;
    }
    EXPECT_EQ(elements, params);
    EXPECT_EQ(c.find("model.layers.1.self_attn.k_proj.weight").tensor->shape, (std::vector<uint64_t>{32, 64}));
    EXPECT_EQ(c.find("model.layers.0.mlp.down_proj.weight").tensor->shape, (std::vector<uint64_t>{64, 96}));
    EXPECT_EQ(c.find("lm_head.weight").tensor->shape, (std::vector<uint64_t>{300, 64}));
    // Norms are 1 + noise, matrices small: the values are what the generator promises.
    const hf::TensorRef norm = c.find("model.norm.weight");
    const auto nb = norm.part->bytes(*norm.tensor);
    for (size_t i = 0; i < nb.size(); i += 2) {
        uint16_t h;
        std::memcpy(&h, nb.data() + i, 2);
        const float x = bf16_to_fp32(h);
        EXPECT_GT(x, 0.0f);
        EXPECT_LT(x, 2.0f);
    }
    const hf::Json cfg = hf::read_json_file((dir / "config.json").string(), 1 << 20, 8);
    EXPECT_EQ(cfg["architectures"][0], "LlamaForCausalLM");
    EXPECT_EQ(cfg["hidden_size"], 64);
    EXPECT_EQ(cfg["num_key_value_heads"], 2);
    EXPECT_EQ(cfg["vocab_size"], 300);
    EXPECT_EQ(cfg["torch_dtype"], "bfloat16");
}

TEST(SynthHf, ShardsWithAnIndexAndStaysDeterministic) {
    const auto base = temp_dir();
    SynthOptions o = small(GgmlType::F16);
    o.tied = true;
    write_synth_hf((base / "a").string(), o, {.max_shard_bytes = 40000});
    write_synth_hf((base / "b").string(), o, {.max_shard_bytes = 40000});
    const auto names = listing(base / "a");
    ASSERT_GE(names.size(), 5u);  // config, index, three shards at least
    EXPECT_EQ(names.front(), "config.json");
    EXPECT_EQ(names.back(), hf::kIndexName);
    for (const std::string& n : names)
        EXPECT_EQ(read_file((base / "a" / n).string()), read_file((base / "b" / n).string())) << n;
    const hf::Checkpoint c((base / "a").string());
    EXPECT_EQ(c.parts().size(), names.size() - 2);
    EXPECT_EQ(c.find("lm_head.weight").tensor, nullptr);  // tied
    for (const auto& p : c.parts()) {
        uint64_t bytes = 0;
        for (const hf::Tensor& t : p->tensors()) bytes += t.size;
        EXPECT_TRUE(bytes <= 40000 || p->tensors().size() == 1) << p->path();
    }
}

TEST(SynthHf, SparseKeepsTheLayoutWithZeroData) {
    const auto base = temp_dir();
    write_synth_hf((base / "dense").string(), small(GgmlType::F32));
    SynthOptions o = small(GgmlType::F32);
    o.sparse = true;
    write_synth_hf((base / "sparse").string(), o);
    const hf::File d((base / "dense" / "model.safetensors").string()),
        s((base / "sparse" / "model.safetensors").string());
    ASSERT_EQ(d.tensors().size(), s.tensors().size());
    for (size_t i = 0; i < d.tensors().size(); ++i) {
        EXPECT_EQ(d.tensors()[i].offset, s.tensors()[i].offset);
        for (uint8_t b : s.bytes(s.tensors()[i])) ASSERT_EQ(b, 0);
    }
}

TEST(SynthHf, RefusesWhatACheckpointCannotHold) {
    const auto base = temp_dir();
    EXPECT_EQ(format_error_of([&] { write_synth_hf((base / "q").string(), small(GgmlType::Q4_0)); }).kind(),
              ErrorKind::Usage);
    SynthOptions moe = small();
    moe.n_expert = 4;
    moe.n_expert_used = 2;
    EXPECT_NE(error_of([&] {
                  write_synth_hf((base / "m").string(), moe);
              }).find("only MixtralForCausalLM, Qwen2MoeForCausalLM and Qwen3MoeForCausalLM have experts"),
              std::string::npos);
    SynthHfOptions mixtral;
    mixtral.arch = "MixtralForCausalLM";
    EXPECT_NE(error_of([&] { write_synth_hf((base / "x").string(), small(), mixtral); }).find("needs --n-expert"),
              std::string::npos);
    moe.n_expert_used = 5;
    EXPECT_NE(error_of([&] { write_synth_hf((base / "y").string(), moe, mixtral); }).find("--n-expert-used must be"),
              std::string::npos);
    write_file((base / "file").string(), std::vector<uint8_t>{1});
    EXPECT_EQ(format_error_of([&] { write_synth_hf((base / "file").string(), small()); }).kind(), ErrorKind::Io);
}

TEST(SynthHf, ToolWritesTheSameCheckpoint) {
    const auto base = temp_dir();
    write_synth_hf((base / "lib").string(), small());
    std::string out;
    ASSERT_EQ(run(tool_path("gguf-synth") + " --hf -q --type BF16 --n-embd 64 --n-ff 96 --n-vocab 300 " +
                      (base / "tool").string(),
                  &out, true),
              0)
        << out;
    for (const std::string& n : listing(base / "lib"))
        EXPECT_EQ(read_file((base / "lib" / n).string()), read_file((base / "tool" / n).string())) << n;
    EXPECT_NE(run(tool_path("gguf-synth") + " --hf --imatrix x " + (base / "t2").string(), &out, true), 0);
    EXPECT_NE(out.find("--hf"), std::string::npos) << out;
}

}  // namespace
