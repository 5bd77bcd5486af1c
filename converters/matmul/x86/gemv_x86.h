// Per-ISA GEMV row kernels (x86_64 only), called by converters/matmul/kernels.cpp. Each
// computes rows [r0, r1) exactly as the scalar reference (w4a8.h lane order).
#pragma once
#include <cstdint>

#include "converters/matmul/w4a8.h"

namespace oiw::matmul {

// Plain views handed to the per-ISA files, so that no inline library template (std::vector,
// ...) is instantiated under ISA flags (a weak copy built with -mavx2 could be linked into
// code that runs on older CPUs).
struct ActView {
    const int8_t* qs;
    const float* d;
    const int32_t* c8;
};
struct KActView {
    const block_q8_K* blocks;
    const int32_t* msum;
};

// Each of avx2 (gemv_avx2.cpp), avxvnni (gemv_avxvnni.cpp), avx512 (gemv_avx512.cpp) and
// avx512vnni (gemv_avx512vnni.cpp) has the same three kernels; avx1 has the oiw4 one only.
// oiw4_rows: y[v * w.rows + r] for r in [r0, r1), v < nvec; two_row only with nvec == 1.
// q4kx8_groups: rows [8 * g0, 8 * g1) of a Q4_Kx8 view. q4_0_rows: y[r] for Q4_0 rows [r0, r1).
namespace avx2 {
void oiw4_rows(const Oiw4Planes& w, const ActView* acts, int nvec, float* y, int64_t r0, int64_t r1, bool two_row);
void q4kx8_groups(const Q4Kx8View& w, const KActView& a, float* y, int64_t g0, int64_t g1);
void q4_0_rows(const block_q4_0* w, int64_t cols, const ActView& a, float* y, int64_t r0, int64_t r1);
}  // namespace avx2
namespace avxvnni {
void oiw4_rows(const Oiw4Planes& w, const ActView* acts, int nvec, float* y, int64_t r0, int64_t r1, bool two_row);
void q4kx8_groups(const Q4Kx8View& w, const KActView& a, float* y, int64_t g0, int64_t g1);
void q4_0_rows(const block_q4_0* w, int64_t cols, const ActView& a, float* y, int64_t r0, int64_t r1);
}  // namespace avxvnni
namespace avx512 {
void oiw4_rows(const Oiw4Planes& w, const ActView* acts, int nvec, float* y, int64_t r0, int64_t r1, bool two_row);
void q4kx8_groups(const Q4Kx8View& w, const KActView& a, float* y, int64_t g0, int64_t g1);
void q4_0_rows(const block_q4_0* w, int64_t cols, const ActView& a, float* y, int64_t r0, int64_t r1);
}  // namespace avx512
namespace avx512vnni {
void oiw4_rows(const Oiw4Planes& w, const ActView* acts, int nvec, float* y, int64_t r0, int64_t r1, bool two_row);
void q4kx8_groups(const Q4Kx8View& w, const KActView& a, float* y, int64_t g0, int64_t g1);
void q4_0_rows(const block_q4_0* w, int64_t cols, const ActView& a, float* y, int64_t r0, int64_t r1);
}  // namespace avx512vnni
namespace avx1 {
// As avx2::oiw4_rows.
void oiw4_rows(const Oiw4Planes& w, const ActView* acts, int nvec, float* y, int64_t r0, int64_t r1, bool two_row);
}  // namespace avx1

}  // namespace oiw::matmul
