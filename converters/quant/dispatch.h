// CPU detection and kernel selection, in one place (dispatch.cpp): which instruction set's
// optimized kernels run. The scalar reference is always available; every optimized kernel is
// byte-identical to it (tests pin each one), so the choice changes speed, never output.
#pragma once
#include <cstdint>
#include <string_view>

#include "converters/quant/kernels.h"

namespace oiw {

// Instruction sets with optimized kernels, in increasing order of preference.
enum class Isa : uint8_t {
    Scalar,  // the references only
    Avx1,    // x86-64 with AVX (Sandy Bridge): the oiw4 GEMV (converters/matmul/x86/gemv_avx1.cpp)
    Avx2,    // x86-64 with AVX2 and F16C: quantizers (converters/quant/x86/*_avx2.cpp) and GEMVs
    // The ISAs below imply AVX2 + F16C: they add GEMV kernels, and the two AVX-512 ones some lattice
    // i-quant quantizers (converters/quant/x86/quantize_iq_avx512.cpp); other quantizers stay AVX2.
    AvxVnni,  // AVX2 + F16C + AVX-VNNI (256-bit vpdpbusd; Alder Lake, Zen 4+): converters/matmul/x86/gemv_avxvnni.cpp
    Avx512,   // AVX2 + F16C + AVX-512 F/BW/VL: converters/matmul/x86/gemv_avx512.cpp
    Avx512Vnni,  // Avx512 + AVX512-VNNI: converters/matmul/x86/gemv_avx512vnni.cpp
};

// "scalar", "avx1", "avx2", "avxvnni", "avx512", "avx512vnni".
std::string_view isa_name(Isa isa);
// True for the ISAs that imply AVX2 + F16C (Avx2 and every one above it): those run the AVX2 quantizers.
constexpr bool has_avx2(Isa isa) { return isa >= Isa::Avx2; }
// True for the ISAs with AVX-512 F/BW/VL (Avx512, Avx512Vnni): those run the AVX-512 quantizers
// (converters/quant/x86/quantize_iq_avx512.cpp) over the AVX2 table.
constexpr bool has_avx512(Isa isa) { return isa == Isa::Avx512 || isa == Isa::Avx512Vnni; }
// True when this build has kernels for `isa` and this CPU (and OS) runs them; Scalar always. The
// one CPU detection of the project (cpuid, x86-64 only).
bool cpu_runs(Isa isa);
// The best instruction set this build has kernels for and this CPU runs (Scalar off x86).
Isa detected_isa();
// The instruction set the kernels run with (read once): detected_isa(), or the one the environment
// names with OIW_ISA=NAME (an isa_name spelling) when this CPU runs it; a name this CPU does not run,
// or no ISA's name, gives a one-line warning on stderr and detected_isa(). Quantizers have no AVX1
// kernels (under Avx1 they run the reference); see kernel_table for the others.
Isa active_isa();

// The reference kernels plus the optimized quantizers `isa` provides (the reference table when
// this build has no kernels for it; the AVX2 table for every ISA with has_avx2, with the AVX-512
// quantizers over it with has_avx512). Does not check the CPU.
const KernelTable& kernel_table(Isa isa);
// Row of kernel_table(active_isa()) for a type id below kGgmlTypeCount.
const TypeKernels& type_kernels(GgmlType t);

// True when quantize_chunk(t, ...) runs an optimized kernel on this CPU, given importance weights
// or not (types that ignore the weights ignore with_imatrix).
bool has_fast_path(GgmlType t, bool with_imatrix);

// Converts n IEEE halves to floats, bit-exact with fp16_to_fp32 (NaN payloads included); uses
// F16C when the active instruction set has it.
void convert_f16_to_f32(const uint16_t* src, float* dst, int64_t n);

}  // namespace oiw
