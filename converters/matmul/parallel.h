// The one place the matmul kernels split work over threads: contiguous row ranges, each a
// multiple of `grain` rows except the last, run on the shared pool (libformat/parallel.h).
#pragma once
#include <algorithm>
#include <cstdint>

#include "libformat/parallel.h"

namespace oiw::matmul {

// Calls fn(begin, end) over [0, n) split into at most `threads` ranges (at most one per core run
// at once); blocks until all return.
template <typename Fn>
void parallel_rows(int64_t n, int threads, int64_t grain, Fn&& fn) {
    const int64_t units = (n + grain - 1) / grain;
    const int64_t t = std::max<int64_t>(1, std::min<int64_t>(threads, units));
    if (t == 1) {
        fn(int64_t{0}, n);
        return;
    }
    shared_for_each(static_cast<size_t>(t), [&](size_t i) {
        const auto k = static_cast<int64_t>(i);
        const int64_t b = std::min(n, units * k / t * grain), e = std::min(n, units * (k + 1) / t * grain);
        if (b < e) fn(b, e);
    });
}

}  // namespace oiw::matmul
