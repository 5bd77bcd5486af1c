// The kernel table (kernels.h) and the to-float kernels it points to: one scalar reference per
// ggml type, each a transcription of the matching dequantize_row_* of ggml-quants.c (ggml 0.11.1)
// with the same float operations in the same order, so results are bit-identical (the build
// forbids fast-math and FMA contraction). The quantizers live in quantize*.cpp.
//
// Every block is copied out of the source buffer before decoding, so the source may have any
// alignment and the packed block structs are never accessed through misaligned pointers.
#include <cmath>
#include <cstring>
#include <string>

#include "converters/quant/dispatch.h"
#include "converters/quant/iq_tables.h"
#include "converters/quant/kernels.h"
#include "converters/quant/quantize_impl.h"
#include "converters/quant/quants.h"
#include "converters/quant/validate_impl.h"
#include "libformat/blocks.h"
#include "libformat/error.h"
#include "libformat/fp16.h"

namespace oiw {
namespace {

template <typename Block>
Block load_block(const uint8_t* p) {
    Block b;
    std::memcpy(&b, p, sizeof(Block));
    return b;
}

// Little-endian u16 / u32 out of a byte array.
inline uint32_t le16(const uint8_t* p) { return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8); }
inline uint32_t le32(const uint8_t* p) { return le16(p) | (le16(p + 2) << 16); }

inline float sign_of(uint8_t signs, int j) { return (signs & kmask_iq2xs[j]) ? -1.f : 1.f; }

// ---------------------------------------------------------------- per-block kernels

// Q4_0: y[j] = (lo nibble of qs[j] - 8) * d, y[j+16] = (hi nibble - 8) * d.
void dq_q4_0(const block_q4_0& x, float* y) {
    const float d = fp16_to_fp32(x.d);
    for (int j = 0; j < QK4_0 / 2; ++j) {
        const int x0 = (x.qs[j] & 0x0F) - 8;
        const int x1 = (x.qs[j] >> 4) - 8;
        y[j] = static_cast<float>(x0) * d;
        y[j + QK4_0 / 2] = static_cast<float>(x1) * d;
    }
}

void dq_q4_1(const block_q4_1& x, float* y) {
    const float d = fp16_to_fp32(x.d);
    const float m = fp16_to_fp32(x.m);
    for (int j = 0; j < QK4_1 / 2; ++j) {
        const int x0 = x.qs[j] & 0x0F;
        const int x1 = x.qs[j] >> 4;
        y[j] = static_cast<float>(x0) * d + m;
        y[j + QK4_1 / 2] = static_cast<float>(x1) * d + m;
    }
}

// Q5_0: 5th bit of element j is bit j of qh (u32 LE); elements 16..31 use bits 16..31.
void dq_q5_0(const block_q5_0& x, float* y) {
    const float d = fp16_to_fp32(x.d);
    const uint32_t qh = le32(x.qh);
    for (int j = 0; j < QK5_0 / 2; ++j) {
        const uint8_t xh_0 = static_cast<uint8_t>(((qh >> j) << 4) & 0x10);
        const uint8_t xh_1 = static_cast<uint8_t>((qh >> (j + 12)) & 0x10);
        const int32_t x0 = ((x.qs[j] & 0x0F) | xh_0) - 16;
        const int32_t x1 = ((x.qs[j] >> 4) | xh_1) - 16;
        y[j] = static_cast<float>(x0) * d;
        y[j + QK5_0 / 2] = static_cast<float>(x1) * d;
    }
}

void dq_q5_1(const block_q5_1& x, float* y) {
    const float d = fp16_to_fp32(x.d);
    const float m = fp16_to_fp32(x.m);
    const uint32_t qh = le32(x.qh);
    for (int j = 0; j < QK5_1 / 2; ++j) {
        const uint8_t xh_0 = static_cast<uint8_t>(((qh >> j) << 4) & 0x10);
        const uint8_t xh_1 = static_cast<uint8_t>((qh >> (j + 12)) & 0x10);
        const int x0 = (x.qs[j] & 0x0F) | xh_0;
        const int x1 = (x.qs[j] >> 4) | xh_1;
        y[j] = static_cast<float>(x0) * d + m;
        y[j + QK5_1 / 2] = static_cast<float>(x1) * d + m;
    }
}

void dq_q8_0(const block_q8_0& x, float* y) {
    const float d = fp16_to_fp32(x.d);
    for (int j = 0; j < QK8_0; ++j) y[j] = static_cast<float>(x.qs[j]) * d;
}

// Q8_1 has no to_float in ggml; it decodes like Q8_0 (s is a cached sum, not needed).
void dq_q8_1(const block_q8_1& x, float* y) {
    const float d = fp16_to_fp32(x.d);
    for (int j = 0; j < QK8_1; ++j) y[j] = static_cast<float>(x.qs[j]) * d;
}

// Q1_0: bit j of qs (LSB first) set -> +d, clear -> -d.
void dq_q1_0(const block_q1_0& x, float* y) {
    const float d = fp16_to_fp32(x.d);
    const float neg_d = -d;
    for (int j = 0; j < QK1_0; ++j) y[j] = ((x.qs[j / 8] >> (j % 8)) & 1) ? d : neg_d;
}

// MXFP4: y[j] = kvalues_mxfp4[nibble] * 2^(e-128); low nibbles first half, high second.
void dq_mxfp4(const block_mxfp4& x, float* y) {
    const float d = quant::e8m0_to_fp32_half(x.e);
    for (int j = 0; j < QK_MXFP4 / 2; ++j) {
        const int8_t x0 = kvalues_mxfp4[x.qs[j] & 0x0F];
        const int8_t x1 = kvalues_mxfp4[x.qs[j] >> 4];
        y[j] = static_cast<float>(x0) * d;
        y[j + QK_MXFP4 / 2] = static_cast<float>(x1) * d;
    }
}

// NVFP4: 4 sub-blocks of 16, each with a UE4M3 scale d[s] and 8 bytes of nibbles
//   qs[8s + j]: low nibble -> element 16s + j, high nibble -> element 16s + j + 8.
void dq_nvfp4(const block_nvfp4& x, float* y) {
    constexpr int kSub = 16;
    for (int s = 0; s < QK_NVFP4 / kSub; ++s) {
        const float d = quant::ue4m3_to_fp32_half(x.d[s]);
        float* yb = y + s * kSub;
        for (int j = 0; j < kSub / 2; ++j) {
            const uint8_t q = x.qs[s * (kSub / 2) + j];
            const int8_t v0 = kvalues_mxfp4[q & 0x0F];
            const int8_t v1 = kvalues_mxfp4[q >> 4];
            yb[j] = static_cast<float>(v0) * d;
            yb[j + kSub / 2] = static_cast<float>(v1) * d;
        }
    }
}

// Q2_K: 16 groups of 16; scales[g] = min4 << 4 | scale4. Each 128-element half reads 32 qs
// bytes four times (shift 0,2,4,6); groups alternate between qs[0..15] and qs[16..31].
void dq_q2_K(const block_q2_K& x, float* y) {
    const float d = fp16_to_fp32(x.d);
    const float min = fp16_to_fp32(x.dmin);
    const uint8_t* q = x.qs;
    int is = 0;
    for (int n = 0; n < QK_K; n += 128) {
        int shift = 0;
        for (int j = 0; j < 4; ++j) {
            for (int half = 0; half < 2; ++half) {
                const uint8_t sc = x.scales[is++];
                const float dl = d * static_cast<float>(sc & 0xF);
                const float ml = min * static_cast<float>(sc >> 4);
                for (int l = 0; l < 16; ++l) {
                    const int8_t v = static_cast<int8_t>((q[l + 16 * half] >> shift) & 3);
                    *y++ = dl * static_cast<float>(v) - ml;
                }
            }
            shift += 2;
        }
        q += 32;
    }
}

// Q3_K: 16 six-bit signed scales (bias 32) packed in 12 bytes:
//   scale j low 4 bits: byte j%8, nibble j/8;  high 2 bits: byte 8 + j%4, bits 2*(j/4).
// Element value = 2-bit qs + 4 * hmask bit - 4 (hmask bit set means no -4).
void dq_q3_K(const block_q3_K& x, float* y) {
    constexpr uint32_t kmask1 = 0x03030303, kmask2 = 0x0f0f0f0f;
    const float d_all = fp16_to_fp32(x.d);
    uint32_t aux[4];
    std::memcpy(aux, x.scales, 12);
    const uint32_t tmp = aux[2];
    aux[2] = ((aux[0] >> 4) & kmask2) | (((tmp >> 4) & kmask1) << 4);
    aux[3] = ((aux[1] >> 4) & kmask2) | (((tmp >> 6) & kmask1) << 4);
    aux[0] = (aux[0] & kmask2) | (((tmp >> 0) & kmask1) << 4);
    aux[1] = (aux[1] & kmask2) | (((tmp >> 2) & kmask1) << 4);
    int8_t scales[16];
    std::memcpy(scales, aux, 16);

    const uint8_t* q = x.qs;
    const uint8_t* hm = x.hmask;
    uint8_t m = 1;
    int is = 0;
    for (int n = 0; n < QK_K; n += 128) {
        int shift = 0;
        for (int j = 0; j < 4; ++j) {
            for (int half = 0; half < 2; ++half) {
                const float dl = d_all * static_cast<float>(scales[is++] - 32);
                for (int l = 16 * half; l < 16 * half + 16; ++l) {
                    const int v = static_cast<int8_t>((q[l] >> shift) & 3) - ((hm[l] & m) ? 0 : 4);
                    *y++ = dl * static_cast<float>(v);
                }
            }
            shift += 2;
            m = static_cast<uint8_t>(m << 1);
        }
        q += 32;
    }
}

// Q4_K: 8 groups of 32 with 6-bit scale/min; 64 elements per 32 qs bytes (low then high nibble).
void dq_q4_K(const block_q4_K& x, float* y) {
    const float d = fp16_to_fp32(x.d);
    const float min = fp16_to_fp32(x.dmin);
    const uint8_t* q = x.qs;
    uint8_t sc, m;
    for (int j = 0, is = 0; j < QK_K; j += 64, is += 2) {
        get_scale_min_k4(is + 0, x.scales, &sc, &m);
        const float d1 = d * static_cast<float>(sc), m1 = min * static_cast<float>(m);
        get_scale_min_k4(is + 1, x.scales, &sc, &m);
        const float d2 = d * static_cast<float>(sc), m2 = min * static_cast<float>(m);
        for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>(q[l] & 0xF) - m1;
        for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>(q[l] >> 4) - m2;
        q += 32;
    }
}

// Q5_K: as Q4_K plus a 5th bit from qh[l], bit 2*(j/64) (low nibbles) / 2*(j/64)+1 (high).
void dq_q5_K(const block_q5_K& x, float* y) {
    const float d = fp16_to_fp32(x.d);
    const float min = fp16_to_fp32(x.dmin);
    const uint8_t* ql = x.qs;
    const uint8_t* qh = x.qh;
    uint8_t sc, m;
    uint8_t u1 = 1, u2 = 2;
    for (int j = 0, is = 0; j < QK_K; j += 64, is += 2) {
        get_scale_min_k4(is + 0, x.scales, &sc, &m);
        const float d1 = d * static_cast<float>(sc), m1 = min * static_cast<float>(m);
        get_scale_min_k4(is + 1, x.scales, &sc, &m);
        const float d2 = d * static_cast<float>(sc), m2 = min * static_cast<float>(m);
        for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>((ql[l] & 0xF) + ((qh[l] & u1) ? 16 : 0)) - m1;
        for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>((ql[l] >> 4) + ((qh[l] & u2) ? 16 : 0)) - m2;
        ql += 32;
        u1 = static_cast<uint8_t>(u1 << 2);
        u2 = static_cast<uint8_t>(u2 << 2);
    }
}

// Q6_K: per 128 elements, 64 ql bytes (4 low bits) + 32 qh bytes (2 high bits x 4) + 8 scales.
//   y[l+0]  = ql[l]    lo | qh[l] bits 0-1     y[l+32] = ql[l+32] lo | qh[l] bits 2-3
//   y[l+64] = ql[l]    hi | qh[l] bits 4-5     y[l+96] = ql[l+32] hi | qh[l] bits 6-7
void dq_q6_K(const block_q6_K& x, float* y) {
    const float d = fp16_to_fp32(x.d);
    const uint8_t* ql = x.ql;
    const uint8_t* qh = x.qh;
    const int8_t* sc = x.scales;
    for (int n = 0; n < QK_K; n += 128) {
        for (int l = 0; l < 32; ++l) {
            const int is = l / 16;
            const int8_t q1 =
                static_cast<int8_t>(static_cast<int8_t>((ql[l + 0] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32);
            const int8_t q2 =
                static_cast<int8_t>(static_cast<int8_t>((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32);
            const int8_t q3 =
                static_cast<int8_t>(static_cast<int8_t>((ql[l + 0] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
            const int8_t q4 =
                static_cast<int8_t>(static_cast<int8_t>((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
            y[l + 0] = d * static_cast<float>(sc[is + 0]) * static_cast<float>(q1);
            y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
            y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
            y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
        }
        y += 128;
        ql += 64;
        qh += 32;
        sc += 8;
    }
}

// Q8_K: f32 scale, y = d * qs (bsums ignored).
void dq_q8_K(const block_q8_K& x, float* y) {
    for (int j = 0; j < QK_K; ++j) y[j] = x.d * static_cast<float>(x.qs[j]);
}

// TQ1_0: base-3 digits stored as fixed-point fractions q = ceil(v * 256 / 243); the n-th trit is
// the top "digit" of (q * 3^n mod 256) * 3 / 256. qs[0..31] hold elements 0..159 (trit n of
// byte m -> element 32n + m), qs[32..47] elements 160..239, qh[0..3] elements 240..255.
void dq_tq1_0(const block_tq1_0& x, float* y) {
    static constexpr uint8_t pow3[6] = {1, 3, 9, 27, 81, 243};
    const float d = fp16_to_fp32(x.d);
    auto trit = [&](uint8_t byte, int n) {
        const uint8_t q = static_cast<uint8_t>(byte * pow3[n]);
        const int16_t xi = static_cast<int16_t>((static_cast<uint16_t>(q) * 3) >> 8);
        return static_cast<float>(xi - 1) * d;
    };
    constexpr int kQs = sizeof(x.qs), kMain = kQs - kQs % 32;
    for (int j = 0; j < kMain; j += 32)
        for (int n = 0; n < 5; ++n)
            for (int m = 0; m < 32; ++m) *y++ = trit(x.qs[j + m], n);
    for (int j = kMain; j < kQs; j += 16)
        for (int n = 0; n < 5; ++n)
            for (int m = 0; m < 16; ++m) *y++ = trit(x.qs[j + m], n);
    for (int n = 0; n < 4; ++n)
        for (int j = 0; j < static_cast<int>(sizeof(x.qh)); ++j) *y++ = trit(x.qh[j], n);
}

// TQ2_0: 2-bit codes 0,1,2 -> -1,0,+1; byte m of each 32-byte run holds elements m + 32*l.
void dq_tq2_0(const block_tq2_0& x, float* y) {
    const float d = fp16_to_fp32(x.d);
    for (int j = 0; j < static_cast<int>(sizeof(x.qs)); j += 32)
        for (int l = 0; l < 4; ++l)
            for (int m = 0; m < 32; ++m) {
                const int8_t q = static_cast<int8_t>((x.qs[j + m] >> (l * 2)) & 3);
                *y++ = static_cast<float>(q - 1) * d;
            }
}

// IQ2_XXS: per 32 elements two u32 (LE): a = 4 grid indices (one byte each),
//   b = 4 x 7-bit sign codes (bits 0-27) | 4-bit scale (bits 28-31).
void dq_iq2_xxs(const block_iq2_xxs& x, float* y) {
    const float d = fp16_to_fp32(x.d);
    for (int ib32 = 0; ib32 < QK_K / 32; ++ib32) {
        const uint32_t a = x.qs[4 * ib32 + 0] | (static_cast<uint32_t>(x.qs[4 * ib32 + 1]) << 16);
        const uint32_t b = x.qs[4 * ib32 + 2] | (static_cast<uint32_t>(x.qs[4 * ib32 + 3]) << 16);
        const float db = d * (0.5f + static_cast<float>(b >> 28)) * 0.25f;
        for (int l = 0; l < 4; ++l) {
            const uint64_t grid = iq2xxs_grid[(a >> (8 * l)) & 0xFF];
            const uint8_t signs = ksigns_iq2xs[(b >> (7 * l)) & 127];
            for (int j = 0; j < 8; ++j)
                y[j] = db * static_cast<float>(static_cast<uint8_t>(grid >> (8 * j))) * sign_of(signs, j);
            y += 8;
        }
    }
}

// IQ2_XS: qs[k] = 7-bit sign code << 9 | 9-bit grid index; scales[ib32] = two 4-bit scales
// (low nibble for the first 16 elements, high for the second).
void dq_iq2_xs(const block_iq2_xs& x, float* y) {
    const float d = fp16_to_fp32(x.d);
    for (int ib32 = 0; ib32 < QK_K / 32; ++ib32) {
        const float db[2] = {d * (0.5f + static_cast<float>(x.scales[ib32] & 0xf)) * 0.25f,
                             d * (0.5f + static_cast<float>(x.scales[ib32] >> 4)) * 0.25f};
        for (int l = 0; l < 4; ++l) {
            const uint16_t q = x.qs[4 * ib32 + l];
            const uint64_t grid = iq2xs_grid[q & 511];
            const uint8_t signs = ksigns_iq2xs[q >> 9];
            for (int j = 0; j < 8; ++j)
                y[j] = db[l / 2] * static_cast<float>(static_cast<uint8_t>(grid >> (8 * j))) * sign_of(signs, j);
            y += 8;
        }
    }
}

// IQ2_S: qs[0..31] low 8 bits of the grid index, qs[32..63] explicit sign bytes,
// qh[ib32] bits 2l..2l+1 = index bits 8-9 of group l.
void dq_iq2_s(const block_iq2_s& x, float* y) {
    const float d = fp16_to_fp32(x.d);
    for (int ib32 = 0; ib32 < QK_K / 32; ++ib32) {
        const float db[2] = {d * (0.5f + static_cast<float>(x.scales[ib32] & 0xf)) * 0.25f,
                             d * (0.5f + static_cast<float>(x.scales[ib32] >> 4)) * 0.25f};
        for (int l = 0; l < 4; ++l) {
            const float dl = db[l / 2];
            const int idx = x.qs[4 * ib32 + l] | ((x.qh[ib32] << (8 - 2 * l)) & 0x300);
            const uint64_t grid = iq2s_grid[idx];
            const uint8_t signs = x.qs[QK_K / 8 + 4 * ib32 + l];
            for (int j = 0; j < 8; ++j)
                y[j] = dl * static_cast<float>(static_cast<uint8_t>(grid >> (8 * j))) * sign_of(signs, j);
            y += 8;
        }
    }
}

// IQ3_XXS: qs[0..63] grid indices (two 4-element entries per 8 elements), then per 32
// elements one u32 = 4 x 7-bit sign codes | 4-bit scale in bits 28-31.
void dq_iq3_xxs(const block_iq3_xxs& x, float* y) {
    const float d = fp16_to_fp32(x.d);
    const uint8_t* qs = x.qs;
    const uint8_t* scales_and_signs = x.qs + QK_K / 4;
    for (int ib32 = 0; ib32 < QK_K / 32; ++ib32) {
        const uint32_t aux32 = le32(scales_and_signs + 4 * ib32);
        const float db = d * (0.5f + static_cast<float>(aux32 >> 28)) * 0.5f;
        for (int l = 0; l < 4; ++l) {
            const uint8_t signs = ksigns_iq2xs[(aux32 >> (7 * l)) & 127];
            const uint32_t grid1 = iq3xxs_grid[qs[2 * l + 0]];
            const uint32_t grid2 = iq3xxs_grid[qs[2 * l + 1]];
            for (int j = 0; j < 4; ++j) {
                y[j + 0] = db * static_cast<float>(static_cast<uint8_t>(grid1 >> (8 * j))) * sign_of(signs, j + 0);
                y[j + 4] = db * static_cast<float>(static_cast<uint8_t>(grid2 >> (8 * j))) * sign_of(signs, j + 4);
            }
            y += 8;
        }
        qs += 8;
    }
}

// IQ3_S: 9-bit grid indices (qs byte + one qh bit), explicit sign bytes, one 4-bit scale per
// 32 elements (two per scales byte): db = d * (1 + 2 * s).
void dq_iq3_s(const block_iq3_s& x, float* y) {
    const float d = fp16_to_fp32(x.d);
    const uint8_t* qs = x.qs;
    const uint8_t* qh = x.qh;
    const uint8_t* signs = x.signs;
    for (int ib32 = 0; ib32 < QK_K / 32; ib32 += 2) {
        const float db[2] = {d * static_cast<float>(1 + 2 * (x.scales[ib32 / 2] & 0xf)),
                             d * static_cast<float>(1 + 2 * (x.scales[ib32 / 2] >> 4))};
        for (int half = 0; half < 2; ++half) {
            for (int l = 0; l < 4; ++l) {
                const uint32_t grid1 = iq3s_grid[qs[2 * l + 0] | ((qh[half] << (8 - 2 * l)) & 256)];
                const uint32_t grid2 = iq3s_grid[qs[2 * l + 1] | ((qh[half] << (7 - 2 * l)) & 256)];
                for (int j = 0; j < 4; ++j) {
                    y[j + 0] = db[half] * static_cast<float>(static_cast<uint8_t>(grid1 >> (8 * j))) *
                               sign_of(signs[l], j + 0);
                    y[j + 4] = db[half] * static_cast<float>(static_cast<uint8_t>(grid2 >> (8 * j))) *
                               sign_of(signs[l], j + 4);
                }
                y += 8;
            }
            qs += 8;
            signs += 4;
        }
        qh += 2;
    }
}

// IQ1_S: per 32 elements qh[ib] = delta sign (bit 15) | 3-bit scale (bits 12-14) |
// 4 x 3-bit high index bits (bits 3l..3l+2); grid values are -1/0/+1 bytes.
void dq_iq1_s(const block_iq1_s& x, float* y) {
    const float d = fp16_to_fp32(x.d);
    const uint8_t* qs = x.qs;
    for (int ib = 0; ib < QK_K / 32; ++ib) {
        const uint16_t qh = x.qh[ib];
        const float dl = d * static_cast<float>(2 * ((qh >> 12) & 7) + 1);
        const float delta = (qh & 0x8000) ? -IQ1S_DELTA : IQ1S_DELTA;
        for (int l = 0; l < 4; ++l) {
            const uint64_t grid = iq1s_grid[qs[l] | (((qh >> (3 * l)) & 7) << 8)];
            for (int j = 0; j < 8; ++j) y[j] = dl * (static_cast<float>(static_cast<int8_t>(grid >> (8 * j))) + delta);
            y += 8;
        }
        qs += 4;
    }
}

// IQ1_M: no explicit d; the fp16 super-scale is spread over the top nibbles of the four u16
// words of scales[] (word k bits 12-15 = scale bits 4k..4k+3). Each word also holds four 3-bit
// sub-scales (bits 0-11), one per 16 elements. qh[2 ib + h]: low nibble = index bits 8-10 and
// delta sign (bit 3) of group 2h, high nibble the same for group 2h + 1.
void dq_iq1_m(const block_iq1_m& x, float* y) {
    uint16_t sc[4];
    for (int k = 0; k < 4; ++k) sc[k] = static_cast<uint16_t>(le16(x.scales + 2 * k));
    const uint16_t scale_bits =
        static_cast<uint16_t>((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) | ((sc[2] >> 4) & 0x0f00) | (sc[3] & 0xf000));
    const float d = fp16_to_fp32(scale_bits);
    const uint8_t* qs = x.qs;
    const uint8_t* qh = x.qh;
    for (int ib = 0; ib < QK_K / 32; ++ib) {
        const float dl1 = d * static_cast<float>(2 * ((sc[ib / 2] >> (6 * (ib % 2) + 0)) & 0x7) + 1);
        const float dl2 = d * static_cast<float>(2 * ((sc[ib / 2] >> (6 * (ib % 2) + 3)) & 0x7) + 1);
        const uint16_t idx[4] = {static_cast<uint16_t>(qs[0] | ((qh[0] << 8) & 0x700)),
                                 static_cast<uint16_t>(qs[1] | ((qh[0] << 4) & 0x700)),
                                 static_cast<uint16_t>(qs[2] | ((qh[1] << 8) & 0x700)),
                                 static_cast<uint16_t>(qs[3] | ((qh[1] << 4) & 0x700))};
        const float delta[4] = {(qh[0] & 0x08) ? -IQ1S_DELTA : IQ1S_DELTA, (qh[0] & 0x80) ? -IQ1S_DELTA : IQ1S_DELTA,
                                (qh[1] & 0x08) ? -IQ1S_DELTA : IQ1S_DELTA, (qh[1] & 0x80) ? -IQ1S_DELTA : IQ1S_DELTA};
        for (int l = 0; l < 4; ++l) {
            const float dl = l < 2 ? dl1 : dl2;
            const uint64_t grid = iq1s_grid[idx[l]];
            for (int j = 0; j < 8; ++j)
                y[j] = dl * (static_cast<float>(static_cast<int8_t>(grid >> (8 * j))) + delta[l]);
            y += 8;
        }
        qs += 4;
        qh += 2;
    }
}

void dq_iq4_nl(const block_iq4_nl& x, float* y) {
    const float d = fp16_to_fp32(x.d);
    for (int j = 0; j < QK4_NL / 2; ++j) {
        y[j] = d * static_cast<float>(kvalues_iq4nl[x.qs[j] & 0xf]);
        y[j + QK4_NL / 2] = d * static_cast<float>(kvalues_iq4nl[x.qs[j] >> 4]);
    }
}

// IQ4_XS: 6-bit scale per 32 elements (bias 32): low 4 bits in scales_l nibbles, high 2 bits
// in scales_h bits 2ib..2ib+1.
void dq_iq4_xs(const block_iq4_xs& x, float* y) {
    const float d = fp16_to_fp32(x.d);
    const uint8_t* qs = x.qs;
    for (int ib = 0; ib < QK_K / 32; ++ib) {
        const int ls = ((x.scales_l[ib / 2] >> (4 * (ib % 2))) & 0xf) | (((x.scales_h >> (2 * ib)) & 3) << 4);
        const float dl = d * static_cast<float>(ls - 32);
        for (int j = 0; j < 16; ++j) {
            y[j + 0] = dl * static_cast<float>(kvalues_iq4nl[qs[j] & 0xf]);
            y[j + 16] = dl * static_cast<float>(kvalues_iq4nl[qs[j] >> 4]);
        }
        y += 32;
        qs += 16;
    }
}

// ---------------------------------------------------------------- drivers

template <typename Block, int QK, void (*Kernel)(const Block&, float*)>
void blocks_row(const uint8_t* src, float* dst, int64_t n) {
    for (int64_t i = 0; i < n / QK; ++i) Kernel(load_block<Block>(src + i * sizeof(Block)), dst + i * QK);
}

// Plain scalar element types, converted as values.
template <typename T>
void scalar_row(const uint8_t* src, float* dst, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        T v;
        std::memcpy(&v, src + i * sizeof(T), sizeof(T));
        dst[i] = static_cast<float>(v);
    }
}

void f32_row(const uint8_t* src, float* dst, int64_t n) { std::memcpy(dst, src, static_cast<size_t>(n) * 4); }

void f16_row(const uint8_t* src, float* dst, int64_t n) {
    // F16C path (pinned to fp16_to_fp32 on all 65536 inputs by test_quantize_fast) when aligned.
    if (reinterpret_cast<uintptr_t>(src) % alignof(uint16_t) == 0)
        return convert_f16_to_f32(reinterpret_cast<const uint16_t*>(src), dst, n);
    for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_fp32(static_cast<uint16_t>(le16(src + 2 * i)));
}

void bf16_row(const uint8_t* src, float* dst, int64_t n) {
    for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_fp32(static_cast<uint16_t>(le16(src + 2 * i)));
}

// ---------------------------------------------------------------- the table

using T = GgmlType;
using namespace quant;
using namespace quant::valid;
constexpr Imatrix kIgnored = Imatrix::Ignored, kOptional = Imatrix::Optional, kRequired = Imatrix::Required;

constexpr KernelTable kReference = [] {
    KernelTable k{};
    // Row of type t: oiw4-check's relative RMS limit, to-float, validation, then the quantizer.
    auto set = [&](T t, double rel_rms, ToFloatFn to_float, FindInvalidFn find_invalid, QuantizeFn quantize = nullptr,
                   Imatrix imatrix = kIgnored) {
        k[static_cast<size_t>(t)] = {to_float, quantize, imatrix, {}, find_invalid, rel_rms};
    };
    set(T::F32, 1e-6, f32_row, scan_f32);
    set(T::F16, 2e-3, f16_row, scan_f16, quantize_f16);
    set(T::BF16, 1e-2, bf16_row, scan_bf16, quantize_bf16);
    set(T::F64, 0, scalar_row<double>, scan_f64);
    set(T::I8, 0, scalar_row<int8_t>, nothing_to_check);
    set(T::I16, 0, scalar_row<int16_t>, nothing_to_check);
    set(T::I32, 0, scalar_row<int32_t>, nothing_to_check);
    set(T::I64, 0, scalar_row<int64_t>, nothing_to_check);
    set(T::Q4_0, 0.15, blocks_row<block_q4_0, QK4_0, dq_q4_0>, scan_d<block_q4_0>, quantize_q4_0, kOptional);
    set(T::Q4_1, 0.15, blocks_row<block_q4_1, QK4_1, dq_q4_1>, scan_d_m<block_q4_1>, quantize_q4_1, kOptional);
    set(T::Q5_0, 6e-2, blocks_row<block_q5_0, QK5_0, dq_q5_0>, scan_d<block_q5_0>, quantize_q5_0, kOptional);
    set(T::Q5_1, 6e-2, blocks_row<block_q5_1, QK5_1, dq_q5_1>, scan_d_m<block_q5_1>, quantize_q5_1, kOptional);
    set(T::Q8_0, 1e-2, blocks_row<block_q8_0, QK8_0, dq_q8_0>, scan_d<block_q8_0>, quantize_q8_0);
    set(T::Q8_1, 1e-2, blocks_row<block_q8_1, QK8_1, dq_q8_1>, scan_d_s<block_q8_1>);
    set(T::Q2_K, 0.45, blocks_row<block_q2_K, QK_K, dq_q2_K>, scan_d_dmin<block_q2_K>, quantize_q2_K, kOptional);
    set(T::Q3_K, 0.25, blocks_row<block_q3_K, QK_K, dq_q3_K>, scan_d<block_q3_K>, quantize_q3_K, kOptional);
    set(T::Q4_K, 0.12, blocks_row<block_q4_K, QK_K, dq_q4_K>, scan_d_dmin<block_q4_K>, quantize_q4_K, kOptional);
    set(T::Q5_K, 6e-2, blocks_row<block_q5_K, QK_K, dq_q5_K>, scan_d_dmin<block_q5_K>, quantize_q5_K, kOptional);
    set(T::Q6_K, 3e-2, blocks_row<block_q6_K, QK_K, dq_q6_K>, scan_d<block_q6_K>, quantize_q6_K, kOptional);
    set(T::Q8_K, 1e-2, blocks_row<block_q8_K, QK_K, dq_q8_K>, scan_q8_k);
    set(T::IQ2_XXS, 0.5, blocks_row<block_iq2_xxs, QK_K, dq_iq2_xxs>, scan_d<block_iq2_xxs>, quantize_iq2_xxs,
        kRequired);
    set(T::IQ2_XS, 0.5, blocks_row<block_iq2_xs, QK_K, dq_iq2_xs>, scan_d<block_iq2_xs>, quantize_iq2_xs, kRequired);
    set(T::IQ2_S, 0.5, blocks_row<block_iq2_s, QK_K, dq_iq2_s>, scan_d<block_iq2_s>, quantize_iq2_s, kOptional);
    set(T::IQ3_XXS, 0.25, blocks_row<block_iq3_xxs, QK_K, dq_iq3_xxs>, scan_d<block_iq3_xxs>, quantize_iq3_xxs,
        kOptional);
    set(T::IQ3_S, 0.25, blocks_row<block_iq3_s, QK_K, dq_iq3_s>, scan_d<block_iq3_s>, quantize_iq3_s, kOptional);
    set(T::IQ1_S, 0.8, blocks_row<block_iq1_s, QK_K, dq_iq1_s>, scan_d<block_iq1_s>, quantize_iq1_s, kRequired);
    set(T::IQ1_M, 0.8, blocks_row<block_iq1_m, QK_K, dq_iq1_m>, scan_iq1_m, quantize_iq1_m, kOptional);
    set(T::IQ4_NL, 0.15, blocks_row<block_iq4_nl, QK4_NL, dq_iq4_nl>, scan_d<block_iq4_nl>, quantize_iq4_nl, kOptional);
    set(T::IQ4_XS, 0.12, blocks_row<block_iq4_xs, QK_K, dq_iq4_xs>, scan_d<block_iq4_xs>, quantize_iq4_xs, kOptional);
    set(T::TQ1_0, 1.0, blocks_row<block_tq1_0, QK_K, dq_tq1_0>, scan_d<block_tq1_0>, quantize_tq1_0);
    set(T::TQ2_0, 1.0, blocks_row<block_tq2_0, QK_K, dq_tq2_0>, scan_d<block_tq2_0>, quantize_tq2_0);
    set(T::MXFP4, 0.2, blocks_row<block_mxfp4, QK_MXFP4, dq_mxfp4>, scan_mxfp4, quantize_mxfp4);
    set(T::NVFP4, 0.2, blocks_row<block_nvfp4, QK_NVFP4, dq_nvfp4>, nothing_to_check);
    set(T::Q1_0, 0.8, blocks_row<block_q1_0, QK1_0, dq_q1_0>, scan_d<block_q1_0>, quantize_q1_0);
    return k;
}();

// Every live type converts to f32, validates its data and has a relative RMS limit; removed ids
// have none of these. (Not in
// sanitizer builds, where GCC cannot constant-fold these null tests; KernelTable.EveryLiveIdConvertsToFloat
// and KernelTable.EveryLiveIdHasItsDocumentedRelRmsLimit check it.)
#ifndef OIW_SANITIZE
static_assert(
    [] {
        for (uint32_t id = 0; id < kGgmlTypeCount; ++id)
            if ((kReference[id].to_float != nullptr) == kTypeTraits[id].removed ||
                (kReference[id].find_invalid != nullptr) == kTypeTraits[id].removed ||
                (kTypeTraits[id].removed && kReference[id].quantize) ||
                (kReference[id].max_rel_rms >= 0) == kTypeTraits[id].removed)
                return false;
        return true;
    }(),
    "kReference must give every live type id a to-float kernel, a validator and a relative RMS limit");
#endif

std::string type_label(GgmlType t) {
    const auto tt = type_traits(static_cast<uint32_t>(t));
    return tt ? std::string(tt->name) : "type " + std::to_string(static_cast<uint32_t>(t));
}

}  // namespace

const KernelTable& reference_kernels() { return kReference; }

double max_rel_rms(GgmlType t) {
    const auto id = static_cast<uint32_t>(t);
    if (id >= kGgmlTypeCount || kReference[id].max_rel_rms < 0)
        throw FormatError(ErrorKind::Unsupported, "", type_label(t), "no relative RMS limit (not a live ggml type)");
    return kReference[id].max_rel_rms;
}

bool can_dequantize(GgmlType t) { return type_id_valid(static_cast<uint32_t>(t)); }

void dequantize_row(GgmlType t, const void* src, float* dst, int64_t n) {
    if (!can_dequantize(t)) throw FormatError(ErrorKind::Unsupported, "", type_label(t), "no dequantization kernel");
    const uint32_t bs = traits(t).block_size;
    if (n < 0 || n % bs != 0)
        throw FormatError(
            ErrorKind::Unsupported, "", type_label(t),
            "element count " + std::to_string(n) + " is not a multiple of the block size " + std::to_string(bs));
    kReference[static_cast<size_t>(t)].to_float(static_cast<const uint8_t*>(src), dst, n);
}

}  // namespace oiw
