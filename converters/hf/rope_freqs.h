// Tensors convert_hf_to_gguf.py computes rather than copies, in the float32 arithmetic torch does
// them in, so the bytes come out as the Python converter's:
//   rope_freqs.weight   LlamaModel.generate_extra_tensors for rope_type "llama3" (Llama 3.1+)
// and torch's float32 pow as its CPU kernel computes it (SLEEF's powf_u10 with FMA for whole
// vectors, the C library's powf for the tail), which that computation starts from.
#pragma once
#include <cstddef>
#include <vector>

namespace oiw::hf {

// SLEEF's xpowf (1.0-ULP, FMA variant: Sleef_powf8_u10avx2 / Sleef_powf1_u10purecfma) for a finite
// base > 0 and a finite exponent whose result is a normal float: bit for bit what torch's
// vectorized pow gives. std::fma keeps it exact on machines without FMA.
float sleef_powf_u10(float base, float exponent);

// torch.pow(base, exps) for a float32 tensor of n exponents on a CPU where torch runs its AVX2
// kernels: blocks of 16 through SLEEF, the remainder through powf.
std::vector<float> torch_pow(float base, const std::vector<float>& exps);

// Llama 3's RoPE frequency factors (rope_type "llama3"): for each of head_dim / 2 frequencies
// 1 / base^(2i / head_dim), 1 above the high-frequency wavelength, `factor` below the
// low-frequency one, and the smooth blend between, each step rounded to float32 as torch rounds
// it. The caller checks the parameters (base > 0, head_dim even, factors finite).
std::vector<float> llama3_rope_factors(double base, size_t head_dim, double factor, double low_freq_factor,
                                       double high_freq_factor, double old_context_len);

}  // namespace oiw::hf
