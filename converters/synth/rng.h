// The synthetic models' random numbers: xorshift64*, deterministic across platforms.
#pragma once
#include <cstdint>

namespace oiw {

struct SynthRng {
    uint64_t s;
    explicit SynthRng(uint64_t seed) : s(seed * 0x9E3779B97F4A7C15ull + 0x1234567ull) {}
    uint64_t next() {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        return s * 0x2545F4914F6CDD1Dull;
    }
    float uniform() { return static_cast<float>(next() >> 40) * (1.0f / 16777216.0f); }
    // Approximate standard normal (Irwin-Hall of 4) with a Student-t-like heavy tail.
    float heavy() {
        float n = (uniform() + uniform() + uniform() + uniform() - 2.0f) * 1.7320508f;
        return uniform() < 0.01f ? n * 6.0f : n;
    }
};

}  // namespace oiw
