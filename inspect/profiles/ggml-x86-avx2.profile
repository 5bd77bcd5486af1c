# gguf-inspect runtime profile (format: docs/gguf-inspect.md, "Runtime profiles").
# Built by reading the runtime's source at the version below; every row names the code it rests on.
profile = ggml-x86-avx2
runtime = llama.cpp CPU backend (ggml-cpu) on x86-64 built with AVX2 + FMA + F16C (GGML_NATIVE on a Haswell-or-later CPU)
version = ggml 0.11.1 (llama.cpp commit 1348f67)
source = ggml/src/ggml-cpu/arch/x86/quants.c, ggml/src/ggml-cpu/arch-fallback.h, ggml/src/ggml-cpu/repack.cpp, ggml/src/ggml-cpu/vec.cpp
# ggml_repack_get_optimal_repack_type() repacks a weight only when ne[1] (rows) % 8 == 0.
repack_rows = 8

[types]
# type    simd_dot     repack      cite
F32       yes          -           vec.cpp ggml_vec_dot_f32 (GGML_F32_VEC = __m256 under __AVX__)
F16       yes          -           vec.cpp ggml_vec_dot_f16 (GGML_F16_VEC via F16C _mm256_cvtph_ps)
BF16      yes          -           vec.cpp ggml_vec_dot_bf16 (#if __AVX2__ branch)
Q4_0      yes          Q4_0x8      quants.c ggml_vec_dot_q4_0_q8_0 (#if __AVX2__); repack.cpp q4_0_8x8_q8_0 when ggml_cpu_has_avx2() && ne[1] % 8 == 0
Q4_1      yes          -           quants.c ggml_vec_dot_q4_1_q8_1 (#if __AVX2__ || __AVX__)
Q5_0      yes          -           quants.c ggml_vec_dot_q5_0_q8_0 (#if __AVX2__, bytes_from_bits_32)
Q5_1      yes          -           quants.c ggml_vec_dot_q5_1_q8_1 (#if __AVX2__)
Q8_0      yes          -           quants.c ggml_vec_dot_q8_0_q8_0 (#if __AVX2__); repack.cpp q8_0_4x4/4x8 only with ARM NEON dotprod/i8mm
Q8_1      unsupported  -           ggml-cpu.c type_traits_cpu[GGML_TYPE_Q8_1] has no vec_dot (activation type of Q4_1/Q5_1)
Q2_K      yes          -           quants.c ggml_vec_dot_q2_K_q8_K (#if __AVX2__); repack.cpp q2_K_8x8_q8_K needs ggml_cpu_has_avx512()
Q3_K      yes          -           quants.c ggml_vec_dot_q3_K_q8_K (#if __AVX2__)
Q4_K      yes          Q4_Kx8      quants.c ggml_vec_dot_q4_K_q8_K (#if __AVX2__); repack.cpp q4_K_8x8_q8_K when ggml_cpu_has_avx2() && ne[1] % 8 == 0
Q5_K      yes          -           quants.c ggml_vec_dot_q5_K_q8_K (#if __AVX2__); arch-fallback.h: q5_K 8x8 gemv/gemm generic on x86, not selected
Q6_K      yes          -           quants.c ggml_vec_dot_q6_K_q8_K (#if __AVX2__); arch-fallback.h: q6_K 8x8 gemv/gemm generic on x86, not selected
Q8_K      unsupported  -           ggml-cpu.c type_traits_cpu[GGML_TYPE_Q8_K] has no vec_dot (activation type of the K-quants)
IQ2_XXS   yes          -           quants.c ggml_vec_dot_iq2_xxs_q8_K (#if __AVX2__)
IQ2_XS    yes          -           quants.c ggml_vec_dot_iq2_xs_q8_K (#if __AVX2__)
IQ3_XXS   yes          -           quants.c ggml_vec_dot_iq3_xxs_q8_K (#if __AVX2__)
IQ1_S     yes          -           quants.c ggml_vec_dot_iq1_s_q8_K (#if __AVX2__)
IQ4_NL    yes          IQ4_NLx8    quants.c ggml_vec_dot_iq4_nl_q8_0 (#if __AVX2__); repack.cpp iq4_nl_8x8_q8_0 when ggml_cpu_has_avx2() && ne[1] % 8 == 0
IQ3_S     yes          -           quants.c ggml_vec_dot_iq3_s_q8_K (#if __AVX2__)
IQ2_S     yes          -           quants.c ggml_vec_dot_iq2_s_q8_K (#if __AVX2__)
IQ4_XS    yes          -           quants.c ggml_vec_dot_iq4_xs_q8_K (#if __AVX2__)
I8        unsupported  -           integer type: no vec_dot in type_traits_cpu (never a matmul weight)
I16       unsupported  -           integer type: no vec_dot in type_traits_cpu (never a matmul weight)
I32       unsupported  -           integer type: no vec_dot in type_traits_cpu (never a matmul weight)
I64       unsupported  -           integer type: no vec_dot in type_traits_cpu (never a matmul weight)
F64       unsupported  -           no vec_dot in type_traits_cpu (never a matmul weight)
IQ1_M     yes          -           quants.c ggml_vec_dot_iq1_m_q8_K (#if __AVX2__)
TQ1_0     yes          -           quants.c ggml_vec_dot_tq1_0_q8_K (#if __AVX2__)
TQ2_0     yes          -           quants.c ggml_vec_dot_tq2_0_q8_K (#if __AVX2__)
MXFP4     yes          -           quants.c ggml_vec_dot_mxfp4_q8_0 (#if __AVX2__); repack.cpp mxfp4 8x8 not selected on x86
NVFP4     no           -           arch-fallback.h (x86 section) #define ggml_vec_dot_nvfp4_q8_0_generic ggml_vec_dot_nvfp4_q8_0
Q1_0      no           -           quants.c ggml_vec_dot_q1_0_q8_0 only calls ggml_vec_dot_q1_0_q8_0_generic
