#include "converters/hf/rope_freqs.h"

#include <bit>
#include <cmath>
#include <cstdint>

namespace oiw::hf {
namespace {

// SLEEF's double-float arithmetic (src/common/df.h, the ENABLE_FMA_SP variants): a value is x + y
// with |y| below half an ulp of x. Every operation is written out in the order SLEEF does it; the
// build's -ffp-contract=off keeps the compiler from fusing anything else.
struct F2 {
    float x, y;
};

F2 add2(float x, float y) {  // dfadd2_vf2_vf_vf
    const float s = x + y, v = s - x;
    return {s, (x - (s - v)) + (y - v)};
}
F2 add2(F2 x, float y) {  // dfadd2_vf2_vf2_vf
    const float s = x.x + y, v = s - x.x;
    return {s, ((x.x - (s - v)) + (y - v)) + x.y};
}
F2 add2(F2 x, F2 y) {  // dfadd2_vf2_vf2_vf2
    const float s = x.x + y.x, v = s - x.x;
    return {s, ((x.x - (s - v)) + (y.x - v)) + (x.y + y.y)};
}
F2 add(F2 x, F2 y) {  // dfadd_vf2_vf2_vf2 (|x| >= |y|)
    const float s = x.x + y.x;
    return {s, (((x.x - s) + y.x) + x.y) + y.y};
}
F2 add(float x, F2 y) {  // dfadd_vf2_vf_vf2
    const float s = x + y.x;
    return {s, ((x - s) + y.x) + y.y};
}
F2 normalize(F2 t) {  // dfnormalize_vf2_vf2
    const float s = t.x + t.y;
    return {s, (t.x - s) + t.y};
}
F2 scale(F2 d, float s) { return {d.x * s, d.y * s}; }  // dfscale_vf2_vf2_vf
F2 mul(F2 x, float y) {                                 // dfmul_vf2_vf2_vf
    const float s = x.x * y;
    return {s, std::fma(x.y, y, std::fma(x.x, y, -s))};
}
F2 mul(F2 x, F2 y) {  // dfmul_vf2_vf2_vf2
    const float s = x.x * y.x;
    return {s, std::fma(x.x, y.y, std::fma(x.y, y.x, std::fma(x.x, y.x, -s)))};
}
F2 square(F2 x) {  // dfsqu_vf2_vf2
    const float s = x.x * x.x;
    return {s, std::fma(x.x + x.x, x.y, std::fma(x.x, x.x, -s))};
}
F2 div(F2 n, F2 d) {  // dfdiv_vf2_vf2_vf2
    const float t = 1.0f / d.x, s = n.x * t;
    const float u = std::fma(t, n.x, -s);
    const float v = std::fma(-d.y, t, std::fma(-d.x, t, 1.0f));
    return {s, std::fma(s, v, std::fma(n.y, t, u))};
}

// logkf for d > 0: log(d) as a double-float.
F2 log_k(float d) {
    const bool tiny = d < 0x1p-126f;
    if (tiny) d *= 0x1p64f;
    // vilogb2k_vi2_vf: the biased exponent field of d * (1 / 0.75), less 127.
    int e = static_cast<int>((std::bit_cast<uint32_t>(d * (1.0f / 0.75f)) >> 23) & 0xff) - 0x7f;
    // vldexp3_vf_vf_vi2: d * 2^-e by adding to the exponent field.
    const float m = std::bit_cast<float>(std::bit_cast<uint32_t>(d) + (static_cast<uint32_t>(-e) << 23));
    if (tiny) e -= 64;
    const F2 x = div(add2(-1.0f, m), add2(1.0f, m));
    const F2 x2 = square(x);
    float t = 0.240320354700088500976562f;
    t = std::fma(t, x2.x, 0.285112679004669189453125f);
    t = std::fma(t, x2.x, 0.400007992982864379882812f);
    const F2 c = {0.66666662693023681640625f, 3.69183861259614332084311e-09f};
    F2 s = mul(F2{0.69314718246459960938f, -1.904654323148236017e-09f}, static_cast<float>(e));
    s = add(s, scale(x, 2.0f));
    return add(s, mul(mul(x2, x), add2(mul(x2, t), c)));
}

// expkf: exp of a double-float, as a float.
float exp_k(F2 d) {
    constexpr float kRLn2 = 1.442695040888963407359924681001892137426645954152985934135449406931f;
    constexpr float kL2U = 0.693145751953125f, kL2L = 1.428606765330187045e-06f;
    const int q = static_cast<int>(std::nearbyint((d.x + d.y) * kRLn2));  // vrint: to nearest, ties even
    F2 s = add2(d, static_cast<float>(q) * -kL2U);
    s = add2(s, static_cast<float>(q) * -kL2L);
    s = normalize(s);
    float u = 0.00136324646882712841033936f;
    u = std::fma(u, s.x, 0.00836596917361021041870117f);
    u = std::fma(u, s.x, 0.0416710823774337768554688f);
    u = std::fma(u, s.x, 0.166665524244308471679688f);
    u = std::fma(u, s.x, 0.499999850988388061523438f);
    F2 t = add(s, mul(square(s), u));
    t = add(1.0f, t);
    u = std::ldexp(t.x + t.y, q);  // exact: the caller's results are normal floats
    return d.x < -104.0f ? 0.0f : u;
}

}  // namespace

float sleef_powf_u10(float base, float exponent) {
    if (exponent == 0.0f || base == 1.0f) return 1.0f;
    return exp_k(mul(log_k(base), exponent));
}

std::vector<float> torch_pow(float base, const std::vector<float>& exps) {
    // cpu_kernel_vec: pairs of 8-lane vectors, then the scalar lambda (std::pow) for what is left.
    const size_t vectorized = exps.size() / 16 * 16;
    std::vector<float> out(exps.size());
    for (size_t i = 0; i < exps.size(); ++i)
        out[i] = i < vectorized ? sleef_powf_u10(base, exps[i]) : std::pow(base, exps[i]);
    return out;
}

std::vector<float> llama3_rope_factors(double base, size_t head_dim, double factor, double low_freq_factor,
                                       double high_freq_factor, double old_context_len) {
    // torch.arange(0, dim, 2, dtype=float32) / dim; the Python scalars meet float32 tensors, so
    // each is rounded to float32 first and every step rounds to float32.
    std::vector<float> exps;
    for (size_t i = 0; i < head_dim; i += 2) exps.push_back(static_cast<float>(i) / static_cast<float>(head_dim));
    const std::vector<float> powers = torch_pow(static_cast<float>(base), exps);
    const auto f = [](double v) { return static_cast<float>(v); };
    const float low_wavelen = f(old_context_len / low_freq_factor),
                high_wavelen = f(old_context_len / high_freq_factor);
    std::vector<float> out;
    for (const float p : powers) {
        const float freq = 1.0f / p;                                       // 1.0 / t: reciprocal() * 1.0
        const float wavelen = (1.0f / freq) * f(2.0 * 3.141592653589793);  // 2 * math.pi / freq
        if (wavelen < high_wavelen) {
            out.push_back(1.0f);
        } else if (wavelen > low_wavelen) {
            out.push_back(f(factor));
        } else {
            const float smooth =
                ((1.0f / wavelen) * f(old_context_len) - f(low_freq_factor)) / f(high_freq_factor - low_freq_factor);
            out.push_back(1.0f / ((1.0f - smooth) / f(factor) + smooth));
        }
    }
    return out;
}

}  // namespace oiw::hf
