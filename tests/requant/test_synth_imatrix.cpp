// gguf-synth --imatrix (converters/synth/synth_imatrix.h): an importance matrix for a synthetic
// model that our loader (llama-quantize's rules) accepts, covering every blk.* matrix (per expert
// for MoE), deterministic, and enough for the presets that require one.
#include <gtest/gtest.h>

#include "converters/requant/imatrix.h"
#include "converters/requant/requant.h"
#include "converters/synth/synth.h"
#include "converters/synth/synth_imatrix.h"
#include "libformat/gguf/gguf.h"
#include "tests/support/helpers.h"

namespace oiw {
namespace {

TEST(SynthImatrix, CoversEveryBlockMatrixAndIsDeterministic) {
    const auto dir = test::temp_dir();
    SynthOptions o;
    o.n_layer = 2;
    const std::string model = (dir / "synth-im.gguf").string(), im = (dir / "synth-im.imatrix.gguf").string();
    write_synth_model(model, o);
    EXPECT_EQ(write_synth_imatrix(im, open_model(model), 3), 14u);  // 7 matrices per block
    const Imatrix m = load_imatrix(im);
    ASSERT_EQ(m.entries.size(), 14u);
    EXPECT_EQ(m.entries.count("token_embd.weight"), 0u);  // not collected by llama-imatrix either
    EXPECT_EQ(m.entries.count("output.weight"), 0u);
    EXPECT_EQ(m.entries.at("blk.1.ffn_down.weight").size(), static_cast<size_t>(o.n_ff));
    EXPECT_EQ(m.entries.at("blk.0.attn_q.weight").size(), static_cast<size_t>(o.n_embd));
    for (const auto& [name, v] : m.entries)
        for (float x : v) ASSERT_TRUE(x > 0.0f && x < 5.0f) << name;
    EXPECT_EQ(m.chunk_count, 1);
    EXPECT_EQ(m.datasets, std::vector<std::string>{"synthetic"});

    const std::string again = (dir / "synth-im2.imatrix.gguf").string();
    write_synth_imatrix(again, open_model(model), 3);
    EXPECT_EQ(test::read_file(im), test::read_file(again));

    // An imatrix-only preset runs with it, and no block matrix goes without weights.
    RequantOptions r;
    r.plan.preset = &find_preset("IQ2_XXS");
    r.imatrix_path = im;
    const RequantJob job = requantize(model, (dir / "synth-im-iq2.gguf").string(), r, 2);
    for (const auto& w : job.plan.warnings) EXPECT_EQ(w.find("blk."), std::string::npos) << w;
}

TEST(SynthImatrix, OneSlicePerExpert) {
    const auto dir = test::temp_dir();
    SynthOptions o;
    o.n_layer = 1;
    o.n_expert = 4;
    o.n_expert_used = 2;
    const std::string model = (dir / "synth-im-moe.gguf").string(), im = (dir / "synth-im-moe.imatrix.gguf").string();
    write_synth_model(model, o);
    write_synth_imatrix(im, open_model(model), 1);
    const Imatrix m = load_imatrix(im);
    EXPECT_EQ(m.entries.at("blk.0.ffn_up_exps.weight").size(), static_cast<size_t>(o.n_embd * 4));
    EXPECT_EQ(m.entries.at("blk.0.ffn_down_exps.weight").size(), static_cast<size_t>(o.n_ff * 4));
    const GgufFile f = GgufFile::open(im);
    const auto& counts = f.tensors()[static_cast<size_t>(f.find_tensor("blk.0.ffn_up_exps.weight.counts"))];
    EXPECT_EQ(counts.n_dims, 2u);
    EXPECT_EQ(counts.ne[1], 4);
}

}  // namespace
}  // namespace oiw
