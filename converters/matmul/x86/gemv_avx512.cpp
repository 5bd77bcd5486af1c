// AVX-512 F/BW/VL GEMV kernels, built with -mavx512f -mavx512bw -mavx512vl -mavx2 -mf16c and
// nothing else (no VNNI, no FMA): gemv_zmm.h's kernels with maddubs + madd as the integer dot;
// bit-identical to the scalar reference.
#include "converters/matmul/x86/gemv_zmm.h"

#if defined(__AVX512VNNI__)
#error "gemv_avx512.cpp must be built without -mavx512vnni (Isa::Avx512 runs on CPUs without it)"
#endif

namespace oiw::matmul::avx512 {

void oiw4_rows(const Oiw4Planes& w, const ActView* acts, int nvec, float* y, int64_t r0, int64_t r1, bool two_row) {
    zmm_oiw4_rows(w, acts, nvec, y, r0, r1, two_row);
}

void q4_0_rows(const block_q4_0* w, int64_t cols, const ActView& a, float* y, int64_t r0, int64_t r1) {
    zmm_q4_0_rows(w, cols, a, y, r0, r1);
}

void q4kx8_groups(const Q4Kx8View& w, const KActView& a, float* y, int64_t g0, int64_t g1) {
    zmm_q4kx8_groups(w, a, y, g0, g1);
}

}  // namespace oiw::matmul::avx512
