#include "converters/quant/dispatch.h"

#include <cstdio>
#include <cstdlib>
#include <span>

#include "libformat/fp16.h"

#if OIW_X86_KERNELS
#include <cpuid.h>

#include "converters/quant/x86/quantize_avx2.h"
#include "converters/quant/x86/quantize_avx512.h"
#endif

namespace oiw {
namespace {

// Every Isa, in increasing order of preference.
constexpr Isa kIsas[] = {Isa::Scalar, Isa::Avx1, Isa::Avx2, Isa::AvxVnni, Isa::Avx512, Isa::Avx512Vnni};

// The reference table with the optimized quantizers this build has for `isa`: the AVX2 ones for
// every ISA with has_avx2, the AVX-512 ones over them with has_avx512, each non-null plain or
// weighted entry replacing that variant's (none for Scalar or another architecture's ISA).
KernelTable with_isa(Isa isa) {
    KernelTable t = reference_kernels();
#if OIW_X86_KERNELS
    auto apply = [&t](std::span<const IsaKernel> ks) {
        for (const IsaKernel& k : ks) {
            FastQuantize& f = t[static_cast<size_t>(k.type)].fast;
            if (k.fast.plain) f.plain = k.fast.plain;
            if (k.fast.weighted) f.weighted = k.fast.weighted;
        }
    };
    if (has_avx2(isa)) apply(avx2::quantizers());
    if (has_avx512(isa)) {
        apply(avx512::quantizers());
        apply(avx512::k_quantizers());
    }
#endif
    (void)isa;
    return t;
}

}  // namespace

std::string_view isa_name(Isa isa) {
    switch (isa) {
        case Isa::Avx512Vnni: return "avx512vnni";
        case Isa::Avx512: return "avx512";
        case Isa::AvxVnni: return "avxvnni";
        case Isa::Avx2: return "avx2";
        case Isa::Avx1: return "avx1";
        default: return "scalar";
    }
}

bool cpu_runs(Isa isa) {
#if OIW_X86_KERNELS
    struct Features {
        bool avx, avx2_f16c, avxvnni, avx512, avx512vnni;
    };
    static const Features f = [] {
        // Its avx* answers also check that the OS saves the YMM state, its avx512* ones the ZMM
        // and mask state (xgetbv).
        __builtin_cpu_init();
        unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
        const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
        const bool avx2 = __builtin_cpu_supports("avx2") != 0 && f16c;
        const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") != 0 && __builtin_cpu_supports("avx512bw") != 0 &&
                            __builtin_cpu_supports("avx512vl") != 0;
        // AVX-VNNI: cpuid leaf 7 subleaf 1, EAX bit 4 (clang's __builtin_cpu_supports has no "avxvnni");
        // its VEX instructions use the YMM state the avx2 answer checked.
        const bool vnni256 = __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) && (eax & (1u << 4)) != 0;
        return Features{__builtin_cpu_supports("avx") != 0, avx2, avx2 && vnni256, avx512,
                        avx512 && __builtin_cpu_supports("avx512vnni") != 0};
    }();
    switch (isa) {
        case Isa::Avx1: return f.avx;
        case Isa::Avx2: return f.avx2_f16c;
        case Isa::AvxVnni: return f.avxvnni;
        case Isa::Avx512: return f.avx512;
        case Isa::Avx512Vnni: return f.avx512vnni;
        default: return true;
    }
#else
    return isa == Isa::Scalar;
#endif
}

Isa detected_isa() {
    static const Isa isa = [] {
        Isa best = Isa::Scalar;
        for (const Isa i : kIsas)
            if (cpu_runs(i)) best = i;
        return best;
    }();
    return isa;
}

Isa active_isa() {
    static const Isa isa = [] {
        const char* force = std::getenv("OIW_ISA");
        if (!force) return detected_isa();
        for (const Isa i : kIsas)
            if (isa_name(i) == force && cpu_runs(i)) return i;
        const std::string_view d = isa_name(detected_isa());
        std::fprintf(stderr, "warning: OIW_ISA=%s is not an instruction set this CPU runs; using %.*s\n", force,
                     static_cast<int>(d.size()), d.data());
        return detected_isa();
    }();
    return isa;
}

const KernelTable& kernel_table(Isa isa) {
    static const KernelTable avx2 = with_isa(Isa::Avx2);
    static const KernelTable avx512 = with_isa(Isa::Avx512);
    return has_avx512(isa) ? avx512 : has_avx2(isa) ? avx2 : reference_kernels();
}

const TypeKernels& type_kernels(GgmlType t) { return kernel_table(active_isa())[static_cast<size_t>(t)]; }

bool has_fast_path(GgmlType t, bool with_imatrix) {
    const TypeKernels& k = type_kernels(t);
    return (with_imatrix && k.imatrix != Imatrix::Ignored ? k.fast.weighted : k.fast.plain) != nullptr;
}

void convert_f16_to_f32(const uint16_t* src, float* dst, int64_t n) {
#if OIW_X86_KERNELS
    if (has_avx2(active_isa())) return avx2::f16_to_f32(src, dst, n);
#endif
    for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_fp32(src[i]);
}

}  // namespace oiw
