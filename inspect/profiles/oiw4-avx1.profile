# gguf-inspect runtime profile (format: docs/gguf-inspect.md, "Runtime profiles").
# This one describes a runtime that does not exist yet: it is our plan, not a reading of source.
profile = oiw4-avx1
runtime = OIW4 runtime (planned) for x86-64 with AVX only (no AVX2/FMA): SIMD kernels for three weight formats, scalar for the rest
version = plan of record for oiw4-runtime 0.1 (not yet released)
source = this repository: OIW4 packed format (Q4_0 repacked), Q4_Kx8 (Q4_K repacked 8 rows at a time), Q8_0 dot product
repack_rows = 8

[types]
# type    simd_dot     repack      cite
F32       no           -           plan: scalar fallback (only norms and small routers expected in F32)
F16       no           -           plan: scalar fallback (F16C is not assumed on AVX1 parts)
BF16      no           -           plan: scalar fallback
Q4_0      yes          OIW4        plan: Q4_0 repacked into OIW4 at conversion time, AVX1 16-byte integer dot
Q4_1      no           -           plan: scalar fallback
Q5_0      no           -           plan: scalar fallback
Q5_1      no           -           plan: scalar fallback
Q8_0      yes          -           plan: AVX1 Q8_0 x Q8_0 dot (pmaddubsw on 128-bit halves)
Q8_1      unsupported  -           plan: activation-only type, not a weight format
Q2_K      no           -           plan: scalar fallback
Q3_K      no           -           plan: scalar fallback
Q4_K      yes          Q4_Kx8      plan: Q4_K repacked 8 rows at a time (block_q4_Kx8 layout, 8-byte interleave)
Q5_K      no           -           plan: scalar fallback
Q6_K      no           -           plan: scalar fallback
Q8_K      unsupported  -           plan: activation-only type, not a weight format
IQ2_XXS   no           -           plan: scalar fallback
IQ2_XS    no           -           plan: scalar fallback
IQ3_XXS   no           -           plan: scalar fallback
IQ1_S     no           -           plan: scalar fallback
IQ4_NL    no           -           plan: scalar fallback
IQ3_S     no           -           plan: scalar fallback
IQ2_S     no           -           plan: scalar fallback
IQ4_XS    no           -           plan: scalar fallback
I8        unsupported  -           plan: integer types are not weight formats
I16       unsupported  -           plan: integer types are not weight formats
I32       unsupported  -           plan: integer types are not weight formats
I64       unsupported  -           plan: integer types are not weight formats
F64       unsupported  -           plan: not a weight format
IQ1_M     no           -           plan: scalar fallback
TQ1_0     no           -           plan: scalar fallback
TQ2_0     no           -           plan: scalar fallback
MXFP4     no           -           plan: scalar fallback
NVFP4     no           -           plan: scalar fallback
Q1_0      no           -           plan: scalar fallback
