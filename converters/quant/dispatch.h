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
    Scalar,  // the reference only
    Avx2,    // x86-64 with AVX2 and F16C (converters/quant/x86/*_avx2.cpp)
};

// "scalar", "avx2".
std::string_view isa_name(Isa isa);
// The best instruction set this build has kernels for and this CPU runs (Scalar off x86).
Isa detected_isa();
// The instruction set the kernels run with: detected_isa(), or Scalar when the environment sets
// OIW_ISA=scalar (read once).
Isa active_isa();

// The reference kernels plus the optimized quantizers `isa` provides (the reference table when
// this build has no kernels for it). Does not check the CPU.
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
