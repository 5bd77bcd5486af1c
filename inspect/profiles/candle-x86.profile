# gguf-inspect runtime profile (format: docs/gguf-inspect.md, "Runtime profiles").
# Built by reading the runtime's source at the version below; every row names the code it rests on.
profile = candle-x86
runtime = candle CPU backend on x86-64 compiled with AVX2 enabled (RUSTFLAGS="-C target-cpu=native"); quantized matmul through QMatMul
version = candle-core 0.8.3 (huggingface/candle)
source = candle-core/src/quantized/k_quants.rs, candle-core/src/quantized/avx.rs, candle-core/src/quantized/mod.rs
# candle 0.8 does not repack weights on x86; the column below is empty for every type.
repack_rows = 8

[types]
# type    simd_dot     repack      cite
F32       yes          -           mod.rs QMatMul::from_arc dequantizes F32/F16/BF16 to a Tensor; matmul through the gemm crate (SIMD)
F16       yes          -           mod.rs QMatMul::from_arc dequantizes F32/F16/BF16 to a Tensor; matmul through the gemm crate (SIMD)
BF16      yes          -           mod.rs QMatMul::from_arc dequantizes F32/F16/BF16 to a Tensor; matmul through the gemm crate (SIMD)
Q4_0      yes          -           k_quants.rs BlockQ4_0::vec_dot -> avx.rs vec_dot_q4_0_q8_0 (#[cfg(target_feature = "avx")])
Q4_1      no           -           k_quants.rs BlockQ4_1::vec_dot calls vec_dot_unopt (scalar loop)
Q5_0      no           -           k_quants.rs BlockQ5_0::vec_dot calls vec_dot_unopt (scalar loop)
Q5_1      no           -           k_quants.rs BlockQ5_1::vec_dot calls vec_dot_unopt (scalar loop)
Q8_0      yes          -           k_quants.rs BlockQ8_0::vec_dot -> avx.rs vec_dot_q8_0_q8_0
Q8_1      no           -           k_quants.rs BlockQ8_1::vec_dot calls vec_dot_unopt (scalar loop)
Q2_K      yes          -           k_quants.rs BlockQ2K::vec_dot -> avx.rs vec_dot_q2k_q8k
Q3_K      yes          -           k_quants.rs BlockQ3K::vec_dot -> avx.rs vec_dot_q3k_q8k
Q4_K      yes          -           k_quants.rs BlockQ4K::vec_dot -> avx.rs vec_dot_q4k_q8k
Q5_K      yes          -           k_quants.rs BlockQ5K::vec_dot -> avx.rs vec_dot_q5k_q8k
Q6_K      yes          -           k_quants.rs BlockQ6K::vec_dot -> avx.rs vec_dot_q6k_q8k
Q8_K      yes          -           k_quants.rs BlockQ8K::vec_dot -> avx.rs vec_dot_q8k_q8k
IQ2_XXS   unsupported  -           mod.rs GgmlDType has no IQ2_XXS variant: loading fails
IQ2_XS    unsupported  -           mod.rs GgmlDType has no IQ2_XS variant: loading fails
IQ3_XXS   unsupported  -           mod.rs GgmlDType has no IQ3_XXS variant: loading fails
IQ1_S     unsupported  -           mod.rs GgmlDType has no IQ1_S variant: loading fails
IQ4_NL    unsupported  -           mod.rs GgmlDType has no IQ4_NL variant: loading fails
IQ3_S     unsupported  -           mod.rs GgmlDType has no IQ3_S variant: loading fails
IQ2_S     unsupported  -           mod.rs GgmlDType has no IQ2_S variant: loading fails
IQ4_XS    unsupported  -           mod.rs GgmlDType has no IQ4_XS variant: loading fails
I8        unsupported  -           mod.rs GgmlDType has no I8 variant: loading fails
I16       unsupported  -           mod.rs GgmlDType has no I16 variant: loading fails
I32       unsupported  -           mod.rs GgmlDType has no I32 variant: loading fails
I64       unsupported  -           mod.rs GgmlDType has no I64 variant: loading fails
F64       unsupported  -           mod.rs GgmlDType has no F64 variant: loading fails
IQ1_M     unsupported  -           mod.rs GgmlDType has no IQ1_M variant: loading fails
TQ1_0     unsupported  -           mod.rs GgmlDType has no TQ1_0 variant: loading fails
TQ2_0     unsupported  -           mod.rs GgmlDType has no TQ2_0 variant: loading fails
MXFP4     unsupported  -           mod.rs GgmlDType has no MXFP4 variant: loading fails
NVFP4     unsupported  -           mod.rs GgmlDType has no NVFP4 variant: loading fails
Q1_0      unsupported  -           mod.rs GgmlDType has no Q1_0 variant: loading fails
