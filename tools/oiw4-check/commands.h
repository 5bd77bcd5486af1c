// oiw4-check subcommands: compare (SOURCE CONVERTED, whole models, compare.cpp), self (--self FILE, self.cpp), bench
// (bench.cpp).
#pragma once
#include <cstdint>
#include <map>
#include <string>

namespace oiw::check {

struct CompareOptions {
    std::string source, converted;
    std::string tensor_regex;  // empty: every tensor of both models
    int vectors = 4;
    uint64_t seed = 1;
    std::string activations;                    // raw little-endian f32 file (empty: seeded vectors)
    std::map<std::string, double> max_rel_rms;  // per converted kind: overrides the kernel table's limit
    bool json = false;
    unsigned threads = 0;  // 0: hardware threads
};
int run_compare(const CompareOptions& o);

struct SelfOptions {
    std::string file;
    uint64_t seed = 1;  // of the 8 activation vectors per tensor
    bool json = false;
    unsigned threads = 0;
};
int run_self(const SelfOptions& o);

struct BenchOptions {
    int64_t rows = 65536, cols = 2048;
    int64_t bandwidth_mib = 512;  // buffer of the read-bandwidth measurement
    double min_time = 0.5;        // seconds of timed runs per kernel (at least 3 runs; best one counts)
    unsigned threads = 0;
    bool json = false;
};
int run_bench(const BenchOptions& o);

// Threads to use for --threads t: thread_count (libformat/parallel.h) of t, all cores when t is 0.
int resolve_threads(unsigned t);

}  // namespace oiw::check
