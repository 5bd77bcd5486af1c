// The one place the matmul kernels split work over threads (to be switched to the project's
// shared pool): contiguous row ranges, each a multiple of `grain` rows except the last.
#pragma once
#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace oiw::matmul {

// Calls fn(begin, end) over [0, n) split into at most `threads` ranges; blocks until all return.
template <typename Fn>
void parallel_rows(int64_t n, int threads, int64_t grain, Fn&& fn) {
    const int64_t units = (n + grain - 1) / grain;
    const int64_t t = std::max<int64_t>(1, std::min<int64_t>(threads, units));
    if (t == 1) {
        fn(int64_t{0}, n);
        return;
    }
    std::vector<std::thread> pool;
    for (int64_t i = 0; i < t; ++i) {
        const int64_t b = std::min(n, units * i / t * grain), e = std::min(n, units * (i + 1) / t * grain);
        if (b < e) pool.emplace_back([&fn, b, e] { fn(b, e); });
    }
    for (auto& th : pool) th.join();
}

}  // namespace oiw::matmul
