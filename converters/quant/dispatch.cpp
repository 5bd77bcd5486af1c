#include "converters/quant/dispatch.h"

#include <cstdlib>
#include <cstring>
#include <span>

#include "libformat/fp16.h"

#if OIW_X86_KERNELS
#include <cpuid.h>

#include "converters/quant/x86/quantize_avx2.h"
#endif

namespace oiw {
namespace {

// The optimized quantizers this build has for `isa` (none for Scalar or another architecture's ISA).
std::span<const IsaKernel> isa_quantizers(Isa isa) {
#if OIW_X86_KERNELS
    if (isa == Isa::Avx2) return avx2::quantizers();
#endif
    (void)isa;
    return {};
}

KernelTable with_isa(Isa isa) {
    KernelTable t = reference_kernels();
    for (const IsaKernel& k : isa_quantizers(isa)) t[static_cast<size_t>(k.type)].fast = k.fast;
    return t;
}

}  // namespace

std::string_view isa_name(Isa isa) {
    switch (isa) {
        case Isa::Avx2: return "avx2";
        case Isa::Avx1: return "avx1";
        default: return "scalar";
    }
}

bool cpu_runs(Isa isa) {
#if OIW_X86_KERNELS
    struct Features {
        bool avx, avx2_f16c;
    };
    static const Features f = [] {
        __builtin_cpu_init();  // its avx/avx2 answers also check that the OS saves YMM state
        unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
        const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
        return Features{__builtin_cpu_supports("avx") != 0, __builtin_cpu_supports("avx2") != 0 && f16c};
    }();
    switch (isa) {
        case Isa::Avx1: return f.avx;
        case Isa::Avx2: return f.avx2_f16c;
        default: return true;
    }
#else
    return isa == Isa::Scalar;
#endif
}

Isa detected_isa() {
    static const Isa isa = cpu_runs(Isa::Avx2) ? Isa::Avx2 : cpu_runs(Isa::Avx1) ? Isa::Avx1 : Isa::Scalar;
    return isa;
}

Isa active_isa() {
    static const Isa isa = [] {
        const char* force = std::getenv("OIW_ISA");
        return force && std::strcmp(force, "scalar") == 0 ? Isa::Scalar : detected_isa();
    }();
    return isa;
}

const KernelTable& kernel_table(Isa isa) {
    static const KernelTable avx2 = with_isa(Isa::Avx2);
    return isa == Isa::Avx2 ? avx2 : reference_kernels();
}

const TypeKernels& type_kernels(GgmlType t) { return kernel_table(active_isa())[static_cast<size_t>(t)]; }

bool has_fast_path(GgmlType t, bool with_imatrix) {
    const TypeKernels& k = type_kernels(t);
    return (with_imatrix && k.imatrix != Imatrix::Ignored ? k.fast.weighted : k.fast.plain) != nullptr;
}

void convert_f16_to_f32(const uint16_t* src, float* dst, int64_t n) {
#if OIW_X86_KERNELS
    if (active_isa() == Isa::Avx2) return avx2::f16_to_f32(src, dst, n);
#endif
    for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_fp32(src[i]);
}

}  // namespace oiw
