// gguf-requant type selection: presets, llama-quantize's mixture rules, fallbacks, precedence of
// the overrides, tensor order. Pure planning on tensor infos: no tensor data.
#include <gtest/gtest.h>

#include <map>

#include <fmt/format.h>

#include "converters/requant/requant_plan.h"
#include "libformat/gguf/gguf.h"
#include "tests/support/helpers.h"

namespace oiw {
namespace {

GgufTensorInfo info(const std::string& name, const std::vector<int64_t>& shape, GgmlType type = GgmlType::F16) {
    return make_tensor_info(name, type, shape);
}

GgufKV u32(std::string key, uint32_t v) { return {std::move(key), GgufValue::make_scalar<uint32_t>(GgufType::U32, v)}; }

struct Model {
    std::vector<GgufKV> kvs;
    std::vector<GgufTensorInfo> tensors;
};

// A llama-shaped model: n_layer blocks, optional output.weight, n_expert > 0 for 3-D experts.
Model llama(int n_layer, int64_t n_embd = 256, bool tied = false, uint32_t n_head = 4, uint32_t n_head_kv = 2,
            uint32_t n_expert = 0, std::string arch = "llama") {
    Model m;
    m.kvs.push_back({"general.architecture", GgufValue::make_string(arch)});
    m.kvs.push_back(u32(arch + ".block_count", static_cast<uint32_t>(n_layer)));
    m.kvs.push_back(u32(arch + ".attention.head_count", n_head));
    m.kvs.push_back(u32(arch + ".attention.head_count_kv", n_head_kv));
    if (n_expert) m.kvs.push_back(u32(arch + ".expert_count", n_expert));
    const int64_t kv = n_embd / n_head * n_head_kv, ff = 3 * n_embd;
    m.tensors.push_back(info("token_embd.weight", {n_embd, 1000}));
    if (!tied) m.tensors.push_back(info("output.weight", {n_embd, 1000}));
    m.tensors.push_back(info("output_norm.weight", {n_embd}, GgmlType::F32));
    for (int l = 0; l < n_layer; ++l) {
        const std::string b = fmt::format("blk.{}.", l);
        m.tensors.push_back(info(b + "attn_norm.weight", {n_embd}, GgmlType::F32));
        m.tensors.push_back(info(b + "attn_q.weight", {n_embd, n_embd}));
        m.tensors.push_back(info(b + "attn_k.weight", {n_embd, kv}));
        m.tensors.push_back(info(b + "attn_v.weight", {n_embd, kv}));
        m.tensors.push_back(info(b + "attn_output.weight", {n_embd, n_embd}));
        m.tensors.push_back(info(b + "ffn_norm.weight", {n_embd}, GgmlType::F32));
        if (n_expert) {
            m.tensors.push_back(info(b + "ffn_gate_inp.weight", {n_embd, n_expert}, GgmlType::F32));
            m.tensors.push_back(info(b + "ffn_gate_exps.weight", {n_embd, ff, n_expert}));
            m.tensors.push_back(info(b + "ffn_up_exps.weight", {n_embd, ff, n_expert}));
            m.tensors.push_back(info(b + "ffn_down_exps.weight", {ff, n_embd, n_expert}));
        } else {
            m.tensors.push_back(info(b + "ffn_gate.weight", {n_embd, ff}));
            m.tensors.push_back(info(b + "ffn_up.weight", {n_embd, ff}));
            m.tensors.push_back(info(b + "ffn_down.weight", {ff, n_embd}));
        }
    }
    return m;
}

std::map<std::string, std::string> types(const RequantPlan& p) {
    std::map<std::string, std::string> out;
    for (const auto& t : p.tensors) out[t.name] = std::string(type_name(t.dst_type));
    return out;
}

RequantPlan plan(const Model& m, PlanOptions o) { return plan_requant(m.kvs, m.tensors, o); }

PlanOptions preset(std::string_view name) {
    PlanOptions o;
    o.preset = &find_preset(name);
    return o;
}

using test::error_of;

TEST(RequantPresets, NamesAliasesNumbersAndErrors) {
    EXPECT_EQ(requant_presets().size(), 34u);
    EXPECT_EQ(find_preset("q4_k_m").ftype, 15u);
    EXPECT_EQ(find_preset("Q4_K").name, "Q4_K_M");
    EXPECT_EQ(find_preset("Q5_K").name, "Q5_K_M");
    EXPECT_EQ(find_preset("30").name, "IQ4_XS");
    EXPECT_EQ(find_preset("BF16").ftype, 32u);
    EXPECT_EQ(find_preset("F32").default_type, GgmlType::F32);
    // llama_ftype_get_default_type of the presets whose type is not their name.
    EXPECT_EQ(find_preset("IQ2_S").default_type, GgmlType::IQ2_XS);
    EXPECT_EQ(find_preset("IQ2_M").default_type, GgmlType::IQ2_S);
    EXPECT_EQ(find_preset("IQ3_XS").default_type, GgmlType::IQ3_S);
    EXPECT_EQ(find_preset("IQ3_M").default_type, GgmlType::IQ3_S);
    EXPECT_EQ(find_preset("38").name, "MXFP4_MOE");
    EXPECT_EQ(find_preset("mxfp4_moe").default_type, GgmlType::MXFP4);
    EXPECT_EQ(find_preset("q1_0").ftype, 40u);
    EXPECT_EQ(find_preset("36").default_type, GgmlType::TQ1_0);
    const std::string e = error_of([] { find_preset("Q4_K_X"); });
    EXPECT_NE(e.find("unknown preset 'Q4_K_X'"), std::string::npos) << e;
    for (const auto& p : requant_presets()) EXPECT_NE(e.find(std::string(p.name)), std::string::npos) << p.name;
}

TEST(RequantPresets, TargetTypesAndRules) {
    EXPECT_EQ(parse_target_type("q8_0", "--x"), GgmlType::Q8_0);
    EXPECT_EQ(parse_target_type("F32", "--x"), GgmlType::F32);
    EXPECT_EQ(parse_target_type("q1_0", "--x"), GgmlType::Q1_0);
    std::string e = error_of([] { parse_target_type("q9_0", "--output-tensor-type"); });
    EXPECT_NE(e.find("--output-tensor-type"), std::string::npos) << e;
    EXPECT_NE(e.find("unknown type 'q9_0'"), std::string::npos) << e;
    for (auto n : {"F16", "BF16", "Q4_0", "Q8_0", "Q4_K", "Q6_K", "IQ4_XS"})
        EXPECT_NE(e.find(n), std::string::npos) << n;
    TensorTypeRule r = parse_type_rule("Blk\\.0\\.ATTN_V=q8_0", "rule");
    EXPECT_EQ(r.pattern, "blk\\.0\\.attn_v");  // lower-cased like llama-quantize
    EXPECT_EQ(r.type, GgmlType::Q8_0);
    EXPECT_NE(error_of([] { parse_type_rule("attn_v", "rule"); }).find("REGEX=TYPE"), std::string::npos);
    EXPECT_NE(error_of([] { parse_type_rule("attn_v=q3_z", "rule"); }).find("valid:"), std::string::npos);
    EXPECT_NE(error_of([] { parse_type_rule("attn_(v=q8_0", "rule"); }).find("invalid regular expression"),
              std::string::npos);
}

TEST(RequantPlan, TensorOrderIsLlamaLoaderOrder) {
    std::vector<GgufTensorInfo> t = {info("blk.10.a.weight", {32}),   info("blk.9.b.weight", {32}),
                                     info("output.weight", {32}),     info("blk.9.a.weight", {32}),
                                     info("token_embd.weight", {32}), info("blk.1.z.weight", {32})};
    std::vector<std::string> names;
    for (size_t i : llama_tensor_order(t)) names.push_back(t[i].name);
    EXPECT_EQ(names, (std::vector<std::string>{"output.weight", "token_embd.weight", "blk.1.z.weight", "blk.9.a.weight",
                                               "blk.9.b.weight", "blk.10.a.weight"}));
}

// use_more_bits over 8 layers: layers 0, 3, 6, 7 get more bits.
TEST(RequantPlan, Q4_K_M_MixtureOverEightLayers) {
    auto t = types(plan(llama(8), preset("Q4_K_M")));
    EXPECT_EQ(t["output.weight"], "Q6_K");
    EXPECT_EQ(t["token_embd.weight"], "Q4_K");
    EXPECT_EQ(t["output_norm.weight"], "F32");
    for (int l = 0; l < 8; ++l) {
        const bool more = l == 0 || l == 3 || l == 6 || l == 7;
        SCOPED_TRACE(l);
        EXPECT_EQ(t[fmt::format("blk.{}.attn_v.weight", l)], more ? "Q6_K" : "Q4_K");
        EXPECT_EQ(t[fmt::format("blk.{}.ffn_down.weight", l)], more ? "Q6_K" : "Q4_K");
        EXPECT_EQ(t[fmt::format("blk.{}.attn_q.weight", l)], "Q4_K");
        EXPECT_EQ(t[fmt::format("blk.{}.attn_norm.weight", l)], "F32");
    }
}

TEST(RequantPlan, KQuantPresetsFollowTheirRules) {
    Model m = llama(16, 256, false, 8, 2);  // n_gqa 4
    auto q2 = types(plan(m, preset("Q2_K")));
    EXPECT_EQ(q2["blk.5.attn_v.weight"], "Q4_K");  // n_gqa >= 4
    EXPECT_EQ(q2["blk.5.ffn_down.weight"], "Q3_K");
    EXPECT_EQ(q2["blk.5.attn_output.weight"], "Q3_K");
    EXPECT_EQ(q2["blk.5.attn_q.weight"], "Q2_K");
    auto q3m = types(plan(m, preset("Q3_K_M")));
    EXPECT_EQ(q3m["blk.0.attn_v.weight"], "Q5_K");
    EXPECT_EQ(q3m["blk.1.attn_v.weight"], "Q5_K");
    EXPECT_EQ(q3m["blk.2.attn_v.weight"], "Q4_K");
    EXPECT_EQ(q3m["blk.0.ffn_down.weight"], "Q5_K");  // i < n/16
    EXPECT_EQ(q3m["blk.1.ffn_down.weight"], "Q4_K");
    EXPECT_EQ(q3m["blk.1.attn_output.weight"], "Q4_K");
    auto q3l = types(plan(m, preset("Q3_K_L")));
    EXPECT_EQ(q3l["blk.9.attn_v.weight"], "Q5_K");
    EXPECT_EQ(q3l["blk.9.ffn_down.weight"], "Q5_K");
    auto q4s = types(plan(m, preset("Q4_K_S")));
    EXPECT_EQ(q4s["blk.3.attn_v.weight"], "Q5_K");
    EXPECT_EQ(q4s["blk.4.attn_v.weight"], "Q4_K");
    EXPECT_EQ(q4s["blk.1.ffn_down.weight"], "Q5_K");
    EXPECT_EQ(q4s["blk.2.ffn_down.weight"], "Q4_K");
    auto iq4 = types(plan(m, preset("IQ4_XS")));
    EXPECT_EQ(iq4["blk.7.attn_v.weight"], "Q5_K");
    EXPECT_EQ(iq4["blk.1.ffn_down.weight"], "Q5_K");
    EXPECT_EQ(iq4["blk.2.ffn_down.weight"], "IQ4_XS");
    EXPECT_EQ(iq4["output.weight"], "Q6_K");
    auto q6 = types(plan(m, preset("Q6_K")));
    EXPECT_EQ(q6["output.weight"], "Q6_K");
    EXPECT_EQ(q6["blk.0.attn_v.weight"], "Q6_K");
    EXPECT_EQ(types(plan(m, preset("Q8_0")))["output.weight"], "Q8_0");
}

TEST(RequantPlan, ImatrixChangesQ4_0FirstFfnDown) {
    Model m = llama(16);
    PlanOptions o = preset("Q4_0");
    EXPECT_EQ(types(plan(m, o))["blk.1.ffn_down.weight"], "Q4_0");
    o.has_imatrix = true;
    auto t = types(plan(m, o));
    EXPECT_EQ(t["blk.1.ffn_down.weight"], "Q4_1");
    EXPECT_EQ(t["blk.2.ffn_down.weight"], "Q4_0");
}

TEST(RequantPlan, MoeEightExpertsAndLayerFromName) {
    Model m = llama(4, 256, false, 4, 4, 8, "qwen3moe");
    auto t = types(plan(m, preset("Q4_K_M")));
    EXPECT_EQ(t["blk.0.attn_v.weight"], "Q8_0");
    EXPECT_EQ(t["blk.0.attn_k.weight"], "Q8_0");
    EXPECT_EQ(t["blk.1.attn_output.weight"], "Q5_K");
    EXPECT_EQ(t["blk.0.ffn_gate_inp.weight"], "F32");
    EXPECT_EQ(t["blk.3.ffn_down_exps.weight"], "Q6_K");
    EXPECT_EQ(t["blk.1.ffn_down_exps.weight"], "Q4_K");
    // Expert tensors outside a block cannot be placed.
    m.tensors.push_back(info("extra.ffn_down_exps.weight", {768, 256, 8}));
    EXPECT_NE(error_of([&] { plan(m, preset("Q4_K_M")); }).find("extra.ffn_down_exps.weight"), std::string::npos);
}

TEST(RequantPlan, RowLengthFallbacksWarnNamingTheTensor) {
    Model m = llama(2, 576, true, 9, 3);  // SmolLM2-like: 576 wide, tied embeddings
    RequantPlan p = plan(m, preset("Q4_K_M"));
    auto t = types(p);
    EXPECT_EQ(t["token_embd.weight"], "Q8_0");      // tied: output rules, 576 % 256 != 0
    EXPECT_EQ(t["blk.0.attn_q.weight"], "Q5_0");    // Q4_K -> Q5_0
    EXPECT_EQ(t["blk.1.attn_v.weight"], "Q8_0");    // Q6_K -> Q8_0
    EXPECT_EQ(t["blk.0.ffn_down.weight"], "Q5_0");  // 1728 wide: Q4_K -> Q5_0
    bool named = false;
    for (const auto& w : p.warnings)
        named |= w.find("'blk.1.attn_v.weight'") != std::string::npos && w.find("Q8_0") != std::string::npos;
    EXPECT_TRUE(named);
    auto q3 = types(plan(m, preset("Q3_K_S")));
    EXPECT_EQ(q3["blk.0.attn_q.weight"], "Q4_0");  // Q3_K -> Q4_0
    auto q5 = types(plan(m, preset("Q5_K_S")));
    EXPECT_EQ(q5["blk.0.attn_q.weight"], "Q5_1");  // Q5_K -> Q5_1
    auto iq = types(plan(m, preset("IQ4_XS")));
    EXPECT_EQ(iq["blk.0.attn_q.weight"], "IQ4_NL");
    EXPECT_EQ(types(plan(m, preset("IQ2_XXS")))["blk.0.attn_q.weight"], "IQ4_NL");  // every 256-wide i-quant
    EXPECT_EQ(types(plan(m, preset("TQ1_0")))["blk.0.attn_q.weight"], "Q4_0");
    // No fallback for a 32-wide type: llama-quantize gives up, so do we (a refusal).
    Model odd = llama(1, 80, false, 1, 1);
    const RequantPlan refused = plan(odd, preset("Q8_0"));
    ASSERT_FALSE(refused.refusals.empty());
    EXPECT_NE(refused.refusals[0].what.find("no fallback"), std::string::npos) << refused.refusals[0].what;
}

TEST(RequantPlan, OverridePrecedence) {
    Model m = llama(4);
    PlanOptions o = preset("Q4_K_M");
    o.tensor_types = {parse_type_rule("blk\\.0\\.attn_v=q8_0", "rule"), parse_type_rule("attn_v=q5_0", "rule"),
                      parse_type_rule("token_embd=q5_1", "rule"), parse_type_rule("nothing_matches=q8_0", "rule")};
    o.token_embedding_type = GgmlType::Q6_K;
    o.output_tensor_type = GgmlType::Q8_0;
    RequantPlan p = plan(m, o);
    auto t = types(p);
    EXPECT_EQ(t["blk.0.attn_v.weight"], "Q8_0");  // first matching rule wins
    EXPECT_EQ(t["blk.1.attn_v.weight"], "Q5_0");
    EXPECT_EQ(t["token_embd.weight"], "Q6_K");  // --token-embedding-type beats --tensor-type
    EXPECT_EQ(t["output.weight"], "Q8_0");      // --output-tensor-type beats the mixture
    size_t unused = 0;
    for (const auto& w : p.warnings)
        unused += w.find("'nothing_matches=Q8_0' applies to no tensor") != std::string::npos;
    EXPECT_EQ(unused, 1u);

    // A manual type skips the mixture rules, and their layer counters (as in llama-quantize):
    // with blk.0's attn_v taken, blk.1..3 count as attn_v 0..2 of 4 -> only blk.3 gets Q6_K.
    PlanOptions o2 = preset("Q4_K_M");
    o2.tensor_types = {parse_type_rule("blk\\.0\\.attn_v=q8_0", "rule")};
    auto t2 = types(plan(m, o2));
    EXPECT_EQ(t2["blk.1.attn_v.weight"], "Q4_K");
    EXPECT_EQ(t2["blk.2.attn_v.weight"], "Q4_K");
    EXPECT_EQ(t2["blk.3.attn_v.weight"], "Q6_K");
}

TEST(RequantPlan, PureLeaveOutputKeep) {
    Model m = llama(4);
    PlanOptions o = preset("Q4_K_M");
    o.pure = true;
    for (const auto& [n, ty] : types(plan(m, o)))
        EXPECT_EQ(ty, n.find("norm") != std::string::npos ? "F32" : "Q4_K") << n;
    o = preset("Q4_K_M");
    o.leave_output_tensor = true;
    o.keep = {"blk\\.2\\.ffn_(up|gate)", "nope"};
    RequantPlan p = plan(m, o);
    auto t = types(p);
    EXPECT_EQ(t["output.weight"], "F16");
    EXPECT_EQ(t["blk.2.ffn_up.weight"], "F16");
    EXPECT_EQ(t["blk.2.ffn_gate.weight"], "F16");
    EXPECT_EQ(t["blk.2.ffn_down.weight"], "Q6_K");  // counters unaffected by --keep
    EXPECT_EQ(t["blk.1.ffn_up.weight"], "Q4_K");
    EXPECT_EQ(p.warnings, std::vector<std::string>{"keep pattern 'nope' matches no tensor"});
}

TEST(RequantPlan, FloatPresetsConvertOnlyQuantizableTensors) {
    Model m = llama(2);
    PlanOptions o = preset("BF16");
    o.tensor_types = {parse_type_rule("attn_v=q8_0", "rule")};
    RequantPlan p = plan(m, o);
    for (const auto& t : p.tensors)
        EXPECT_EQ(type_name(t.dst_type), t.name.find("norm") != std::string::npos ? "F32" : "BF16") << t.name;
    ASSERT_EQ(p.warnings.size(), 1u);  // rules only apply to quantized presets, as in llama-quantize
    EXPECT_NE(p.warnings[0].find("ignored with preset BF16"), std::string::npos);
    for (const auto& t : plan(m, preset("F16")).tensors) EXPECT_FALSE(t.convert()) << t.name;
}

TEST(RequantPlan, ExcludedTensorsAndTrailingUnitDims) {
    Model m = llama(1);
    m.tensors.push_back(info("blk.0.ssm_conv1d.weight", {4, 256}));
    m.tensors.push_back(info("position_embd.weight", {256, 64}));
    m.tensors.push_back(info("blk.0.attn_rel_b.weight", {32, 32}));
    m.tensors.push_back(info("rope_freqs.bias", {256, 256}));   // not a weight
    m.tensors.push_back(info("blk.0.extra.weight", {256, 1}));  // one row: ggml sees 1-D
    // llama.cpp: name.rfind("weight") == name.size() - 6 holds for any 5-character name (npos).
    m.tensors.push_back(info("abcde", {256, 8}));
    m.tensors.push_back(info("abcdef", {256, 8}));
    RequantPlan p = plan(m, preset("Q8_0"));
    for (const auto& t : p.tensors) {
        if (t.name.find("ssm_conv1d") != std::string::npos || t.name == "position_embd.weight" ||
            t.name.find("attn_rel_b") != std::string::npos || t.name == "rope_freqs.bias" ||
            t.name == "blk.0.extra.weight") {
            EXPECT_FALSE(t.convert()) << t.name;
        }
        if (t.name == "blk.0.extra.weight") {
            EXPECT_EQ(t.shape, (std::vector<int64_t>{256}));
        }
    }
    EXPECT_EQ(types(p)["blk.0.attn_q.weight"], "Q8_0");
    EXPECT_EQ(types(p)["abcde"], "Q8_0");
    EXPECT_EQ(types(p)["abcdef"], "F16");
}

// IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ2_M: llama.cpp's branch of their own. 16 layers:
// the first 16/8 = 2 ffn_down tensors get more bits.
TEST(RequantPlan, LowestBitPresetsFollowTheirRules) {
    const Model m = llama(16);  // n_gqa 2
    auto xxs = types(plan(m, preset("IQ2_XXS")));
    EXPECT_EQ(xxs["output.weight"], "Q5_K");
    EXPECT_EQ(xxs["token_embd.weight"], "Q2_K");
    EXPECT_EQ(xxs["blk.7.attn_v.weight"], "Q2_K");
    EXPECT_EQ(xxs["blk.7.attn_q.weight"], "IQ2_XXS");
    EXPECT_EQ(xxs["blk.7.attn_k.weight"], "IQ2_XXS");
    EXPECT_EQ(xxs["blk.7.attn_output.weight"], "IQ2_XXS");
    EXPECT_EQ(xxs["blk.1.ffn_down.weight"], "Q2_K");
    EXPECT_EQ(xxs["blk.2.ffn_down.weight"], "IQ2_XXS");
    EXPECT_EQ(xxs["blk.15.ffn_up.weight"], "IQ2_XXS");
    auto m2 = types(plan(m, preset("IQ2_M")));  // IQ2_S tensors, IQ3_S where the others get Q2_K
    EXPECT_EQ(m2["token_embd.weight"], "IQ3_S");
    EXPECT_EQ(m2["blk.7.attn_v.weight"], "IQ3_S");
    EXPECT_EQ(m2["blk.7.attn_output.weight"], "IQ3_S");
    EXPECT_EQ(m2["blk.1.ffn_down.weight"], "IQ3_S");
    EXPECT_EQ(m2["blk.2.ffn_down.weight"], "IQ2_S");
    EXPECT_EQ(m2["blk.7.attn_q.weight"], "IQ2_S");
    EXPECT_EQ(types(plan(m, preset("IQ2_S")))["blk.7.attn_q.weight"], "IQ2_XS");
    auto s1 = types(plan(m, preset("IQ1_S")));
    EXPECT_EQ(s1["blk.7.attn_output.weight"], "IQ2_XXS");
    EXPECT_EQ(s1["token_embd.weight"], "Q2_K");
    EXPECT_EQ(s1["blk.7.ffn_gate.weight"], "IQ1_S");
    // n_gqa >= 4, or 4 or more experts: attn_v Q4_K. 8 experts: attn_k Q4_K, attn_output Q5_K.
    EXPECT_EQ(types(plan(llama(16, 256, false, 8, 2), preset("IQ1_M")))["blk.7.attn_v.weight"], "Q4_K");
    auto moe4 = types(plan(llama(2, 256, false, 4, 4, 4, "qwen3moe"), preset("IQ2_XS")));
    EXPECT_EQ(moe4["blk.1.attn_v.weight"], "Q4_K");
    EXPECT_EQ(moe4["blk.1.attn_k.weight"], "IQ2_XS");
    auto moe8 = types(plan(llama(2, 256, false, 4, 4, 8, "qwen3moe"), preset("IQ2_XS")));
    EXPECT_EQ(moe8["blk.1.attn_k.weight"], "Q4_K");
    EXPECT_EQ(moe8["blk.1.attn_output.weight"], "Q5_K");
    // Only the i-quant tensors need an imatrix: not token_embd, output or the Q2_K bumps.
    for (const auto& t : plan(m, preset("IQ2_XXS")).tensors) {
        const bool iq = t.dst_type == GgmlType::IQ2_XXS;
        EXPECT_EQ(t.requires_imatrix, iq) << t.name;
    }
}

TEST(RequantPlan, Iq3PresetsFollowTheirRules) {
    const Model m = llama(16), gqa4 = llama(16, 256, false, 8, 2);
    PlanOptions o = preset("IQ3_XXS");
    auto xxs = types(plan(m, o));
    EXPECT_EQ(xxs["output.weight"], "Q5_K");
    EXPECT_EQ(xxs["token_embd.weight"], "IQ3_S");
    EXPECT_EQ(xxs["blk.7.attn_v.weight"], "IQ3_S");  // no imatrix
    EXPECT_EQ(xxs["blk.7.attn_q.weight"], "IQ2_S");
    EXPECT_EQ(xxs["blk.7.attn_k.weight"], "IQ2_S");
    EXPECT_EQ(xxs["blk.7.attn_output.weight"], "IQ3_S");
    EXPECT_EQ(xxs["blk.1.ffn_down.weight"], "Q4_K");  // no imatrix: first 16/8 blocks
    EXPECT_EQ(xxs["blk.2.ffn_down.weight"], "Q3_K");
    EXPECT_EQ(xxs["blk.7.ffn_gate.weight"], "IQ3_XXS");
    o.has_imatrix = true;
    auto xxs_im = types(plan(m, o));
    EXPECT_EQ(xxs_im["blk.7.attn_v.weight"], "IQ3_XXS");
    EXPECT_EQ(xxs_im["blk.1.ffn_down.weight"], "IQ3_XXS");
    for (const char* p : {"IQ3_XXS", "IQ3_XS", "IQ3_S", "IQ3_M"})
        EXPECT_EQ(types(plan(gqa4, preset(p)))["blk.7.attn_v.weight"], "Q4_K") << p;

    auto xs = types(plan(m, preset("IQ3_XS")));  // IQ3_S tensors
    EXPECT_EQ(xs["output.weight"], "Q6_K");
    EXPECT_EQ(xs["token_embd.weight"], "IQ3_S");
    EXPECT_EQ(xs["blk.7.attn_v.weight"], "IQ3_S");
    EXPECT_EQ(xs["blk.7.attn_q.weight"], "IQ3_XXS");
    EXPECT_EQ(xs["blk.7.attn_k.weight"], "IQ3_XXS");
    EXPECT_EQ(xs["blk.7.ffn_down.weight"], "IQ3_S");
    // ffn_gate / ffn_up: IQ3_XXS in blocks [16/8, 7*16/8) = [2, 14).
    for (const char* kind : {"gate", "up"}) {
        EXPECT_EQ(xs[fmt::format("blk.1.ffn_{}.weight", kind)], "IQ3_S") << kind;
        EXPECT_EQ(xs[fmt::format("blk.2.ffn_{}.weight", kind)], "IQ3_XXS") << kind;
        EXPECT_EQ(xs[fmt::format("blk.13.ffn_{}.weight", kind)], "IQ3_XXS") << kind;
        EXPECT_EQ(xs[fmt::format("blk.14.ffn_{}.weight", kind)], "IQ3_S") << kind;
    }
    auto m3 = types(plan(m, preset("IQ3_M")));
    EXPECT_EQ(m3["blk.7.attn_v.weight"], "Q4_K");
    EXPECT_EQ(m3["blk.7.attn_output.weight"], "Q4_K");
    EXPECT_EQ(m3["blk.1.ffn_down.weight"], "Q4_K");
    EXPECT_EQ(m3["blk.2.ffn_down.weight"], "IQ3_S");
    EXPECT_EQ(m3["blk.7.attn_q.weight"], "IQ3_S");
    EXPECT_EQ(types(plan(m, preset("IQ3_S")))["blk.7.attn_v.weight"], "IQ3_S");
    // 8 experts: IQ3_M's ffn_down also gets Q4_K where use_more_bits holds (blk.4, not blk.5).
    auto moe = types(plan(llama(16, 256, false, 4, 4, 8, "qwen3moe"), preset("IQ3_M")));
    EXPECT_EQ(moe["blk.4.ffn_down_exps.weight"], "Q4_K");
    EXPECT_EQ(moe["blk.5.ffn_down_exps.weight"], "IQ3_S");
    EXPECT_EQ(moe["blk.5.attn_output.weight"], "Q5_K");
    EXPECT_EQ(moe["blk.5.attn_v.weight"], "Q8_0");
}

TEST(RequantPlan, TernaryMxfp4AndQ1_0Presets) {
    const Model m = llama(2);
    for (const char* p : {"TQ1_0", "TQ2_0"}) {
        auto t = types(plan(m, preset(p)));
        EXPECT_EQ(t["token_embd.weight"], "Q4_K") << p;
        EXPECT_EQ(t["output.weight"], "Q6_K") << p;
        EXPECT_EQ(t["blk.1.attn_v.weight"], p);
    }
    // MXFP4_MOE: 3-D expert tensors MXFP4, every other quantizable tensor Q8_0 (output too).
    // bailingmoe3's 3-D MLA projections are not experts: there only ffn tensors count.
    auto mxfp4 = [](const char* arch) {
        Model moe = llama(2, 256, false, 4, 2, 4, arch);
        moe.tensors.push_back(info("blk.0.attn_kv_b.weight", {256, 64, 4}));
        return types(plan(moe, preset("MXFP4_MOE")));
    };
    auto mx = mxfp4("qwen3moe");
    for (const char* n : {"output.weight", "token_embd.weight", "blk.1.attn_q.weight", "blk.1.attn_v.weight"})
        EXPECT_EQ(mx[n], "Q8_0") << n;
    for (const char* n : {"blk.1.ffn_gate_exps.weight", "blk.1.ffn_up_exps.weight", "blk.1.ffn_down_exps.weight",
                          "blk.0.attn_kv_b.weight"})
        EXPECT_EQ(mx[n], "MXFP4") << n;
    EXPECT_EQ(mx["blk.1.ffn_gate_inp.weight"], "F32");
    auto bailing = mxfp4("bailingmoe3");
    EXPECT_EQ(bailing["blk.0.attn_kv_b.weight"], "Q8_0");
    EXPECT_EQ(bailing["blk.1.ffn_down_exps.weight"], "MXFP4");
    for (const auto& [n, ty] : types(plan(llama(2, 256, true), preset("MXFP4_MOE"))))
        EXPECT_EQ(ty, n.find("norm") != std::string::npos ? "F32" : "Q8_0") << n;
    // Q1_0: 128-element blocks; output gets Q6_K. It has no fallback type: a row length that is not
    // a multiple of 128 is refused (llama-quantize: "no tensor type fallback is defined").
    auto q1 = types(plan(m, preset("Q1_0")));
    EXPECT_EQ(q1["output.weight"], "Q6_K");
    EXPECT_EQ(q1["token_embd.weight"], "Q1_0");
    EXPECT_EQ(q1["blk.1.ffn_down.weight"], "Q1_0");
    const RequantPlan odd = plan(llama(1, 160, false, 2, 2), preset("Q1_0"));
    ASSERT_FALSE(odd.refusals.empty());
    EXPECT_EQ(odd.refusals[0].subject, "tensor 'token_embd.weight'");
    EXPECT_NE(odd.refusals[0].what.find("required by Q1_0) and Q1_0 has no fallback"), std::string::npos)
        << odd.refusals[0].what;
    EXPECT_EQ(types(odd)["output.weight"], "Q8_0");  // 160 % 128: Q8_0, which fits
}

TEST(RequantPlan, ModelInfoFromMetadata) {
    Model m = llama(80, 256, false, 64, 8);
    QuantModelInfo info = quant_model_info(m.kvs);
    EXPECT_EQ(info.n_layer, 80);
    EXPECT_EQ(info.n_gqa(), 8);
    EXPECT_TRUE(info.is_70b);
    // 70B: attn_v that would be Q3_K/Q4_K gets Q5_K.
    auto t = types(plan(m, preset("Q4_K_M")));
    EXPECT_EQ(t["blk.1.attn_v.weight"], "Q6_K");  // use_more_bits
    EXPECT_EQ(t["blk.11.attn_v.weight"], "Q5_K");
}

// ---------------------------------------------------------------------------------------------
// Every preset on the fixture models, type by type. The expected values were derived by hand from
// llama.cpp src/llama-quant.cpp (post-#19770 layout: tensor_get_category, llama_tensor_get_type_impl,
// tensor_type_fallback; compared with ggml-org/llama.cpp 007dbbf and the 2026 forks of it), not
// from our own output. Columns: the type of each quantizable tensor kind; per-block columns list
// blk.0, blk.1, ... Tensors of no column (norms, ffn_gate_inp routers) must keep their F32.
struct PresetRow {
    std::string_view preset;
    std::string_view output, token_embd, attn_q, attn_k;
    std::vector<std::string_view> attn_v;
    std::string_view attn_output, ffn_gate, ffn_up;
    std::vector<std::string_view> ffn_down;
};

std::string expected_type(const PresetRow& r, const std::string& name) {
    int blk = -1;
    std::sscanf(name.c_str(), "blk.%d.", &blk);
    auto ends = [&](std::string_view s) { return std::string_view(name).ends_with(s); };
    auto per_block = [&](const std::vector<std::string_view>& v) {
        return blk >= 0 && static_cast<size_t>(blk) < v.size() ? std::string(v[static_cast<size_t>(blk)])
                                                               : "(no block)";
    };
    if (name == "output.weight") return std::string(r.output);
    if (name == "token_embd.weight") return std::string(r.token_embd);
    if (ends(".attn_q.weight")) return std::string(r.attn_q);
    if (ends(".attn_k.weight")) return std::string(r.attn_k);
    if (ends(".attn_v.weight")) return per_block(r.attn_v);
    if (ends(".attn_output.weight")) return std::string(r.attn_output);
    if (ends(".ffn_gate.weight") || ends(".ffn_gate_exps.weight")) return std::string(r.ffn_gate);
    if (ends(".ffn_up.weight") || ends(".ffn_up_exps.weight")) return std::string(r.ffn_up);
    if (ends(".ffn_down.weight") || ends(".ffn_down_exps.weight")) return per_block(r.ffn_down);
    return "F32";  // 1-D norms, routers: never converted
}

void expect_fixture_plan(const std::string& fixture, const std::vector<PresetRow>& rows, bool has_imatrix = false) {
    OIW_NEED_SHARED("fixtures/" + fixture);
    GgufFile in = GgufFile::open(test::shared_path("fixtures/" + fixture));
    for (const auto& r : rows) {
        SCOPED_TRACE(fmt::format("{} {}{}", fixture, r.preset, has_imatrix ? " +imatrix" : ""));
        PlanOptions o = preset(r.preset);
        o.has_imatrix = has_imatrix;
        RequantPlan p = plan_requant(in.metadata(), in.tensors(), o);
        ASSERT_EQ(p.tensors.size(), in.tensors().size());
        for (const auto& t : p.tensors) EXPECT_EQ(type_name(t.dst_type), expected_type(r, t.name)) << t.name;
    }
}

// smol-like-f16: llama, n_embd 576 (576 % 256 = 64: every K/IQ4_XS type falls back on the 576-wide
// rows), n_ff 1536 (ffn_down rows are 1536 wide: K-quants fit), 2 layers, n_gqa 9/3 = 3 (< 4: no
// n_gqa bumps), tied embeddings (no output.weight: token_embd takes the output rules).
//  - token_embd (tied): ne0 % blck(default) != 0 -> Q8_0 (K types, IQ4_XS); otherwise type != Q8_0 ->
//    Q6_K, which falls back to Q8_0 on 576: always Q8_0.
//  - use_more_bits(i, 2) = i >= 7*2/8 = 1: true for blk.1 only; n/8 = n/16 = 0: no "first layers" rule.
//  - fallbacks on 576: Q2_K, Q3_K -> Q4_0; Q4_K -> Q5_0; Q5_K -> Q5_1; Q6_K -> Q8_0; IQ4_XS -> IQ4_NL.
TEST(RequantPlanFixtures, SmolLikeEveryPreset) {
    OIW_NEED_SHARED("fixtures");
    const std::vector<PresetRow> rows = {
        //  preset    output tok_embd attn_q  attn_k  attn_v (blk 0, 1)  attn_out ffn_gate ffn_up  ffn_down (blk 0, 1)
        {"F32", "", "F32", "F32", "F32", {"F32", "F32"}, "F32", "F32", "F32", {"F32", "F32"}},
        {"F16", "", "F16", "F16", "F16", {"F16", "F16"}, "F16", "F16", "F16", {"F16", "F16"}},
        {"BF16", "", "BF16", "BF16", "BF16", {"BF16", "BF16"}, "BF16", "BF16", "BF16", {"BF16", "BF16"}},
        {"Q4_0", "", "Q8_0", "Q4_0", "Q4_0", {"Q4_0", "Q4_0"}, "Q4_0", "Q4_0", "Q4_0", {"Q4_0", "Q4_0"}},
        {"Q4_1", "", "Q8_0", "Q4_1", "Q4_1", {"Q4_1", "Q4_1"}, "Q4_1", "Q4_1", "Q4_1", {"Q4_1", "Q4_1"}},
        {"Q5_0", "", "Q8_0", "Q5_0", "Q5_0", {"Q5_0", "Q5_0"}, "Q5_0", "Q5_0", "Q5_0", {"Q5_0", "Q5_0"}},
        {"Q5_1", "", "Q8_0", "Q5_1", "Q5_1", {"Q5_1", "Q5_1"}, "Q5_1", "Q5_1", "Q5_1", {"Q5_1", "Q5_1"}},
        {"Q8_0", "", "Q8_0", "Q8_0", "Q8_0", {"Q8_0", "Q8_0"}, "Q8_0", "Q8_0", "Q8_0", {"Q8_0", "Q8_0"}},
        // Q2_K: attn_v Q3_K (n_gqa < 4), attn_output Q3_K, ffn_down Q3_K; 576-wide Q2_K/Q3_K -> Q4_0.
        {"Q2_K", "", "Q8_0", "Q4_0", "Q4_0", {"Q4_0", "Q4_0"}, "Q4_0", "Q4_0", "Q4_0", {"Q3_K", "Q3_K"}},
        // Q2_K_S: no rule fires (n_gqa < 4, i < n/8 never): Q2_K everywhere, Q4_0 on 576.
        {"Q2_K_S", "", "Q8_0", "Q4_0", "Q4_0", {"Q4_0", "Q4_0"}, "Q4_0", "Q4_0", "Q4_0", {"Q2_K", "Q2_K"}},
        {"Q3_K_S", "", "Q8_0", "Q4_0", "Q4_0", {"Q4_0", "Q4_0"}, "Q4_0", "Q4_0", "Q4_0", {"Q3_K", "Q3_K"}},
        // Q3_K_M: attn_v i_attention_wv < 2 -> Q5_K (-> Q5_1), attn_output Q4_K (-> Q5_0), ffn_down Q4_K.
        {"Q3_K_M", "", "Q8_0", "Q4_0", "Q4_0", {"Q5_1", "Q5_1"}, "Q5_0", "Q4_0", "Q4_0", {"Q4_K", "Q4_K"}},
        // Q3_K_L: attn_v, attn_output Q5_K (-> Q5_1), ffn_down Q5_K.
        {"Q3_K_L", "", "Q8_0", "Q4_0", "Q4_0", {"Q5_1", "Q5_1"}, "Q5_1", "Q4_0", "Q4_0", {"Q5_K", "Q5_K"}},
        // Q4_K_S: attn_v i < 4 -> Q5_K (-> Q5_1); ffn_down i < n/8 never.
        {"Q4_K_S", "", "Q8_0", "Q5_0", "Q5_0", {"Q5_1", "Q5_1"}, "Q5_0", "Q5_0", "Q5_0", {"Q4_K", "Q4_K"}},
        // Q4_K_M: use_more_bits -> Q6_K on blk.1 (attn_v: -> Q8_0 on 576).
        {"Q4_K_M", "", "Q8_0", "Q5_0", "Q5_0", {"Q5_0", "Q8_0"}, "Q5_0", "Q5_0", "Q5_0", {"Q4_K", "Q6_K"}},
        {"Q5_K_S", "", "Q8_0", "Q5_1", "Q5_1", {"Q5_1", "Q5_1"}, "Q5_1", "Q5_1", "Q5_1", {"Q5_K", "Q5_K"}},
        {"Q5_K_M", "", "Q8_0", "Q5_1", "Q5_1", {"Q5_1", "Q8_0"}, "Q5_1", "Q5_1", "Q5_1", {"Q5_K", "Q6_K"}},
        {"Q6_K", "", "Q8_0", "Q8_0", "Q8_0", {"Q8_0", "Q8_0"}, "Q8_0", "Q8_0", "Q8_0", {"Q6_K", "Q6_K"}},
        // IQ4_NL: 576 % 32 == 0, so the tied token_embd gets Q6_K, then Q8_0 by fallback.
        {"IQ4_NL",
         "",
         "Q8_0",
         "IQ4_NL",
         "IQ4_NL",
         {"IQ4_NL", "IQ4_NL"},
         "IQ4_NL",
         "IQ4_NL",
         "IQ4_NL",
         {"IQ4_NL", "IQ4_NL"}},
        {"IQ4_XS",
         "",
         "Q8_0",
         "IQ4_NL",
         "IQ4_NL",
         {"IQ4_NL", "IQ4_NL"},
         "IQ4_NL",
         "IQ4_NL",
         "IQ4_NL",
         {"IQ4_XS", "IQ4_XS"}},
        // The 256-element i-quants and ternaries: token_embd Q8_0 (576 % 256), MXFP4_MOE Q8_0 for
        // all (no expert tensors); on 576-wide rows i-quants fall back to IQ4_NL, TQ and Q2_K to
        // Q4_0, Q4_K to Q5_0; ffn_down (1536 wide) keeps its type. Lowest-bit presets: attn_v Q2_K
        // (IQ3_S for IQ2_S/IQ2_M), attn_output IQ2_XXS for IQ1_*, IQ3_S for IQ2_S/IQ2_M.
        {"MXFP4_MOE", "", "Q8_0", "Q8_0", "Q8_0", {"Q8_0", "Q8_0"}, "Q8_0", "Q8_0", "Q8_0", {"Q8_0", "Q8_0"}},
        {"IQ2_XXS",
         "",
         "Q8_0",
         "IQ4_NL",
         "IQ4_NL",
         {"Q4_0", "Q4_0"},
         "IQ4_NL",
         "IQ4_NL",
         "IQ4_NL",
         {"IQ2_XXS", "IQ2_XXS"}},
        {"IQ2_XS",
         "",
         "Q8_0",
         "IQ4_NL",
         "IQ4_NL",
         {"Q4_0", "Q4_0"},
         "IQ4_NL",
         "IQ4_NL",
         "IQ4_NL",
         {"IQ2_XS", "IQ2_XS"}},
        {"IQ2_S",
         "",
         "Q8_0",
         "IQ4_NL",
         "IQ4_NL",
         {"IQ4_NL", "IQ4_NL"},
         "IQ4_NL",
         "IQ4_NL",
         "IQ4_NL",
         {"IQ2_XS", "IQ2_XS"}},
        {"IQ2_M",
         "",
         "Q8_0",
         "IQ4_NL",
         "IQ4_NL",
         {"IQ4_NL", "IQ4_NL"},
         "IQ4_NL",
         "IQ4_NL",
         "IQ4_NL",
         {"IQ2_S", "IQ2_S"}},
        {"IQ1_S", "", "Q8_0", "IQ4_NL", "IQ4_NL", {"Q4_0", "Q4_0"}, "IQ4_NL", "IQ4_NL", "IQ4_NL", {"IQ1_S", "IQ1_S"}},
        {"IQ1_M", "", "Q8_0", "IQ4_NL", "IQ4_NL", {"Q4_0", "Q4_0"}, "IQ4_NL", "IQ4_NL", "IQ4_NL", {"IQ1_M", "IQ1_M"}},
        {"TQ1_0", "", "Q8_0", "Q4_0", "Q4_0", {"Q4_0", "Q4_0"}, "Q4_0", "Q4_0", "Q4_0", {"TQ1_0", "TQ1_0"}},
        {"TQ2_0", "", "Q8_0", "Q4_0", "Q4_0", {"Q4_0", "Q4_0"}, "Q4_0", "Q4_0", "Q4_0", {"TQ2_0", "TQ2_0"}},
        {"IQ3_S",
         "",
         "Q8_0",
         "IQ4_NL",
         "IQ4_NL",
         {"IQ4_NL", "IQ4_NL"},
         "IQ4_NL",
         "IQ4_NL",
         "IQ4_NL",
         {"IQ3_S", "IQ3_S"}},
        // IQ3_XS: IQ3_XXS attn_q/attn_k and blk.0 ffn_gate/ffn_up, IQ3_S elsewhere: IQ4_NL on 576.
        {"IQ3_XS",
         "",
         "Q8_0",
         "IQ4_NL",
         "IQ4_NL",
         {"IQ4_NL", "IQ4_NL"},
         "IQ4_NL",
         "IQ4_NL",
         "IQ4_NL",
         {"IQ3_S", "IQ3_S"}},
        // IQ3_M: attn_v and attn_output Q4_K (-> Q5_0).
        {"IQ3_M", "", "Q8_0", "IQ4_NL", "IQ4_NL", {"Q5_0", "Q5_0"}, "Q5_0", "IQ4_NL", "IQ4_NL", {"IQ3_S", "IQ3_S"}},
    };
    expect_fixture_plan("smol-like-f16.gguf", rows);
    expect_fixture_plan("smol-like-f16.gguf", rows, true);  // imatrix rules need i < n/8 = 0: no change
    // IQ3_XXS: attn_q/attn_k IQ2_S, attn_output IQ3_S (all -> IQ4_NL); attn_v IQ3_S without an
    // imatrix, IQ3_XXS with one (-> IQ4_NL either way); ffn_down Q3_K without an imatrix.
    expect_fixture_plan("smol-like-f16.gguf", {{"IQ3_XXS",
                                                "",
                                                "Q8_0",
                                                "IQ4_NL",
                                                "IQ4_NL",
                                                {"IQ4_NL", "IQ4_NL"},
                                                "IQ4_NL",
                                                "IQ4_NL",
                                                "IQ4_NL",
                                                {"Q3_K", "Q3_K"}}});
    expect_fixture_plan("smol-like-f16.gguf",
                        {{"IQ3_XXS",
                          "",
                          "Q8_0",
                          "IQ4_NL",
                          "IQ4_NL",
                          {"IQ4_NL", "IQ4_NL"},
                          "IQ4_NL",
                          "IQ4_NL",
                          "IQ4_NL",
                          {"IQ3_XXS", "IQ3_XXS"}}},
                        true);

    // Q2_K_S: only its Q2_K tensors need an imatrix (tensor_requires_imatrix), not the Q4_0 fallbacks.
    GgufFile in = GgufFile::open(test::shared_path("fixtures/smol-like-f16.gguf"));
    for (const auto& t : plan_requant(in.metadata(), in.tensors(), preset("Q2_K_S")).tensors)
        EXPECT_EQ(t.requires_imatrix, t.dst_type == GgmlType::Q2_K) << t.name;
}

// tiny-moe-f16: qwen3moe, 8 experts (n_expert == 8 rules), n_embd 256 (no fallback anywhere), 2
// layers, n_gqa 2, untied output, 3-D ffn_{gate,up,down}_exps, F32 ffn_gate_inp routers.
//  - attn_v and attn_k: Q8_0 for every quantized preset (the 8-expert bump comes last) but the
//    lowest-bit ones (IQ1_*, IQ2_*: Q4_K, rows below).
//  - attn_output: Q5_K for Q2_K, Q3_K_S, Q3_K_M, IQ4_NL, Q4_K_S, Q4_K_M, IQ4_XS (and the IQ3 and
//    lowest-bit presets, below); the preset's type otherwise (Q3_K_L too: the 8-expert branch has no
//    Q3_K_L case and skips the dense rules).
//  - ffn_down_exps: layer from the name; use_more_bits(i, 2) only for blk.1.
//  - output: Q6_K unless the preset is Q8_0 (256 fits every block size); Q5_K and Q8_0 for the
//    presets of the rows below that say so.
TEST(RequantPlanFixtures, TinyMoeEveryPreset) {
    const std::vector<PresetRow> rows = {
        //  preset    output  tok_embd  attn_q  attn_k  attn_v (blk 0, 1)  attn_out gate_exps up_exps down_exps (blk 0,
        //  1)
        {"F32", "F32", "F32", "F32", "F32", {"F32", "F32"}, "F32", "F32", "F32", {"F32", "F32"}},
        {"F16", "F16", "F16", "F16", "F16", {"F16", "F16"}, "F16", "F16", "F16", {"F16", "F16"}},
        {"BF16", "BF16", "BF16", "BF16", "BF16", {"BF16", "BF16"}, "BF16", "BF16", "BF16", {"BF16", "BF16"}},
        {"Q4_0", "Q6_K", "Q4_0", "Q4_0", "Q8_0", {"Q8_0", "Q8_0"}, "Q4_0", "Q4_0", "Q4_0", {"Q4_0", "Q4_0"}},
        {"Q4_1", "Q6_K", "Q4_1", "Q4_1", "Q8_0", {"Q8_0", "Q8_0"}, "Q4_1", "Q4_1", "Q4_1", {"Q4_1", "Q4_1"}},
        {"Q5_0", "Q6_K", "Q5_0", "Q5_0", "Q8_0", {"Q8_0", "Q8_0"}, "Q5_0", "Q5_0", "Q5_0", {"Q5_0", "Q5_0"}},
        {"Q5_1", "Q6_K", "Q5_1", "Q5_1", "Q8_0", {"Q8_0", "Q8_0"}, "Q5_1", "Q5_1", "Q5_1", {"Q5_1", "Q5_1"}},
        {"Q8_0", "Q8_0", "Q8_0", "Q8_0", "Q8_0", {"Q8_0", "Q8_0"}, "Q8_0", "Q8_0", "Q8_0", {"Q8_0", "Q8_0"}},
        {"Q2_K", "Q6_K", "Q2_K", "Q2_K", "Q8_0", {"Q8_0", "Q8_0"}, "Q5_K", "Q2_K", "Q2_K", {"Q3_K", "Q3_K"}},
        {"Q2_K_S", "Q6_K", "Q2_K", "Q2_K", "Q8_0", {"Q8_0", "Q8_0"}, "Q2_K", "Q2_K", "Q2_K", {"Q2_K", "Q2_K"}},
        {"Q3_K_S", "Q6_K", "Q3_K", "Q3_K", "Q8_0", {"Q8_0", "Q8_0"}, "Q5_K", "Q3_K", "Q3_K", {"Q3_K", "Q3_K"}},
        {"Q3_K_M", "Q6_K", "Q3_K", "Q3_K", "Q8_0", {"Q8_0", "Q8_0"}, "Q5_K", "Q3_K", "Q3_K", {"Q4_K", "Q4_K"}},
        {"Q3_K_L", "Q6_K", "Q3_K", "Q3_K", "Q8_0", {"Q8_0", "Q8_0"}, "Q3_K", "Q3_K", "Q3_K", {"Q5_K", "Q5_K"}},
        {"Q4_K_S", "Q6_K", "Q4_K", "Q4_K", "Q8_0", {"Q8_0", "Q8_0"}, "Q5_K", "Q4_K", "Q4_K", {"Q4_K", "Q4_K"}},
        {"Q4_K_M", "Q6_K", "Q4_K", "Q4_K", "Q8_0", {"Q8_0", "Q8_0"}, "Q5_K", "Q4_K", "Q4_K", {"Q4_K", "Q6_K"}},
        {"Q5_K_S", "Q6_K", "Q5_K", "Q5_K", "Q8_0", {"Q8_0", "Q8_0"}, "Q5_K", "Q5_K", "Q5_K", {"Q5_K", "Q5_K"}},
        {"Q5_K_M", "Q6_K", "Q5_K", "Q5_K", "Q8_0", {"Q8_0", "Q8_0"}, "Q5_K", "Q5_K", "Q5_K", {"Q5_K", "Q6_K"}},
        {"Q6_K", "Q6_K", "Q6_K", "Q6_K", "Q8_0", {"Q8_0", "Q8_0"}, "Q6_K", "Q6_K", "Q6_K", {"Q6_K", "Q6_K"}},
        {"IQ4_NL",
         "Q6_K",
         "IQ4_NL",
         "IQ4_NL",
         "Q8_0",
         {"Q8_0", "Q8_0"},
         "Q5_K",
         "IQ4_NL",
         "IQ4_NL",
         {"IQ4_NL", "IQ4_NL"}},
        {"IQ4_XS",
         "Q6_K",
         "IQ4_XS",
         "IQ4_XS",
         "Q8_0",
         {"Q8_0", "Q8_0"},
         "Q5_K",
         "IQ4_XS",
         "IQ4_XS",
         {"IQ4_XS", "IQ4_XS"}},
        // Q1_0, TQ1_0, TQ2_0: outside the 8-expert attn_output list. TQ: token_embd Q4_K.
        {"Q1_0", "Q6_K", "Q1_0", "Q1_0", "Q8_0", {"Q8_0", "Q8_0"}, "Q1_0", "Q1_0", "Q1_0", {"Q1_0", "Q1_0"}},
        {"TQ1_0", "Q6_K", "Q4_K", "TQ1_0", "Q8_0", {"Q8_0", "Q8_0"}, "TQ1_0", "TQ1_0", "TQ1_0", {"TQ1_0", "TQ1_0"}},
        {"TQ2_0", "Q6_K", "Q4_K", "TQ2_0", "Q8_0", {"Q8_0", "Q8_0"}, "TQ2_0", "TQ2_0", "TQ2_0", {"TQ2_0", "TQ2_0"}},
        // MXFP4_MOE: 3-D experts MXFP4, everything else Q8_0.
        {"MXFP4_MOE", "Q8_0", "Q8_0", "Q8_0", "Q8_0", {"Q8_0", "Q8_0"}, "Q8_0", "MXFP4", "MXFP4", {"MXFP4", "MXFP4"}},
        // Lowest-bit presets: output Q5_K; attn_v Q4_K (n_expert >= 4), attn_k Q4_K and
        // attn_output Q5_K (8 experts); no ffn_down bump (the first 2/8 = 0 blocks).
        {"IQ2_XXS",
         "Q5_K",
         "Q2_K",
         "IQ2_XXS",
         "Q4_K",
         {"Q4_K", "Q4_K"},
         "Q5_K",
         "IQ2_XXS",
         "IQ2_XXS",
         {"IQ2_XXS", "IQ2_XXS"}},
        {"IQ2_XS",
         "Q5_K",
         "Q2_K",
         "IQ2_XS",
         "Q4_K",
         {"Q4_K", "Q4_K"},
         "Q5_K",
         "IQ2_XS",
         "IQ2_XS",
         {"IQ2_XS", "IQ2_XS"}},
        {"IQ2_S",
         "Q5_K",
         "IQ3_S",
         "IQ2_XS",
         "Q4_K",
         {"Q4_K", "Q4_K"},
         "Q5_K",
         "IQ2_XS",
         "IQ2_XS",
         {"IQ2_XS", "IQ2_XS"}},
        {"IQ2_M", "Q5_K", "IQ3_S", "IQ2_S", "Q4_K", {"Q4_K", "Q4_K"}, "Q5_K", "IQ2_S", "IQ2_S", {"IQ2_S", "IQ2_S"}},
        {"IQ1_S", "Q5_K", "Q2_K", "IQ1_S", "Q4_K", {"Q4_K", "Q4_K"}, "Q5_K", "IQ1_S", "IQ1_S", {"IQ1_S", "IQ1_S"}},
        {"IQ1_M", "Q5_K", "Q2_K", "IQ1_M", "Q4_K", {"Q4_K", "Q4_K"}, "Q5_K", "IQ1_M", "IQ1_M", {"IQ1_M", "IQ1_M"}},
        // IQ3_S / IQ3_M: in the 8-expert attn_output list; IQ3_M's ffn_down Q4_K where
        // use_more_bits holds (blk.1).
        {"IQ3_S", "Q6_K", "IQ3_S", "IQ3_S", "Q8_0", {"Q8_0", "Q8_0"}, "Q5_K", "IQ3_S", "IQ3_S", {"IQ3_S", "IQ3_S"}},
        {"IQ3_M", "Q6_K", "IQ3_S", "IQ3_S", "Q8_0", {"Q8_0", "Q8_0"}, "Q5_K", "IQ3_S", "IQ3_S", {"IQ3_S", "Q4_K"}},
    };
    expect_fixture_plan("tiny-moe-f16.gguf", rows);
    expect_fixture_plan("tiny-moe-f16.gguf", rows, true);
    // IQ3_XXS: attn_q IQ2_S, attn_k/attn_v Q8_0 (8 experts), attn_output Q5_K; ffn_down_exps Q3_K
    // without an imatrix.
    expect_fixture_plan("tiny-moe-f16.gguf", {{"IQ3_XXS",
                                               "Q5_K",
                                               "IQ3_S",
                                               "IQ2_S",
                                               "Q8_0",
                                               {"Q8_0", "Q8_0"},
                                               "Q5_K",
                                               "IQ3_XXS",
                                               "IQ3_XXS",
                                               {"Q3_K", "Q3_K"}}});
    expect_fixture_plan("tiny-moe-f16.gguf",
                        {{"IQ3_XXS",
                          "Q5_K",
                          "IQ3_S",
                          "IQ2_S",
                          "Q8_0",
                          {"Q8_0", "Q8_0"},
                          "Q5_K",
                          "IQ3_XXS",
                          "IQ3_XXS",
                          {"IQ3_XXS", "IQ3_XXS"}}},
                        true);
}

// tiny-llama-f16: llama, n_embd 256, n_ff 768 (all rows fit), 4 layers, n_gqa 2, untied output.
// use_more_bits(i, 4): i >= 7*4/8 = 3 or (i - 0) % 3 == 2 -> blk.2 and blk.3; n/8 = n/16 = 0.
TEST(RequantPlanFixtures, TinyLlamaEveryPreset) {
    using V = std::vector<std::string_view>;
    const V f32(4, "F32"), f16(4, "F16"), bf16(4, "BF16");
    auto all = [](std::string_view t) { return V(4, t); };
    const std::vector<PresetRow> rows = {
        {"F32", "F32", "F32", "F32", "F32", f32, "F32", "F32", "F32", f32},
        {"F16", "F16", "F16", "F16", "F16", f16, "F16", "F16", "F16", f16},
        {"BF16", "BF16", "BF16", "BF16", "BF16", bf16, "BF16", "BF16", "BF16", bf16},
        {"Q4_0", "Q6_K", "Q4_0", "Q4_0", "Q4_0", all("Q4_0"), "Q4_0", "Q4_0", "Q4_0", all("Q4_0")},
        {"Q4_1", "Q6_K", "Q4_1", "Q4_1", "Q4_1", all("Q4_1"), "Q4_1", "Q4_1", "Q4_1", all("Q4_1")},
        {"Q5_0", "Q6_K", "Q5_0", "Q5_0", "Q5_0", all("Q5_0"), "Q5_0", "Q5_0", "Q5_0", all("Q5_0")},
        {"Q5_1", "Q6_K", "Q5_1", "Q5_1", "Q5_1", all("Q5_1"), "Q5_1", "Q5_1", "Q5_1", all("Q5_1")},
        {"Q8_0", "Q8_0", "Q8_0", "Q8_0", "Q8_0", all("Q8_0"), "Q8_0", "Q8_0", "Q8_0", all("Q8_0")},
        {"Q2_K", "Q6_K", "Q2_K", "Q2_K", "Q2_K", all("Q3_K"), "Q3_K", "Q2_K", "Q2_K", all("Q3_K")},
        {"Q2_K_S", "Q6_K", "Q2_K", "Q2_K", "Q2_K", all("Q2_K"), "Q2_K", "Q2_K", "Q2_K", all("Q2_K")},
        {"Q3_K_S", "Q6_K", "Q3_K", "Q3_K", "Q3_K", all("Q3_K"), "Q3_K", "Q3_K", "Q3_K", all("Q3_K")},
        {"Q3_K_M",
         "Q6_K",
         "Q3_K",
         "Q3_K",
         "Q3_K",
         {"Q5_K", "Q5_K", "Q4_K", "Q4_K"},
         "Q4_K",
         "Q3_K",
         "Q3_K",
         all("Q4_K")},
        {"Q3_K_L", "Q6_K", "Q3_K", "Q3_K", "Q3_K", all("Q5_K"), "Q5_K", "Q3_K", "Q3_K", all("Q5_K")},
        {"Q4_K_S", "Q6_K", "Q4_K", "Q4_K", "Q4_K", all("Q5_K"), "Q4_K", "Q4_K", "Q4_K", all("Q4_K")},
        {"Q4_K_M",
         "Q6_K",
         "Q4_K",
         "Q4_K",
         "Q4_K",
         {"Q4_K", "Q4_K", "Q6_K", "Q6_K"},
         "Q4_K",
         "Q4_K",
         "Q4_K",
         {"Q4_K", "Q4_K", "Q6_K", "Q6_K"}},
        {"Q5_K_S", "Q6_K", "Q5_K", "Q5_K", "Q5_K", all("Q5_K"), "Q5_K", "Q5_K", "Q5_K", all("Q5_K")},
        {"Q5_K_M",
         "Q6_K",
         "Q5_K",
         "Q5_K",
         "Q5_K",
         {"Q5_K", "Q5_K", "Q6_K", "Q6_K"},
         "Q5_K",
         "Q5_K",
         "Q5_K",
         {"Q5_K", "Q5_K", "Q6_K", "Q6_K"}},
        {"Q6_K", "Q6_K", "Q6_K", "Q6_K", "Q6_K", all("Q6_K"), "Q6_K", "Q6_K", "Q6_K", all("Q6_K")},
        {"IQ4_NL", "Q6_K", "IQ4_NL", "IQ4_NL", "IQ4_NL", all("IQ4_NL"), "IQ4_NL", "IQ4_NL", "IQ4_NL", all("IQ4_NL")},
        {"IQ4_XS", "Q6_K", "IQ4_XS", "IQ4_XS", "IQ4_XS", all("IQ4_XS"), "IQ4_XS", "IQ4_XS", "IQ4_XS", all("IQ4_XS")},
        {"Q1_0", "Q6_K", "Q1_0", "Q1_0", "Q1_0", all("Q1_0"), "Q1_0", "Q1_0", "Q1_0", all("Q1_0")},
        {"TQ1_0", "Q6_K", "Q4_K", "TQ1_0", "TQ1_0", all("TQ1_0"), "TQ1_0", "TQ1_0", "TQ1_0", all("TQ1_0")},
        {"TQ2_0", "Q6_K", "Q4_K", "TQ2_0", "TQ2_0", all("TQ2_0"), "TQ2_0", "TQ2_0", "TQ2_0", all("TQ2_0")},
        {"MXFP4_MOE", "Q8_0", "Q8_0", "Q8_0", "Q8_0", all("Q8_0"), "Q8_0", "Q8_0", "Q8_0", all("Q8_0")},
        {"IQ2_XXS", "Q5_K", "Q2_K", "IQ2_XXS", "IQ2_XXS", all("Q2_K"), "IQ2_XXS", "IQ2_XXS", "IQ2_XXS", all("IQ2_XXS")},
        {"IQ2_XS", "Q5_K", "Q2_K", "IQ2_XS", "IQ2_XS", all("Q2_K"), "IQ2_XS", "IQ2_XS", "IQ2_XS", all("IQ2_XS")},
        {"IQ2_S", "Q5_K", "IQ3_S", "IQ2_XS", "IQ2_XS", all("IQ3_S"), "IQ3_S", "IQ2_XS", "IQ2_XS", all("IQ2_XS")},
        {"IQ2_M", "Q5_K", "IQ3_S", "IQ2_S", "IQ2_S", all("IQ3_S"), "IQ3_S", "IQ2_S", "IQ2_S", all("IQ2_S")},
        {"IQ1_S", "Q5_K", "Q2_K", "IQ1_S", "IQ1_S", all("Q2_K"), "IQ2_XXS", "IQ1_S", "IQ1_S", all("IQ1_S")},
        {"IQ1_M", "Q5_K", "Q2_K", "IQ1_M", "IQ1_M", all("Q2_K"), "IQ2_XXS", "IQ1_M", "IQ1_M", all("IQ1_M")},
        {"IQ3_S", "Q6_K", "IQ3_S", "IQ3_S", "IQ3_S", all("IQ3_S"), "IQ3_S", "IQ3_S", "IQ3_S", all("IQ3_S")},
        {"IQ3_M", "Q6_K", "IQ3_S", "IQ3_S", "IQ3_S", all("Q4_K"), "Q4_K", "IQ3_S", "IQ3_S", all("IQ3_S")},
        // (IQ3_XS changes ffn_gate/ffn_up per block: RequantPlan.Iq3PresetsFollowTheirRules.)
    };
    expect_fixture_plan("tiny-llama-f16.gguf", rows);
    expect_fixture_plan("tiny-llama-f16.gguf", rows, true);
    expect_fixture_plan("tiny-llama-f16.gguf", {{"IQ3_XXS", "Q5_K", "IQ3_S", "IQ2_S", "IQ2_S", all("IQ3_S"), "IQ3_S",
                                                 "IQ3_XXS", "IQ3_XXS", all("Q3_K")}});
    expect_fixture_plan(
        "tiny-llama-f16.gguf",
        {{"IQ3_XXS", "Q5_K", "IQ3_S", "IQ2_S", "IQ2_S", all("IQ3_XXS"), "IQ3_S", "IQ3_XXS", "IQ3_XXS", all("IQ3_XXS")}},
        true);
}

// llama-2-tiny-random: n_embd 8, n_ff 32, 1 layer, untied. Every quantized preset fails in
// llama-quantize: output.weight (first in loader order) gets Q8_0 (8 % blck != 0), and
// tensor_type_fallback has no fallback for Q8_0 ("no tensor type fallback is defined"); so do we,
// before writing anything. Float presets work.
TEST(RequantPlanFixtures, EightWideRows) {
    OIW_NEED_SHARED("fixtures");
    GgufFile in = GgufFile::open(test::shared_path("fixtures/llama-2-tiny-random.gguf"));
    auto run = [&](const PlanOptions& o) { return plan_requant(in.metadata(), in.tensors(), o); };
    for (const auto& p : requant_presets()) {
        SCOPED_TRACE(p.name);
        PlanOptions o;
        o.preset = &p;
        if (traits(p.default_type).quantized) {
            const RequantPlan plan = run(o);
            ASSERT_FALSE(plan.refusals.empty());
            EXPECT_EQ(plan.refusals[0].subject, "tensor 'output.weight'");
            EXPECT_NE(plan.refusals[0].what.find("no fallback"), std::string::npos) << plan.refusals[0].what;
        } else {
            for (const auto& t : run(o).tensors)
                EXPECT_EQ(t.dst_type, t.shape.size() == 1 ? GgmlType::F32 : p.default_type) << t.name;
        }
    }
    // With output.weight left alone: 8-wide rows fall back twice (Q4_K -> Q5_0 -> F16; Q6_K -> Q8_0
    // -> F16), i.e. stay F16; ffn_down (32 wide) gets use_more_bits(0, 1) = true -> Q6_K -> Q8_0.
    PlanOptions o = preset("Q4_K_M");
    o.leave_output_tensor = true;
    RequantPlan p = run(o);
    for (const auto& t : p.tensors) {
        if (t.name == "blk.0.ffn_down.weight") {
            EXPECT_EQ(t.dst_type, GgmlType::Q8_0);
        } else {
            EXPECT_FALSE(t.convert()) << t.name << " -> " << type_name(t.dst_type);
        }
    }
    EXPECT_EQ(p.warnings.size(), 8u);  // one per fallback: token_embd, 4 attn, ffn_gate, ffn_up, ffn_down
    EXPECT_TRUE(p.refusals.empty());
    // A 32-wide preset type has no fallback at all: token_embd (Q4_0) is refused and planned unchanged.
    o = preset("Q4_0");
    o.leave_output_tensor = true;
    p = run(o);
    ASSERT_FALSE(p.refusals.empty());
    EXPECT_EQ(p.refusals[0].subject, "tensor 'token_embd.weight'");
    for (const auto& t : p.tensors)
        if (t.name == "token_embd.weight") {
            EXPECT_FALSE(t.convert());
        }
}

// LLM_TYPE_70B is not only llama: llama_model::load_hparams gives it to 80-layer deci, qwen2,
// qwen2vl and olmo models as well, and not to an 80-layer 8-expert llama.
TEST(RequantPlan, SeventyBillionTypeByArchitecture) {
    for (const char* arch : {"qwen2", "qwen2vl", "deci", "olmo"}) {
        SCOPED_TRACE(arch);
        Model m = llama(80, 256, false, 8, 8, 0, arch);  // no GQA: only llama needs it
        EXPECT_TRUE(quant_model_info(m.kvs).is_70b);
        // Q3_K_S attn_v: Q3_K, raised to Q5_K for 70B.
        EXPECT_EQ(types(plan(m, preset("Q3_K_S")))["blk.40.attn_v.weight"], "Q5_K");
    }
    EXPECT_FALSE(quant_model_info(llama(80, 256, false, 8, 8).kvs).is_70b);     // llama without GQA: 65B
    EXPECT_FALSE(quant_model_info(llama(80, 256, false, 8, 2, 8).kvs).is_70b);  // 8 experts
    EXPECT_FALSE(quant_model_info(llama(79, 256, false, 8, 8, 0, "qwen2").kvs).is_70b);
    EXPECT_FALSE(quant_model_info(llama(80, 256, false, 8, 8, 0, "qwen3").kvs).is_70b);
}

}  // namespace
}  // namespace oiw
