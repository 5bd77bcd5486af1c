// Poisoned tensor data: NaN/inf input and quantized scales that overflow are refused as
// llama-quantize refuses them ("quantized data validation failed"), naming the tensor and the
// first bad row, with no output file left behind.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include "converters/requant/requant.h"
#include "libformat/fp16.h"
#include "libformat/gguf/gguf.h"
#include "tests/support/helpers.h"

namespace oiw {
namespace {

using test::error_of;

RequantOptions preset_options(const char* name) {
    RequantOptions o;
    o.plan.preset = &find_preset(name);
    o.plan.pure = true;
    return o;
}

// A one-layer llama-shaped file: "blk.0.ffn_up.weight" (F32, 256 x 8) holding `rows`, and a 1-D
// norm tensor (copied unchanged) holding `norm`.
std::string write_model(const std::string& name, const std::vector<float>& rows, const std::vector<float>& norm) {
    const std::string path = (test::temp_dir() / name).string();
    GgufWriter w(path);
    w.add_kv({"general.architecture", GgufValue::make_string("llama")});
    w.add_kv({"llama.block_count", GgufValue::make_scalar<uint32_t>(GgufType::U32, 1)});
    const int64_t up[] = {256, 8}, n[] = {256};
    w.add_tensor("blk.0.attn_norm.weight", GgmlType::F32, n);
    w.add_tensor("blk.0.ffn_up.weight", GgmlType::F32, up);
    w.write_tensor_data({reinterpret_cast<const uint8_t*>(norm.data()), norm.size() * sizeof(float)});
    w.write_tensor_data({reinterpret_cast<const uint8_t*>(rows.data()), rows.size() * sizeof(float)});
    w.finish();
    return path;
}

std::vector<float> ramp(size_t n) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = std::sin(static_cast<float>(i) * 0.1f);
    return v;
}

TEST(RequantPoison, CleanModelConverts) {
    const std::string in = write_model("clean.gguf", ramp(256 * 8), std::vector<float>(256, 1.0f));
    const std::string out = (test::temp_dir() / "clean-q4.gguf").string();
    requantize(in, out, preset_options("Q4_0"), 2);
    EXPECT_TRUE(std::filesystem::exists(out));
}

TEST(RequantPoison, NonFiniteInputNamesTensorAndFirstRow) {
    for (float bad : {std::nanf(""), std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()}) {
        for (const char* preset : {"Q4_0", "Q8_0", "Q4_K_M", "F16", "BF16", "F32"}) {
            SCOPED_TRACE(std::string(preset) + " " + std::to_string(bad));
            std::vector<float> rows = ramp(256 * 8);
            rows[256 * 5 + 7] = bad;
            rows[256 * 6 + 1] = bad;
            const std::string in = write_model("nan.gguf", rows, std::vector<float>(256, 1.0f));
            const std::string out = (test::temp_dir() / "nan-out.gguf").string();
            const std::string e = error_of([&] { requantize(in, out, preset_options(preset), 2); });
            EXPECT_NE(e.find("tensor 'blk.0.ffn_up.weight': row 5: input F32 data: "), std::string::npos) << e;
            EXPECT_NE(e.find(std::isnan(bad) ? "NaN at element 7" : "inf at element 7"), std::string::npos) << e;
            EXPECT_FALSE(std::filesystem::exists(out));
        }
    }
}

// A tensor copied unchanged (1-D norms are never quantized) is validated too.
TEST(RequantPoison, CopiedTensorsAreValidated) {
    std::vector<float> norm(256, 1.0f);
    norm[200] = std::nanf("");
    const std::string in = write_model("norm.gguf", ramp(256 * 8), norm);
    const std::string out = (test::temp_dir() / "norm-out.gguf").string();
    const std::string e = error_of([&] { requantize(in, out, preset_options("Q8_0"), 1); });
    EXPECT_NE(e.find("tensor 'blk.0.attn_norm.weight': row 0: input F32 data: NaN at element 200"), std::string::npos)
        << e;
    EXPECT_FALSE(std::filesystem::exists(out));
}

// Finite input whose block scale overflows fp16 (|x| = 1e38: d = 1e38 / 127 for Q8_0).
TEST(RequantPoison, OverflowingScaleIsRefused) {
    std::vector<float> rows = ramp(256 * 8);
    for (size_t i = 256 * 3; i < 256 * 4; ++i) rows[i] = 1e38f;
    const std::string in = write_model("huge.gguf", rows, std::vector<float>(256, 1.0f));
    for (const char* preset : {"Q8_0", "Q4_0", "Q4_1", "Q4_K_M", "Q2_K", "IQ4_NL", "Q1_0", "TQ1_0", "TQ2_0", "F16"}) {
        SCOPED_TRACE(preset);
        const std::string out = (test::temp_dir() / "huge-out.gguf").string();
        const std::string e = error_of([&] { requantize(in, out, preset_options(preset), 2); });
        EXPECT_NE(e.find("tensor 'blk.0.ffn_up.weight': row 3: quantized output "), std::string::npos) << e;
        EXPECT_FALSE(std::filesystem::exists(out));
    }
    // BF16 has F32's range: 1e38 is representable, so the file converts.
    const std::string out = (test::temp_dir() / "huge-bf16.gguf").string();
    requantize(in, out, preset_options("BF16"), 2);
    EXPECT_TRUE(std::filesystem::exists(out));
}

// The i-quant grid searches find no grid point for such values and give up: the error names the
// tensor and the first row the quantizer refuses, and no file is left.
TEST(RequantPoison, GridSearchFailureNamesTensorAndRow) {
    std::vector<float> rows = ramp(256 * 8);
    for (size_t i = 256 * 3 + 5; i < 256 * 4; ++i) rows[i] = 1e38f;
    const std::string in = write_model("huge-grid.gguf", rows, std::vector<float>(256, 1.0f));
    for (const char* preset : {"IQ3_S", "IQ3_XS", "IQ3_M"}) {
        SCOPED_TRACE(preset);
        const std::string out = (test::temp_dir() / "grid-out.gguf").string();
        const std::string e = error_of([&] { requantize(in, out, preset_options(preset), 2); });
        EXPECT_EQ(
            e, in + ": tensor 'blk.0.ffn_up.weight': row 3: IQ3_S: no grid point fits the block (non-finite values?)");
        EXPECT_FALSE(std::filesystem::exists(out));
    }
}

// A quantized input with a NaN scale (copied or requantized) is refused like ggml's loader does.
TEST(RequantPoison, QuantizedInputWithBadScale) {
    const std::string clean = write_model("q.gguf", ramp(256 * 8), std::vector<float>(256, 1.0f));
    const std::string q8 = (test::temp_dir() / "q8.gguf").string();
    requantize(clean, q8, preset_options("Q8_0"), 1);
    auto bytes = test::read_file(q8);
    {
        GgufFile f = GgufFile::open(q8);
        const auto& t = f.tensors()[static_cast<size_t>(f.find_tensor("blk.0.ffn_up.weight"))];
        // Row 2, block 1: its d field is the first 2 bytes of the block (34 bytes per block).
        const uint64_t at = f.data_offset() + t.offset + row_size(GgmlType::Q8_0, 256) * 2 + 34;
        const uint16_t nan = 0x7e00;
        std::memcpy(bytes.data() + at, &nan, 2);
    }
    const std::string bad = (test::temp_dir() / "q8-bad.gguf").string();
    test::write_file(bad, bytes);
    const std::string out = (test::temp_dir() / "q8-out.gguf").string();
    RequantOptions o = preset_options("Q4_0");
    o.allow_requantize = true;
    std::string e = error_of([&] { requantize(bad, out, o, 2); });
    EXPECT_NE(e.find("tensor 'blk.0.ffn_up.weight': row 2: input Q8_0 data: NaN scale d in block 1"), std::string::npos)
        << e;
    e = error_of([&] { requantize(bad, out, preset_options("Q8_0"), 2); });  // Q8_0 -> Q8_0: a copy
    EXPECT_NE(e.find("row 2: input Q8_0 data: NaN scale d in block 1"), std::string::npos) << e;
    EXPECT_FALSE(std::filesystem::exists(out));
}

// The dry run of a file a conversion would refuse reports the refusal as a warning naming the
// file (llama-2-tiny-random: 8-wide rows, Q8_0 has no fallback) and exits cleanly; the real
// run refuses with the same message.
TEST(RequantPoison, DryRunReportsRefusalsAsWarnings) {
    OIW_NEED_SHARED("fixtures/llama-2-tiny-random.gguf");
    const std::string path = test::shared_path("fixtures/llama-2-tiny-random.gguf");
    GgufFile in = GgufFile::open(path);
    RequantOptions o;
    o.plan.preset = &find_preset("Q4_K_M");
    const std::string e = error_of([&] { prepare_requant(in, o); });
    EXPECT_EQ(e, path +
                     ": tensor 'output.weight': row length 8 is not a multiple of 32 (required by Q8_0) and Q8_0 has "
                     "no fallback type");
    o.dry_run = true;
    RequantJob job = prepare_requant(in, o);
    EXPECT_FALSE(job.writable);
    EXPECT_EQ(std::count(job.plan.warnings.begin(), job.plan.warnings.end(), "a conversion would fail: " + e), 1);
}

}  // namespace
}  // namespace oiw
