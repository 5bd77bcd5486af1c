// oiw4-check bench: kernel speed against measured read bandwidth.
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>
#include <random>
#include <utility>
#include <vector>

#include "converters/matmul/kernels.h"
#include "converters/matmul/parallel.h"
#include "libformat/error.h"
#include "libformat/fp16.h"
#include "libformat/json.h"
#include "tools/common/tool_support.h"
#include "tools/oiw4-check/commands.h"

namespace oiw::check {
namespace {

using namespace matmul;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Best time of `fn` over repeated runs (at least 3 and `min_time` seconds).
template <typename Fn>
double best_time(double min_time, Fn&& fn) {
    fn();  // warm-up
    double best = 1e30, total = 0;
    for (int i = 0; i < 3 || total < min_time; ++i) {
        const auto t0 = Clock::now();
        fn();
        const double t = seconds_since(t0);
        best = std::min(best, t);
        total += t;
    }
    return best;
}

// Streaming read bandwidth (GB/s) over a `mib` MiB buffer with `threads` threads.
double read_bandwidth(int threads, int64_t mib, double min_time) {
    const size_t n = (static_cast<size_t>(mib) << 20) / 8;
    std::vector<uint64_t> buf(n);
    for (size_t i = 0; i < n; ++i) buf[i] = i;
    std::vector<uint64_t> sums(static_cast<size_t>(threads) * 8);
    const double t = best_time(min_time, [&] {
        int slot = 0;
        std::mutex m;
        parallel_rows(static_cast<int64_t>(n), threads, 4096, [&](int64_t b, int64_t e) {
            uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
            for (int64_t i = b; i + 3 < e; i += 4) {
                s0 += buf[i];
                s1 += buf[i + 1];
                s2 += buf[i + 2];
                s3 += buf[i + 3];
            }
            std::lock_guard<std::mutex> lock(m);
            sums[static_cast<size_t>(slot++) * 8] = s0 + s1 + s2 + s3;
        });
    });
    return static_cast<double>(n * 8) / t / 1e9;
}

struct Result {
    std::string name;
    int threads;
    double gmacs, weight_gbs, pct;
};

// The result of a kernel that did `macs` multiply-adds over `bytes` of weights in `t` seconds
// (pct_of_bandwidth still 0).
Result timed(const std::string& name, int threads, double t, double macs, double bytes) {
    return {name, threads, macs / t / 1e9, bytes / t / 1e9, 0};
}

// The ISAs whose GEMV kernels this CPU runs, best first (with_avx1: Avx1 too); {Scalar} if none.
std::vector<Isa> x86_isas(bool with_avx1) {
    std::vector<Isa> v;
    for (const Isa isa : kGemvIsas)
        if (cpu_runs(isa) && (with_avx1 || isa != Isa::Avx1)) v.push_back(isa);
    if (v.empty()) v.push_back(Isa::Scalar);
    return v;
}

std::vector<float> random_floats(std::mt19937_64& rng, size_t n) {
    std::normal_distribution<float> z;
    std::vector<float> v(n);
    for (auto& x : v) x = z(rng);
    return v;
}

// Q4_Kx8 on random Q4_K blocks (random bytes, small finite scales), packed 8 rows at a time: one
// rows x cols GEMV into y per ISA (those with kernels that this CPU runs, else scalar), timed.
std::vector<Result> bench_q4kx8(std::mt19937_64& rng, int64_t rows, int64_t cols, int threads, double min_time,
                                float* y) {
    const int64_t kb = cols / 256;
    std::vector<block_q4_Kx8> x8(static_cast<size_t>(rows / 8 * kb));
    for (auto& b : x8) {
        auto* p = reinterpret_cast<uint8_t*>(&b);
        for (size_t i = 0; i < sizeof(b); ++i) p[i] = static_cast<uint8_t>(rng());
        for (int r = 0; r < 8; ++r) {
            b.d[r] = fp32_to_fp16(0.001f * static_cast<float>(r + 1));
            b.dmin[r] = fp32_to_fp16(0.0005f);
        }
    }
    const Q8KAct ka =
        unpack_q8_K(quantize_activation(GgmlType::Q8_K, random_floats(rng, static_cast<size_t>(cols)).data(), cols));
    const Q4Kx8View v{x8.data(), rows, cols};
    std::vector<Result> out;
    for (const Isa isa : x86_isas(false)) {
        const double t = best_time(min_time, [&] { q4kx8_gemv(isa, v, ka, y, threads); });
        out.push_back(timed(fmt::format("q4kx8-{}", isa_name(isa)), threads, t,
                            static_cast<double>(rows) * static_cast<double>(cols),
                            static_cast<double>(x8.size() * sizeof(block_q4_Kx8))));
    }
    return out;
}

// Prints the read bandwidth and the results, as JSON or as a table.
void print_results(const BenchOptions& o, int threads, double bw, const std::vector<Result>& results) {
    if (o.json) {
        json::Writer w(0);
        w.begin_object();
        w.field("rows", o.rows);
        w.field("cols", o.cols);
        w.field("read_bandwidth_gbs", json::Fixed{bw, 3});
        w.key("kernels");
        w.begin_array();
        for (const auto& r : results) {
            w.begin_object();
            w.field("name", r.name);
            w.field("threads", r.threads);
            w.field("gmacs", json::Fixed{r.gmacs, 3});
            w.field("weight_gbs", json::Fixed{r.weight_gbs, 3});
            w.field("pct_of_bandwidth", json::Fixed{r.pct, 1});
            w.end_object();
        }
        w.end_array();
        w.end_object();
        fmt::print("{}\n", w.str());
    } else {
        fmt::print("read bandwidth: {:.2f} GB/s ({} threads, streaming sum over {} MiB, best before/after)\n", bw,
                   threads, o.bandwidth_mib);
        fmt::print("{}x{}:\n{:<22} {:>7} {:>9} {:>10} {:>8}\n", o.rows, o.cols, "kernel", "threads", "GMAC/s",
                   "weight GB/s", "% of bw");
        for (const auto& r : results)
            fmt::print("{:<22} {:>7} {:>9.2f} {:>10.2f} {:>7.1f}%\n", r.name, r.threads, r.gmacs, r.weight_gbs, r.pct);
    }
}

}  // namespace

int run_bench(const BenchOptions& o) {
    if (o.cols % 256 != 0 || o.rows % 8 != 0) {
        throw FormatError(ErrorKind::Usage, "", "bench", "--cols must be a multiple of 256 and --rows of 8");
    }
    const int threads = resolve_threads(o.threads);
    double bw = read_bandwidth(threads, o.bandwidth_mib, o.min_time);
    std::mt19937_64 rng(42);
    const int64_t rows = o.rows, cols = o.cols, nb = cols / 32;
    // oiw4 planes: random nibbles, scales ~ N(0, 1).
    std::vector<uint8_t> qs(static_cast<size_t>(rows * nb * 16));
    for (auto& b : qs) b = static_cast<uint8_t>(rng());
    std::vector<float> d = random_floats(rng, static_cast<size_t>(rows * nb));
    const Oiw4Planes w{qs.data(), d.data(), rows, cols};
    const double oiw4_bytes = static_cast<double>(qs.size() + d.size() * 4);
    std::vector<Q8Act> acts;
    acts.reserve(kMaxBatch);
    for (int v = 0; v < kMaxBatch; ++v)
        acts.push_back(make_q8_act(random_floats(rng, static_cast<size_t>(cols)).data(), cols));
    const Q8Act* ap[kMaxBatch];
    for (int v = 0; v < kMaxBatch; ++v) ap[v] = &acts[static_cast<size_t>(v)];
    std::vector<float> y(static_cast<size_t>(rows) * kMaxBatch);

    std::vector<Result> results;  // pct_of_bandwidth is filled in once the bandwidth is final
    auto record = [&](const std::string& name, double t, double macs, double bytes) {
        results.push_back(timed(name, threads, t, macs, bytes));
    };
    const double macs = static_cast<double>(rows) * static_cast<double>(cols);
    for (const Isa isa : x86_isas(true)) {
        for (const bool two : {false, true}) {
            const double t = best_time(o.min_time, [&] { oiw4_gemv(isa, w, ap, 1, y.data(), threads, two); });
            record(fmt::format("oiw4-{}-{}row", isa_name(isa), two ? 2 : 1), t, macs, oiw4_bytes);
        }
        for (const int b : {1, 2, 4, 8}) {
            const double t = best_time(o.min_time, [&] { oiw4_gemv(isa, w, ap, b, y.data(), threads, false); });
            record(fmt::format("oiw4-{}-batch{}", isa_name(isa), b), t, macs * b, oiw4_bytes);
        }
    }
    // Q4_0 baseline on the same weights (fp16 scales).
    {
        std::vector<block_q4_0> q40(static_cast<size_t>(rows * nb));
        for (size_t i = 0; i < q40.size(); ++i) {
            q40[i].d = fp32_to_fp16(d[i]);
            std::memcpy(q40[i].qs, &qs[i * 16], 16);
        }
        for (const Isa isa : x86_isas(false)) {
            const double t =
                best_time(o.min_time, [&] { q4_0_gemv(isa, q40.data(), rows, cols, acts[0], y.data(), threads); });
            record(fmt::format("q4_0-{}", isa_name(isa)), t, macs,
                   static_cast<double>(q40.size() * sizeof(block_q4_0)));
        }
    }
    qs = {};
    d = {};
    for (Result& r : bench_q4kx8(rng, rows, cols, threads, o.min_time, y.data())) results.push_back(std::move(r));

    // Measured again after the kernels, the better of the two counts: on a shared machine one
    // measurement can fall in a moment of contention.
    bw = std::max(bw, read_bandwidth(threads, o.bandwidth_mib, o.min_time));
    for (auto& r : results) r.pct = 100.0 * r.weight_gbs / bw;
    print_results(o, threads, bw, results);
    return kExitOk;
}

}  // namespace oiw::check
