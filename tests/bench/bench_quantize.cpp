// Quantizer throughput, reference vs optimized, in one run (so ratios are comparable on a noisy
// machine): per type and imatrix variant, quantize a 4096 x 2048 random F32 matrix
// (n_per_row 4096, 2048 rows; items = elements). Also the f16 -> f32 row conversion and the
// F16-source pipelines (convert 16 rows, then quantize) that gguf-requant runs for Q8_0 / Q4_0.
//   bench_quantize [--benchmark_filter=Q4_K] [--benchmark_repetitions=3]
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "converters/quant/dispatch.h"
#include "converters/quant/quants.h"
#include "libformat/fp16.h"
#include "libformat/types.h"

namespace {

using namespace oiw;

constexpr int64_t kPerRow = 4096;
constexpr int64_t kRows = 2048;

struct Data {
    std::vector<float> x, imatrix;
    std::vector<uint16_t> x16;
    Data() : x(static_cast<size_t>(kPerRow * kRows)), imatrix(static_cast<size_t>(kPerRow)), x16(x.size()) {
        std::mt19937 rng(42);
        std::normal_distribution<float> nd(0.f, 0.02f);
        for (auto& v : x) v = nd(rng);
        std::uniform_real_distribution<float> ud(0.01f, 4.f);
        for (auto& v : imatrix) v = ud(rng);
        for (size_t i = 0; i < x.size(); ++i) x16[i] = fp32_to_fp16(x[i]);
    }
};

const Data& data() {
    static const Data d;
    return d;
}

void bench_quant(benchmark::State& st, GgmlType t, bool imat, bool fast) {
    const Data& d = data();
    std::vector<uint8_t> out(row_size(t, kPerRow) * kRows);
    const float* w = imat ? d.imatrix.data() : nullptr;
    // One row first, outside the timing: one-time set-up (the i-quants' grid maps) is not counted.
    if (fast) {
        quantize_chunk(t, d.x.data(), out.data(), 1, kPerRow, w);
    } else {
        quantize_chunk_ref(t, d.x.data(), out.data(), 1, kPerRow, w);
    }
    for (auto _ : st) {
        const size_t n = fast ? quantize_chunk(t, d.x.data(), out.data(), kRows, kPerRow, w)
                              : quantize_chunk_ref(t, d.x.data(), out.data(), kRows, kPerRow, w);
        benchmark::DoNotOptimize(n);
        benchmark::ClobberMemory();
    }
    st.SetItemsProcessed(st.iterations() * kPerRow * kRows);
    st.counters["fast_path"] = fast && has_fast_path(t, imat) ? 1 : 0;
}

void bench_f16_to_f32(benchmark::State& st, bool fast) {
    const Data& d = data();
    std::vector<float> out(d.x.size());
    const int64_t n = static_cast<int64_t>(d.x16.size());
    for (auto _ : st) {
        if (fast) {
            convert_f16_to_f32(d.x16.data(), out.data(), n);
        } else {
            for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = fp16_to_fp32(d.x16[static_cast<size_t>(i)]);
        }
        benchmark::ClobberMemory();
    }
    st.SetItemsProcessed(st.iterations() * n);
}

// F16 source -> f32 scratch (16 rows at a time) -> quantize, as gguf-requant does per task.
void bench_f16_pipeline(benchmark::State& st, GgmlType t, bool fast) {
    const Data& d = data();
    constexpr int64_t kChunk = 16;
    std::vector<float> buf(static_cast<size_t>(kChunk * kPerRow));
    const uint64_t rb = row_size(t, kPerRow);
    std::vector<uint8_t> out(rb * kRows);
    for (auto _ : st) {
        for (int64_t r = 0; r < kRows; r += kChunk) {
            const uint16_t* src = d.x16.data() + r * kPerRow;
            const int64_t n = kChunk * kPerRow;
            if (fast) {
                convert_f16_to_f32(src, buf.data(), n);
                quantize_chunk(t, buf.data(), out.data() + static_cast<size_t>(r) * rb, kChunk, kPerRow, nullptr);
            } else {
                for (int64_t i = 0; i < n; ++i) buf[static_cast<size_t>(i)] = fp16_to_fp32(src[i]);
                quantize_chunk_ref(t, buf.data(), out.data() + static_cast<size_t>(r) * rb, kChunk, kPerRow, nullptr);
            }
        }
        benchmark::ClobberMemory();
    }
    st.SetItemsProcessed(st.iterations() * kPerRow * kRows);
}

void register_all() {
    struct Case {
        GgmlType t;
        bool imat;
    };
    const Case cases[] = {
        {GgmlType::Q4_K, false},
        {GgmlType::Q4_K, true},
        {GgmlType::Q6_K, false},
        {GgmlType::Q6_K, true},
        {GgmlType::Q8_0, false},
        {GgmlType::Q4_0, false},
        {GgmlType::Q4_0, true},
        {GgmlType::Q5_0, false},
        {GgmlType::Q5_0, true},
        {GgmlType::Q4_1, true},
        {GgmlType::Q5_1, true},
        {GgmlType::Q2_K, false},
        {GgmlType::Q2_K, true},
        {GgmlType::Q3_K, false},
        {GgmlType::Q3_K, true},
        {GgmlType::Q5_K, false},
        {GgmlType::Q5_K, true},
        {GgmlType::IQ4_NL, false},
        {GgmlType::IQ4_NL, true},
        {GgmlType::IQ4_XS, false},
        {GgmlType::IQ4_XS, true},
        {GgmlType::F16, false},
        {GgmlType::BF16, false},
        // The lattice i-quants: IQ2_XXS, IQ2_XS and IQ1_S require importance weights.
        {GgmlType::IQ2_XXS, true},
        {GgmlType::IQ2_XS, true},
        {GgmlType::IQ2_S, false},
        {GgmlType::IQ2_S, true},
        {GgmlType::IQ3_XXS, false},
        {GgmlType::IQ3_XXS, true},
        {GgmlType::IQ3_S, false},
        {GgmlType::IQ3_S, true},
        {GgmlType::IQ1_S, true},
        {GgmlType::IQ1_M, false},
        {GgmlType::IQ1_M, true},
    };
    for (const Case& c : cases) {
        for (bool fast : {false, true}) {
            const std::string name =
                "quant/" + std::string(type_name(c.t)) + (c.imat ? "/imatrix" : "/plain") + (fast ? "/fast" : "/ref");
            benchmark::RegisterBenchmark(name.c_str(), bench_quant, c.t, c.imat, fast)->Unit(benchmark::kMillisecond);
        }
    }
    for (bool fast : {false, true}) {
        benchmark::RegisterBenchmark(fast ? "f16_to_f32/fast" : "f16_to_f32/ref", bench_f16_to_f32, fast)
            ->Unit(benchmark::kMillisecond);
    }
    for (GgmlType t : {GgmlType::Q8_0, GgmlType::Q4_0}) {
        for (bool fast : {false, true}) {
            const std::string name = "f16_pipeline/" + std::string(type_name(t)) + (fast ? "/fast" : "/ref");
            benchmark::RegisterBenchmark(name.c_str(), bench_f16_pipeline, t, fast)->Unit(benchmark::kMillisecond);
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
    register_all();
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
