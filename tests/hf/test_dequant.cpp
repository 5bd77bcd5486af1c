// FP8 checkpoints (quantization_config.quant_method "fp8"): every FP8 code decoded exactly, scale
// shapes as dequant_simple broadcasts them, converted values equal to weight x block scale at the
// permuted source row, fast paths equal to the element reference, and NaN / overflow / shapes /
// methods the Python converter cannot take refused. Byte-identity with convert_hf_to_gguf.py is
// in goldens.txt (the *-fp8* cases, checked by HfConvertWriteGolden and HfConvert.MatchesConvertHfToGguf...).
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "converters/hf/checkpoint.h"
#include "converters/hf/convert.h"
#include "converters/hf/dequant.h"
#include "libformat/error.h"
#include "libformat/gguf/gguf.h"
#include "tests/support/helpers.h"
#include "tests/support/hf_fixtures.h"

namespace {

using namespace oiw;
using namespace oiw::test;
namespace fs = std::filesystem;

float decode(hf::Dtype d, uint8_t b) { return hf::decode_element(&b, d, 0); }

TEST(HfDequant, DecodesEveryFp8CodeExactly) {
    using hf::Dtype;
    // E4M3FN: bias 7, subnormals m/8 * 2^-6, S.1111.111 NaN, no infinities (largest 448)
    EXPECT_EQ(decode(Dtype::F8E4M3, 0x01), std::ldexp(1.0f, -9));
    EXPECT_EQ(decode(Dtype::F8E4M3, 0x07), 7 * std::ldexp(1.0f, -9));
    EXPECT_EQ(decode(Dtype::F8E4M3, 0x08), std::ldexp(1.0f, -6));
    EXPECT_EQ(decode(Dtype::F8E4M3, 0x38), 1.0f);
    EXPECT_EQ(decode(Dtype::F8E4M3, 0x3F), 1.875f);
    EXPECT_EQ(decode(Dtype::F8E4M3, 0x78), 256.0f);
    EXPECT_EQ(decode(Dtype::F8E4M3, 0x7E), 448.0f);
    EXPECT_EQ(decode(Dtype::F8E4M3, 0xFE), -448.0f);
    EXPECT_TRUE(std::isnan(decode(Dtype::F8E4M3, 0x7F)));
    EXPECT_TRUE(std::isnan(decode(Dtype::F8E4M3, 0xFF)));
    EXPECT_TRUE(std::signbit(decode(Dtype::F8E4M3, 0x80)) && decode(Dtype::F8E4M3, 0x80) == 0.0f);
    // every finite code: strictly increasing in magnitude, the negative code its mirror
    for (int b = 1; b < 0x7F; ++b) {
        const auto u = static_cast<uint8_t>(b);
        EXPECT_GT(decode(Dtype::F8E4M3, u), decode(Dtype::F8E4M3, static_cast<uint8_t>(b - 1))) << b;
        EXPECT_EQ(decode(Dtype::F8E4M3, static_cast<uint8_t>(b | 0x80)), -decode(Dtype::F8E4M3, u)) << b;
    }
    // E5M2: bias 15, F16's top byte (infinities and NaNs as F16's)
    EXPECT_EQ(decode(Dtype::F8E5M2, 0x01), std::ldexp(1.0f, -16));
    EXPECT_EQ(decode(Dtype::F8E5M2, 0x3C), 1.0f);
    EXPECT_EQ(decode(Dtype::F8E5M2, 0x7B), 57344.0f);
    EXPECT_EQ(decode(Dtype::F8E5M2, 0xFC), -std::numeric_limits<float>::infinity());
    EXPECT_TRUE(std::isnan(decode(Dtype::F8E5M2, 0x7D)));
    EXPECT_EQ(decode(Dtype::I8, 0x80), -128.0f);
    EXPECT_EQ(decode(Dtype::I8, 0x7F), 127.0f);
    float run[4];
    const uint8_t bytes[4] = {0x38, 0xB8, 0x7E, 0x01};
    hf::decode_run(bytes, Dtype::F8E4M3, run, 4);
    EXPECT_EQ(std::vector<float>(run, run + 4), (std::vector<float>{1.0f, -1.0f, 448.0f, std::ldexp(1.0f, -9)}));
}

// A one-tensor safetensors file holding an F32 scale of `shape` with values 0, 1, 2, ...
fs::path scale_file(const fs::path& dir, const std::vector<uint64_t>& shape) {
    uint64_t n = 1;
    for (uint64_t x : shape) n *= x;
    std::vector<uint8_t> bytes(4 * n);
    for (uint64_t i = 0; i < n; ++i) {
        const auto f = static_cast<float>(i);
        std::memcpy(&bytes[4 * i], &f, 4);
    }
    fs::path p = dir / fmt::format("scale-{}.safetensors", fmt::join(shape, "x"));
    write_file(p.string(), safetensors_image({{"s", "F32", shape, bytes}}));
    return p;
}

TEST(HfDequant, ScaleShapesBroadcastAsDequantSimple) {
    const auto root = temp_dir();
    hf::Tensor w;
    w.name = "w";
    w.shape = {100, 64};
    struct Case {
        std::vector<uint64_t> scale, block;
        // the scale element of weight elements (0,0), (31,47), (32,48), (99,63); empty: refused
        std::vector<float> at;
    };
    const Case cases[] = {
        {{4, 2}, {32, 48}, {0, 0, 3, 7}},  // blocks, the last row/column of blocks cut
        {{1, 1}, {128, 128}, {0, 0, 0, 0}},
        {{4, 2}, {48}, {}},  // one block dimension, dim_offset 1: [4, 2 x 48] does not cover 100 rows
        {{100, 2}, {48}, {0, 62, 65, 199}},
        {{}, {}, {0, 0, 0, 0}},        // per tensor (0-d)
        {{1}, {}, {0, 0, 0, 0}},       // per tensor
        {{100}, {}, {0, 31, 32, 99}},  // per row, unsqueezed to [100, 1]
        {{100, 1}, {}, {0, 31, 32, 99}},
        {{1, 64}, {}, {0, 47, 48, 63}},  // per column
        {{100, 64}, {}, {0, 31 * 64 + 47, 32 * 64 + 48, 99 * 64 + 63}},
        {{3, 2}, {32, 48}, {}},  // too few block rows
        {{5, 2}, {32, 48}, {}},  // more than the matrix needs (Python would cut it silently)
        {{2, 64}, {}, {}},       // neither the rows nor 1
        {{64}, {}, {}},          // a row scale of the wrong length
        {{100}, {32, 48}, {}},   // a block size needs a 2-D scale
        {{1, 1, 1}, {}, {}},     // more dimensions than the matrix
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(fmt::format("scale [{}] block [{}]", fmt::join(c.scale, ","), fmt::join(c.block, ",")));
        const hf::File f(scale_file(root, c.scale).string());
        const hf::Tensor& s = f.tensors().front();
        if (c.at.empty()) {
            const FormatError e = format_error_of([&] { (void)hf::plan_scale(f, s, w, c.block); });
            EXPECT_EQ(e.kind(), ErrorKind::BadDims);
            EXPECT_NE(std::string(e.what()).find("tensor 's'"), std::string::npos) << e.what();
            continue;
        }
        const hf::Scale sc = hf::plan_scale(f, s, w, c.block);
        EXPECT_EQ(sc.at(0, 0), c.at[0]);
        EXPECT_EQ(sc.at(31, 47), c.at[1]);
        EXPECT_EQ(sc.at(32, 48), c.at[2]);
        EXPECT_EQ(sc.at(99, 63), c.at[3]);
        // apply over runs that start mid-row and cross rows and block edges gives at()'s factors
        std::vector<float> ones(100 * 64, 1.0f);
        sc.apply(ones.data() + 45, 64 * 3 + 7, 45, 64);
        for (uint64_t i = 45; i < 45 + 64 * 3 + 7; ++i) ASSERT_EQ(ones[i], sc.at(i / 64, i % 64)) << i;
        EXPECT_EQ(ones[44], 1.0f);
    }
    const hf::File f(scale_file(root, {4, 2}).string());
    hf::Tensor w3 = w;
    w3.shape = {2, 50, 64};  // fused experts: 3-D weights are not scaled here
    EXPECT_EQ(format_error_of([&] {
                  (void)hf::plan_scale(f, f.tensors().front(), w3, {32, 48});
              }).kind(),
              ErrorKind::BadDims);
}

// Source element `i` of a checkpoint tensor as its raw byte.
uint8_t byte_at(const hf::Checkpoint& ck, const std::string& name, uint64_t i) {
    const hf::TensorRef r = ck.find(name);
    return r.part->bytes(*r.tensor)[i];
}

float f32_at(const hf::Checkpoint& ck, const std::string& name, uint64_t i) {
    const hf::TensorRef r = ck.find(name);
    float f;
    std::memcpy(&f, r.part->bytes(*r.tensor).data() + 4 * i, 4);
    return f;
}

TEST(HfDequant, ValuesAreWeightTimesItsBlockScaleAtThePermutedSourceRow) {
    const auto root = temp_dir();
    const fs::path dir = make_hf_case("tiny-llama-fp8", root);  // blocks 32 x 48
    const hf::Checkpoint ck(dir.string());
    const hf::ConvertPlan plan = hf::plan_convert(ck, hf::OutType::F32);
    for (const hf::PlannedTensor& t : plan.tensors)
        EXPECT_EQ(t.source_name().find("_scale_inv"), std::string::npos) << "scales are not written";
    const std::string out = (root / "f32.gguf").string();
    hf::write_convert(plan, out);
    const GgufFile f = GgufFile::open(out);
    auto check = [&](const std::string& gguf, const std::string& hf_name, int64_t rows, int64_t cols, int64_t heads) {
        SCOPED_TRACE(gguf);
        const auto got = read_f32(f, gguf);
        ASSERT_EQ(got.size(), static_cast<size_t>(rows * cols));
        const int64_t scale_cols = (cols + 47) / 48;
        int nonzero = 0;
        for (int64_t r = 0; r < rows; ++r) {
            const int64_t per = heads ? rows / heads : 1, half = per / 2;
            const int64_t src = heads ? r / per * per + r % 2 * half + r % per / 2 : r;
            for (int64_t c = 0; c < cols; ++c) {
                const float w = decode(hf::Dtype::F8E4M3, byte_at(ck, hf_name, static_cast<uint64_t>(src * cols + c)));
                const float s =
                    f32_at(ck, hf_name + "_scale_inv", static_cast<uint64_t>(src / 32 * scale_cols + c / 48));
                ASSERT_EQ(got[static_cast<size_t>(r * cols + c)], w * s) << r << "," << c;
                nonzero += w != 0.0f;
            }
        }
        EXPECT_GT(nonzero, rows * cols / 2);
    };
    check("blk.0.attn_q.weight", "model.layers.0.self_attn.q_proj.weight", 64, 64, 4);
    check("blk.1.attn_k.weight", "model.layers.1.self_attn.k_proj.weight", 32, 64, 2);
    check("blk.0.ffn_down.weight", "model.layers.0.mlp.down_proj.weight", 64, 100, 0);
    check("blk.1.ffn_up.weight", "model.layers.1.mlp.up_proj.weight", 100, 64, 0);
    // auto: the first matrix in order that is BF16 or F16 (lm_head, BF16) decides, as in Python
    EXPECT_EQ(hf::plan_convert(ck, hf::OutType::Auto).output_type, "BF16");
}

TEST(HfDequant, FastPathsGiveTheReferenceBytes) {
    const auto root = temp_dir();
    int n = 0;
    for (const char* args :
         {"--type BF16 --n-embd 1024 --n-head 8 --n-ff 200 --n-vocab 416 --n-layer 1 --hf-fp8 128x96",
          "--type F16 --n-embd 256 --n-head 4 --n-ff 100 --n-vocab 416 --n-layer 1 --hf-fp8 row",
          "--hf-arch MixtralForCausalLM --type F32 --n-embd 64 --n-ff 96 --n-vocab 416 --n-layer 1 "
          "--n-expert 3 --n-expert-used 2 --hf-fp8 tensor",
          "--hf-arch Gemma3ForCausalLM --type F16 --n-embd 64 --n-ff 96 --n-vocab 416 --n-layer 1 "
          "--head-dim 32 --tied --hf-fp8 32x32"}) {
        // a directory each, kept: an output reusing a removed input's inode would look like that
        // input to the input registry, which lives as long as the process (libformat/io/input_file.h)
        const fs::path dir = make_synth(args, root / fmt::format("ck{}", n++));
        for (const char* ot : {"f32", "f16", "bf16", "q8_0"}) {
            hf::WriteOptions ref;
            ref.reference = true;
            const std::string want = convert_sha(dir, ot, root / "ref.gguf", ref);
            for (unsigned threads : {1u, 3u}) {
                hf::WriteOptions opt;
                opt.threads = threads;
                EXPECT_EQ(convert_sha(dir, ot, root / "fast.gguf", opt), want)
                    << args << " " << ot << " -t " << threads;
            }
        }
    }
}

// Rewrites model.safetensors of `dir` with `edit` applied to (name, bytes) of each tensor.
template <typename Edit>
void edit_tensors(const fs::path& dir, Edit&& edit) {
    const std::string path = (dir / "model.safetensors").string();
    std::vector<StEntry> entries;
    {
        const hf::File f(path);
        for (const hf::Tensor& t : f.tensors()) {
            const auto b = f.bytes(t);
            StEntry e{t.name, hf::dtype_name(t.dtype), t.shape, std::vector<uint8_t>(b.begin(), b.end())};
            edit(e);
            entries.push_back(std::move(e));
        }
    }
    write_file(path, safetensors_image(entries));
}

std::string convert_error(const fs::path& dir, const fs::path& out) {
    return error_of([&] {
        const hf::Checkpoint ck(dir.string());
        hf::WriteOptions opt;
        opt.threads = 3;
        hf::write_convert(hf::plan_convert(ck, hf::OutType::F16), out.string(), opt);
    });
}

TEST(HfDequant, NanCodesAndOverflowingScalesAreRefusedNamingTheElement) {
    const auto root = temp_dir();
    const std::string up = "model.layers.1.mlp.up_proj.weight";
    struct Case {
        const char* what;
        std::function<void(StEntry&)> edit;
        std::string want;
    };
    const float inf = std::numeric_limits<float>::infinity(), huge = 3e38f;
    const Case cases[] = {
        {"an E4M3 NaN code",
         [&](StEntry& e) {
             if (e.name == up) e.bytes[777] = 0xFF;
         },
         "tensor '" + up + "': non-finite value nan at element 777"},
        {"an infinite scale",
         [&](StEntry& e) {
             if (e.name == up + "_scale_inv") std::memcpy(&e.bytes[4 * 3], &inf, 4);  // block (1, 1)
         },
         "tensor '" + up + "': non-finite value"},
        {"a finite scale whose product overflows",
         [&](StEntry& e) {
             if (e.name == up + "_scale_inv") std::memcpy(&e.bytes[0], &huge, 4);
         },
         "tensor '" + up + "': non-finite value"},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.what);
        const fs::path dir = make_hf_case("tiny-llama-fp8", root / "c");
        edit_tensors(dir, c.edit);
        const std::string e = convert_error(dir, root / "out.gguf");
        EXPECT_NE(e.find(c.want), std::string::npos) << e;
        EXPECT_FALSE(fs::exists(root / "out.gguf"));
        fs::remove_all(root / "c");
    }
}

TEST(HfDequant, RefusesWhatThePythonConverterCannotConvert) {
    const auto root = temp_dir();
    struct Case {
        const char* what;
        nlohmann::json quant;  // quantization_config
        ErrorKind kind;
        std::string want;
    };
    const Case cases[] = {
        {"gptq", {{"quant_method", "gptq"}, {"bits", 4}}, ErrorKind::Unsupported, "\"gptq\" is not converted"},
        {"bitnet", {{"quant_method", "bitnet"}}, ErrorKind::Unsupported, "\"bitnet\" is not converted"},
        {"pack-quantized",
         {{"quant_method", "compressed-tensors"}, {"format", "pack-quantized"}},
         ErrorKind::Unsupported,
         "format \"pack-quantized\" is not converted"},
        {"two config groups",
         {{"quant_method", "compressed-tensors"},
          {"format", "float-quantized"},
          {"config_groups",
           {{"a", {{"weights", {{"strategy", "block"}}}}}, {"b", {{"weights", {{"strategy", "block"}}}}}}}},
         ErrorKind::Unsupported,
         "one config group"},
        {"a block size of the wrong form",
         {{"quant_method", "fp8"}, {"weight_block_size", "128x128"}},
         ErrorKind::BadJson,
         "is not a block size"},
        {"blocks the scales do not match",
         {{"quant_method", "fp8"}, {"weight_block_size", {16, 16}}},
         ErrorKind::BadDims,
         "does not cover the matrix"},
        {"no block size for block scales", {{"quant_method", "fp8"}}, ErrorKind::BadDims, "does not cover the matrix"},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.what);
        const fs::path dir = make_hf_case("tiny-llama-fp8", root / "c");
        nlohmann::json cfg = nlohmann::json::parse(read_text((dir / "config.json").string()));
        cfg["quantization_config"] = c.quant;
        const std::string text = cfg.dump();
        write_file((dir / "config.json").string(),
                   std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
        const hf::Checkpoint ck(dir.string());
        const FormatError e = format_error_of([&] { (void)hf::plan_convert(ck, hf::OutType::F16); });
        EXPECT_EQ(e.kind(), c.kind) << e.what();
        EXPECT_NE(std::string(e.what()).find(c.want), std::string::npos) << e.what();
        fs::remove_all(root / "c");
    }
    // a scale whose weight is not in the checkpoint
    const fs::path dir = make_hf_case("tiny-llama-fp8", root / "c");
    edit_tensors(dir, [](StEntry& e) {
        if (e.name == "model.layers.0.mlp.up_proj.weight") e.name = "model.layers.0.mlp.up_proj.weight_fp8";
    });
    const hf::Checkpoint ck(dir.string());
    const FormatError e = format_error_of([&] { (void)hf::plan_convert(ck, hf::OutType::F16); });
    EXPECT_NE(std::string(e.what()).find("tensor 'model.layers.0.mlp.up_proj.weight_scale_inv': scales "
                                         "'model.layers.0.mlp.up_proj.weight', which the checkpoint does not hold"),
              std::string::npos)
        << e.what();
}

}  // namespace
