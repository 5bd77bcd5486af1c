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
        if (base) std::printf(", KLD %.6f vs %.6f (%+.2e)", r.kld->kld.mean, f.kld, r.kld->kld.mean / f.kld - 1);
        std::printf("\n");
        if (base) {
            ASSERT_TRUE(r.kld.has_value());
            EXPECT_NEAR(r.kld->kld.mean / f.kld, 1.0, kKldRelTol) << r.kld->kld.mean << " vs " << f.kld;
            EXPECT_LE(r.kld->kld.median, r.kld->kld.p99);
            EXPECT_LE(r.kld->kld.p99, r.kld->kld.max);
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
    EXPECT_EQ(r.kld->kld.max, 0.0);
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

// evaluate() asks for the scored half's logits only: each row is the full pass's, bit for bit.
TEST(Eval, LogitsFromAPositionAreTheFullPassRows) {
    for (const char* m : {"models/mini-llama-f16.gguf", "models/mini-moe-f16.gguf"}) {
        const std::string src = test::data_path(m);
        const auto tokens = text_tokens(src);
        const std::span<const int32_t> first(tokens.data(), 40);
        for (const auto s : {eval::Semantics::Integer, eval::Semantics::Exact}) {
            const auto model = load(src, s);
            const auto all = model->logits(first);
            const auto tail = model->logits(first, 19);
            ASSERT_EQ(tail.size(), all.size() / 40 * 21);
            EXPECT_EQ(std::memcmp(tail.data(), all.data() + (all.size() - tail.size()), tail.size() * sizeof(float)),
                      0);
        }
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

// llama-perplexity's log-probability file (--kl-divergence-base). tests/data/eval/mini-llama-f16.kld
// is what llama-perplexity (1348f67) saved for mini-llama-f16 on words.txt (-c 64 -b 64 --chunks 4);
// its --kl-divergence run of the Q4_0 requant against that file printed these
// (tests/data/eval/README.md):
constexpr double kLlamaKldPplBase = 1204.477054;  // Mean PPL(base): a function of the file alone
constexpr double kLlamaKldPplQ = 1189.815944;     // Mean PPL(Q)
constexpr double kLlamaKldMean = 0.008275;        // Mean KLD

std::string kld_file() { return test::data_path("eval/mini-llama-f16.kld"); }

// The file's log-prob of entry i of a row (scale * q + min_log_prob).
float decoded(std::span<const uint16_t> row, size_t i) {
    float d[2];
    std::memcpy(d, row.data(), sizeof d);
    return d[0] * row[4 + i] + d[1];
}

// llama-perplexity's statistics: interpolated percentiles, the median of an even count the mean
// of the middle two, a standard error only past 10 values.
TEST(Eval, DistributionAsLlamaPerplexityReportsIt) {
    std::vector<double> v = {10, 1, 9, 2, 8, 3, 7, 4, 6, 5};
    eval::Distribution d = eval::distribution(v);
    EXPECT_EQ(d.mean, 5.5);
    EXPECT_EQ(d.mean_unc, 0.0);
    EXPECT_EQ(d.median, 5.5);
    EXPECT_DOUBLE_EQ(d.p90, 9.1);  // 0.9 * 9 = 8.1: 0.9 of v[8] = 9 and 0.1 of v[9] = 10
    EXPECT_DOUBLE_EQ(d.p10, 1.9);
    EXPECT_EQ(d.min, 1.0);
    EXPECT_EQ(d.max, 10.0);
    v.push_back(0);  // 0 .. 10: mean 5, variance 10, standard error sqrt(10 / 10)
    d = eval::distribution(v);
    EXPECT_EQ(d.median, 5.0);
    EXPECT_DOUBLE_EQ(d.mean_unc, 1.0);
    EXPECT_DOUBLE_EQ(d.p99_9, 9.99);
}

TEST(EvalLogProbs, EncodesRowsAsLlamaPerplexity) {
    // n_vocab 4: rows of 2 * 2 + 4 entries; the minimum is the smallest logit (within 16 of the max).
    std::vector<uint16_t> row(eval::log_prob_row_len(4), 0xffff);
    ASSERT_EQ(row.size(), 8u);
    eval::encode_log_probs(std::vector<float>{0, 1, 2, 3}, row);
    float scale, min_lp;
    std::memcpy(&scale, row.data(), 4);
    std::memcpy(&min_lp, row.data() + 2, 4);
    EXPECT_EQ(scale, 3.f / 65535.f);
    EXPECT_NEAR(min_lp, -3 - std::log(1 + std::exp(-1.0) + std::exp(-2.0) + std::exp(-3.0)), 1e-6);
    EXPECT_EQ(std::vector<uint16_t>(row.begin() + 4, row.end()), (std::vector<uint16_t>{0, 21845, 43690, 65535}));
    // A logit more than 16 below the max is clamped to q 0; the odd vocabulary's pad entry is 0.
    row.assign(eval::log_prob_row_len(3), 0xffff);
    ASSERT_EQ(row.size(), 8u);
    eval::encode_log_probs(std::vector<float>{10, -20, 9}, row);
    std::memcpy(&scale, row.data(), 4);
    EXPECT_EQ(scale, 16.f / 65535.f);
    EXPECT_EQ(std::vector<uint16_t>(row.begin() + 4, row.end()), (std::vector<uint16_t>{65535, 0, 61439, 0}));
    // Equal logits: scale 0, every q 0, the minimum log p = -log 2.
    row.assign(eval::log_prob_row_len(2), 0xffff);
    eval::encode_log_probs(std::vector<float>{2, 2}, row);
    std::memcpy(&scale, row.data(), 4);
    std::memcpy(&min_lp, row.data() + 2, 4);
    EXPECT_EQ(scale, 0.f);
    EXPECT_EQ(min_lp, -static_cast<float>(std::log(2.0)));
    EXPECT_EQ(row[4] + row[5], 0);
    // A row against its own logits: KLD ~0 (each log-prob rounded by up to scale / 2 = 7.6e-5 here;
    // measured 1.6e-5), same top token, same NLL.
    const std::vector<float> logits = {0.5f, -1.f, 3.f, 2.5f, -7.f};
    row.assign(eval::log_prob_row_len(5), 0);
    eval::encode_log_probs(logits, row);
    const eval::RowKld k = eval::compare_log_probs(logits, row, 3);
    EXPECT_LT(std::fabs(k.kld), 1e-4);
    EXPECT_TRUE(k.same_top);
    EXPECT_NEAR(k.nll, k.nll_base, 1e-4);
    EXPECT_NEAR(k.nll, -eval::log_softmax(logits)[3], 1e-6);
}

TEST(EvalLogProbs, ReadsLlamaPerplexityBaseFile) {
    const eval::LogProbReader f(kld_file());
    EXPECT_EQ(f.n_ctx(), 64);
    EXPECT_EQ(f.n_vocab(), 1024);
    EXPECT_EQ(f.n_chunk(), 4);
    // llama.cpp's tokens of words.txt are ours.
    const std::string src = test::data_path("models/mini-llama-f16.gguf");
    const auto tokens = text_tokens(src);
    ASSERT_GE(tokens.size(), 256u);
    EXPECT_TRUE(std::equal(f.tokens().begin(), f.tokens().end(), tokens.begin()));
    // Against the file, the Q4_0 requant: the base's perplexity is llama-perplexity's to the digits
    // it printed (it depends on the file alone), the model's and the KLD within the tolerances above.
    const auto model = load(test::mini_requant("mini-llama", "Q4_0"));
    eval::EvalOptions o = opts();
    o.base_file = &f;
    const eval::EvalResult r = eval::evaluate(*model, nullptr, tokens, o);
    ASSERT_TRUE(r.kld.has_value());
    EXPECT_NEAR(r.kld->base_ppl, kLlamaKldPplBase, 1e-6);
    EXPECT_NEAR(r.ppl / kLlamaKldPplQ, 1.0, kPplRelTol);
    EXPECT_NEAR(r.kld->kld.mean / kLlamaKldMean, 1.0, kKldRelTol);
    // Its other statistics, as it printed them: "Mean KLD: 0.008275 ± 0.000149", "Median KLD:
    // 0.008341", "RMS Δp: 0.012 ± 0.001 %", "Same top p: 50.806 ± 4.508 %" (one position differs).
    EXPECT_NEAR(r.kld->kld.mean_unc, 0.000149, 0.0000015);
    EXPECT_NEAR(r.kld->kld.median, 0.008341, 0.0000005);
    EXPECT_NEAR(100 * r.kld->dp_rms, 0.012, 0.0005);
    EXPECT_NEAR(100 * r.kld->same_top, 50.806, 100.0 / 124 + 1e-9);
    EXPECT_NEAR(100 * r.kld->same_top_unc, 4.508, 0.01);
    std::printf("against llama-perplexity's file: base PPL %.6f vs %.6f, PPL %.4f vs %.4f, KLD %.6f vs %.6f\n",
                r.kld->base_ppl, kLlamaKldPplBase, r.ppl, kLlamaKldPplQ, r.kld->kld.mean, kLlamaKldMean);
    // Against the model itself the same KLD within the 16-bit rounding of the file (and its base
    // being llama.cpp's logits, not ours).
    const auto base = load(src);
    const eval::EvalResult m = eval::evaluate(*model, base.get(), tokens, opts());
    EXPECT_NEAR(r.kld->kld.mean / m.kld->kld.mean, 1.0, 0.01);
}

TEST(EvalLogProbs, WritesWhatLlamaPerplexityWrites) {
    const std::string src = test::data_path("models/mini-llama-f16.gguf");
    const std::string out = (test::temp_dir() / "ours.kld").string();
    const auto model = load(src);
    eval::EvalOptions o = opts();
    o.save_path = out;
    const eval::EvalResult r = eval::evaluate(*model, nullptr, text_tokens(src), o);
    const auto ours = test::read_file(out), theirs = test::read_file(kld_file());
    ASSERT_EQ(ours.size(), theirs.size());
    // Header and tokens byte for byte; the rows are our logits', within 2e-3 of llama.cpp's log-probs
    // wherever both are above the -16 cut (measured: 1.05e-3).
    constexpr size_t kHead = 20 + 4 * 256;
    EXPECT_TRUE(std::equal(ours.begin(), ours.begin() + kHead, theirs.begin()));
    const eval::LogProbReader a(out), b(kld_file());
    double worst = 0;
    for (int64_t c = 0; c < 4; ++c)
        for (int64_t j = 0; j < eval::scored_per_chunk(64); ++j) {
            const auto ra = a.chunk(c).subspan(static_cast<size_t>(j * 1028), 1028);
            const auto rb = b.chunk(c).subspan(static_cast<size_t>(j * 1028), 1028);
            for (size_t i = 0; i < 1024; ++i)
                if (decoded(ra, i) > -16 && decoded(rb, i) > -16)
                    worst = std::max(worst, static_cast<double>(std::fabs(decoded(ra, i) - decoded(rb, i))));
        }
    EXPECT_LT(worst, 2e-3);
    std::printf("largest difference of a log-prob from llama-perplexity's: %.3g\n", worst);
    // Read back: the perplexity the file holds is the model's (within the 16-bit rounding).
    const auto q = load(test::mini_requant("mini-llama", "Q4_0"));
    eval::EvalOptions back = opts();
    back.base_file = &a;
    const eval::EvalResult rb = eval::evaluate(*q, nullptr, text_tokens(src), back);
    EXPECT_NEAR(rb.kld->base_ppl / r.ppl, 1.0, 1e-4);
}

TEST(EvalLogProbs, BadFilesAreOneClearError) {
    const auto good = test::read_file(kld_file());
    const auto dir = test::temp_dir();
    int n = 0;
    auto error_for = [&](const std::function<void(std::vector<uint8_t>&)>& edit) {
        std::vector<uint8_t> b = good;
        edit(b);
        const std::string path = (dir / ("bad" + std::to_string(n++) + ".kld")).string();
        test::write_file(path, b);
        return test::error_of([&] { eval::LogProbReader f(path); });
    };
    auto put32 = [](std::vector<uint8_t>& b, size_t at, int32_t v) { std::memcpy(b.data() + at, &v, 4); };
    EXPECT_NE(error_for([](auto& b) { b[0] = 'X'; }).find("not a llama-perplexity log-probability file"),
              std::string::npos);
    EXPECT_NE(error_for([](auto& b) { b.pop_back(); }).find("need 255988 bytes; the file has 255987"),
              std::string::npos);
    EXPECT_NE(error_for([](auto& b) { b.resize(12); }).find("n_vocab"), std::string::npos);
    EXPECT_NE(error_for([&](auto& b) { put32(b, 8, 2); }).find("n_ctx: 2 is below 4"), std::string::npos);
    EXPECT_NE(error_for([&](auto& b) { put32(b, 12, -1); }).find("n_vocab: -1 is below 1"), std::string::npos);
    EXPECT_NE(error_for([&](auto& b) { put32(b, 16, 0); }).find("n_chunk: 0 is below 1"), std::string::npos);
    EXPECT_NE(error_for([&](auto& b) {
                  put32(b, 8, INT32_MAX);
                  put32(b, 12, INT32_MAX);
                  put32(b, 16, INT32_MAX);
              }).find("need more than 2^64 bytes"),
              std::string::npos);
    EXPECT_NE(
        error_for([&](auto& b) { put32(b, 20 + 4 * 7, 1024); }).find("token 7 is id 1024, outside the vocabulary"),
        std::string::npos);
    // A row that is not log-probabilities: refused when its chunk is reached, naming it.
    std::vector<uint8_t> nan_row = good;
    const float nan = std::nanf("");
    std::memcpy(nan_row.data() + 20 + 1024 + 2 * 1028 * (31 + 2), &nan, 4);
    const std::string nan_path = (dir / "nan.kld").string();
    test::write_file(nan_path, nan_row);
    const eval::LogProbReader f(nan_path);
    (void)f.chunk(0);
    EXPECT_NE(test::error_of([&] { (void)f.chunk(1); }).find("chunk 2 row 2: scale nan"), std::string::npos);
    // A file that is not the model's, or not for what is asked: refused before any work.
    const eval::LogProbReader ok(kld_file());
    const std::string src = test::data_path("models/mini-llama-f16.gguf");
    const auto m = load(src);
    const auto tokens = text_tokens(src);
    auto eval_error = [&](eval::EvalOptions o, std::span<const int32_t> t, const eval::Forward* base = nullptr) {
        o.base_file = &ok;
        return test::error_of([&] { eval::evaluate(*m, base, t, o); });
    };
    EXPECT_NE(eval_error(opts(32), tokens).find("n_ctx 64, not the --ctx 32 asked"), std::string::npos);
    eval::EvalOptions five = opts();
    five.chunks = 5;
    EXPECT_NE(eval_error(five, tokens).find("4 chunks, fewer than the 5 asked"), std::string::npos);
    const std::vector<int32_t> shifted(tokens.begin() + 1, tokens.end());
    EXPECT_NE(eval_error(opts(), shifted).find("computed on another text or vocabulary"), std::string::npos);
    EXPECT_NE(eval_error(opts(), tokens, m.get()).find("a base model and a log-probability file"), std::string::npos);
    // Another vocabulary (a file LogProbWriter wrote over 2048 entries, the same tokens).
    const std::string other = (dir / "other.kld").string();
    eval::LogProbWriter w(other, 64, 2048, 4, std::span(tokens).first(256));
    for (int64_t i = 0; i < 4 * eval::scored_per_chunk(64); ++i) w.add_row(std::vector<float>(2048, 0.f));
    w.commit();
    const eval::LogProbReader wide(other);
    eval::EvalOptions o = opts();
    o.base_file = &wide;
    EXPECT_NE(test::error_of([&] {
                  eval::evaluate(*m, nullptr, tokens, o);
              }).find("other.kld: vocabulary of 2048: not the model's source (vocabulary 1024)"),
              std::string::npos);
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
    EXPECT_DOUBLE_EQ(j["kld"]["mean"].get<double>(), r.kld->kld.mean);
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

// llama-perplexity's two-run form: save the base's log-probabilities, then compare against them.
TEST(EvalCli, SavesAndReadsLogProbabilityFiles) {
    const std::string tool = test::tool_path("gguf-eval");
    const std::string src = test::data_path("models/mini-llama-f16.gguf");
    const std::string text = test::data_path("eval/words.txt");
    const std::string quant = test::mini_requant("mini-llama", "Q4_0");
    const auto dir = test::temp_dir();
    const std::string saved = (dir / "base.kld").string();
    std::string out;
    // Without --kl-divergence, a path where no model is: MODEL's log-probabilities are saved there.
    ASSERT_EQ(test::run(tool + " -m " + q(src) + " -f " + q(text) +
                            " -c 64 --chunks 4 --semantics integer --json --kl-divergence-base " + q(saved),
                        &out),
              0)
        << out;
    EXPECT_EQ(nlohmann::json::parse(out)["saved"], saved);
    EXPECT_EQ(test::read_file(saved).size(), test::read_file(kld_file()).size());
    // With it: compared against the file; no text needed, ctx and chunks are the file's.
    for (const std::string& base : {saved, kld_file()}) {
        ASSERT_EQ(test::run(tool + " -m " + q(quant) + " --kl-divergence-base " + q(base) +
                                " --kl-divergence --semantics integer --json",
                            &out),
                  0)
            << out;
        const auto j = nlohmann::json::parse(out);
        EXPECT_EQ(j["base_kind"], "log-probs");
        EXPECT_EQ(j["ctx"], 64);
        EXPECT_EQ(j["chunks"], 4);
        EXPECT_NEAR(j["kld"]["mean"].get<double>() / kLlamaKldMean, 1.0, kKldRelTol);
    }
    // Without --kl-divergence, an existing file is the base too (never overwritten): the model against
    // its own log-probabilities has a KLD within the 16-bit rounding of 0.
    const auto saved_bytes = test::read_file(saved);
    ASSERT_EQ(
        test::run(tool + " -m " + q(src) + " --kl-divergence-base " + q(saved) + " --semantics integer --json", &out),
        0)
        << out;
    EXPECT_LT(nlohmann::json::parse(out)["kld"]["mean"].get<double>(), 1e-5);
    EXPECT_EQ(test::read_file(saved), saved_bytes);
    // --base takes the file too; --save-all-logits replaces a saved file.
    ASSERT_EQ(test::run(tool + " " + q(quant) + " --base " + q(kld_file()) + " -f " + q(text) + " --save-all-logits " +
                            q(saved) + " --json",
                        &out),
              0)
        << out;
    EXPECT_EQ(nlohmann::json::parse(out)["base"], kld_file());
    // Errors: one line, exit 2, nothing written over an input or over a file that is not a saved
    // log-probability file.
    for (const std::string& victim : {quant, src, text}) {
        const auto before = test::read_file(victim);
        EXPECT_EQ(test::run(tool + " " + q(quant) + " -f " + q(text) + " --save-all-logits " + q(victim), &out, true),
                  2);
        EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
        EXPECT_EQ(test::read_file(victim), before);
    }
    EXPECT_EQ(test::run(tool + " " + q(quant) + " --kl-divergence", &out, true), 2);
    EXPECT_NE(out.find("--kl-divergence: needs --kl-divergence-base FILE"), std::string::npos) << out;
    EXPECT_EQ(test::run(tool + " " + q(quant) + " --base " + q(src) + " --kl-divergence-base " + q(saved), &out, true),
              2);
    EXPECT_NE(out.find("--base and --kl-divergence-base: give one"), std::string::npos) << out;
    EXPECT_EQ(test::run(tool + " " + q(quant) + " -c 32 --base " + q(saved), &out, true), 2);
    EXPECT_NE(out.find("n_ctx 64, not the --ctx 32 asked"), std::string::npos) << out;
    EXPECT_EQ(test::run(tool + " " + q(quant) + " --base " + q(text), &out, true), 2);
    EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
}

}  // namespace
}  // namespace oiw
