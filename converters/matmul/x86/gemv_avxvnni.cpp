// AVX-VNNI GEMV kernels (Alder Lake, Zen 4+), built with -mavx2 -mf16c -mavxvnni and nothing else
// (no FMA, no AVX-512): gemv_ymm.h's kernels with the VEX-encoded vpdpbusd (oiw4, Q4_0: the
// unsigned-weight x signed-activation dot of 4 bytes per lane) and vpdpwssd (Q4_Kx8's scale and min
// sums) as the integer dot; bit-identical to the scalar reference.
#include "converters/matmul/x86/gemv_ymm.h"

#if !defined(__AVXVNNI__)
#error "gemv_avxvnni.cpp must be built with -mavxvnni"
#endif

namespace oiw::matmul::avxvnni {

void oiw4_rows(const Oiw4Planes& w, const ActView* acts, int nvec, float* y, int64_t r0, int64_t r1, bool two_row) {
    ymm_oiw4_rows(w, acts, nvec, y, r0, r1, two_row);
}

void q4_0_rows(const block_q4_0* w, int64_t cols, const ActView& a, float* y, int64_t r0, int64_t r1) {
    ymm_q4_0_rows(w, cols, a, y, r0, r1);
}

void q4kx8_groups(const Q4Kx8View& w, const KActView& a, float* y, int64_t g0, int64_t g1) {
    ymm_q4kx8_groups(w, a, y, g0, g1);
}

}  // namespace oiw::matmul::avxvnni
