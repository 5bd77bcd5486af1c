// The GEMV kernels' dispatch: the Isa asked for when this CPU runs it (cpu_runs, the project's one
// CPU detection in converters/quant/dispatch.cpp), else the scalar references every build has.
#include "converters/matmul/kernels.h"

#include <cstring>
#include <vector>

#include "converters/matmul/parallel.h"
#include "libformat/error.h"
#include "libformat/fp16.h"

#if defined(__x86_64__)
#include "converters/matmul/x86/gemv_x86.h"
#endif

namespace oiw::matmul {
namespace {

#if defined(__x86_64__)
ActView view(const Q8Act& a) { return {a.qs.data(), a.d.data(), a.c8.data()}; }

// One ISA's x86 kernels (gemv_x86.h); a null entry runs the scalar reference.
struct X86Kernels {
    decltype(&avx2::oiw4_rows) oiw4;
    decltype(&avx2::q4kx8_groups) q4kx8;
    decltype(&avx2::q4_0_rows) q4_0;
};

// The kernels of `isa`, which this CPU runs (cpu_runs); Scalar has none.
X86Kernels x86_kernels(Isa isa) {
    switch (isa) {
        case Isa::Avx1: return {avx1::oiw4_rows, nullptr, nullptr};
        case Isa::Avx2: return {avx2::oiw4_rows, avx2::q4kx8_groups, avx2::q4_0_rows};
        case Isa::AvxVnni: return {avxvnni::oiw4_rows, avxvnni::q4kx8_groups, avxvnni::q4_0_rows};
        case Isa::Avx512: return {avx512::oiw4_rows, avx512::q4kx8_groups, avx512::q4_0_rows};
        case Isa::Avx512Vnni: return {avx512vnni::oiw4_rows, avx512vnni::q4kx8_groups, avx512vnni::q4_0_rows};
        default: return {nullptr, nullptr, nullptr};
    }
}
#endif

void check_shape(const char* what, int64_t cols, int64_t bs, int64_t n) {
    if (cols % bs != 0 || n != cols) {
        throw FormatError(ErrorKind::Usage, "", what,
                          "activation length " + std::to_string(n) + " does not match " + std::to_string(cols) +
                              " columns (a multiple of " + std::to_string(bs) + ")");
    }
}

}  // namespace

void oiw4_gemv(Isa isa, const Oiw4Planes& w, const Q8Act* const* acts, int nvec, float* y, int threads,
               [[maybe_unused]] bool two_row) {
    if (nvec < 1 || nvec > kMaxBatch) throw FormatError(ErrorKind::Usage, "", "oiw4", "batch of 1..8 vectors");
    for (int v = 0; v < nvec; ++v) check_shape("oiw4", w.cols, 32, acts[v]->n);
    if (!cpu_runs(isa)) isa = Isa::Scalar;
#if defined(__x86_64__)
    if (const auto rows = x86_kernels(isa).oiw4) {
        ActView views[kMaxBatch];
        for (int v = 0; v < nvec; ++v) views[v] = view(*acts[v]);
        const bool pair = two_row && nvec == 1;
        parallel_rows(w.rows, threads, 2, [&](int64_t r0, int64_t r1) { rows(w, views, nvec, y, r0, r1, pair); });
        return;
    }
#endif
    const int64_t nb = w.cols / 32;
    parallel_rows(w.rows, threads, 1, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r)
            for (int v = 0; v < nvec; ++v) y[v * w.rows + r] = oiw4_dot_ref(w.qs + r * nb * 16, w.d + r * nb, *acts[v]);
    });
}

void q4kx8_gemv([[maybe_unused]] Isa isa, const Q4Kx8View& w, const Q8KAct& a, float* y, int threads) {
    if (w.rows % 8 != 0) throw FormatError(ErrorKind::Usage, "", "q4kx8", "rows must be a multiple of 8");
    check_shape("q4kx8", w.cols, 256, a.n);
#if defined(__x86_64__)
    if (const auto groups = cpu_runs(isa) ? x86_kernels(isa).q4kx8 : nullptr) {
        const KActView v{a.blocks.data(), a.msum.data()};
        parallel_rows(w.rows / 8, threads, 1, [&](int64_t g0, int64_t g1) { groups(w, v, y, g0, g1); });
        return;
    }
#endif
    QuantizedVector q;  // the reference takes the ggml bytes
    q.type = GgmlType::Q8_K;
    q.n = a.n;
    q.bytes.resize(a.blocks.size() * sizeof(block_q8_K));
    if (!q.bytes.empty()) std::memcpy(q.bytes.data(), a.blocks.data(), q.bytes.size());
    parallel_rows(w.rows, threads, 8, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) y[r] = q4kx8_dot_ref(w, r, q);
    });
}

void q4_0_gemv([[maybe_unused]] Isa isa, const block_q4_0* w, int64_t rows, int64_t cols, const Q8Act& a, float* y,
               int threads) {
    check_shape("Q4_0", cols, 32, a.n);
#if defined(__x86_64__)
    if (const auto kernel = cpu_runs(isa) ? x86_kernels(isa).q4_0 : nullptr) {
        const ActView v = view(a);
        parallel_rows(rows, threads, 2, [&](int64_t r0, int64_t r1) { kernel(w, cols, v, y, r0, r1); });
        return;
    }
#endif
    const int64_t nb = cols / 32;
    parallel_rows(rows, threads, 1, [&](int64_t r0, int64_t r1) {
        std::vector<uint8_t> qs(static_cast<size_t>(nb) * 16);
        std::vector<float> d(static_cast<size_t>(nb));
        for (int64_t r = r0; r < r1; ++r) {
            for (int64_t b = 0; b < nb; ++b) {
                std::memcpy(&qs[b * 16], w[r * nb + b].qs, 16);
                d[b] = fp16_to_fp32(w[r * nb + b].d);
            }
            y[r] = oiw4_dot_ref(qs.data(), d.data(), a);
        }
    });
}

}  // namespace oiw::matmul
