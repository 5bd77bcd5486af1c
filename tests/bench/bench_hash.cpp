// Tensor digest throughput: oiw::sha256_hex and oiw::xxh3_hex over a 64 MiB buffer (bytes/s).
// scripts/bench-hash runs this file against the current tree and an older revision.
//   bench_hash [--benchmark_filter=Sha256] [--benchmark_repetitions=3]
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <vector>

#include "libformat/io/hash.h"

namespace {

const std::vector<uint8_t>& data() {
    static const std::vector<uint8_t> d = [] {
        std::vector<uint8_t> v(size_t{64} << 20);
        std::mt19937 rng(42);
        for (auto& b : v) b = static_cast<uint8_t>(rng());
        return v;
    }();
    return d;
}

template <auto Fn>
void bench_digest(benchmark::State& st) {
    const auto& d = data();
    for (auto _ : st) benchmark::DoNotOptimize(Fn(d));
    st.SetBytesProcessed(static_cast<int64_t>(st.iterations() * d.size()));
}

BENCHMARK(bench_digest<oiw::sha256_hex>)->Name("Sha256")->Unit(benchmark::kMillisecond);
BENCHMARK(bench_digest<oiw::xxh3_hex>)->Name("Xxh3")->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
