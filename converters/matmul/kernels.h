// Optimized GEMV kernels and their one dispatch point. Every kernel gives, bit for bit, the
// scalar integer reference's result (w4a8.h / reference.h) on every ISA; tests pin that.
#pragma once
#include <cstdint>

#include "converters/matmul/w4a8.h"
#include "converters/quant/dispatch.h"

namespace oiw::matmul {

// Kernels take an explicit Isa (converters/quant/dispatch.h); one this CPU does not run
// (cpu_runs) falls back to the scalar reference. active_isa() is the default choice.

// The instruction sets with GEMV kernels, best first (Avx1 has the oiw4 kernels only).
inline constexpr Isa kGemvIsas[] = {Isa::Avx512Vnni, Isa::Avx512, Isa::AvxVnni, Isa::Avx2, Isa::Avx1};

// Largest number of activation vectors one pass over the weights serves (batched decode).
inline constexpr int kMaxBatch = 8;

// oiw4 GEMV, batched: y[v * rows + r] = row r . acts[v] (integer path) for v < nvec (1..8),
// each weight byte read once for all nvec vectors; rows split over `threads` threads.
// two_row selects the 2-row variant (two rows share each activation load; nvec == 1 only).
void oiw4_gemv(Isa isa, const Oiw4Planes& w, const Q8Act* const* acts, int nvec, float* y, int threads, bool two_row);
// Q4_Kx8 GEMV: y[r] = Q4_K integer path of row r with a (Avx1 runs Scalar).
void q4kx8_gemv(Isa isa, const Q4Kx8View& w, const Q8KAct& a, float* y, int threads);
// Baseline Q4_0 x Q8_0 GEMV over ggml Q4_0 rows (same lane order as oiw4; Avx1 runs Scalar).
void q4_0_gemv(Isa isa, const block_q4_0* w, int64_t rows, int64_t cols, const Q8Act& a, float* y, int threads);

}  // namespace oiw::matmul
