// OIW4 conversion kernels in memory (disk excluded): Q4_0 -> oiw4 planes, Q4_K -> block_q4_Kx8
// (interleave 8 and 4) and back, on a 4096 x 4096 matrix (bytes = source tensor bytes, so
// "bytes_per_second" is the conversion rate per core; the goal is >= 1 GB/s). Then the cost of the
// plane checksum every read pays (docs/OIW4.md): XXH3 of the oiw4 planes against copying them
// (--decompress's plain planes) and converting them back to Q4_0 (--to-gguf), and that conversion
// with the check (bytes = plane bytes for these four).
//   bench_oiw4 [--benchmark_filter=Q4_K] [--benchmark_repetitions=3]
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <vector>

#include <cstring>

#include <xxhash.h>

#include "converters/repack/repack.h"
#include "libformat/fp16.h"

namespace {

using namespace oiw;

constexpr int64_t kCols = 4096, kRows = 4096;

template <typename Block>
std::vector<Block> random_blocks(int64_t n) {
    std::vector<Block> b(static_cast<size_t>(n));
    std::mt19937 rng(7);
    auto* p = reinterpret_cast<uint8_t*>(b.data());
    for (size_t i = 0; i < b.size() * sizeof(Block); ++i) p[i] = static_cast<uint8_t>(rng());
    return b;
}

void BM_Q4_0_to_oiw4(benchmark::State& st) {
    const int64_t n = kRows * kCols / 32;
    const auto src = random_blocks<block_q4_0>(n);
    std::vector<uint8_t> qs(static_cast<size_t>(n * 16));
    std::vector<float> d(static_cast<size_t>(n));
    for (auto _ : st) {
        q4_0_to_oiw4(src.data(), qs.data(), d.data(), n);
        benchmark::DoNotOptimize(qs.data());
        benchmark::DoNotOptimize(d.data());
    }
    st.SetBytesProcessed(st.iterations() * n * static_cast<int64_t>(sizeof(block_q4_0)));
}

void BM_oiw4_to_Q4_0(benchmark::State& st) {
    const int64_t n = kRows * kCols / 32;
    std::vector<uint8_t> qs(static_cast<size_t>(n * 16), 0x5A);
    std::vector<float> d(static_cast<size_t>(n), 0.25f);
    std::vector<block_q4_0> out(static_cast<size_t>(n));
    for (auto _ : st) benchmark::DoNotOptimize(oiw4_to_q4_0(qs.data(), d.data(), out.data(), n));
    st.SetBytesProcessed(st.iterations() * n * static_cast<int64_t>(sizeof(block_q4_0)));
}

void BM_Q4_K_to_q4kx8(benchmark::State& st) {
    const int il = static_cast<int>(st.range(0));
    const int64_t nb = kCols / 256, n = kRows * nb;
    const auto src = random_blocks<block_q4_K>(n);
    std::vector<block_q4_Kx8> out(static_cast<size_t>(n / 8));
    for (auto _ : st) {
        repack_q4_k_to_q4_kx8(src.data(), out.data(), kRows, nb, il);
        benchmark::DoNotOptimize(out.data());
    }
    st.SetBytesProcessed(st.iterations() * n * static_cast<int64_t>(sizeof(block_q4_K)));
}

void BM_q4kx8_to_Q4_K(benchmark::State& st) {
    const int il = static_cast<int>(st.range(0));
    const int64_t nb = kCols / 256, n = kRows * nb;
    const auto src = random_blocks<block_q4_Kx8>(n / 8);
    std::vector<block_q4_K> out(static_cast<size_t>(n));
    for (auto _ : st) {
        unpack_q4_kx8_to_q4_k(src.data(), out.data(), kRows, nb, il);
        benchmark::DoNotOptimize(out.data());
    }
    st.SetBytesProcessed(st.iterations() * n * static_cast<int64_t>(sizeof(block_q4_K)));
}

// The qs and d planes of the matrix (random bytes, d = 0.25).
struct Oiw4Planes {
    int64_t blocks = kRows * kCols / 32;
    std::vector<uint8_t> qs;
    std::vector<float> d;
    Oiw4Planes() : qs(random_blocks<uint8_t>(blocks * 16)), d(static_cast<size_t>(blocks), 0.25f) {}
    int64_t bytes() const { return blocks * 20; }
};

void BM_PlaneXxh3(benchmark::State& st) {
    const Oiw4Planes p;
    for (auto _ : st) {
        benchmark::DoNotOptimize(XXH3_64bits(p.qs.data(), p.qs.size()));
        benchmark::DoNotOptimize(XXH3_64bits(p.d.data(), p.d.size() * sizeof(float)));
    }
    st.SetBytesProcessed(st.iterations() * p.bytes());
}

void BM_PlaneCopy(benchmark::State& st) {
    const Oiw4Planes p;
    std::vector<uint8_t> out(static_cast<size_t>(p.bytes()));
    for (auto _ : st) {
        std::memcpy(out.data(), p.qs.data(), p.qs.size());
        std::memcpy(out.data() + p.qs.size(), p.d.data(), p.d.size() * sizeof(float));
        benchmark::DoNotOptimize(out.data());
    }
    st.SetBytesProcessed(st.iterations() * p.bytes());
}

// oiw4 -> Q4_0 without (0) and with (1) the planes' XXH3 computed first, as --to-gguf now does.
void BM_oiw4_planes_to_Q4_0(benchmark::State& st) {
    const Oiw4Planes p;
    std::vector<block_q4_0> out(static_cast<size_t>(p.blocks));
    for (auto _ : st) {
        if (st.range(0)) {
            benchmark::DoNotOptimize(XXH3_64bits(p.qs.data(), p.qs.size()));
            benchmark::DoNotOptimize(XXH3_64bits(p.d.data(), p.d.size() * sizeof(float)));
        }
        benchmark::DoNotOptimize(oiw4_to_q4_0(p.qs.data(), p.d.data(), out.data(), p.blocks));
    }
    st.SetBytesProcessed(st.iterations() * p.bytes());
}

BENCHMARK(BM_Q4_0_to_oiw4)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_oiw4_to_Q4_0)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Q4_K_to_q4kx8)->Arg(8)->Arg(4)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_q4kx8_to_Q4_K)->Arg(8)->Arg(4)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PlaneXxh3)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PlaneCopy)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_oiw4_planes_to_Q4_0)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
