// gguf-convert --preset / --plan: the bytes of `gguf-convert --outtype T` followed by gguf-requant,
// written without the intermediate file. Both halves are pinned to the real tools elsewhere
// (tests/data/hf/goldens.txt: convert_hf_to_gguf.py; the requant goldens: llama-quantize), so the
// one-step output is checked against the two-step one, byte for byte, across architectures,
// presets, imatrix, plans, threads and splits; and the refusals leave nothing behind.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "converters/synth/synth_imatrix.h"
#include "libformat/model.h"
#include "tests/support/helpers.h"
#include "tests/support/hf_fixtures.h"

namespace {

using namespace oiw;
using namespace oiw::test;
namespace fs = std::filesystem;

// Checkpoints whose rows are multiples of 256 (K-quants without fallbacks), one per family: the q/k
// permutation (Llama), biases (Qwen2), q/k norms and a wider head (Qwen3), stacked experts and an
// F32 router (Mixtral), shifted norms and a tied embedding (Gemma3), fused projections (Phi3); BF16,
// F16 and F32 sources; an FP8 release (Mixtral, 128 x 128 block scales).
const char* const kCheckpoints[][2] = {
    {"llama", "--type BF16 --n-embd 256 --n-ff 768 --n-vocab 416 --n-layer 2"},
    {"qwen2", "--hf-arch Qwen2ForCausalLM --type F16 --n-embd 256 --n-ff 512 --n-vocab 416 --n-layer 1"},
    {"qwen3", "--hf-arch Qwen3ForCausalLM --type F32 --n-embd 256 --n-ff 512 --n-vocab 416 --n-layer 1 --head-dim 64"},
    {"mixtral",
     "--hf-arch MixtralForCausalLM --type BF16 --n-embd 256 --n-ff 512 --n-vocab 416 --n-layer 1 "
     "--n-expert 4 --n-expert-used 2"},
    {"gemma3",
     "--hf-arch Gemma3ForCausalLM --type F16 --n-embd 256 --n-ff 512 --n-vocab 416 --n-layer 1 "
     "--head-dim 64 --tied"},
    {"phi3", "--hf-arch Phi3ForCausalLM --type BF16 --n-embd 256 --n-ff 512 --n-vocab 416 --n-layer 1"},
    {"mixtral-fp8",
     "--hf-arch MixtralForCausalLM --type BF16 --n-embd 256 --n-ff 512 --n-vocab 416 --n-layer 1 --n-expert 4 "
     "--n-expert-used 2 --hf-fp8 128x128"},
};

// Runs `cmd`, expecting exit status `rc`; returns its output (stderr merged).
std::string expect_run(const std::string& cmd, int rc) {
    std::string out;
    EXPECT_EQ(run(cmd, &out, true), rc) << cmd << "\n" << out;
    return out;
}

struct TwoStep {
    fs::path dir, ck, f16;  // outputs' directory, the checkpoint (in another), the intermediate file
};

// A checkpoint and, in dir, its `gguf-convert --outtype outtype` output.
TwoStep make(const std::string& args, const std::string& outtype = "f16") {
    TwoStep s;
    s.dir = temp_dir();
    s.ck = make_synth(args, temp_dir() / "ck");
    s.f16 = s.dir / ("converted-" + outtype + ".gguf");
    expect_run(
        fmt::format("{} {} {} --outtype {} -q", tool_path("gguf-convert"), s.ck.string(), s.f16.string(), outtype), 0);
    return s;
}

// gguf-requant of the intermediate file and gguf-convert straight from the checkpoint, with the same
// extra `opts`; expects the same bytes.
void expect_same(const TwoStep& s, const std::string& opts, const std::string& convert_opts = "") {
    const fs::path a = s.dir / "two-step.gguf", b = s.dir / "one-step.gguf";
    expect_run(fmt::format("{} {} {} {} -q", tool_path("gguf-requant"), s.f16.string(), a.string(), opts), 0);
    expect_run(
        fmt::format("{} {} {} {} {} -q", tool_path("gguf-convert"), s.ck.string(), b.string(), opts, convert_opts), 0);
    EXPECT_EQ(sha256_hex(read_file(b.string())), sha256_hex(read_file(a.string()))) << opts << " " << convert_opts;
    fs::remove(a);
    fs::remove(b);
}

TEST(HfConvertRequant, PresetIsConvertThenRequantForEveryFamily) {
    for (const auto& [name, args] : kCheckpoints) {
        SCOPED_TRACE(name);
        const TwoStep s = make(args);
        for (const char* preset : {"Q4_K_M", "Q8_0", "Q2_K", "Q5_K_S", "IQ4_XS", "Q4_0"})
            expect_same(s, fmt::format("--preset {}", preset));
    }
}

// Tensors the converter computes (Llama 3's rope_freqs, Phi3's LongRoPE factors) or cuts (the
// multimodal Gemma3's embedding) reach the requantizer as the intermediate file holds them.
TEST(HfConvertRequant, ComputedAndCutTensorsGoThroughThePreset) {
    for (const char* name : {"Llama-3.2-1B-Instruct", "Phi-3-mini-128k-instruct", "gemma-3-4b-it"}) {
        SCOPED_TRACE(name);
        TwoStep s;
        s.dir = temp_dir();
        s.ck = make_hf_case(name, temp_dir());
        s.f16 = s.dir / "converted-f16.gguf";
        expect_run(fmt::format("{} {} {} --outtype f16 -q", tool_path("gguf-convert"), s.ck.string(), s.f16.string()),
                   0);
        expect_same(s, "--preset Q4_K_M");
    }
}

TEST(HfConvertRequant, SameBytesForEveryThreadCountAndIntermediateType) {
    const TwoStep s = make(kCheckpoints[0][1]);
    for (int t : {1, 2, 3, 7}) expect_same(s, "--preset Q4_K_M", fmt::format("-t {}", t));
    const TwoStep b = make(kCheckpoints[0][1], "bf16");
    expect_same(b, "--preset Q6_K", "--outtype bf16");
}

TEST(HfConvertRequant, ImatrixTypeRulesAndSplits) {
    const TwoStep s = make(kCheckpoints[0][1]);
    const fs::path im = s.dir / "imatrix.gguf";
    ASSERT_GT(write_synth_imatrix(im.string(), open_model(s.f16.string()), 7), 0u);
    expect_same(s, "--preset IQ2_XS --imatrix " + im.string());
    expect_same(s, "--preset Q4_K_M --imatrix " + im.string());
    expect_same(s,
                "--preset Q4_K_M --tensor-type 'ffn_down=Q8_0' --output-tensor-type Q4_K --token-embedding-type "
                "Q3_K --pure");

    // Shards as gguf-requant cuts them: every shard the same bytes.
    expect_run(fmt::format("{} {} {} --preset Q8_0 --split-max-tensors 7 -q", tool_path("gguf-requant"), s.f16.string(),
                           (s.dir / "a.gguf").string()),
               0);
    expect_run(fmt::format("{} {} {} --preset Q8_0 --split-max-tensors 7 -q", tool_path("gguf-convert"), s.ck.string(),
                           (s.dir / "b.gguf").string()),
               0);
    int shards = 0;
    for (int k = 1; k <= 3; ++k) {
        const std::string suffix = fmt::format("-{:05d}-of-00003.gguf", k);
        ASSERT_TRUE(fs::exists(s.dir / ("a" + suffix)));
        EXPECT_EQ(read_file((s.dir / ("b" + suffix)).string()), read_file((s.dir / ("a" + suffix)).string())) << k;
        ++shards;
    }
    EXPECT_EQ(shards, 3);
}

TEST(HfConvertRequant, PlanFileIsExecutedAndChecked) {
    const TwoStep s = make(kCheckpoints[1][1]);
    const fs::path plan = s.dir / "plan.txt";
    expect_run(
        fmt::format("{} {} -o {} --target-bpw 5 --no-cache -q", tool_path("gguf-plan"), s.f16.string(), plan.string()),
        0);
    expect_same(s, "--plan " + plan.string());
    // A plan made for another model: refused before anything is written.
    const TwoStep other = make(kCheckpoints[0][1]);
    const std::string out = expect_run(fmt::format("{} {} {} --plan {}", tool_path("gguf-convert"), other.ck.string(),
                                                   (other.dir / "x.gguf").string(), plan.string()),
                                       2);
    EXPECT_NE(out.find("--plan"), std::string::npos) << out;
    EXPECT_FALSE(fs::exists(other.dir / "x.gguf"));
}

TEST(HfConvertRequant, DryRunReportsTheExactSizeAndWritesNothing) {
    const TwoStep s = make(kCheckpoints[2][1]);
    const std::string a = (s.dir / "a.gguf").string();
    expect_run(fmt::format("{} {} {} --preset Q4_K_M -q", tool_path("gguf-requant"), s.f16.string(), a), 0);
    const auto before = dir_snapshot(s.dir);
    const std::string out = expect_run(
        fmt::format("{} {} --preset Q4_K_M --dry-run --json 2>/dev/null", tool_path("gguf-convert"), s.ck.string()), 0);
    const auto j = nlohmann::json::parse(out);
    EXPECT_EQ(j.at("size").get<uint64_t>(), fs::file_size(a));
    EXPECT_EQ(j.at("preset"), "Q4_K_M");
    EXPECT_EQ(j.at("file_type"), 15);
    const Model m = open_model(a);
    ASSERT_EQ(j.at("tensors").size(), m.tensors().size());
    for (const auto& t : j.at("tensors")) {
        const int64_t i = m.find_tensor(t.at("name").get<std::string>());
        ASSERT_GE(i, 0) << t;
        EXPECT_EQ(t.at("type").get<std::string>(), type_name(m.tensors()[static_cast<size_t>(i)].type)) << t;
    }
    EXPECT_EQ(dir_snapshot(s.dir), before);
}

// Patches the first BF16 value of the checkpoint's tensor `name` to `bits`.
void poison(const fs::path& st, const std::string& name, uint16_t bits) {
    std::vector<uint8_t> b = read_file(st.string());
    uint64_t n;
    std::memcpy(&n, b.data(), 8);
    const auto h = nlohmann::json::parse(std::string(b.begin() + 8, b.begin() + 8 + static_cast<int64_t>(n)));
    const uint64_t at = 8 + n + h.at(name).at("data_offsets")[0].get<uint64_t>();
    std::memcpy(b.data() + at, &bits, 2);
    write_file(st.string(), b);
}

TEST(HfConvertRequant, RefusalsExitTwoAndLeaveNothing) {
    const TwoStep s = make(kCheckpoints[0][1]);
    const std::string conv = tool_path("gguf-convert") + " " + s.ck.string() + " ";
    const fs::path out = s.dir / "out.gguf";
    struct Case {
        std::string opts, says;
    } cases[] = {
        {"--preset Q9_K", "Q9_K"},
        {"--imatrix x.gguf", "need --preset or --plan"},
        {"--preset IQ2_XS", "needs an importance matrix"},
        {"--preset Q4_K_M --imatrix /nonexistent.gguf", "/nonexistent.gguf"},
        {"--preset Q4_K_M --outtype q4", "--outtype"},
        {"--preset Q4_K_M --outtype q8_0", "q8_0 is an output type"},
        {"--plan /nonexistent-plan.txt", "/nonexistent-plan.txt"},
        {"--preset Q4_K_M --vocab-only", "--vocab-only: writes one file of keys"},
        {"--vocab-only --split-max-size 1M", "--vocab-only: writes one file of keys"},
    };
    for (const auto& c : cases) {
        const std::string text = expect_run(conv + out.string() + " " + c.opts, 2);
        EXPECT_NE(text.find(c.says), std::string::npos) << c.opts << ": " << text;
        EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
        EXPECT_FALSE(fs::exists(out)) << c.opts;
    }
    // A NaN weight: named with its source tensor, nothing written.
    poison(s.ck / "model.safetensors", "model.layers.1.mlp.down_proj.weight", 0x7fc0);
    const auto before = dir_snapshot(s.dir), ck = dir_snapshot(s.ck);
    const std::string text = expect_run(conv + out.string() + " --preset Q4_K_M", 2);
    EXPECT_NE(text.find("model.layers.1.mlp.down_proj.weight"), std::string::npos) << text;
    EXPECT_NE(text.find("non-finite"), std::string::npos) << text;
    EXPECT_EQ(dir_snapshot(s.dir), before);
    EXPECT_EQ(dir_snapshot(s.ck), ck);
}

}  // namespace
