// GEMV side by side with ggml, in one run, on the same weights: our kernels (converters/matmul,
// every instruction set of matmul::kGemvIsas this CPU runs) against the ggml CPU backend of a llama.cpp
// build, loaded at run time with dlopen (no llama.cpp code is built or linked here):
//   Q4_0 vec_dot (ggml's type_traits_cpu, Q8_0 activations)  vs  oiw4 (1-row, 2-row), and our
//     Q4_0 GEMV on ggml's own Q4_0 bytes
//   Q4_K vec_dot (Q8_K activations)                            vs  q4kx8
//   ggml_gemv_q4_K_8x8_q8_K (repacked block_q4_Kx8)           vs  q4kx8, fed the same bytes: our
//     repacker's Q4_Kx8 with interleave 8 is byte-identical to ggml's repack_q4_K_to_q4_K_8_bl.
// Activations are quantized once with ggml's from_float; our kernels get the same Q8_0 / Q8_K
// bytes, so every result must agree with ggml's to rounding (max rel diff column: the largest
// |ours - ggml vec_dot| over the largest |ggml vec_dot|). Rows are split over the threads with
// the pool our kernels use (matmul::parallel_rows), for ggml's kernels too. Timing: the kernels
// run in turn (round robin, so drift hits all alike) until each had --min-time seconds and at
// least 5 runs; GMAC/s from the median run (the best run is in the JSON).
//   bench_vs_ggml LLAMA_BIN [--threads N] [--shape ROWSxCOLS]... [--min-time S] [--json]
// LLAMA_BIN: directory holding libggml-base.so and libggml-cpu.so (a llama.cpp build's bin/).
// Default shapes 65536x2048 and 262144x4096 (0.6 GB of Q4 weights, well beyond any LLC). Exit 2
// on a usage error or a library that cannot be loaded.
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "converters/matmul/kernels.h"
#include "converters/matmul/parallel.h"
#include "converters/matmul/w4a8.h"
#include "converters/repack/repack.h"
#include "libformat/fp16.h"
#include "libformat/json.h"

namespace {

using namespace oiw;
using namespace oiw::matmul;

// ggml-cpu.h at llama.cpp 1348f67 (ggml 0.11.1): the public "internal types exposed for tests and
// benchmarks", declared here with the same layout.
extern "C" {
using ggml_from_float_t = void (*)(const float* x, void* y, int64_t k);
using ggml_vec_dot_t = void (*)(int n, float* s, size_t bs, const void* x, size_t bx, const void* y, size_t by,
                                int nrc);
struct ggml_type_traits_cpu {
    ggml_from_float_t from_float;
    ggml_vec_dot_t vec_dot;
    int vec_dot_type;  // enum ggml_type
    int64_t nrows;
};
using get_traits_t = const ggml_type_traits_cpu* (*)(int type);
using cpu_init_t = void (*)();
// ggml-cpu/repack.h (extern "C"): one activation row against nc interleaved rows.
using gemv_t = void (*)(int n, float* s, size_t bs, const void* vx, const void* vy, int nr, int nc);
}
// enum ggml_type values.
constexpr int kGgmlQ4_0 = 2, kGgmlQ8_0 = 8, kGgmlQ4_K = 12, kGgmlQ8_K = 15;

[[noreturn]] void die(const std::string& msg) {
    std::fprintf(stderr, "bench_vs_ggml: %s\n", msg.c_str());
    std::exit(2);
}

struct Ggml {
    const ggml_type_traits_cpu* q4_0 = nullptr;
    const ggml_type_traits_cpu* q4_K = nullptr;
    const ggml_type_traits_cpu* q8_0 = nullptr;
    const ggml_type_traits_cpu* q8_K = nullptr;
    gemv_t gemv_q4_K_8x8 = nullptr;
};

void* load(const std::string& path, int flags) {
    void* h = dlopen(path.c_str(), flags);
    if (!h) die(fmt::format("cannot load {}: {}", path, dlerror()));
    return h;
}

template <typename Fn>
Fn symbol(void* lib, const char* name, const std::string& path) {
    void* p = dlsym(lib, name);
    if (!p) die(fmt::format("{} has no symbol {} (not a llama.cpp 1348f67-era ggml CPU backend?)", path, name));
    return reinterpret_cast<Fn>(p);
}

Ggml load_ggml(const std::string& dir) {
    load(dir + "/libggml-base.so", RTLD_NOW | RTLD_GLOBAL);
    const std::string cpu_path = dir + "/libggml-cpu.so";
    void* cpu = load(cpu_path, RTLD_NOW);
    symbol<cpu_init_t>(cpu, "ggml_cpu_init", cpu_path)();
    auto traits = symbol<get_traits_t>(cpu, "ggml_get_type_traits_cpu", cpu_path);
    Ggml g;
    g.q4_0 = traits(kGgmlQ4_0);
    g.q4_K = traits(kGgmlQ4_K);
    g.q8_0 = traits(kGgmlQ8_0);
    g.q8_K = traits(kGgmlQ8_K);
    g.gemv_q4_K_8x8 = symbol<gemv_t>(cpu, "ggml_gemv_q4_K_8x8_q8_K", cpu_path);
    if (!g.q4_0->vec_dot || g.q4_0->vec_dot_type != kGgmlQ8_0 || !g.q4_K->vec_dot ||
        g.q4_K->vec_dot_type != kGgmlQ8_K || !g.q8_0->from_float || !g.q8_K->from_float)
        die(cpu_path + ": type traits differ from ggml 0.11.1's (Q4_0 x Q8_0, Q4_K x Q8_K)");
    return g;
}

using Clock = std::chrono::steady_clock;

struct Kernel {
    Kernel(std::string name_, std::string family_, bool ggml_, double bytes, std::function<void(float*)> fn)
        : name(std::move(name_)), family(std::move(family_)), ggml(ggml_), weight_bytes(bytes), run(std::move(fn)) {}
    std::string name;
    std::string family;   // "Q4_0" or "Q4_K"
    bool ggml = false;    // a ggml kernel (a baseline)
    double weight_bytes;  // bytes of weights one GEMV reads
    std::function<void(float*)> run;
    std::vector<float> y;  // the result of the last run
    std::vector<double> times;
};

struct Options {
    std::string llama_bin;
    int threads = 2;
    std::vector<std::pair<int64_t, int64_t>> shapes;
    double min_time = 1.0;
    bool json = false;
};

// Random bytes (xorshift64*; the same for a seed).
void fill_random(void* p, size_t n, uint64_t seed) {
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    auto* b = static_cast<uint8_t*>(p);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        const uint64_t v = s * 0x2545F4914F6CDD1Dull;
        std::memcpy(b + i, &v, 8);
    }
    for (; i < n; ++i) b[i] = static_cast<uint8_t>(i * 131);
}

// Runs the kernels in turn until each had min_time seconds and 5 runs; one warm-up run each.
void time_round_robin(std::vector<Kernel>& ks, double min_time) {
    for (auto& k : ks) k.run(k.y.data());
    double total = 0;
    for (int rep = 0; rep < 5 || total < min_time * static_cast<double>(ks.size()); ++rep) {
        for (auto& k : ks) {
            const auto t0 = Clock::now();
            k.run(k.y.data());
            const double t = std::chrono::duration<double>(Clock::now() - t0).count();
            k.times.push_back(t);
            total += t;
        }
        if (rep > 1000) break;
    }
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double max_rel_diff(const std::vector<float>& a, const std::vector<float>& ref) {
    double scale = 0, diff = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
        scale = std::max(scale, std::fabs(static_cast<double>(ref[i])));
        diff = std::max(diff, std::fabs(static_cast<double>(a[i]) - ref[i]));
    }
    return scale > 0 ? diff / scale : diff;
}

// The instruction sets with GEMV kernels (matmul::kGemvIsas) that this CPU runs, plainest first.
std::vector<Isa> isas() {
    std::vector<Isa> v;
    for (Isa isa : kGemvIsas)
        if (cpu_runs(isa)) v.insert(v.begin(), isa);
    return v;
}

struct ShapeResult {
    int64_t rows, cols;
    std::vector<Kernel> kernels;
};

// Q4_0 family: random Q4_0 weights (nibbles uniform, scales ~ N(0, 0.02)), the same weights as
// oiw4 planes (exact fp32 copies of the scales).
void q4_0_family(const Ggml& g, const Options& o, int64_t rows, int64_t cols, const std::vector<float>& x,
                 std::vector<Kernel>& out) {
    const int64_t nb = cols / 32, n = rows * nb;
    std::vector<block_q4_0> w(static_cast<size_t>(n));
    fill_random(w.data(), w.size() * sizeof(block_q4_0), 11);
    std::mt19937 rng(5);
    std::normal_distribution<float> z(0.0f, 0.02f);
    for (auto& b : w) b.d = fp32_to_fp16(z(rng));
    std::vector<uint8_t> qs(static_cast<size_t>(n) * 16);
    std::vector<float> d(static_cast<size_t>(n));
    q4_0_to_oiw4(w.data(), qs.data(), d.data(), n);

    std::vector<block_q8_0> a8(static_cast<size_t>(nb));
    g.q8_0->from_float(x.data(), a8.data(), cols);
    QuantizedVector qv{GgmlType::Q8_0, cols, {}};
    qv.bytes.resize(a8.size() * sizeof(block_q8_0));
    std::memcpy(qv.bytes.data(), a8.data(), qv.bytes.size());
    const Q8Act act = unpack_q8_0(qv);
    const Q8Act* acts[1] = {&act};

    const double q4_bytes = static_cast<double>(n) * sizeof(block_q4_0), oiw4_bytes = static_cast<double>(n) * 20;
    const int threads = o.threads;
    std::vector<Kernel> ks;
    const size_t row_bytes = static_cast<size_t>(nb) * sizeof(block_q4_0);
    ks.push_back({"ggml Q4_0 vec_dot", "Q4_0", true, q4_bytes, [&, row_bytes](float* y) {
                      parallel_rows(rows, threads, 1, [&](int64_t r0, int64_t r1) {
                          for (int64_t r = r0; r < r1; ++r)
                              g.q4_0->vec_dot(static_cast<int>(cols), y + r, 0,
                                              reinterpret_cast<const uint8_t*>(w.data()) + r * row_bytes, 0, a8.data(),
                                              0, 1);
                      });
                  }});
    const Oiw4Planes planes{qs.data(), d.data(), rows, cols};
    for (Isa isa : isas()) {
        for (bool two_row : {false, true})
            ks.push_back({fmt::format("oiw4 {}{}", isa_name(isa), two_row ? " 2-row" : ""), "Q4_0", false, oiw4_bytes,
                          [&, isa, two_row](float* y) { oiw4_gemv(isa, planes, acts, 1, y, threads, two_row); }});
    }
    for (Isa isa : isas()) {
        if (isa == Isa::Avx1) continue;  // no Q4_0 kernel: it runs the scalar reference
        ks.push_back({fmt::format("q4_0 {} (ggml bytes)", isa_name(isa)), "Q4_0", false, q4_bytes,
                      [&, isa](float* y) { q4_0_gemv(isa, w.data(), rows, cols, act, y, threads); }});
    }
    for (auto& k : ks) k.y.assign(static_cast<size_t>(rows), 0.0f);
    time_round_robin(ks, o.min_time);
    for (auto& k : ks) k.run = nullptr;  // the weights go when this returns
    for (auto& k : ks) out.push_back(std::move(k));
}

// Q4_K family: random Q4_K weights (random quants and 6-bit scales, d ~ 0.001, dmin 0.0005),
// repacked to Q4_Kx8 (interleave 8) with our repacker, which gives ggml's block_q4_Kx8 bytes.
void q4_K_family(const Ggml& g, const Options& o, int64_t rows, int64_t cols, const std::vector<float>& x,
                 std::vector<Kernel>& out) {
    const int64_t kb = cols / 256, n = rows * kb;
    std::vector<block_q4_K> w(static_cast<size_t>(n));
    fill_random(w.data(), w.size() * sizeof(block_q4_K), 13);
    for (int64_t i = 0; i < n; ++i) {
        w[i].d = fp32_to_fp16(0.001f * static_cast<float>(1 + i % 7));
        w[i].dmin = fp32_to_fp16(0.0005f);
    }
    std::vector<block_q4_Kx8> x8(static_cast<size_t>(n / 8));
    repack_q4_k_to_q4_kx8(w.data(), x8.data(), rows, kb, 8);

    std::vector<block_q8_K> ak(static_cast<size_t>(kb));
    g.q8_K->from_float(x.data(), ak.data(), cols);
    QuantizedVector qv{GgmlType::Q8_K, cols, {}};
    qv.bytes.resize(ak.size() * sizeof(block_q8_K));
    std::memcpy(qv.bytes.data(), ak.data(), qv.bytes.size());
    const Q8KAct act = unpack_q8_K(qv);

    const double bytes = static_cast<double>(n) * sizeof(block_q4_K);
    const int threads = o.threads;
    const size_t row_bytes = static_cast<size_t>(kb) * sizeof(block_q4_K);
    std::vector<Kernel> ks;
    ks.push_back({"ggml Q4_K vec_dot", "Q4_K", true, bytes, [&, row_bytes](float* y) {
                      parallel_rows(rows, threads, 1, [&](int64_t r0, int64_t r1) {
                          for (int64_t r = r0; r < r1; ++r)
                              g.q4_K->vec_dot(static_cast<int>(cols), y + r, 0,
                                              reinterpret_cast<const uint8_t*>(w.data()) + r * row_bytes, 0, ak.data(),
                                              0, 1);
                      });
                  }});
    ks.push_back({"ggml gemv_q4_K_8x8_q8_K", "Q4_K", true, bytes, [&](float* y) {
                      parallel_rows(rows / 8, threads, 1, [&](int64_t g0, int64_t g1) {
                          g.gemv_q4_K_8x8(static_cast<int>(cols), y + g0 * 8, static_cast<size_t>(rows),
                                          x8.data() + g0 * kb, ak.data(), 1, static_cast<int>((g1 - g0) * 8));
                      });
                  }});
    const Q4Kx8View view{x8.data(), rows, cols};
    for (Isa isa : isas()) {
        if (isa == Isa::Avx1) continue;  // no Q4_Kx8 kernel: it runs the scalar reference
        ks.push_back({fmt::format("q4kx8 {}", isa_name(isa)), "Q4_K", false, bytes,
                      [&, isa](float* y) { q4kx8_gemv(isa, view, act, y, threads); }});
    }
    for (auto& k : ks) k.y.assign(static_cast<size_t>(rows), 0.0f);
    time_round_robin(ks, o.min_time);
    for (auto& k : ks) k.run = nullptr;
    for (auto& k : ks) out.push_back(std::move(k));
}

double gmacs(const Kernel& k, double macs, bool best) {
    const double t = best ? *std::min_element(k.times.begin(), k.times.end()) : median(k.times);
    return macs / t / 1e9;
}

// GMAC/s of the kernel named `name` in `ks` (median).
double baseline(const std::vector<Kernel>& ks, const std::string& name, double macs) {
    for (const auto& k : ks)
        if (k.name == name) return gmacs(k, macs, false);
    return 0;
}

const std::vector<float>& reference_y(const std::vector<Kernel>& ks, const std::string& family) {
    for (const auto& k : ks)
        if (k.family == family && k.ggml) return k.y;  // the family's vec_dot, listed first
    die("no baseline for " + family);
}

// Last-level cache of CPU 0 as the kernel reports it (sysconf's figure is the package total on
// some AMD parts), else sysconf's.
int64_t llc_bytes() {
    for (int i = 3; i >= 2; --i) {
        if (FILE* f = std::fopen(fmt::format("/sys/devices/system/cpu/cpu0/cache/index{}/size", i).c_str(), "r")) {
            long long kib = 0;
            const bool ok = std::fscanf(f, "%lldK", &kib) == 1;
            std::fclose(f);
            if (ok && kib > 0) return kib * 1024;
        }
    }
    return sysconf(_SC_LEVEL3_CACHE_SIZE);
}

Options parse(int argc, char** argv) {
    Options o;
    auto usage = [] {
        die("usage: bench_vs_ggml LLAMA_BIN [--threads N] [--shape ROWSxCOLS]... [--min-time S] [--json]");
    };
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) usage();
            return argv[++i];
        };
        if (a == "--threads" || a == "-t") {
            o.threads = std::atoi(next().c_str());
        } else if (a == "--shape") {
            const std::string s = next();
            long long r = 0, c = 0;
            if (std::sscanf(s.c_str(), "%lldx%lld", &r, &c) != 2 || r <= 0 || c <= 0 || r % 8 || c % 256)
                die("--shape " + s + ": ROWSxCOLS with rows a multiple of 8 and cols of 256");
            o.shapes.emplace_back(r, c);
        } else if (a == "--min-time") {
            o.min_time = std::atof(next().c_str());
        } else if (a == "--json") {
            o.json = true;
        } else if (!a.empty() && a[0] != '-' && o.llama_bin.empty()) {
            o.llama_bin = a;
        } else {
            usage();
        }
    }
    if (o.llama_bin.empty()) usage();
    if (o.threads <= 0) o.threads = static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
    if (o.shapes.empty()) o.shapes = {{65536, 2048}, {262144, 4096}};
    return o;
}

}  // namespace

int main(int argc, char** argv) {
    const Options o = parse(argc, argv);
    const Ggml g = load_ggml(o.llama_bin);
    std::vector<ShapeResult> results;
    for (const auto& [rows, cols] : o.shapes) {
        std::vector<float> x(static_cast<size_t>(cols));
        std::mt19937 rng(3);
        std::normal_distribution<float> z;
        for (auto& v : x) v = z(rng);
        ShapeResult r{rows, cols, {}};
        q4_0_family(g, o, rows, cols, x, r.kernels);
        q4_K_family(g, o, rows, cols, x, r.kernels);
        results.push_back(std::move(r));
    }
    const int64_t llc = llc_bytes();
    if (o.json) {
        json::Writer w;
        w.begin_object();
        w.field("threads", o.threads);
        w.field("llc_bytes", llc);
        w.key("shapes");
        w.begin_array();
        for (const auto& r : results) {
            const double macs = static_cast<double>(r.rows) * static_cast<double>(r.cols);
            w.begin_object();
            w.field("rows", r.rows);
            w.field("cols", r.cols);
            w.key("kernels");
            w.begin_array();
            for (const auto& k : r.kernels) {
                const bool q4k = k.family == "Q4_K";
                const double vd = baseline(r.kernels, q4k ? "ggml Q4_K vec_dot" : "ggml Q4_0 vec_dot", macs);
                const double gm = baseline(r.kernels, "ggml gemv_q4_K_8x8_q8_K", macs);
                const double m = gmacs(k, macs, false);
                w.begin_object();
                w.field("name", k.name);
                w.field("family", k.family);
                w.field("ggml", k.ggml);
                w.field("runs", static_cast<int64_t>(k.times.size()));
                w.field("gmacs", json::Fixed{m, 3});
                w.field("gmacs_best", json::Fixed{gmacs(k, macs, true), 3});
                w.field("weight_gbs", json::Fixed{k.weight_bytes / median(k.times) / 1e9, 3});
                w.field("vs_ggml_vec_dot", json::Fixed{m / vd, 3});
                if (q4k) w.field("vs_ggml_gemv", json::Fixed{m / gm, 3});
                w.field("max_rel_diff", max_rel_diff(k.y, reference_y(r.kernels, k.family)));
                w.end_object();
            }
            w.end_array();
            w.end_object();
        }
        w.end_array();
        w.end_object();
        std::printf("%s\n", w.str().c_str());
        return 0;
    }
    for (const auto& r : results) {
        const double macs = static_cast<double>(r.rows) * static_cast<double>(r.cols);
        fmt::print("{}x{}, {} threads: {:.2f} GB of Q4_0 weights (LLC {} MiB); median of >= 5 round-robin runs\n",
                   r.rows, r.cols, o.threads, macs / 32 * 18 / 1e9, llc >> 20);
        fmt::print("  {:<30} {:>8} {:>11} {:>12} {:>12} {:>12}\n", "kernel", "GMAC/s", "weight GB/s", "vs vec_dot",
                   "vs ggml gemv", "max rel diff");
        for (const auto& k : r.kernels) {
            const bool q4k = k.family == "Q4_K";
            const double vd = baseline(r.kernels, q4k ? "ggml Q4_K vec_dot" : "ggml Q4_0 vec_dot", macs);
            const double gm = baseline(r.kernels, "ggml gemv_q4_K_8x8_q8_K", macs);
            const double m = gmacs(k, macs, false);
            fmt::print("  {:<30} {:>8.2f} {:>11.2f} {:>11.2f}x {:>12} {:>12.1e}\n", k.name, m,
                       k.weight_bytes / median(k.times) / 1e9, m / vd, q4k ? fmt::format("{:.2f}x", m / gm) : "-",
                       max_rel_diff(k.y, reference_y(r.kernels, k.family)));
        }
    }
    return 0;
}
