// How the per-ISA oiw4 GEMV files split rows [r0, r1) among their row kernels, shared by
// gemv_avx1.cpp and gemv_avx2.cpp. Internal linkage on purpose: each ISA file instantiates its
// own copy under its own flags (a template with external linkage would be one COMDAT symbol, and
// the linker could hand the AVX2 copy to the AVX1 path).
#pragma once
#include <cstdint>
#include <type_traits>

namespace oiw::matmul {
namespace {  // NOLINT(google-build-namespaces): see above

template <int NV>
using Nv = std::integral_constant<int, NV>;

// nv(Nv<NV>{}, a, b): NV activation vectors over rows [a, b); pair(i, j): rows i and j with the
// first vector. two_row (nvec == 1 only) pairs row i of the first half with row i of the second:
// two sequential streams in different pages (adjacent rows share a 4 KiB page, which defeats the
// L2 streamer); an odd last row runs alone.
template <typename NvFn, typename PairFn>
void split_rows(int nvec, bool two_row, int64_t r0, int64_t r1, NvFn&& nv, PairFn&& pair) {
    if (nvec == 1 && two_row) {
        const int64_t h = (r1 - r0) / 2;
        for (int64_t i = r0; i < r0 + h; ++i) pair(i, i + h);
        if (r0 + 2 * h < r1) nv(Nv<1>{}, r1 - 1, r1);
        return;
    }
    switch (nvec) {
        case 1: return nv(Nv<1>{}, r0, r1);
        case 2: return nv(Nv<2>{}, r0, r1);
        case 3: return nv(Nv<3>{}, r0, r1);
        case 4: return nv(Nv<4>{}, r0, r1);
        case 5: return nv(Nv<5>{}, r0, r1);
        case 6: return nv(Nv<6>{}, r0, r1);
        case 7: return nv(Nv<7>{}, r0, r1);
        default: return nv(Nv<8>{}, r0, r1);
    }
}

}  // namespace
}  // namespace oiw::matmul
