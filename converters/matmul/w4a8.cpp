// Scalar references of the W4A8 operands (see w4a8.h for the lane order).
#include "converters/matmul/w4a8.h"

#include <cstring>

#include "converters/quant/quantize_impl.h"
#include "libformat/error.h"
#include "libformat/fp16.h"

namespace oiw::matmul {

Q8Act unpack_q8_0(const QuantizedVector& q8) {
    if (q8.type != GgmlType::Q8_0) {
        throw FormatError(ErrorKind::Usage, "", std::string(type_name(q8.type)), "W4A8 activations must be Q8_0");
    }
    Q8Act a;
    a.n = q8.n;
    const int64_t nb = q8.n / QK8_0;
    a.qs.resize(static_cast<size_t>(q8.n));
    a.d.resize(static_cast<size_t>(nb));
    a.c8.resize(static_cast<size_t>(nb) * 8);
    const auto* y = reinterpret_cast<const block_q8_0*>(q8.bytes.data());
    for (int64_t b = 0; b < nb; ++b) {
        std::memcpy(&a.qs[b * 32], y[b].qs, 32);
        a.d[b] = fp16_to_fp32(y[b].d);
        for (int k = 0; k < 8; ++k) {
            int32_t s = 0;
            for (int e = 4 * k; e < 4 * k + 4; ++e) s += y[b].qs[e];
            a.c8[b * 8 + k] = 8 * s;
        }
    }
    return a;
}

Q8Act make_q8_act(const float* x, int64_t n) { return unpack_q8_0(quantize_activation(GgmlType::Q8_0, x, n)); }

float oiw4_dot_ref(const uint8_t* qs, const float* d, const Q8Act& a) {
    float acc[8] = {};
    for (int64_t b = 0; b < a.n / 32; ++b) {
        const uint8_t* q = qs + b * 16;
        const int8_t* x = &a.qs[b * 32];
        const float s = d[b] * a.d[b];
        for (int k = 0; k < 8; ++k) {
            int32_t dot = 0;
            for (int e = 4 * k; e < 4 * k + 4; ++e) {
                const int w = e < 16 ? (q[e] & 0x0F) : (q[e - 16] >> 4);
                dot += w * x[e];
            }
            acc[k] += static_cast<float>(dot - a.c8[b * 8 + k]) * s;
        }
    }
    return hsum8(acc);
}

double oiw4_dot_exact(const uint8_t* qs, const float* d, const float* x, int64_t n) {
    double s = 0;
    for (int64_t i = 0; i < n; ++i) {
        const int64_t b = i / 32, e = i % 32;
        const int q = e < 16 ? (qs[b * 16 + e] & 0x0F) : (qs[b * 16 + e - 16] >> 4);
        const float w = d[b] * static_cast<float>(q - 8);
        s += static_cast<double>(w) * static_cast<double>(x[i]);
    }
    return s;
}

void q4kx8_scale_min(const uint8_t* scales, int r, int sb, uint8_t* sc, uint8_t* m) {
    const uint8_t* g = scales + sb * 12;
    if (r < 4) {
        *sc = g[r] & 63;
        *m = g[4 + r] & 63;
    } else {
        const int i = r - 4;
        *sc = static_cast<uint8_t>((g[8 + i] & 15) | ((g[i] >> 6) << 4));
        *m = static_cast<uint8_t>((g[8 + i] >> 4) | ((g[4 + i] >> 6) << 4));
    }
}

block_q4_K q4kx8_extract(const block_q4_Kx8& b, int r) {
    block_q4_K out{};
    out.d = b.d[r];
    out.dmin = b.dmin[r];
    for (int c = 0; c < 16; ++c) std::memcpy(&out.qs[c * 8], &b.qs[c * 64 + r * 8], 8);
    for (int sb = 0; sb < 8; ++sb) {
        uint8_t sc, m;
        q4kx8_scale_min(b.scales, r, sb, &sc, &m);
        quant::set_scale_min_k4(out.scales, sb, sc, m);
    }
    return out;
}

float q4kx8_dot_ref(const Q4Kx8View& w, int64_t row, const QuantizedVector& q8k) {
    const int64_t nb = w.cols / QK_K;
    const block_q4_Kx8* g = w.blocks + (row / 8) * nb;
    std::vector<block_q4_K> r(static_cast<size_t>(nb));
    for (int64_t b = 0; b < nb; ++b) r[b] = q4kx8_extract(g[b], static_cast<int>(row % 8));
    return dot_integer(GgmlType::Q4_K, r.data(), q8k);
}

}  // namespace oiw::matmul

namespace oiw::matmul {

Q8KAct unpack_q8_K(const QuantizedVector& q8k) {
    if (q8k.type != GgmlType::Q8_K) {
        throw FormatError(ErrorKind::Usage, "", std::string(type_name(q8k.type)), "Q4_Kx8 activations must be Q8_K");
    }
    Q8KAct a;
    a.n = q8k.n;
    a.blocks.resize(static_cast<size_t>(q8k.n / QK_K));
    if (!a.blocks.empty()) std::memcpy(a.blocks.data(), q8k.bytes.data(), a.blocks.size() * sizeof(block_q8_K));
    a.msum.resize(a.blocks.size() * 8);
    for (size_t x = 0; x < a.blocks.size(); ++x)
        for (int s = 0; s < 8; ++s) a.msum[x * 8 + s] = a.blocks[x].bsums[2 * s] + a.blocks[x].bsums[2 * s + 1];
    return a;
}

}  // namespace oiw::matmul
