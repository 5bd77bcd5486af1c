// AVX2 (+F16C) GEMV kernels, built with -mavx2 -mf16c and nothing else: no FMA, so every lane
// rounds as the scalar reference (docs/matmul.md, "8-lane order"). The kernels are gemv_ymm.h's
// with maddubs + madd as the integer dot.
#include "converters/matmul/x86/gemv_ymm.h"

namespace oiw::matmul::avx2 {

void oiw4_rows(const Oiw4Planes& w, const ActView* acts, int nvec, float* y, int64_t r0, int64_t r1, bool two_row) {
    ymm_oiw4_rows(w, acts, nvec, y, r0, r1, two_row);
}

void q4_0_rows(const block_q4_0* w, int64_t cols, const ActView& a, float* y, int64_t r0, int64_t r1) {
    ymm_q4_0_rows(w, cols, a, y, r0, r1);
}

void q4kx8_groups(const Q4Kx8View& w, const KActView& a, float* y, int64_t g0, int64_t g1) {
    ymm_q4kx8_groups(w, a, y, g0, g1);
}

}  // namespace oiw::matmul::avx2
