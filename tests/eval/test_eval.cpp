// gguf-eval's forward pass (converters/eval/) against llama.cpp's own figures: perplexity and KL
// divergence of the vendored mini models (llama, qwen3moe) and their Q4_0 / Q4_K_M requants, as
// llama-perplexity printed them (tests/data/eval/llama-perplexity.txt); OIW4 logits bit-identical
// to the GGUF they came from; bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "converters/eval/forward.h"
#include "converters/eval/perplexity.h"
#include "converters/hf/convert.h"
#include "converters/repack/oiw4_convert.h"
#include "converters/vocab/vocab.h"
#include "libformat/model.h"
#include "tests/support/helpers.h"
#include "tests/support/hf_fixtures.h"
#include "tests/support/oiw4_fixtures.h"

namespace oiw {
namespace {

// Measured here: perplexity within 1.1e-3 of llama-perplexity's (f16 models within 3e-5), mean
// KLD within 1.8e-3 (the issue asks 0.5% and 10%).
constexpr double kPplRelTol = 3e-3;
constexpr double kKldRelTol = 0.02;

struct Figure {
    std::string model, preset;
    double ppl, kld;
};

std::vector<Figure> llama_figures() {
    std::ifstream in(test::data_path("eval/llama-perplexity.txt"));
    std::vector<Figure> v;
    for (std::string line; std::getline(in, line);) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream s(line);
        Figure f;
        s >> f.model >> f.preset >> f.ppl >> f.kld;
        v.push_back(f);
    }
    return v;
}

std::unique_ptr<eval::Forward> load(const std::string& path, eval::Semantics s = eval::Semantics::Integer) {
    return std::make_unique<eval::Forward>(matmul::open_tensor_source(path), eval::model_metadata(path), s, 2);
}

std::vector<int32_t> text_tokens(const std::string& model) {
    const vocab::Vocab v = vocab::Vocab::load(open_model(model).metadata());
    return v.tokenize(test::read_text(test::data_path("eval/words.txt")), true, false);
}

eval::EvalOptions opts(int64_t ctx = 64) {
    eval::EvalOptions o;
    o.ctx = ctx;
    o.chunks = 4;
    o.bos = 1;  // the mini models' BOS (add_bos true)
    return o;
}

TEST(Eval, PerplexityAndKldMatchLlamaPerplexity) {
    const auto figures = llama_figures();
    ASSERT_EQ(figures.size(), 6u);
    for (const Figure& f : figures) {
        SCOPED_TRACE(f.model + " " + f.preset);
        const std::string src = test::data_path("models/" + f.model + "-f16.gguf");
        const std::string path = f.preset == "F16" ? src : test::mini_requant(f.model, f.preset);
        const auto model = load(path);
        const auto base = f.preset == "F16" ? nullptr : load(src);
        const auto tokens = text_tokens(src);
        const eval::EvalResult r = eval::evaluate(*model, base.get(), tokens, opts());
        EXPECT_EQ(r.chunks, 4);
        EXPECT_EQ(r.scored, 4 * 31);
        EXPECT_NEAR(r.ppl / f.ppl, 1.0, kPplRelTol) << r.ppl << " vs " << f.ppl;
        std::printf("%s %s: PPL %.4f vs %.4f (%+.2e)", f.model.c_str(), f.preset.c_str(), r.ppl, f.ppl,
                    r.ppl / f.ppl - 1);
        if (base) std::printf(", KLD %.6f vs %.6f (%+.2e)", r.kld->mean, f.kld, r.kld->mean / f.kld - 1);
        std::printf("\n");
        if (base) {
            ASSERT_TRUE(r.kld.has_value());
            EXPECT_NEAR(r.kld->mean / f.kld, 1.0, kKldRelTol) << r.kld->mean << " vs " << f.kld;
            EXPECT_LE(r.kld->median, r.kld->p99);
            EXPECT_LE(r.kld->p99, r.kld->max);
            EXPECT_GT(r.kld->same_top, 0.4);
        }
    }
}

// qwen2 (q/k/v biases, tied embeddings, the Qwen2 BPE vocabulary) and qwen3 (q/k norms): the
// synthetic checkpoints of tests/data/hf/cases converted to f16 by gguf-convert, against
// llama-perplexity on the same files (-c 64 --chunks 4; scripts/check-eval-vs-llama prints them).
TEST(Eval, QwenFamilyMatchesLlamaPerplexity) {
    const struct {
        const char* hf_case;
        const char* arch;
        double llama_ppl;
    } cases[] = {{"Qwen2.5-0.5B-Instruct", "qwen2", 349357.9578}, {"Qwen3-0.6B", "qwen3", 829.2169}};
    const auto root = test::temp_dir();
    for (const auto& c : cases) {
        SCOPED_TRACE(c.hf_case);
        const auto dir = test::make_hf_case(c.hf_case, root);
        const auto gguf = root / (std::string(c.hf_case) + "-f16.gguf");
        test::convert_sha(dir, "f16", gguf, hf::WriteOptions{});
        const auto model = load(gguf.string());
        EXPECT_EQ(model->hparams().arch, c.arch);
        const vocab::Vocab v = vocab::Vocab::load(open_model(gguf.string()).metadata());
        eval::EvalOptions o = opts();
        o.bos = v.add_bos() && v.bos_id() >= 0 ? std::optional<int32_t>(v.bos_id()) : std::nullopt;
        const auto tokens = v.tokenize(test::read_text(test::data_path("eval/words.txt")), true, false);
        const eval::EvalResult r = eval::evaluate(*model, nullptr, tokens, o);
        EXPECT_NEAR(r.ppl / c.llama_ppl, 1.0, kPplRelTol) << r.ppl << " vs " << c.llama_ppl;
        std::printf("%s (%s): PPL %.4f vs %.4f (%+.2e)\n", c.hf_case, c.arch, r.ppl, c.llama_ppl,
                    r.ppl / c.llama_ppl - 1);
    }
}

TEST(Eval, ModelAgainstItselfHasZeroKld) {
    const std::string src = test::data_path("models/mini-llama-f16.gguf");
    const auto a = load(src);
    const eval::EvalResult r = eval::evaluate(*a, a.get(), text_tokens(src), opts());
    ASSERT_TRUE(r.kld.has_value());
    EXPECT_EQ(r.kld->max, 0.0);
    EXPECT_EQ(r.kld->same_top, 1.0);
    EXPECT_EQ(r.kld->base_ppl, r.ppl);
}

TEST(Eval, ExactAndIntegerSemanticsDifferButAgree) {
    const std::string src = test::mini_requant("mini-llama", "Q4_K_M");
    const auto tokens = text_tokens(src);
    const std::span<const int32_t> first(tokens.data(), 32);
    const auto li = load(src, eval::Semantics::Integer)->logits(first);
    const auto le = load(src, eval::Semantics::Exact)->logits(first);
    ASSERT_EQ(li.size(), le.size());
    double d2 = 0, l2 = 0;
    for (size_t i = 0; i < li.size(); ++i) {
        d2 += (static_cast<double>(li[i]) - le[i]) * (static_cast<double>(li[i]) - le[i]);
        l2 += static_cast<double>(le[i]) * le[i];
    }
    const double rel_rms = std::sqrt(d2 / l2);
    EXPECT_GT(rel_rms, 0.0);   // activations quantized to Q8_K and an F16 cache vs f32 throughout
    EXPECT_LT(rel_rms, 0.05);  // measured 0.020 (random weights: logits within +-2, errors compound)
    std::printf("relative RMS difference of the logits, integer vs exact: %.4g\n", rel_rms);
}

TEST(Eval, LosslessOiw4GivesBitIdenticalLogits) {
    const std::string gguf = test::mini_requant("mini-llama", "Q4_0");
    const std::string oiw4 = (test::temp_dir() / "mini-llama-Q4_0.oiw4").string();
    const Model in = open_model(gguf);
    write_oiw4(in, plan_oiw4(in, {}), oiw4);
    const auto tokens = text_tokens(gguf);
    const std::span<const int32_t> first(tokens.data(), 48);
    for (const auto s : {eval::Semantics::Integer, eval::Semantics::Exact}) {
        const auto a = load(gguf, s)->logits(first);
        const auto b = load(oiw4, s)->logits(first);
        ASSERT_EQ(a.size(), b.size());
        EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
    }
}

TEST(Eval, ThreadCountDoesNotChangeOneBit) {
    const std::string src = test::data_path("models/mini-moe-f16.gguf");
    const auto tokens = text_tokens(src);
    const std::span<const int32_t> first(tokens.data(), 40);
    for (const auto s : {eval::Semantics::Integer, eval::Semantics::Exact}) {
        const auto one = eval::Forward(matmul::open_tensor_source(src), eval::model_metadata(src), s, 1).logits(first);
        const auto three =
            eval::Forward(matmul::open_tensor_source(src), eval::model_metadata(src), s, 3).logits(first);
        ASSERT_EQ(one.size(), three.size());
        EXPECT_EQ(std::memcmp(one.data(), three.data(), one.size() * sizeof(float)), 0);
    }
}

TEST(Eval, BadInputIsOneClearError) {
    const std::string src = test::data_path("models/mini-llama-f16.gguf");
    const auto m = load(src);
    const auto tokens = text_tokens(src);
    // Fewer tokens than one chunk: the count is named.
    const std::string short_text =
        test::error_of([&] { eval::evaluate(*m, nullptr, std::span(tokens.data(), 50), opts(64)); });
    EXPECT_NE(short_text.find("50 tokens, fewer than one chunk of --ctx 64"), std::string::npos) << short_text;
    // A token id outside the vocabulary.
    const std::vector<int32_t> bad = {1, 5, 99999};
    EXPECT_NE(test::error_of([&] { (void)m->logits(bad); }).find("token id 99999 at position 2"), std::string::npos);
    // A base that is not the model's source: refused before any work.
    const auto moe = load(test::data_path("models/mini-moe-f16.gguf"));
    const std::string mismatch = test::error_of([&] { eval::evaluate(*m, moe.get(), tokens, opts()); });
    EXPECT_NE(mismatch.find("--base: qwen3moe with 2 layers of 256, vocabulary 1024: not the model's source (llama"),
              std::string::npos)
        << mismatch;
    // An architecture the pass does not know: one line naming the known ones.
    Metadata md = open_model(src).metadata();
    md.set(GgufKV{"general.architecture", GgufValue::make_string("gpt2")});
    const std::string arch =
        test::error_of([&] { eval::Forward(matmul::open_tensor_source(src), md, eval::Semantics::Exact, 1); });
    EXPECT_NE(arch.find("'gpt2' is not an architecture the forward pass knows (llama, qwen2, qwen3, qwen3moe)"),
              std::string::npos)
        << arch;
}

std::string q(const std::string& s) { return "'" + s + "'"; }

// The tool: llama-perplexity's spellings, --json, one-line errors with exit 2.
TEST(EvalCli, ReportsAndJsonAndErrors) {
    const std::string tool = test::tool_path("gguf-eval");
    const std::string src = test::data_path("models/mini-llama-f16.gguf");
    const std::string text = test::data_path("eval/words.txt");
    const std::string quant = test::mini_requant("mini-llama", "Q4_0");
    std::string out;
    ASSERT_EQ(test::run(tool + " -m " + q(quant) + " -f " + q(text) + " -c 64 --chunks 2 --kl-divergence-base " +
                            q(src) + " --semantics integer --json -t 2",
                        &out),
              0)
        << out;
    const auto j = nlohmann::json::parse(out);
    EXPECT_EQ(j["semantics"], "integer");
    EXPECT_EQ(j["chunks"], 2);
    EXPECT_EQ(j["scored"], 62);
    EXPECT_GT(j["ppl"].get<double>(), 1000.0);
    EXPECT_GT(j["kld"]["mean"].get<double>(), 0.0);
    EXPECT_LE(j["kld"]["median"].get<double>(), j["kld"]["max"].get<double>());
    // The same figures as the library's.
    const auto model = load(quant);
    const auto base = load(src);
    eval::EvalOptions o = opts();
    o.chunks = 2;
    const eval::EvalResult r = eval::evaluate(*model, base.get(), text_tokens(src), o);
    EXPECT_DOUBLE_EQ(j["nll"].get<double>(), r.nll);
    EXPECT_DOUBLE_EQ(j["kld"]["mean"].get<double>(), r.kld->mean);
    // A split model (gguf-edit --split), opened from any shard: the same figures as the whole file.
    const auto dir = test::temp_dir();
    ASSERT_EQ(test::run(test::tool_path("gguf-edit") + " --split --split-max-tensors 8 " + q(src) + " " +
                        q((dir / "mini").string()) + " >/dev/null"),
              0);
    std::string whole, split;
    const std::string common = " -f " + q(text) + " -c 64 --chunks 2 --json";
    ASSERT_EQ(test::run(tool + " " + q(src) + common, &whole), 0);
    ASSERT_EQ(test::run(tool + " " + q((dir / "mini-00002-of-00003.gguf").string()) + common, &split), 0) << split;
    EXPECT_EQ(nlohmann::json::parse(whole)["nll"], nlohmann::json::parse(split)["nll"]);
    // Text report.
    ASSERT_EQ(test::run(tool + " " + q(src) + " -f " + q(text) + " --ctx 64 --chunks 1", &out), 0) << out;
    EXPECT_NE(out.find("PPL        "), std::string::npos) << out;
    EXPECT_NE(out.find("(1 chunks of 64, 31 scored)"), std::string::npos) << out;
    // Errors: one line on stderr, exit 2.
    EXPECT_EQ(test::run(tool + " " + q(src) + " -f " + q(text) + " --ctx 4096", &out, true), 2);
    EXPECT_NE(out.find("fewer than one chunk of --ctx 4096"), std::string::npos) << out;
    EXPECT_EQ(
        test::run(tool + " " + q(src) + " -f " + q(text) + " --base " + q(test::data_path("models/mini-moe-f16.gguf")),
                  &out, true),
        2);
    EXPECT_NE(out.find("not the model's source"), std::string::npos) << out;
    EXPECT_EQ(test::run(tool + " " + q(src) + " -f /nonexistent/text", &out, true), 2);
    EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
    EXPECT_EQ(test::run(tool + " -f " + q(text), &out, true), 2);
    EXPECT_NE(out.find("MODEL: required"), std::string::npos) << out;
}

}  // namespace
}  // namespace oiw
