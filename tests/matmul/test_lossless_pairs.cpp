// Lossless pairs through the MatVec abstraction: every Q4_0 tensor as oiw4 planes and every
// Q4_K tensor (rows % 8 == 0) as Q4_Kx8 blocks give bit-identical outputs in both semantics.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "converters/matmul/matvec.h"
#include "converters/quant/quants.h"
#include "converters/repack/repack.h"
#include "converters/requant/requant.h"
#include "converters/requant/requant_plan.h"
#include "libformat/fp16.h"
#include "tests/support/helpers.h"

namespace oiw::matmul {
namespace {

// Number of tensors of `path` checked; fails on the first output that differs.
int check_file(const std::string& path) {
    const GgufFile f = GgufFile::open(path);
    std::mt19937_64 rng(1);
    std::normal_distribution<float> z;
    int checked = 0;
    for (size_t i = 0; i < f.tensors().size(); ++i) {
        const GgufTensorInfo& t = f.tensors()[i];
        const int64_t rows = t.n_rows(), cols = t.ne[0];
        const uint8_t* bytes = f.tensor_data(i).data();
        std::vector<uint8_t> qs;
        std::vector<float> d;
        std::vector<block_q4_Kx8> x8;
        std::unique_ptr<MatVec> packed;
        if (t.n_dims < 2) continue;
        if (t.type == GgmlType::Q4_0) {
            const auto* b = reinterpret_cast<const block_q4_0*>(bytes);
            qs.resize(static_cast<size_t>(rows * cols / 2));
            d.resize(static_cast<size_t>(rows * cols / 32));
            for (size_t k = 0; k < d.size(); ++k) {
                std::memcpy(&qs[k * 16], b[k].qs, 16);
                d[k] = fp16_to_fp32(b[k].d);
            }
            packed = oiw4_matvec(Oiw4Planes{qs.data(), d.data(), rows, cols});
        } else if (t.type == GgmlType::Q4_K && rows % 8 == 0) {
            const auto* b = reinterpret_cast<const block_q4_K*>(bytes);
            const int64_t kb = cols / 256;
            x8.resize(static_cast<size_t>(rows / 8 * kb));
            repack_q4_k_to_q4_kx8(b, x8.data(), rows, kb, 8);
            packed = q4kx8_matvec(Q4Kx8View{x8.data(), rows, cols});
        } else {
            continue;
        }
        const auto ggml = ggml_matvec(t.type, bytes, rows, cols);
        std::vector<float> x(static_cast<size_t>(cols));
        for (auto& e : x) e = z(rng) * std::exp(z(rng));
        std::vector<double> e1(rows), e2(rows);
        std::vector<float> i1(rows), i2(rows);
        ggml->exact(x.data(), e1.data(), 2);
        packed->exact(x.data(), e2.data(), 2);
        ggml->integer(x.data(), i1.data(), 2);
        packed->integer(x.data(), i2.data(), 2);
        EXPECT_EQ(std::memcmp(e1.data(), e2.data(), e1.size() * 8), 0) << path << ": " << t.name << " exact";
        EXPECT_EQ(std::memcmp(i1.data(), i2.data(), i1.size() * 4), 0) << path << ": " << t.name << " integer";
        ++checked;
    }
    return checked;
}

std::string requantized(const std::string& preset) {
    RequantOptions o;
    o.plan.preset = &find_preset(preset);
    const std::string path = (test::temp_dir() / (preset + ".gguf")).string();
    requantize(test::data_path("models/mini-llama-f16.gguf"), path, o, 2);
    return path;
}

TEST(MatmulLossless, MiniLlamaQ4_0AsOiw4AndQ4_KAsQ4Kx8) {
    EXPECT_GT(check_file(requantized("Q4_0")), 10);
    EXPECT_GT(check_file(requantized("Q4_K_M")), 5);
}

TEST(MatmulLossless, SharedFixtures) {
    OIW_NEED_SHARED("fixtures/tiny-llama-Q4_0.gguf");
    EXPECT_GT(check_file(test::shared_path("fixtures/tiny-llama-Q4_0.gguf")), 10);
    EXPECT_GT(check_file(test::shared_path("fixtures/tiny-llama-Q4_K_M.gguf")), 5);
    EXPECT_GT(check_file(test::shared_path("fixtures/tiny-moe-Q4_K_M.gguf")), 5);
}

// MatVec::exact_batch / integer_batch give the one-vector calls' bits for every vector, on the
// ggml types with their own batch loop (F32, F16, BF16) and through the default (the others,
// packed encodings), for batch sizes around the 8 side-by-side sums and several thread counts.
TEST(MatmulBatch, BitIdenticalToOneVectorCalls) {
    std::mt19937_64 rng(7);
    std::normal_distribution<float> z;
    const int64_t rows = 40, cols = 512;
    std::vector<float> w(static_cast<size_t>(rows * cols));
    for (float& v : w) v = z(rng);
    for (const GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_K,
                             GgmlType::Q6_K, GgmlType::IQ4_XS}) {
        std::vector<uint8_t> bytes(row_size(t, cols) * rows);
        if (t == GgmlType::F32)
            std::memcpy(bytes.data(), w.data(), bytes.size());
        else
            quantize_chunk(t, w.data(), bytes.data(), rows, cols, nullptr);
        const auto m = ggml_matvec(t, bytes.data(), rows, cols);
        for (const int64_t n : {1, 7, 8, 9, 17}) {
            std::vector<float> x(static_cast<size_t>(n * cols));
            for (float& v : x) v = z(rng);
            std::vector<double> eb(static_cast<size_t>(n * rows)), e1(static_cast<size_t>(rows));
            std::vector<float> ib(eb.size()), i1(static_cast<size_t>(rows));
            for (const int threads : {1, 3}) {
                m->exact_batch(x.data(), n, eb.data(), threads);
                m->integer_batch(x.data(), n, ib.data(), threads);
                for (int64_t k = 0; k < n; ++k) {
                    m->exact(x.data() + k * cols, e1.data(), 1);
                    m->integer(x.data() + k * cols, i1.data(), 1);
                    SCOPED_TRACE(std::string(type_name(t)) + " n=" + std::to_string(n) + " vector " +
                                 std::to_string(k));
                    EXPECT_EQ(std::memcmp(eb.data() + k * rows, e1.data(), e1.size() * 8), 0);
                    EXPECT_EQ(std::memcmp(ib.data() + k * rows, i1.data(), i1.size() * 4), 0);
                }
            }
        }
    }
}

}  // namespace
}  // namespace oiw::matmul
