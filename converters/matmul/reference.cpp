// The scalar reference matmul: activation quantizers and one integer dot per ggml type, each a
// transcription of ggml's quantize_row_q8_*_ref / ggml_vec_dot_*_generic (ggml 0.11.1), except
// Q4_0 which uses the 8-lane order shared with oiw4 (w4a8.h).
#include "converters/matmul/reference.h"

#include <array>
#include <cmath>
#include <cstring>

#include "converters/matmul/w4a8.h"
#include "converters/quant/iq_tables.h"
#include "converters/quant/quantize_impl.h"
#include "converters/quant/quants.h"
#include "libformat/blocks.h"
#include "libformat/error.h"
#include "libformat/fp16.h"

namespace oiw::matmul {
namespace {

using quant::nearest_int;

float h2f(uint16_t h) { return fp16_to_fp32(h); }

[[noreturn]] void unsupported(GgmlType t, const char* what) {
    throw FormatError(ErrorKind::Unsupported, "", std::string(type_name(t)), what);
}

void check_multiple(GgmlType t, int64_t n, int64_t bs) {
    if (n < 0 || n % bs != 0) {
        throw FormatError(ErrorKind::BadBlock, "", std::string(type_name(t)),
                          "length " + std::to_string(n) + " is not a multiple of the block size " + std::to_string(bs));
    }
}

// quantize_row_q8_1_ref.
void q8_1_block(const float* x, block_q8_1& y) {
    float amax = 0.0f;
    for (int j = 0; j < QK8_1; j++) amax = quant::max_f(amax, std::fabs(x[j]));
    const float d = amax / ((1 << 7) - 1);
    const float id = d ? 1.0f / d : 0.0f;
    y.d = fp32_to_fp16(d);
    int sum = 0;
    for (int j = 0; j < QK8_1 / 2; ++j) {
        y.qs[j] = static_cast<int8_t>(std::roundf(x[j] * id));
        y.qs[QK8_1 / 2 + j] = static_cast<int8_t>(std::roundf(x[QK8_1 / 2 + j] * id));
        sum += y.qs[j];
        sum += y.qs[QK8_1 / 2 + j];
    }
    y.s = fp32_to_fp16(static_cast<float>(sum) * d);
}

// quantize_row_q8_K_ref (bsums zeroed for an all-zero block, where ggml leaves them unset).
void q8_K_block(const float* x, block_q8_K& y) {
    float amax = 0;
    const float max = quant::signed_absmax(x, QK_K, amax);
    std::memset(&y, 0, sizeof(y));
    if (!amax) return;
    const float iscale = -127.f / max;
    for (int j = 0; j < QK_K; ++j) {
        const int v = nearest_int(iscale * x[j]);
        y.qs[j] = static_cast<int8_t>(v < 127 ? v : 127);
    }
    for (int j = 0; j < QK_K / 16; ++j) {
        int sum = 0;
        for (int i = 0; i < 16; ++i) sum += y.qs[j * 16 + i];
        y.bsums[j] = static_cast<int16_t>(sum);
    }
    y.d = 1 / iscale;
}

template <typename B>
const B* blocks(const void* p) {
    return static_cast<const B*>(p);
}

// ---- F32 / F16 / BF16: products in fp32, sum in f64 (ggml_vec_dot_f32/f16/bf16, scalar).
template <typename Conv>
float dot_float(const uint16_t* x, const uint16_t* y, int64_t n, Conv conv) {
    double s = 0;
    for (int64_t i = 0; i < n; ++i) s += static_cast<double>(conv(x[i]) * conv(y[i]));
    return static_cast<float>(s);
}

float dot_f32(const float* x, const float* y, int64_t n) {
    double s = 0;
    for (int64_t i = 0; i < n; ++i) s += static_cast<double>(x[i] * y[i]);
    return static_cast<float>(s);
}

// ---- 32-element blocks.
float dot_q4_0(const block_q4_0* x, const Q8Act& a) {
    // Same lane order as oiw4: decode the fp16 scales, then the shared reference.
    const int64_t nb = a.n / QK4_0;
    std::vector<uint8_t> qs(static_cast<size_t>(nb) * 16);
    std::vector<float> d(static_cast<size_t>(nb));
    for (int64_t b = 0; b < nb; ++b) {
        std::memcpy(&qs[b * 16], x[b].qs, 16);
        d[b] = h2f(x[b].d);
    }
    return oiw4_dot_ref(qs.data(), d.data(), a);
}

float dot_q4_1(const block_q4_1* x, const block_q8_1* y, int64_t nb) {
    float sumf = 0;
    for (int64_t ib = 0; ib < nb; ++ib) {
        int sumi0 = 0, sumi1 = 0;
        for (int j = 0; j < 16; ++j) {
            sumi0 += (x[ib].qs[j] & 0x0F) * y[ib].qs[j];
            sumi1 += (x[ib].qs[j] >> 4) * y[ib].qs[j + 16];
        }
        const int sumi = sumi0 + sumi1;
        sumf += (h2f(x[ib].d) * h2f(y[ib].d)) * static_cast<float>(sumi) + h2f(x[ib].m) * h2f(y[ib].s);
    }
    return sumf;
}

float dot_q5_0(const block_q5_0* x, const block_q8_0* y, int64_t nb) {
    float sumf = 0;
    for (int64_t ib = 0; ib < nb; ++ib) {
        uint32_t qh;
        std::memcpy(&qh, x[ib].qh, 4);
        int sumi0 = 0, sumi1 = 0;
        for (int j = 0; j < 16; ++j) {
            const uint8_t xh_0 = static_cast<uint8_t>(((qh & (1u << (j + 0))) >> (j + 0)) << 4);
            const uint8_t xh_1 = static_cast<uint8_t>((qh & (1u << (j + 16))) >> (j + 12));
            const int32_t x0 = ((x[ib].qs[j] & 0x0F) | xh_0) - 16;  // -16..15 (ggml narrows it to int8_t)
            const int32_t x1 = ((x[ib].qs[j] >> 4) | xh_1) - 16;
            sumi0 += x0 * y[ib].qs[j];
            sumi1 += x1 * y[ib].qs[j + 16];
        }
        sumf += (h2f(x[ib].d) * h2f(y[ib].d)) * static_cast<float>(sumi0 + sumi1);
    }
    return sumf;
}

float dot_q5_1(const block_q5_1* x, const block_q8_1* y, int64_t nb) {
    float sumf = 0;
    for (int64_t ib = 0; ib < nb; ++ib) {
        uint32_t qh;
        std::memcpy(&qh, x[ib].qh, 4);
        int sumi0 = 0, sumi1 = 0;
        for (int j = 0; j < 16; ++j) {
            const int32_t x0 = (x[ib].qs[j] & 0xF) | static_cast<uint8_t>(((qh >> (j + 0)) << 4) & 0x10);
            const int32_t x1 = (x[ib].qs[j] >> 4) | static_cast<uint8_t>((qh >> (j + 12)) & 0x10);
            sumi0 += x0 * y[ib].qs[j];
            sumi1 += x1 * y[ib].qs[j + 16];
        }
        sumf += (h2f(x[ib].d) * h2f(y[ib].d)) * static_cast<float>(sumi0 + sumi1) + h2f(x[ib].m) * h2f(y[ib].s);
    }
    return sumf;
}

float dot_q8_0(const block_q8_0* x, const block_q8_0* y, int64_t nb) {
    float sumf = 0;
    for (int64_t ib = 0; ib < nb; ++ib) {
        int sumi = 0;
        for (int j = 0; j < 32; j++) sumi += x[ib].qs[j] * y[ib].qs[j];
        sumf += static_cast<float>(sumi) * (h2f(x[ib].d) * h2f(y[ib].d));
    }
    return sumf;
}

float dot_iq4_nl(const block_iq4_nl* x, const block_q8_0* y, int64_t nb) {
    float sumf = 0;
    for (int64_t ib = 0; ib < nb; ++ib) {
        const float d = h2f(y[ib].d) * h2f(x[ib].d);
        int sumi1 = 0, sumi2 = 0;
        for (int j = 0; j < 16; ++j) {
            sumi1 += y[ib].qs[j] * kvalues_iq4nl[x[ib].qs[j] & 0xf];
            sumi2 += y[ib].qs[j + 16] * kvalues_iq4nl[x[ib].qs[j] >> 4];
        }
        sumf += d * static_cast<float>(sumi1 + sumi2);
    }
    return sumf;
}

// ---- K-quants (Q8_K partner).
float dot_q2_K(const block_q2_K* x, const block_q8_K* y, int64_t nb) {
    float sumf = 0;
    for (int64_t i = 0; i < nb; ++i) {
        const uint8_t* q2 = x[i].qs;
        const int8_t* q8 = y[i].qs;
        const uint8_t* sc = x[i].scales;
        int summs = 0;
        for (int j = 0; j < 16; ++j) summs += y[i].bsums[j] * (sc[j] >> 4);
        const float dall = y[i].d * h2f(x[i].d);
        const float dmin = y[i].d * h2f(x[i].dmin);
        int isum = 0, is = 0;
        for (int k = 0; k < QK_K / 128; ++k) {
            int shift = 0;
            for (int j = 0; j < 4; ++j) {
                int d = sc[is++] & 0xF;
                int isuml = 0;
                for (int l = 0; l < 16; ++l) isuml += q8[l] * ((q2[l] >> shift) & 3);
                isum += d * isuml;
                d = sc[is++] & 0xF;
                isuml = 0;
                for (int l = 16; l < 32; ++l) isuml += q8[l] * ((q2[l] >> shift) & 3);
                isum += d * isuml;
                shift += 2;
                q8 += 32;
            }
            q2 += 32;
        }
        sumf += dall * static_cast<float>(isum) - dmin * static_cast<float>(summs);
    }
    return sumf;
}

// The 8-lane scaled accumulation shared by Q3_K..Q6_K: aux32[l] += scale * (q8 * a) over
// groups of 8 elements, `group_scale(g)` giving the scale of 8-element group g (0..31).
template <typename Scale>
void lanes8(const int8_t* a, const int8_t* q8, Scale group_scale, int32_t aux32[8]) {
    std::memset(aux32, 0, 8 * sizeof(int32_t));
    for (int g = 0; g < QK_K / 8; ++g) {
        const int32_t scale = group_scale(g);
        int16_t aux16[8];
        for (int l = 0; l < 8; ++l) aux16[l] = static_cast<int16_t>(q8[l] * a[l]);
        for (int l = 0; l < 8; ++l) aux32[l] += scale * aux16[l];
        q8 += 8;
        a += 8;
    }
}

float dot_q3_K(const block_q3_K* x, const block_q8_K* y, int64_t nb) {
    const uint32_t kmask1 = 0x03030303, kmask2 = 0x0f0f0f0f;
    int8_t aux8[QK_K];
    int32_t aux32[8];
    float sums[8] = {};
    float sumf = 0;
    for (int64_t i = 0; i < nb; ++i) {
        const uint8_t* q3 = x[i].qs;
        const uint8_t* hm = x[i].hmask;
        int8_t* a = aux8;
        uint8_t m = 1;
        for (int j = 0; j < QK_K; j += 128) {
            for (int shift = 0; shift < 8; shift += 2) {
                for (int l = 0; l < 32; ++l) a[l] = static_cast<int8_t>(((q3[l] >> shift) & 3) - (hm[l] & m ? 0 : 4));
                a += 32;
                m = static_cast<uint8_t>(m << 1);
            }
            q3 += 32;
        }
        uint32_t auxs[4];
        std::memcpy(auxs, x[i].scales, 12);
        const uint32_t tmp = auxs[2];
        auxs[2] = ((auxs[0] >> 4) & kmask2) | (((tmp >> 4) & kmask1) << 4);
        auxs[3] = ((auxs[1] >> 4) & kmask2) | (((tmp >> 6) & kmask1) << 4);
        auxs[0] = (auxs[0] & kmask2) | (((tmp >> 0) & kmask1) << 4);
        auxs[1] = (auxs[1] & kmask2) | (((tmp >> 2) & kmask1) << 4);
        int8_t scales[16];
        std::memcpy(scales, auxs, 16);
        lanes8(
            aux8, y[i].qs, [&](int g) { return scales[g / 2] - 32; }, aux32);
        const float d = h2f(x[i].d) * y[i].d;
        for (int l = 0; l < 8; ++l) sums[l] += d * static_cast<float>(aux32[l]);
    }
    for (int l = 0; l < 8; ++l) sumf += sums[l];
    return sumf;
}

// Q4_K / Q5_K: the unpacked 6-bit scales and mins of ggml's utmp trick.
void k4_scales_mins(const uint8_t* packed, uint8_t scales[8], uint8_t mins[8]) {
    for (int j = 0; j < 8; ++j) get_scale_min_k4(j, packed, &scales[j], &mins[j]);
}

// Shared tail of Q4_K and Q5_K: aux8 holds the 256 unsigned quants.
void q45_K_block(const int8_t* aux8, const uint8_t* packed_scales, uint16_t xd, uint16_t xdmin, const block_q8_K& y,
                 float sums[8], float& sumf) {
    uint8_t scales[8], mins[8];
    k4_scales_mins(packed_scales, scales, mins);
    int sumi = 0;
    for (int j = 0; j < QK_K / 16; ++j) sumi += y.bsums[j] * mins[j / 2];
    int32_t aux32[8];
    lanes8(
        aux8, y.qs, [&](int g) { return static_cast<int32_t>(scales[g / 4]); }, aux32);
    const float d = h2f(xd) * y.d;
    for (int l = 0; l < 8; ++l) sums[l] += d * static_cast<float>(aux32[l]);
    const float dmin = h2f(xdmin) * y.d;
    sumf -= dmin * static_cast<float>(sumi);
}

float dot_q4_K(const block_q4_K* x, const block_q8_K* y, int64_t nb) {
    int8_t aux8[QK_K];
    float sums[8] = {};
    float sumf = 0;
    for (int64_t i = 0; i < nb; ++i) {
        const uint8_t* q4 = x[i].qs;
        int8_t* a = aux8;
        for (int j = 0; j < QK_K / 64; ++j) {
            for (int l = 0; l < 32; ++l) a[l] = static_cast<int8_t>(q4[l] & 0xF);
            a += 32;
            for (int l = 0; l < 32; ++l) a[l] = static_cast<int8_t>(q4[l] >> 4);
            a += 32;
            q4 += 32;
        }
        q45_K_block(aux8, x[i].scales, x[i].d, x[i].dmin, y[i], sums, sumf);
    }
    for (int l = 0; l < 8; ++l) sumf += sums[l];
    return sumf;
}

float dot_q5_K(const block_q5_K* x, const block_q8_K* y, int64_t nb) {
    int8_t aux8[QK_K];
    float sums[8] = {};
    float sumf = 0;
    for (int64_t i = 0; i < nb; ++i) {
        const uint8_t* q4 = x[i].qs;
        const uint8_t* hm = x[i].qh;
        int8_t* a = aux8;
        uint8_t m = 1;
        for (int j = 0; j < QK_K / 64; ++j) {
            for (int l = 0; l < 32; ++l) a[l] = static_cast<int8_t>((q4[l] & 0xF) + (hm[l] & m ? 16 : 0));
            a += 32;
            m = static_cast<uint8_t>(m << 1);
            for (int l = 0; l < 32; ++l) a[l] = static_cast<int8_t>((q4[l] >> 4) + (hm[l] & m ? 16 : 0));
            a += 32;
            m = static_cast<uint8_t>(m << 1);
            q4 += 32;
        }
        q45_K_block(aux8, x[i].scales, x[i].d, x[i].dmin, y[i], sums, sumf);
    }
    for (int l = 0; l < 8; ++l) sumf += sums[l];
    return sumf;
}

float dot_q6_K(const block_q6_K* x, const block_q8_K* y, int64_t nb) {
    int8_t aux8[QK_K];
    int32_t aux32[8];
    float sums[8] = {};
    float sumf = 0;
    for (int64_t i = 0; i < nb; ++i) {
        const uint8_t* q4 = x[i].ql;
        const uint8_t* qh = x[i].qh;
        int8_t* a = aux8;
        for (int j = 0; j < QK_K; j += 128) {
            for (int l = 0; l < 32; ++l) {
                a[l + 0] = static_cast<int8_t>(static_cast<int8_t>((q4[l + 0] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32);
                a[l + 32] =
                    static_cast<int8_t>(static_cast<int8_t>((q4[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32);
                a[l + 64] = static_cast<int8_t>(static_cast<int8_t>((q4[l + 0] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
                a[l + 96] =
                    static_cast<int8_t>(static_cast<int8_t>((q4[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
            }
            a += 128;
            q4 += 64;
            qh += 32;
        }
        const int8_t* sc = x[i].scales;
        lanes8(
            aux8, y[i].qs, [&](int g) { return static_cast<int32_t>(sc[g / 2]); }, aux32);
        const float d = h2f(x[i].d) * y[i].d;
        for (int l = 0; l < 8; ++l) sums[l] += d * static_cast<float>(aux32[l]);
    }
    for (int l = 0; l < 8; ++l) sumf += sums[l];
    return sumf;
}

float dot_iq4_xs(const block_iq4_xs* x, const block_q8_K* y, int64_t nb) {
    float sumf = 0;
    for (int64_t ibl = 0; ibl < nb; ++ibl) {
        const float d4d8 = h2f(x[ibl].d) * y[ibl].d;
        uint16_t h = x[ibl].scales_h;
        const uint8_t* qs = x[ibl].qs;
        const int8_t* q8 = y[ibl].qs;
        for (int ib = 0; ib < QK_K / 32; ib += 2) {
            const uint8_t ls1 = static_cast<uint8_t>((x[ibl].scales_l[ib / 2] & 0xf) | ((h << 4) & 0x30));
            const uint8_t ls2 = static_cast<uint8_t>((x[ibl].scales_l[ib / 2] >> 4) | ((h << 2) & 0x30));
            h = static_cast<uint16_t>(h >> 4);
            const float d1 = d4d8 * static_cast<float>(ls1 - 32);
            const float d2 = d4d8 * static_cast<float>(ls2 - 32);
            for (const float dd : {d1, d2}) {
                int sumi1 = 0, sumi2 = 0;
                for (int j = 0; j < 16; ++j) {
                    sumi1 += q8[j + 0] * kvalues_iq4nl[qs[j] & 0xf];
                    sumi2 += q8[j + 16] * kvalues_iq4nl[qs[j] >> 4];
                }
                sumf += dd * static_cast<float>(sumi1 + sumi2);
                qs += 16;
                q8 += 32;
            }
        }
    }
    return sumf;
}

float dot_tq2_0(const block_tq2_0* x, const block_q8_K* y, int64_t nb) {
    float sumf = 0.0f;
    for (int64_t i = 0; i < nb; ++i) {
        int32_t sumi = 0;
        for (size_t j = 0; j < sizeof(x->qs); j += 32)
            for (size_t l = 0; l < 4; ++l)
                for (size_t k = 0; k < 32; ++k)
                    sumi += y[i].qs[j * 4 + l * 32 + k] * (((x[i].qs[j + k] >> (l * 2)) & 3) - 1);
        const float d = y[i].d * h2f(x[i].d);
        sumf += static_cast<float>(sumi) * d;
    }
    return sumf;
}

// ---- i-quants and the rest of the Q8_K / Q8_0 family (ggml's generic kernels).
inline int sign_of(uint8_t signs, int j) { return signs & kmask_iq2xs[j] ? -1 : 1; }
inline const uint8_t* grid8(const uint64_t* grid, int i) { return reinterpret_cast<const uint8_t*>(grid + i); }
inline const uint8_t* grid4(const uint32_t* grid, int i) { return reinterpret_cast<const uint8_t*>(grid + i); }

float dot_iq2_xxs(const block_iq2_xxs* x, const block_q8_K* y, int64_t nb) {
    float sumf = 0.f;
    for (int64_t i = 0; i < nb; ++i) {
        const float d = h2f(x[i].d) * y[i].d;
        const uint16_t* q2 = x[i].qs;
        const int8_t* q8 = y[i].qs;
        int32_t bsum = 0;
        for (int ib32 = 0; ib32 < QK_K / 32; ++ib32) {
            uint32_t aux32[2];
            std::memcpy(aux32, q2, 8);
            q2 += 4;
            const uint8_t* aux8 = reinterpret_cast<const uint8_t*>(aux32);
            const uint32_t ls = 2 * (aux32[1] >> 28) + 1;
            int32_t sumi = 0;
            for (int l = 0; l < 4; ++l) {
                const uint8_t* grid = grid8(iq2xxs_grid, aux8[l]);
                const uint8_t signs = ksigns_iq2xs[(aux32[1] >> 7 * l) & 127];
                for (int j = 0; j < 8; ++j) sumi += grid[j] * q8[j] * sign_of(signs, j);
                q8 += 8;
            }
            bsum += sumi * static_cast<int32_t>(ls);
        }
        sumf += d * static_cast<float>(bsum);
    }
    return 0.125f * sumf;
}

float dot_iq2_xs(const block_iq2_xs* x, const block_q8_K* y, int64_t nb) {
    float sumf = 0.f;
    for (int64_t i = 0; i < nb; ++i) {
        const float d = h2f(x[i].d) * y[i].d;
        const uint16_t* q2 = x[i].qs;
        const int8_t* q8 = y[i].qs;
        int32_t bsum = 0;
        for (int ib32 = 0; ib32 < QK_K / 32; ++ib32) {
            const int ls[2] = {2 * (x[i].scales[ib32] & 0xf) + 1, 2 * (x[i].scales[ib32] >> 4) + 1};
            for (int half = 0; half < 2; ++half) {
                int32_t sumi = 0;
                for (int l = 2 * half; l < 2 * half + 2; ++l) {
                    const uint8_t* grid = grid8(iq2xs_grid, q2[l] & 511);
                    const uint8_t signs = ksigns_iq2xs[q2[l] >> 9];
                    for (int j = 0; j < 8; ++j) sumi += grid[j] * q8[j] * sign_of(signs, j);
                    q8 += 8;
                }
                bsum += sumi * ls[half];
            }
            q2 += 4;
        }
        sumf += d * static_cast<float>(bsum);
    }
    return 0.125f * sumf;
}

float dot_iq2_s(const block_iq2_s* x, const block_q8_K* y, int64_t nb) {
    float sumf = 0;
    for (int64_t i = 0; i < nb; i++) {
        const float d = h2f(x[i].d) * y[i].d;
        const int8_t* q8 = y[i].qs;
        const uint8_t* qs = x[i].qs;
        const uint8_t* qh = x[i].qh;
        const uint8_t* signs = qs + QK_K / 8;
        int bsum = 0;
        for (int ib32 = 0; ib32 < QK_K / 32; ++ib32) {
            const int ls1 = 1 + 2 * (x[i].scales[ib32] & 0xf), ls2 = 1 + 2 * (x[i].scales[ib32] >> 4);
            int sumi[2] = {0, 0};
            for (int l = 0; l < 4; ++l) {
                const uint8_t* grid = grid8(iq2s_grid, qs[l] | ((qh[ib32] << (8 - 2 * l)) & 0x300));
                for (int j = 0; j < 8; ++j) sumi[l / 2] += q8[j] * grid[j] * sign_of(signs[l], j);
                q8 += 8;
            }
            bsum += ls1 * sumi[0] + ls2 * sumi[1];
            qs += 4;
            signs += 4;
        }
        sumf += d * static_cast<float>(bsum);
    }
    return 0.125f * sumf;
}

float dot_iq3_xxs(const block_iq3_xxs* x, const block_q8_K* y, int64_t nb) {
    float sumf = 0.f;
    for (int64_t i = 0; i < nb; ++i) {
        const float d = h2f(x[i].d) * y[i].d;
        const uint8_t* q3 = x[i].qs;
        const uint8_t* gas = x[i].qs + QK_K / 4;
        const int8_t* q8 = y[i].qs;
        int32_t bsum = 0;
        for (int ib32 = 0; ib32 < QK_K / 32; ++ib32) {
            uint32_t aux32;
            std::memcpy(&aux32, gas, 4);
            gas += 4;
            const uint32_t ls = 2 * (aux32 >> 28) + 1;
            int32_t sumi = 0;
            for (int l = 0; l < 4; ++l) {
                const uint8_t* g1 = grid4(iq3xxs_grid, q3[2 * l + 0]);
                const uint8_t* g2 = grid4(iq3xxs_grid, q3[2 * l + 1]);
                const uint8_t signs = ksigns_iq2xs[(aux32 >> 7 * l) & 127];
                for (int j = 0; j < 4; ++j) {
                    sumi += g1[j] * q8[j + 0] * sign_of(signs, j + 0);
                    sumi += g2[j] * q8[j + 4] * sign_of(signs, j + 4);
                }
                q8 += 8;
            }
            q3 += 8;
            bsum += sumi * static_cast<int32_t>(ls);
        }
        sumf += d * static_cast<float>(bsum);
    }
    return 0.25f * sumf;
}

float dot_iq3_s(const block_iq3_s* x, const block_q8_K* y, int64_t nb) {
    float sumf = 0.f;
    for (int64_t i = 0; i < nb; ++i) {
        const float d = h2f(x[i].d) * y[i].d;
        const uint8_t* qs = x[i].qs;
        const uint8_t* qh = x[i].qh;
        const uint8_t* signs = x[i].signs;
        const int8_t* q8 = y[i].qs;
        int32_t bsum = 0;
        for (int ib32 = 0; ib32 < QK_K / 32; ib32 += 2) {
            const int32_t ls[2] = {2 * (x[i].scales[ib32 / 2] & 0xf) + 1, 2 * (x[i].scales[ib32 / 2] >> 4) + 1};
            for (int half = 0; half < 2; ++half) {
                int32_t sumi = 0;
                for (int l = 0; l < 4; ++l) {
                    const uint8_t* g1 = grid4(iq3s_grid, qs[2 * l + 0] | ((qh[ib32 + half] << (8 - 2 * l)) & 256));
                    const uint8_t* g2 = grid4(iq3s_grid, qs[2 * l + 1] | ((qh[ib32 + half] << (7 - 2 * l)) & 256));
                    for (int j = 0; j < 4; ++j) {
                        sumi += g1[j] * q8[j + 0] * sign_of(signs[l], j + 0);
                        sumi += g2[j] * q8[j + 4] * sign_of(signs[l], j + 4);
                    }
                    q8 += 8;
                }
                qs += 8;
                signs += 4;
                bsum += sumi * ls[half];
            }
        }
        sumf += d * static_cast<float>(bsum);
    }
    return sumf;
}

float dot_iq1_s(const block_iq1_s* x, const block_q8_K* y, int64_t nb) {
    float sumf = 0;
    for (int64_t i = 0; i < nb; i++) {
        const int8_t* q8 = y[i].qs;
        const uint8_t* qs = x[i].qs;
        const uint16_t* qh = x[i].qh;
        int sumi = 0, sumi1 = 0;
        for (int ib = 0; ib < QK_K / 32; ++ib) {
            const int ls = 2 * ((qh[ib] >> 12) & 7) + 1;
            const int delta = qh[ib] & 0x8000 ? -1 : 1;
            int lsum = 0;
            for (int l = 0; l < 4; ++l) {
                const auto* grid =
                    reinterpret_cast<const int8_t*>(iq1s_grid + (qs[l] | (((qh[ib] >> 3 * l) & 7) << 8)));
                for (int j = 0; j < 8; ++j) lsum += q8[j] * grid[j];
                q8 += 8;
            }
            sumi += ls * lsum;
            sumi1 += ls * delta * (y[i].bsums[2 * ib + 0] + y[i].bsums[2 * ib + 1]);
            qs += 4;
        }
        sumf += h2f(x[i].d) * y[i].d * (static_cast<float>(sumi) + IQ1S_DELTA * static_cast<float>(sumi1));
    }
    return sumf;
}

float dot_iq1_m(const block_iq1_m* x, const block_q8_K* y, int64_t nb) {
    float sumf = 0;
    for (int64_t i = 0; i < nb; i++) {
        const int8_t* q8 = y[i].qs;
        const uint8_t* qs = x[i].qs;
        const uint8_t* qh = x[i].qh;
        uint16_t sc[4];
        std::memcpy(sc, x[i].scales, 8);
        const uint16_t scale =
            static_cast<uint16_t>((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) | ((sc[2] >> 4) & 0x0f00) | (sc[3] & 0xf000));
        int sumi1 = 0, sumi2 = 0;
        for (int ib = 0; ib < QK_K / 32; ++ib) {
            const int delta[4] = {qh[0] & 0x08 ? -1 : 1, qh[0] & 0x80 ? -1 : 1, qh[1] & 0x08 ? -1 : 1,
                                  qh[1] & 0x80 ? -1 : 1};
            int sum1[2] = {0, 0}, sum2[2] = {0, 0};
            for (int l = 0; l < 4; ++l) {
                const auto* grid = reinterpret_cast<const int8_t*>(
                    iq1s_grid + (qs[l] | ((static_cast<uint16_t>(qh[l / 2]) << (8 - 4 * (l % 2))) & 0x700)));
                int lsum1 = 0, lsum2 = 0;
                for (int j = 0; j < 8; ++j) {
                    lsum1 += q8[j] * grid[j];
                    lsum2 += q8[j];
                }
                q8 += 8;
                sum1[l / 2] += lsum1;
                sum2[l / 2] += lsum2 * delta[l];
            }
            const int ls1 = 2 * ((sc[ib / 2] >> (6 * (ib % 2) + 0)) & 0x7) + 1;
            const int ls2 = 2 * ((sc[ib / 2] >> (6 * (ib % 2) + 3)) & 0x7) + 1;
            sumi1 += sum1[0] * ls1 + sum1[1] * ls2;
            sumi2 += sum2[0] * ls1 + sum2[1] * ls2;
            qs += 4;
            qh += 2;
        }
        sumf += h2f(scale) * y[i].d * (static_cast<float>(sumi1) + IQ1M_DELTA * static_cast<float>(sumi2));
    }
    return sumf;
}

float dot_tq1_0(const block_tq1_0* x, const block_q8_K* y, int64_t nb) {
    static const uint8_t pow3[6] = {1, 3, 9, 27, 81, 243};
    auto trit = [](uint8_t q, int l) {
        return ((static_cast<uint16_t>(static_cast<uint8_t>(q * pow3[l])) * 3) >> 8) - 1;
    };
    float sumf = 0.0f;
    for (int64_t i = 0; i < nb; ++i) {
        int sum = 0;
        const size_t n32 = sizeof(x->qs) - sizeof(x->qs) % 32;
        for (size_t j = 0; j < n32; j += 32)
            for (int l = 0; l < 5; ++l)
                for (size_t m = 0; m < 32; ++m) sum += trit(x[i].qs[j + m], l) * y[i].qs[j * 5 + l * 32 + m];
        for (size_t j = n32; j < sizeof(x->qs); j += 16)
            for (int l = 0; l < 5; ++l)
                for (size_t m = 0; m < 16; ++m) sum += trit(x[i].qs[j + m], l) * y[i].qs[j * 5 + l * 16 + m];
        for (int l = 0; l < 4; ++l)
            for (size_t j = 0; j < sizeof(x->qh); ++j)
                sum += trit(x[i].qh[j], l) * y[i].qs[sizeof(x->qs) * 5 + l * sizeof(x->qh) + j];
        sumf += static_cast<float>(sum) * (h2f(x[i].d) * y[i].d);
    }
    return sumf;
}

float dot_mxfp4(const block_mxfp4* x, const block_q8_0* y, int64_t nb) {
    float sumf = 0;
    for (int64_t ib = 0; ib < nb; ++ib) {
        // ggml_e8m0_to_fp32_half: 2^(e-128), exact (subnormal for e < 2).
        const float d = h2f(y[ib].d) * std::ldexp(1.0f, static_cast<int>(x[ib].e) - 128);
        int sumi1 = 0, sumi2 = 0;
        for (int j = 0; j < QK_MXFP4 / 2; ++j) {
            sumi1 += y[ib].qs[j] * kvalues_mxfp4[x[ib].qs[j] & 0xf];
            sumi2 += y[ib].qs[j + QK_MXFP4 / 2] * kvalues_mxfp4[x[ib].qs[j] >> 4];
        }
        sumf += d * static_cast<float>(sumi1 + sumi2);
    }
    return sumf;
}

// ggml_vec_dot_nvfp4_q8_0_generic: a 64-wide block = 4 sub-blocks of 16 with a UE4M3 scale
// each; sub-blocks 2k and 2k+1 read the two halves of Q8_0 block k. Per sub-block:
// sumf += (dy * d) * (sumi_lo + sumi_hi), left to right.
float dot_nvfp4(const block_nvfp4* x, const block_q8_0* y, int64_t nb) {
    constexpr int kSub = QK_NVFP4 / 4;
    float sumf = 0;
    for (int64_t ib = 0; ib < nb; ++ib) {
        for (int s = 0; s < 4; ++s) {
            const float d = quant::ue4m3_to_fp32_half(x[ib].d[s]);
            const block_q8_0& yb = y[2 * ib + s / 2];
            const int off = (s % 2) * kSub;
            int lo = 0, hi = 0;
            for (int j = 0; j < kSub / 2; ++j) {
                const uint8_t q = x[ib].qs[s * (kSub / 2) + j];
                lo += yb.qs[off + j] * kvalues_mxfp4[q & 0xf];
                hi += yb.qs[off + j + kSub / 2] * kvalues_mxfp4[q >> 4];
            }
            sumf += h2f(yb.d) * d * static_cast<float>(lo + hi);
        }
    }
    return sumf;
}

// ggml_vec_dot_q1_0_q8_0_generic: a 128-wide block of sign bits (bit set: +1, clear: -1) with
// one fp16 scale over four Q8_0 blocks: sumi += d1 * isum per Q8_0 block, then sumf += d0 * sumi.
float dot_q1_0(const block_q1_0* x, const block_q8_0* y, int64_t nb) {
    float sumf = 0;
    for (int64_t i = 0; i < nb; ++i) {
        float sumi = 0;
        for (int k = 0; k < 4; ++k) {
            const block_q8_0& yb = y[i * 4 + k];
            int isum = 0;
            for (int j = 0; j < 32; ++j) isum += ((x[i].qs[k * 4 + j / 8] >> (j % 8)) & 1) ? yb.qs[j] : -yb.qs[j];
            sumi += h2f(yb.d) * static_cast<float>(isum);
        }
        sumf += h2f(x[i].d) * sumi;
    }
    return sumf;
}

// ---- the integer-dot column of the type table: one entry per type id, null without an
// integer path. Each entry takes one row of nb blocks and the activation quantized to the type's
// partner (act.n elements).
using IntegerDotFn = float (*)(const void* row, const QuantizedVector& act, int64_t nb);

template <typename X, typename Y, float (*Dot)(const X*, const Y*, int64_t)>
float blocks_dot(const void* row, const QuantizedVector& act, int64_t nb) {
    return Dot(blocks<X>(row), blocks<Y>(act.bytes.data()), nb);
}

float f32_dot(const void* row, const QuantizedVector& act, int64_t) {
    return dot_f32(blocks<float>(row), blocks<float>(act.bytes.data()), act.n);
}
template <float (*Conv)(uint16_t)>
float half_dot(const void* row, const QuantizedVector& act, int64_t) {
    return dot_float(blocks<uint16_t>(row), blocks<uint16_t>(act.bytes.data()), act.n, Conv);
}
float q4_0_dot(const void* row, const QuantizedVector& act, int64_t) {
    return dot_q4_0(blocks<block_q4_0>(row), unpack_q8_0(act));
}

constexpr auto kIntegerDot = [] {
    using T = GgmlType;
    std::array<IntegerDotFn, kGgmlTypeCount> d{};
    auto set = [&](T t, IntegerDotFn f) { d[static_cast<size_t>(t)] = f; };
    set(T::F32, f32_dot);
    set(T::F16, half_dot<fp16_to_fp32>);
    set(T::BF16, half_dot<bf16_to_fp32>);
    set(T::Q4_0, q4_0_dot);
    set(T::Q4_1, blocks_dot<block_q4_1, block_q8_1, dot_q4_1>);
    set(T::Q5_0, blocks_dot<block_q5_0, block_q8_0, dot_q5_0>);
    set(T::Q5_1, blocks_dot<block_q5_1, block_q8_1, dot_q5_1>);
    set(T::Q8_0, blocks_dot<block_q8_0, block_q8_0, dot_q8_0>);
    set(T::IQ4_NL, blocks_dot<block_iq4_nl, block_q8_0, dot_iq4_nl>);
    set(T::Q2_K, blocks_dot<block_q2_K, block_q8_K, dot_q2_K>);
    set(T::Q3_K, blocks_dot<block_q3_K, block_q8_K, dot_q3_K>);
    set(T::Q4_K, blocks_dot<block_q4_K, block_q8_K, dot_q4_K>);
    set(T::Q5_K, blocks_dot<block_q5_K, block_q8_K, dot_q5_K>);
    set(T::Q6_K, blocks_dot<block_q6_K, block_q8_K, dot_q6_K>);
    set(T::IQ4_XS, blocks_dot<block_iq4_xs, block_q8_K, dot_iq4_xs>);
    set(T::TQ2_0, blocks_dot<block_tq2_0, block_q8_K, dot_tq2_0>);
    set(T::TQ1_0, blocks_dot<block_tq1_0, block_q8_K, dot_tq1_0>);
    set(T::IQ2_XXS, blocks_dot<block_iq2_xxs, block_q8_K, dot_iq2_xxs>);
    set(T::IQ2_XS, blocks_dot<block_iq2_xs, block_q8_K, dot_iq2_xs>);
    set(T::IQ2_S, blocks_dot<block_iq2_s, block_q8_K, dot_iq2_s>);
    set(T::IQ3_XXS, blocks_dot<block_iq3_xxs, block_q8_K, dot_iq3_xxs>);
    set(T::IQ3_S, blocks_dot<block_iq3_s, block_q8_K, dot_iq3_s>);
    set(T::IQ1_S, blocks_dot<block_iq1_s, block_q8_K, dot_iq1_s>);
    set(T::IQ1_M, blocks_dot<block_iq1_m, block_q8_K, dot_iq1_m>);
    set(T::MXFP4, blocks_dot<block_mxfp4, block_q8_0, dot_mxfp4>);
    set(T::NVFP4, blocks_dot<block_nvfp4, block_q8_0, dot_nvfp4>);
    set(T::Q1_0, blocks_dot<block_q1_0, block_q8_0, dot_q1_0>);
    return d;
}();

// A type has an integer dot exactly when ggml-cpu gives it a vec_dot_type (types.h), except
// Q8_1, an activation type only (ggml-cpu lists a vec_dot_type for it but no vec_dot). Not in
// sanitizer builds, where GCC cannot constant-fold null tests; MatmulReference.IntegerDotColumnMatchesTheTypeTable
// checks it there.
#ifndef OIW_SANITIZE
static_assert(
    [] {
        for (uint32_t id = 0; id < kGgmlTypeCount; ++id)
            if ((kIntegerDot[id] != nullptr) !=
                (kTypeTraits[id].vec_dot_type.has_value() && id != static_cast<uint32_t>(GgmlType::Q8_1)))
                return false;
        return true;
    }(),
    "kIntegerDot must have an entry for every type with a dot-product partner but Q8_1");
#endif

}  // namespace

std::optional<GgmlType> dot_partner(GgmlType t) {
    const auto id = static_cast<uint32_t>(t);
    if (id >= kGgmlTypeCount || !kIntegerDot[id]) return std::nullopt;
    return kTypeTraits[id].vec_dot_type;
}

QuantizedVector quantize_activation(GgmlType partner, const float* x, int64_t n) {
    QuantizedVector q;
    q.type = partner;
    q.n = n;
    switch (partner) {
        case GgmlType::F32:
            q.bytes.resize(static_cast<size_t>(n) * 4);
            if (n) std::memcpy(q.bytes.data(), x, q.bytes.size());
            return q;
        case GgmlType::F16:
        case GgmlType::BF16:
        case GgmlType::Q8_0:
            check_multiple(partner, n, traits(partner).block_size);
            q.bytes.resize(row_size(partner, n));
            quantize_chunk_ref(partner, x, q.bytes.data(), 1, n, nullptr);
            return q;
        case GgmlType::Q8_1: {
            check_multiple(partner, n, QK8_1);
            q.bytes.resize(row_size(partner, n));
            auto* y = reinterpret_cast<block_q8_1*>(q.bytes.data());
            for (int64_t b = 0; b < n / QK8_1; ++b) q8_1_block(x + b * QK8_1, y[b]);
            return q;
        }
        case GgmlType::Q8_K: {
            check_multiple(partner, n, QK_K);
            q.bytes.resize(row_size(partner, n));
            std::vector<block_q8_K> tmp(static_cast<size_t>(n / QK_K));
            for (size_t b = 0; b < tmp.size(); ++b) q8_K_block(x + b * QK_K, tmp[b]);
            if (!tmp.empty()) std::memcpy(q.bytes.data(), tmp.data(), q.bytes.size());
            return q;
        }
        default: unsupported(partner, "not a dot-product partner type");
    }
}

float dot_integer(GgmlType t, const void* row, const QuantizedVector& act) {
    const auto partner = dot_partner(t);
    if (!partner) unsupported(t, "no integer-path reference for this type (exact semantics only)");
    if (act.type != *partner) unsupported(t, "activation quantized to the wrong partner type");
    const int64_t bs = traits(t).block_size;
    check_multiple(t, act.n, bs);
    return kIntegerDot[static_cast<size_t>(t)](row, act, act.n / bs);
}

double dot_exact(GgmlType t, const void* row, const float* x, int64_t n, std::vector<float>& scratch) {
    scratch.resize(static_cast<size_t>(n));
    dequantize_row(t, row, scratch.data(), n);
    double s = 0;
    for (int64_t i = 0; i < n; ++i) s += static_cast<double>(scratch[i]) * static_cast<double>(x[i]);
    return s;
}

}  // namespace oiw::matmul
