// gguf-requant type selection: presets, llama-quantize's mixture rules, fallbacks, precedence of
// the overrides, tensor order. Pure planning on tensor infos: no tensor data.
#include <gtest/gtest.h>

#include <map>

#include <fmt/format.h>

#include "converters/requant_plan.h"
#include "libformat/gguf.h"
#include "tests/helpers.h"

namespace oiw {
namespace {

GgufTensorInfo info(std::string name, std::vector<int64_t> shape, GgmlType type = GgmlType::F16) {
    GgufTensorInfo t;
    t.name = std::move(name);
    t.n_dims = static_cast<uint32_t>(shape.size());
    for (size_t d = 0; d < shape.size(); ++d) t.ne[d] = shape[d];
    t.type = type;
    t.n_bytes = row_size(type, t.ne[0]) * static_cast<uint64_t>(t.n_rows());
    return t;
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

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const FormatError& e) {
        return e.what();
    }
    return "(no error)";
}

TEST(RequantPresets, NamesAliasesNumbersAndErrors) {
    EXPECT_EQ(requant_presets().size(), 20u);
    EXPECT_EQ(find_preset("q4_k_m").ftype, 15u);
    EXPECT_EQ(find_preset("Q4_K").name, "Q4_K_M");
    EXPECT_EQ(find_preset("Q5_K").name, "Q5_K_M");
    EXPECT_EQ(find_preset("30").name, "IQ4_XS");
    EXPECT_EQ(find_preset("BF16").ftype, 32u);
    EXPECT_EQ(find_preset("F32").default_type, GgmlType::F32);
    const std::string e = error_of([] { find_preset("Q4_K_X"); });
    EXPECT_NE(e.find("unknown preset 'Q4_K_X'"), std::string::npos) << e;
    for (const auto& p : requant_presets()) EXPECT_NE(e.find(std::string(p.name)), std::string::npos) << p.name;
}

TEST(RequantPresets, TargetTypesAndRules) {
    EXPECT_EQ(parse_target_type("q8_0", "--x"), GgmlType::Q8_0);
    EXPECT_EQ(parse_target_type("F32", "--x"), GgmlType::F32);
    std::string e = error_of([] { parse_target_type("q9_0", "--output-tensor-type"); });
    EXPECT_NE(e.find("--output-tensor-type"), std::string::npos) << e;
    EXPECT_NE(e.find("unknown type 'q9_0'"), std::string::npos) << e;
    for (auto n : {"F16", "BF16", "Q4_0", "Q8_0", "Q4_K", "Q6_K", "IQ4_XS"}) EXPECT_NE(e.find(n), std::string::npos) << n;
    TensorTypeRule r = parse_tensor_type_rule("Blk\\.0\\.ATTN_V=q8_0");
    EXPECT_EQ(r.pattern, "blk\\.0\\.attn_v");  // lower-cased like llama-quantize
    EXPECT_EQ(r.type, GgmlType::Q8_0);
    EXPECT_NE(error_of([] { parse_tensor_type_rule("attn_v"); }).find("REGEX=TYPE"), std::string::npos);
    EXPECT_NE(error_of([] { parse_tensor_type_rule("attn_v=q3_z"); }).find("valid:"), std::string::npos);
    EXPECT_NE(error_of([] { parse_tensor_type_rule("attn_(v=q8_0"); }).find("invalid regular expression"), std::string::npos);
}

TEST(RequantPlan, TensorOrderIsLlamaLoaderOrder) {
    std::vector<GgufTensorInfo> t = {info("blk.10.a.weight", {32}), info("blk.9.b.weight", {32}), info("output.weight", {32}),
                                     info("blk.9.a.weight", {32}), info("token_embd.weight", {32}), info("blk.1.z.weight", {32})};
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
    EXPECT_EQ(t["token_embd.weight"], "Q8_0");  // tied: output rules, 576 % 256 != 0
    EXPECT_EQ(t["blk.0.attn_q.weight"], "Q5_0");  // Q4_K -> Q5_0
    EXPECT_EQ(t["blk.1.attn_v.weight"], "Q8_0");  // Q6_K -> Q8_0
    EXPECT_EQ(t["blk.0.ffn_down.weight"], "Q5_0");  // 1728 wide: Q4_K -> Q5_0
    bool named = false;
    for (const auto& w : p.warnings) named |= w.find("'blk.1.attn_v.weight'") != std::string::npos && w.find("Q8_0") != std::string::npos;
    EXPECT_TRUE(named);
    auto q3 = types(plan(m, preset("Q3_K_S")));
    EXPECT_EQ(q3["blk.0.attn_q.weight"], "Q4_0");  // Q3_K -> Q4_0
    auto q5 = types(plan(m, preset("Q5_K_S")));
    EXPECT_EQ(q5["blk.0.attn_q.weight"], "Q5_1");  // Q5_K -> Q5_1
    auto iq = types(plan(m, preset("IQ4_XS")));
    EXPECT_EQ(iq["blk.0.attn_q.weight"], "IQ4_NL");
    // No fallback for a 32-wide type: llama-quantize gives up, so do we.
    Model odd = llama(1, 80, false, 1, 1);
    EXPECT_NE(error_of([&] { plan(odd, preset("Q8_0")); }).find("no fallback"), std::string::npos);
}

TEST(RequantPlan, OverridePrecedence) {
    Model m = llama(4);
    PlanOptions o = preset("Q4_K_M");
    o.tensor_types = {parse_tensor_type_rule("blk\\.0\\.attn_v=q8_0"), parse_tensor_type_rule("attn_v=q5_0"),
                      parse_tensor_type_rule("token_embd=q5_1"), parse_tensor_type_rule("nothing_matches=q8_0")};
    o.token_embedding_type = GgmlType::Q6_K;
    o.output_tensor_type = GgmlType::Q8_0;
    RequantPlan p = plan(m, o);
    auto t = types(p);
    EXPECT_EQ(t["blk.0.attn_v.weight"], "Q8_0");  // first matching rule wins
    EXPECT_EQ(t["blk.1.attn_v.weight"], "Q5_0");
    EXPECT_EQ(t["token_embd.weight"], "Q6_K");    // --token-embedding-type beats --tensor-type
    EXPECT_EQ(t["output.weight"], "Q8_0");        // --output-tensor-type beats the mixture
    size_t unused = 0;
    for (const auto& w : p.warnings) unused += w.find("'nothing_matches=Q8_0' applies to no tensor") != std::string::npos;
    EXPECT_EQ(unused, 1u);

    // A manual type skips the mixture rules, and their layer counters (as in llama-quantize):
    // with blk.0's attn_v taken, blk.1..3 count as attn_v 0..2 of 4 -> only blk.3 gets Q6_K.
    PlanOptions o2 = preset("Q4_K_M");
    o2.tensor_types = {parse_tensor_type_rule("blk\\.0\\.attn_v=q8_0")};
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
    EXPECT_EQ(p.warnings, std::vector<std::string>{"--keep 'nope' matches no tensor"});
}

TEST(RequantPlan, FloatPresetsConvertOnlyQuantizableTensors) {
    Model m = llama(2);
    PlanOptions o = preset("BF16");
    o.tensor_types = {parse_tensor_type_rule("attn_v=q8_0")};
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
    RequantPlan p = plan(m, preset("Q8_0"));
    for (const auto& t : p.tensors) {
        if (t.name.find("ssm_conv1d") != std::string::npos || t.name == "position_embd.weight" ||
            t.name.find("attn_rel_b") != std::string::npos || t.name == "rope_freqs.bias" || t.name == "blk.0.extra.weight") {
            EXPECT_FALSE(t.convert()) << t.name;
        }
        if (t.name == "blk.0.extra.weight") EXPECT_EQ(t.shape, (std::vector<int64_t>{256}));
    }
    EXPECT_EQ(types(p)["blk.0.attn_q.weight"], "Q8_0");
}

TEST(RequantPlan, ModelInfoFromMetadata) {
    Model m = llama(80, 256, false, 64, 8);
    QuantModelInfo info = quant_model_info(m.kvs);
    EXPECT_EQ(info.n_layer, 80);
    EXPECT_EQ(info.n_gqa(), 8);
    EXPECT_TRUE(info.is_70b);
    // 70B: attn_v that would be Q3_K/Q4_K gets Q5_K.
    auto t = types(plan(m, preset("Q4_K_M")));
    EXPECT_EQ(t["blk.1.attn_v.weight"], "Q6_K");   // use_more_bits
    EXPECT_EQ(t["blk.11.attn_v.weight"], "Q5_K");
}

}  // namespace
}  // namespace oiw
