// gguf-inspect analysis library: hand-computed figures for three fixtures, the traffic model,
// tensor grouping, file-type names, runtime profiles, audit flags and diff.
//
// Byte sizes used below (ggml-common.h block structs): per row of 256 elements
//   Q4_K 144 B, Q5_K 176 B, Q6_K 210 B, Q8_0 8 blocks x 34 B = 272 B, Q4_0 8 x 18 B = 144 B;
//   per 32 elements Q5_0 22 B, Q8_0 34 B; F16 2 B and F32 4 B per element.
#include <gtest/gtest.h>

#include <tuple>

#include "inspect/audit.h"
#include "inspect/diff.h"
#include "inspect/profile.h"
#include "libformat/ftype.h"
#include "libformat/gguf/gguf.h"
#include "libformat/traffic.h"
#include "tests/support/helpers.h"

namespace oiw::inspect {
namespace {

GgufFile fixture(const std::string& name) { return GgufFile::open(test::shared_path("fixtures/" + name)); }

const traffic::Totals& group(const traffic::Analysis& a, traffic::Group g) {
    return a.by_group[static_cast<size_t>(g)];
}
uint64_t group_traffic(const traffic::Analysis& a, traffic::Group g) {
    return a.traffic.by_group[static_cast<size_t>(g)];
}

const traffic::TypeTotals* by_type(const traffic::Analysis& a, GgmlType t) {
    for (const auto& tt : a.by_type)
        if (tt.type == t) return &tt;
    return nullptr;
}

const traffic::TensorFacts& tensor(const GgufFile& f, const traffic::Analysis& a, const std::string& name) {
    const int64_t i = f.find_tensor(name);
    EXPECT_GE(i, 0) << name;
    return a.tensors.at(static_cast<size_t>(i));
}

// ---------------------------------------------------------------------------------------------
// Fixtures, figures computed by hand from the shapes (see ../shared/fixtures/README.md)

TEST(InspectFixtures, TinyMoeQ4KM) {
    OIW_NEED_SHARED("fixtures");
    // qwen3moe: n_embd 256, 2 layers, 8 experts / 2 used, expert n_ff 256, vocab 32000, untied.
    const GgufFile f = fixture("tiny-moe-Q4_K_M.gguf");
    const traffic::Analysis a = traffic::analyze(f);
    EXPECT_EQ(a.model.architecture, "qwen3moe");
    EXPECT_EQ(a.model.name, "tiny-moe");
    EXPECT_EQ(a.model.file_type, 15u);
    EXPECT_EQ(a.model.expert_count, 8u);
    EXPECT_EQ(a.model.expert_used_count, 2u);
    EXPECT_FALSE(a.model.tied_embeddings);
    EXPECT_EQ(f.metadata().size(), 27u);
    EXPECT_EQ(f.tensors().size(), 27u);

    // Parameters: output 256*32000 = 8,192,000; output_norm 256; token_embd 8,192,000;
    // per layer attn_k 256*128 = 32,768, k_norm 64, attn_norm 256, attn_output 65,536,
    // attn_q 65,536, q_norm 64, attn_v 32,768, 3 experts x 256*256*8 = 1,572,864,
    // gate_inp 256*8 = 2,048, ffn_norm 256 -> 1,772,160; total 16,384,256 + 2 * 1,772,160.
    EXPECT_EQ(a.model.n_elements, 19'928'576u);
    // Bytes: output Q6_K 210*32000 = 6,720,000; output_norm 1,024; token_embd Q4_K 144*32000
    // = 4,608,000; layer 0: attn_k Q8_0 272*128 = 34,816, k_norm 256, attn_norm 1,024,
    // attn_output Q5_K 176*256 = 45,056, attn_q Q4_K 144*256 = 36,864, q_norm 256, attn_v
    // 34,816, 3 x Q4_K experts 144*256*8 = 294,912, gate_inp F32 1024*8 = 8,192, ffn_norm 1,024
    // -> 1,047,040; layer 1 has ffn_down_exps Q6_K 210*256*8 = 430,080 -> 1,182,208.
    EXPECT_EQ(a.model.n_bytes, 11'329'024u + 1'047'040u + 1'182'208u);
    EXPECT_EQ(a.model.n_bytes, 13'558'272u);

    // Per token: experts cost 2/8 of their bytes.
    EXPECT_EQ(tensor(f, a, "blk.0.ffn_down_exps.weight").bytes_per_token, 294'912u * 2 / 8);  // 73,728
    EXPECT_EQ(tensor(f, a, "blk.1.ffn_down_exps.weight").bytes_per_token, 430'080u * 2 / 8);  // 107,520
    EXPECT_EQ(tensor(f, a, "token_embd.weight").bytes_per_token, 144u);                       // one Q4_K row
    EXPECT_EQ(tensor(f, a, "output.weight").bytes_per_token, 6'720'000u);
    EXPECT_EQ(tensor(f, a, "blk.0.ffn_gate_inp.weight").bytes_per_token, 8'192u);
    EXPECT_EQ(tensor(f, a, "blk.0.ffn_gate_inp.weight").group, traffic::Group::Routers);
    // Groups: attention 2 x (34,816 + 45,056 + 36,864 + 34,816) = 303,104; experts layer 0
    // 3 x 73,728 = 221,184, layer 1 2 x 73,728 + 107,520 = 254,976 -> 476,160; routers
    // 2 x 8,192; norms 1,024 + 2 x (256 + 1,024 + 256 + 1,024) = 6,144; embedding one row.
    EXPECT_EQ(group_traffic(a, traffic::Group::LmHead), 6'720'000u);
    EXPECT_EQ(group_traffic(a, traffic::Group::Embedding), 144u);
    EXPECT_EQ(group_traffic(a, traffic::Group::Attention), 303'104u);
    EXPECT_EQ(group_traffic(a, traffic::Group::Experts), 476'160u);
    EXPECT_EQ(group_traffic(a, traffic::Group::Routers), 16'384u);
    EXPECT_EQ(group_traffic(a, traffic::Group::Norms), 6'144u);
    EXPECT_EQ(group_traffic(a, traffic::Group::Ffn), 0u);
    EXPECT_EQ(a.traffic.bytes_per_token, 7'521'936u);
    EXPECT_DOUBLE_EQ(a.traffic.lm_head_share, 6'720'000.0 / 7'521'936.0);
    EXPECT_DOUBLE_EQ(*a.traffic.expert_fraction, 0.25);
    EXPECT_EQ(group(a, traffic::Group::Experts).count, 6u);
    EXPECT_EQ(group(a, traffic::Group::Experts).n_bytes, 5 * 294'912u + 430'080u);
    EXPECT_EQ(group(a, traffic::Group::Norms).count, 9u);

    // By type: F32 = output_norm + 5 per layer; Q4_K = token_embd + 4 + 3; Q6_K = output +
    // blk.1.ffn_down_exps.
    const traffic::TypeTotals* f32 = by_type(a, GgmlType::F32);
    ASSERT_TRUE(f32);
    EXPECT_EQ(f32->count, 11u);
    EXPECT_EQ(f32->n_elements, 256u + 2 * (64 + 256 + 64 + 2'048 + 256));  // 5,632
    EXPECT_EQ(f32->n_bytes, 22'528u);
    const traffic::TypeTotals* q4k = by_type(a, GgmlType::Q4_K);
    ASSERT_TRUE(q4k);
    EXPECT_EQ(q4k->count, 8u);
    EXPECT_EQ(q4k->n_elements, 8'192'000u + 2 * 65'536u + 5 * 524'288u);
    EXPECT_EQ(q4k->n_bytes, 4'608'000u + 2 * 36'864u + 5 * 294'912u);   // 6,156,288
    EXPECT_EQ(q4k->bytes_per_token, 144u + 2 * 36'864u + 5 * 73'728u);  // 442,512
    const traffic::TypeTotals* q6k = by_type(a, GgmlType::Q6_K);
    ASSERT_TRUE(q6k);
    EXPECT_EQ(q6k->count, 2u);
    EXPECT_EQ(q6k->n_bytes, 6'720'000u + 430'080u);
    EXPECT_EQ(q6k->bytes_per_token, 6'720'000u + 107'520u);
    EXPECT_EQ(by_type(a, GgmlType::Q8_0)->n_bytes, 4 * 34'816u);
    EXPECT_EQ(by_type(a, GgmlType::Q5_K)->n_bytes, 2 * 45'056u);
    EXPECT_EQ(a.by_type.size(), 5u);

    // Layers: outside blocks 6,720,000 + 1,024 + 144; layer 0 153,088 + 221,184 + 8,192 + 1,024.
    ASSERT_EQ(a.by_layer.size(), 3u);
    EXPECT_EQ(a.by_layer[0].layer, -1);
    EXPECT_EQ(a.by_layer[0].bytes_per_token, 6'721'168u);
    EXPECT_EQ(a.by_layer[1].bytes_per_token, 383'488u);
    EXPECT_EQ(a.by_layer[2].bytes_per_token, 417'280u);
    EXPECT_EQ(a.by_layer[1].n_bytes, 1'047'040u);
}

TEST(InspectFixtures, SmolLikeF16TiedEmbeddings) {
    OIW_NEED_SHARED("fixtures");
    // llama: n_embd 576, 2 layers, 9 heads / 3 KV heads (K/V width 192), n_ff 1536, tied.
    const GgufFile f = fixture("smol-like-f16.gguf");
    const traffic::Analysis a = traffic::analyze(f);
    EXPECT_TRUE(a.model.tied_embeddings);
    EXPECT_FALSE(a.model.expert_count);
    EXPECT_FALSE(a.traffic.expert_fraction);
    EXPECT_EQ(f.metadata().size(), 22u);
    EXPECT_EQ(f.tensors().size(), 20u);
    // token_embd F16 576*32000*2 = 36,864,000, read in full (it is the lm_head).
    const traffic::TensorFacts& embd = tensor(f, a, "token_embd.weight");
    EXPECT_EQ(embd.group, traffic::Group::LmHead);
    EXPECT_TRUE(embd.matmul);
    EXPECT_EQ(embd.bytes_per_token, 36'864'000u);
    // Per layer: 2 norms 2 x 2,304; q, o 576*576*2 = 663,552 each; k, v 576*192*2 = 221,184
    // each; gate, up, down 576*1536*2 = 1,769,472 each -> 7,082,496. Plus output_norm 2,304.
    EXPECT_EQ(a.model.n_bytes, 36'864'000u + 2 * 7'082'496u + 2'304u);   // 51,031,296
    EXPECT_EQ(a.model.n_elements, 18'432'000u + 2 * 3'540'096u + 576u);  // 25,512,768
    EXPECT_EQ(a.traffic.bytes_per_token, 51'031'296u);                   // nothing is read partially
    EXPECT_EQ(group_traffic(a, traffic::Group::LmHead), 36'864'000u);
    EXPECT_EQ(group_traffic(a, traffic::Group::Attention), 2 * (2 * 663'552u + 2 * 221'184u));  // 3,538,944
    EXPECT_EQ(group_traffic(a, traffic::Group::Ffn), 2 * 3 * 1'769'472u);                       // 10,616,832
    EXPECT_EQ(group_traffic(a, traffic::Group::Norms), 5 * 2'304u);
    EXPECT_EQ(group_traffic(a, traffic::Group::Embedding), 0u);
    EXPECT_EQ(group(a, traffic::Group::Embedding).count, 0u);
    EXPECT_DOUBLE_EQ(a.traffic.lm_head_share, 36'864'000.0 / 51'031'296.0);
    const traffic::TypeTotals* f16 = by_type(a, GgmlType::F16);
    ASSERT_TRUE(f16);
    EXPECT_EQ(f16->count, 15u);
    EXPECT_EQ(f16->n_bytes, 51'031'296u - 5 * 2'304u);
}

TEST(InspectFixtures, TinyLlamaQ4KM) {
    OIW_NEED_SHARED("fixtures");
    // llama: n_embd 256, 4 layers, 4 heads / 2 KV heads (K/V width 128), n_ff 768, untied;
    // llama-quantize Q4_K_M gives blk.2/3 attn_v and ffn_down Q6_K.
    const GgufFile f = fixture("tiny-llama-Q4_K_M.gguf");
    const traffic::Analysis a = traffic::analyze(f);
    EXPECT_EQ(a.model.file_type, 15u);
    EXPECT_FALSE(a.model.tied_embeddings);
    EXPECT_EQ(f.tensors().size(), 3u + 4 * 9);
    // Layer 0/1: attn_k Q4_K 144*128 = 18,432, attn_norm 1,024, attn_output 36,864, attn_q
    // 36,864, attn_v 18,432, ffn_down Q4_K [768, 256] 432*256 = 110,592, ffn_gate 144*768 =
    // 110,592, ffn_norm 1,024, ffn_up 110,592 -> 444,416. Layers 2/3: attn_v Q6_K 210*128 =
    // 26,880 and ffn_down Q6_K 630*256 = 161,280 -> 503,552.
    EXPECT_EQ(a.model.n_bytes, 6'720'000u + 1'024u + 4'608'000u + 2 * 444'416u + 2 * 503'552u);  // 13,224,960
    EXPECT_EQ(a.model.n_elements,
              2 * 8'192'000u + 256u + 4 * (32'768u + 256 + 65'536 + 65'536 + 32'768 + 3 * 196'608 + 256));
    // Per token: everything but token_embd in full, token_embd one 144-byte row.
    EXPECT_EQ(a.traffic.bytes_per_token, 13'224'960u - 4'608'000u + 144u);                               // 8,617,104
    EXPECT_EQ(group_traffic(a, traffic::Group::Ffn), 2 * 3 * 110'592u + 2 * (2 * 110'592u + 161'280u));  // 1,428,480
    // Attention: k + o + q + v = 18,432 + 2 x 36,864 + 18,432 (layers 0/1) or + 26,880 (2/3).
    EXPECT_EQ(group_traffic(a, traffic::Group::Attention),
              2 * (18'432u + 2 * 36'864u + 18'432u) + 2 * (18'432u + 2 * 36'864u + 26'880u));  // 459,264
    EXPECT_EQ(group_traffic(a, traffic::Group::Norms), 9 * 1'024u);
    EXPECT_DOUBLE_EQ(a.traffic.lm_head_share, 6'720'000.0 / 8'617'104.0);
    const traffic::TypeTotals* q6k = by_type(a, GgmlType::Q6_K);
    ASSERT_TRUE(q6k);
    EXPECT_EQ(q6k->count, 5u);  // output + 2 x (attn_v, ffn_down)
    EXPECT_EQ(q6k->n_bytes, 6'720'000u + 2 * (26'880u + 161'280u));
    EXPECT_EQ(by_type(a, GgmlType::Q4_K)->count, 1u + 2 * 7 + 2 * 5);  // token_embd + 7 or 5 per layer
    ASSERT_EQ(a.by_layer.size(), 5u);
    EXPECT_EQ(a.by_layer[3].n_bytes, 503'552u);
}

// ---------------------------------------------------------------------------------------------
// Names, file types, bandwidth

TEST(InspectModel, GroupsByName) {
    EXPECT_EQ(traffic::classify("output.weight"), traffic::Group::LmHead);
    EXPECT_EQ(traffic::classify("output_norm.weight"), traffic::Group::Norms);
    EXPECT_EQ(traffic::classify("token_embd.weight"), traffic::Group::Embedding);
    EXPECT_EQ(traffic::classify("token_embd_norm.weight"), traffic::Group::Norms);
    EXPECT_EQ(traffic::classify("blk.3.attn_q.weight"), traffic::Group::Attention);
    EXPECT_EQ(traffic::classify("blk.3.attn_q_norm.weight"), traffic::Group::Norms);
    EXPECT_EQ(traffic::classify("blk.12.ffn_gate_inp.weight"), traffic::Group::Routers);
    EXPECT_EQ(traffic::classify("blk.12.ffn_gate_inp_shexp.weight"), traffic::Group::Routers);
    EXPECT_EQ(traffic::classify("blk.12.ffn_down_exps.weight"), traffic::Group::Experts);
    EXPECT_EQ(traffic::classify("blk.12.ffn_up_shexp.weight"), traffic::Group::SharedExperts);
    EXPECT_EQ(traffic::classify("blk.0.ffn_down.weight"), traffic::Group::Ffn);
    EXPECT_EQ(traffic::classify("rope_freqs.weight"), traffic::Group::Other);
    const traffic::NameParts p = traffic::split_name("blk.41.ffn_gate_exps.weight");
    EXPECT_EQ(p.layer, 41);
    EXPECT_EQ(p.stem, "ffn_gate_exps");
    EXPECT_EQ(traffic::split_name("blk.x.attn_q.weight").layer, -1);
}

TEST(InspectModel, FileTypeNames) {
    EXPECT_EQ(ftype_name(0), "ALL_F32");
    EXPECT_EQ(ftype_name(1), "MOSTLY_F16");
    EXPECT_EQ(ftype_name(7), "MOSTLY_Q8_0");
    EXPECT_EQ(ftype_name(15), "MOSTLY_Q4_K_M");
    EXPECT_EQ(ftype_name(21), "MOSTLY_Q2_K_S");
    EXPECT_EQ(ftype_name(32), "MOSTLY_BF16");
    EXPECT_EQ(ftype_name(38), "MOSTLY_MXFP4_MOE");
    EXPECT_EQ(ftype_name(15 | kFtypeGuessed), "MOSTLY_Q4_K_M");
    EXPECT_EQ(ftype_name(4), "");   // removed
    EXPECT_EQ(ftype_name(33), "");  // removed (Q4_0_4_4)
    EXPECT_EQ(ftype_from_name("MOSTLY_Q4_K_M"), 15u);
    EXPECT_EQ(ftype_from_name("q4_k_m"), 15u);
    EXPECT_EQ(ftype_from_name("F32"), 0u);
    EXPECT_EQ(ftype_from_name("iq4_xs"), 30u);
    EXPECT_FALSE(ftype_from_name("Q4_K"));
    for (uint32_t id = 0; id < 64; ++id) {
        if (!ftype_name(id).empty()) {
            EXPECT_EQ(ftype_from_name(ftype_name(id)), id) << id;
        }
    }
}

TEST(InspectModel, Bandwidth) {
    EXPECT_DOUBLE_EQ(traffic::parse_bandwidth("20GB/s"), 20e9);
    EXPECT_DOUBLE_EQ(traffic::parse_bandwidth("20 GB"), 20e9);
    EXPECT_DOUBLE_EQ(traffic::parse_bandwidth("51.2e9"), 51.2e9);
    EXPECT_DOUBLE_EQ(traffic::parse_bandwidth("25GiB/s"), 25.0 * 1024 * 1024 * 1024);
    EXPECT_DOUBLE_EQ(traffic::parse_bandwidth("800MB/s"), 800e6);
    EXPECT_THROW(traffic::parse_bandwidth("fast"), FormatError);
    EXPECT_THROW(traffic::parse_bandwidth("20XB/s"), FormatError);
    EXPECT_THROW(traffic::parse_bandwidth("-5GB/s"), FormatError);
}

// ---------------------------------------------------------------------------------------------
// Synthetic files (header-driven analysis: data is zeros)

using TensorSpec = std::tuple<std::string, GgmlType, std::vector<int64_t>>;

std::string write_model(const std::string& name, const std::string& arch, std::vector<GgufKV> extra,
                        const std::vector<TensorSpec>& tensors) {
    const std::string path = (test::temp_dir() / name).string();
    GgufWriter w(path);
    w.add_kv({"general.architecture", GgufValue::make_string(arch)});
    for (auto& kv : extra) w.add_kv(std::move(kv));
    for (const auto& [n, t, shape] : tensors) w.add_tensor(n, t, shape);
    std::vector<uint8_t> zeros(1 << 16);
    for (const auto& t : w.tensors())
        for (uint64_t left = t.n_bytes; left;) {
            const size_t k = static_cast<size_t>(std::min<uint64_t>(left, zeros.size()));
            w.write_tensor_data({zeros.data(), k});
            left -= k;
        }
    w.finish();
    return path;
}

GgufKV u32(const std::string& key, uint32_t v) { return {key, GgufValue::make_scalar<uint32_t>(GgufType::U32, v)}; }

const Flag* find_flag(const std::vector<Flag>& flags, FlagKind k, const std::string& subject = "") {
    for (const auto& f : flags)
        if (f.kind == k && (subject.empty() || f.subject == subject)) return &f;
    return nullptr;
}

// SmolLM2 shape after llama-quantize Q4_K_M: rows of 576 cannot be K-quants, so they fall back
// to Q5_0 (and Q8_0 for the tied embeddings); Q5_0 has only a scalar dot in candle.
std::string smol_like_q4km() {
    return write_model("smol-q4km.gguf", "llama", {u32("general.file_type", 15)},
                       {{"token_embd.weight", GgmlType::Q8_0, {576, 1000}},
                        {"blk.0.attn_norm.weight", GgmlType::F32, {576}},
                        {"blk.0.attn_q.weight", GgmlType::Q5_0, {576, 576}},
                        {"blk.0.ffn_down.weight", GgmlType::Q4_K, {1536, 576}}});
}

TEST(InspectAudit, ScalarQ5_0InCandleOnly) {
    const GgufFile f = GgufFile::open(smol_like_q4km());
    const traffic::Analysis a = traffic::analyze(f);
    // token_embd Q8_0 18 blocks x 34 B x 1000 rows = 612,000 (tied: all of it per token);
    // attn_q Q5_0 18 x 22 x 576 = 228,096; ffn_down Q4_K 6 x 144 x 576 = 497,664; norm 2,304.
    const uint64_t total = 612'000 + 228'096 + 497'664 + 2'304;
    EXPECT_EQ(a.traffic.bytes_per_token, total);

    const auto candle = audit(f, a, load_profile("candle-x86"));
    const Flag* q5 = find_flag(candle, FlagKind::NoSimdDot, "Q5_0");
    ASSERT_TRUE(q5);
    EXPECT_EQ(q5->bytes_per_token, 228'096u);
    EXPECT_DOUBLE_EQ(q5->share, 228'096.0 / total);
    ASSERT_EQ(q5->tensors.size(), 1u);
    EXPECT_EQ(f.tensors()[q5->tensors[0]].name, "blk.0.attn_q.weight");
    EXPECT_NE(q5->suggestion.find("Q8_0"), std::string::npos) << q5->suggestion;
    EXPECT_NE(q5->suggestion.find("Q4_0"), std::string::npos) << q5->suggestion;
    EXPECT_NE(q5->cite.find("candle-core 0.8.3"), std::string::npos);
    const Flag* rows = find_flag(candle, FlagKind::RowNot256, "row 576");
    ASSERT_TRUE(rows);
    EXPECT_EQ(rows->bytes_per_token, 612'000u + 228'096u);  // the 1536-wide ffn_down is fine
    EXPECT_EQ(rows->tensors.size(), 2u);
    const Flag* lm = find_flag(candle, FlagKind::LmHeadShare);
    ASSERT_TRUE(lm);
    EXPECT_EQ(lm->bytes_per_token, 612'000u);
    EXPECT_FALSE(find_flag(candle, FlagKind::NoRepack));

    const auto ggml = audit(f, a, load_profile("ggml-x86-avx2"));
    EXPECT_FALSE(find_flag(ggml, FlagKind::NoSimdDot));
    EXPECT_TRUE(find_flag(ggml, FlagKind::RowNot256, "row 576"));
    // Flags come ordered by kind.
    for (size_t i = 1; i < candle.size(); ++i) EXPECT_LE(candle[i - 1].kind, candle[i].kind);
}

TEST(InspectAudit, MoeRoutersRepackAndExperts) {
    // 64 experts, 8 used; F32 routers [1024, 64] = 262,144 B read in full; Q4_0 experts
    // [1024, 64, 64]: 32 blocks x 18 B = 576 B per row, 64 x 64 rows = 2,359,296 B, 8/64 of it
    // = 294,912 B per token; a Q4_K matrix with 100 rows cannot be repacked 8 at a time.
    const std::string path =
        write_model("moe.gguf", "qwen3moe", {u32("qwen3moe.expert_count", 64), u32("qwen3moe.expert_used_count", 8)},
                    {{"blk.0.ffn_gate_inp.weight", GgmlType::F32, {1024, 64}},
                     {"blk.0.ffn_up_exps.weight", GgmlType::Q4_0, {1024, 64, 64}},
                     {"blk.0.attn_q.weight", GgmlType::Q4_K, {1024, 100}},
                     {"output.weight", GgmlType::Q8_0, {1024, 8}}});
    const GgufFile f = GgufFile::open(path);
    const traffic::Analysis a = traffic::analyze(f);
    EXPECT_EQ(tensor(f, a, "blk.0.ffn_up_exps.weight").bytes_per_token, 2'359'296u / 8);
    EXPECT_EQ(group_traffic(a, traffic::Group::Routers), 262'144u);
    // attn_q Q4_K 4 x 144 x 100 = 57,600; output Q8_0 32 x 34 x 8 = 8,704.
    EXPECT_EQ(a.traffic.bytes_per_token, 262'144u + 294'912u + 57'600u + 8'704u);

    const auto flags = audit(f, a, load_profile("ggml-x86-avx2"));
    const Flag* routers = find_flag(flags, FlagKind::FloatMatmul, "routers");
    ASSERT_TRUE(routers);
    EXPECT_EQ(routers->bytes_per_token, 262'144u);
    const Flag* repack = find_flag(flags, FlagKind::NoRepack, "Q4_K");
    ASSERT_TRUE(repack);
    EXPECT_EQ(repack->bytes_per_token, 57'600u);
    EXPECT_FALSE(find_flag(flags, FlagKind::NoRepack, "Q4_0"));  // 64 rows per expert
    EXPECT_FALSE(find_flag(flags, FlagKind::LmHeadShare));       // 1.4%
    EXPECT_FALSE(find_flag(flags, FlagKind::FloatMatmul, "lm_head"));

    // oiw4-avx1 plans no SIMD for F32: the routers are also a scalar path there.
    const auto oiw4 = audit(f, a, load_profile("oiw4-avx1"));
    EXPECT_TRUE(find_flag(oiw4, FlagKind::NoSimdDot, "F32"));
    EXPECT_TRUE(find_flag(oiw4, FlagKind::NoRepack, "Q4_K"));
    EXPECT_FALSE(find_flag(oiw4, FlagKind::NoSimdDot, "Q4_0"));
}

TEST(InspectAudit, FixturesUnderEveryProfile) {
    OIW_NEED_SHARED("fixtures");
    // tiny-moe: lm_head is 89% of the traffic; no other slow path on ggml AVX2.
    const GgufFile f = fixture("tiny-moe-Q4_K_M.gguf");
    const traffic::Analysis a = traffic::analyze(f);
    const auto flags = audit(f, a, load_profile("ggml-x86-avx2"));
    ASSERT_EQ(flags.size(), 1u);
    EXPECT_EQ(flags[0].kind, FlagKind::LmHeadShare);
    EXPECT_EQ(flags[0].bytes_per_token, 6'720'000u);
    // candle has SIMD for Q4_K, Q5_K, Q6_K, Q8_0 but the routers are tiny: same single flag.
    EXPECT_EQ(audit(f, a, load_profile("candle-x86")).size(), 1u);
    // oiw4-avx1: Q5_K (attn_output), Q6_K (output, blk.1 ffn_down) and F32 (routers) are scalar.
    const auto oiw4 = audit(f, a, load_profile("oiw4-avx1"));
    const Flag* q6 = find_flag(oiw4, FlagKind::NoSimdDot, "Q6_K");
    ASSERT_TRUE(q6);
    EXPECT_EQ(q6->bytes_per_token, 6'720'000u + 107'520u);
    EXPECT_TRUE(find_flag(oiw4, FlagKind::NoSimdDot, "Q5_K"));
    EXPECT_TRUE(find_flag(oiw4, FlagKind::NoSimdDot, "F32"));
}

// ---------------------------------------------------------------------------------------------
// Profiles

TEST(InspectProfile, ShippedProfilesCoverEveryTypeOfTheirVersion) {
    const auto names = profile_names();
    for (const char* want : {"ggml-x86-avx2", "candle-x86", "oiw4-avx1"})
        EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
    for (const auto& n : names) {
        SCOPED_TRACE(n);
        const Profile p = load_profile(n);
        EXPECT_EQ(p.name, n);
        EXPECT_FALSE(p.version.empty());
        EXPECT_FALSE(p.runtime.empty());
        // Profiles describe a runtime at a version (ggml 0.11.1: ids 0..41); a type added to the
        // table later is reported as "not described by profile" until a profile row cites it.
        for (uint32_t id = 0; id < 42; ++id) {
            if (!type_id_valid(id)) continue;
            const ProfileEntry* e = p.entry(static_cast<GgmlType>(id));
            ASSERT_TRUE(e) << type_traits(id)->name;
            EXPECT_FALSE(e->cite.empty());
        }
    }
    const Profile g = load_profile("ggml-x86-avx2");
    EXPECT_EQ(g.entry(GgmlType::Q4_0)->repack, "Q4_0x8");
    EXPECT_EQ(g.entry(GgmlType::Q4_K)->repack, "Q4_Kx8");
    EXPECT_EQ(g.entry(GgmlType::IQ4_NL)->repack, "IQ4_NLx8");
    EXPECT_EQ(g.entry(GgmlType::Q5_0)->dot, Dot::Simd);
    const Profile c = load_profile("candle-x86");
    EXPECT_EQ(c.entry(GgmlType::Q5_0)->dot, Dot::Scalar);
    EXPECT_EQ(c.entry(GgmlType::Q4_K)->dot, Dot::Simd);
    EXPECT_EQ(c.entry(GgmlType::IQ4_XS)->dot, Dot::Unsupported);
    const Profile o = load_profile("oiw4-avx1");
    for (uint32_t id = 0; id < kGgmlTypeCount; ++id) {
        const ProfileEntry* e = o.entry(static_cast<GgmlType>(id));
        if (!e) continue;
        const bool simd = e->type == GgmlType::Q4_0 || e->type == GgmlType::Q8_0 || e->type == GgmlType::Q4_K;
        EXPECT_EQ(e->dot == Dot::Simd, simd) << type_name(e->type);
    }
}

TEST(InspectProfile, ParseErrorsNameTheLine) {
    const std::string ok = "profile = x\nversion = v1\n[types]\nQ4_0 yes Q4_0x8 cite here\n";
    const Profile p = parse_profile(ok, "t.profile");
    EXPECT_EQ(p.entry(GgmlType::Q4_0)->cite, "cite here");
    EXPECT_FALSE(p.entry(GgmlType::Q4_1));
    auto fails = [](const std::string& text, const std::string& needle) {
        try {
            parse_profile(text, "t.profile");
            ADD_FAILURE() << "accepted: " << text;
        } catch (const FormatError& e) {
            EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
        }
    };
    fails("profile = x\nversion = v\n[types]\nQ9_9 yes - c\n", "line 4: unknown ggml type 'Q9_9'");
    fails("profile = x\nversion = v\n[types]\nQ4_0 maybe - c\n", "line 4");
    fails("profile = x\nversion = v\n[types]\nQ4_0 yes -\n", "missing citation");
    fails("profile = x\nversion = v\n[types]\nQ4_0 yes - c\nq4_0 no - c\n", "listed twice");
    fails("profile = x\n[types]\n", "version");
    fails("profile = x\nversion = v\ncolour = red\n[types]\n", "unknown key");
    EXPECT_THROW(load_profile("no-such-runtime"), FormatError);
}

// ---------------------------------------------------------------------------------------------
// Diff

TEST(InspectDiff, QuantizationsOfOneModel) {
    OIW_NEED_SHARED("fixtures");
    const GgufFile a = fixture("tiny-llama-Q4_K_M.gguf");
    const GgufFile b = fixture("tiny-llama-Q4_0.gguf");
    const traffic::Analysis aa = traffic::analyze(a), ab = traffic::analyze(b);
    const Diff d = diff(a, aa, b, ab, true);
    EXPECT_FALSE(d.identical());
    ASSERT_EQ(d.kv_changed.size(), 1u);
    EXPECT_EQ(a.metadata()[d.kv_changed[0].first].key, "general.file_type");
    EXPECT_TRUE(d.kv_added.empty());
    EXPECT_TRUE(d.kv_removed.empty());
    EXPECT_EQ(d.tensors_common, 39u);
    // Every matrix but output.weight (Q6_K in both) changes type: 1 + 4 x 7 = 29.
    EXPECT_EQ(d.tensors_changed.size(), 29u);
    // Bytes equal in both: output.weight and the 9 F32 norms.
    EXPECT_EQ(d.data_identical.size(), 10u);
    EXPECT_EQ(d.data_different.size(), 29u);
    // Q6_K -> Q4_0 saves 8,448 (attn_v) + 50,688 (ffn_down) per Q6_K layer, 2 layers.
    EXPECT_EQ(aa.traffic.bytes_per_token - ab.traffic.bytes_per_token, 2 * (8'448u + 50'688u));
}

TEST(InspectDiff, SelfIsIdentical) {
    OIW_NEED_SHARED("fixtures");
    const GgufFile a = fixture("tiny-moe-Q4_K_M.gguf");
    const traffic::Analysis aa = traffic::analyze(a);
    const Diff d = diff(a, aa, a, aa, true);
    EXPECT_TRUE(d.identical());
    EXPECT_EQ(d.data_identical.size(), 27u);
}

}  // namespace
}  // namespace oiw::inspect
