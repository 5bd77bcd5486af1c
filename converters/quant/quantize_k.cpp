// K-quant kernels (Q2_K..Q6_K) and the scale-search helpers they share with the legacy and
// i-quant kernels. A transcription of ggml-quants.c (ggml 0.11.1): every float expression keeps
// ggml's operand order and every integer narrowing is spelled out, so results are bit-exact.
//
// ggml_quantize_chunk semantics per type: without importance weights it runs the *_ref row
// quantizer over the whole chunk (blocks are independent); with weights it runs the *_impl
// quantizer row by row, whose statistics (sigma2) are per super-block.
#include <cmath>
#include <cstring>

#include "converters/quant/quantize_impl.h"
#include "libformat/blocks.h"
#include "libformat/fp16.h"

namespace oiw::quant {
namespace {

// The weight make_qx_quants uses for element i when no importance weights are given.
inline float qx_weight(const float* qw, int rmse_type, const float* x, int i) {
    if (qw) return qw[i];
    if (rmse_type == 1) return x[i] * x[i];
    if (rmse_type == 2) return 1;
    if (rmse_type == 3) return std::fabs(x[i]);
    return std::sqrt(std::fabs(x[i]));
}

// ---------------------------------------------------------------- packing helpers

// Packs 256 two-bit levels: byte l of each 32-byte group holds elements l, l+32, l+64, l+96.
void pack_2bit(const uint8_t* L, uint8_t* qs) {
    for (int j = 0; j < QK_K; j += 128) {
        for (int l = 0; l < 32; ++l) {
            qs[j / 4 + l] =
                static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
        }
    }
}

// Requantizes the 16 sub-blocks of a Q3_K block against the stored scales, then packs the
// levels (0..7 in L) into hmask (bit 2) and qs (bits 0..1).
void finish_q3_K(const float* x, block_q3_K& y, int8_t* L) {
    for (int j = 0; j < QK_K / 16; ++j) {
        const int8_t sc = get_q3_scale(y.scales, j);
        const float d = fp16_to_fp32(y.d) * sc;
        if (!d) continue;
        for (int ii = 0; ii < 16; ++ii) {
            int l = nearest_int(x[16 * j + ii] / d);
            l = clamp_i(l, -4, 3);
            L[16 * j + ii] = static_cast<int8_t>(l + 4);
        }
    }
    std::memset(y.hmask, 0, QK_K / 8);
    int m = 0;
    uint8_t hm = 1;
    for (int j = 0; j < QK_K; ++j) {
        if (L[j] > 3) {
            y.hmask[m] |= hm;
            L[j] -= 4;
        }
        if (++m == QK_K / 8) {
            m = 0;
            hm = static_cast<uint8_t>(hm << 1);
        }
    }
    pack_2bit(reinterpret_cast<const uint8_t*>(L), y.qs);
}

// The leading d, dmin, scales[12] fields that Q4_K and Q5_K share (same layout and offsets).
struct K4Header {
    uint16_t d, dmin;
    uint8_t scales[K_SCALE_SIZE];
};

// Requantizes the eight 32-element sub-blocks of a Q4_K/Q5_K block to [0, nmax] against the
// stored fp16 d/dmin and six-bit scales/mins. Sub-blocks with a zero scale keep their L.
void requantize_k4(const float* x, const K4Header& h, int nmax, uint8_t* L) {
    uint8_t sc, m;
    for (int j = 0; j < QK_K / 32; ++j) {
        get_scale_min_k4(j, h.scales, &sc, &m);
        const float d = fp16_to_fp32(h.d) * sc;
        if (!d) continue;
        const float dm = fp16_to_fp32(h.dmin) * m;
        for (int ii = 0; ii < 32; ++ii) {
            int l = nearest_int((x[32 * j + ii] + dm) / d);
            l = clamp_i(l, 0, nmax);
            L[32 * j + ii] = static_cast<uint8_t>(l);
        }
    }
}

// Packs 256 four-bit levels: byte l of each 32-byte group holds elements l and l+32 of a 64 run.
void pack_q4_K(const uint8_t* L, uint8_t* q) {
    for (int j = 0; j < QK_K; j += 64) {
        for (int l = 0; l < 32; ++l) q[l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 4));
        q += 32;
    }
}

// Packs 256 five-bit levels into qs (low nibbles, Q4_K order) and qh (bit 4, two bits per 64 run).
void pack_q5_K(const uint8_t* L, uint8_t* ql, uint8_t* qh) {
    std::memset(qh, 0, QK_K / 8);
    uint8_t m1 = 1, m2 = 2;
    for (int n = 0; n < QK_K; n += 64) {
        for (int j = 0; j < 32; ++j) {
            int l1 = L[n + j];
            if (l1 > 15) {
                l1 -= 16;
                qh[j] |= m1;
            }
            int l2 = L[n + j + 32];
            if (l2 > 15) {
                l2 -= 16;
                qh[j] |= m2;
            }
            ql[j] = static_cast<uint8_t>(l1 | (l2 << 4));
        }
        m1 = static_cast<uint8_t>(m1 << 2);
        m2 = static_cast<uint8_t>(m2 << 2);
        ql += 32;
    }
}

// Requantizes a Q6_K block against its stored d and int8 scales and packs ql/qh.
void finish_q6_K(const float* x, block_q6_K& y, int8_t* L) {
    for (int j = 0; j < QK_K / 16; ++j) {
        const float d = fp16_to_fp32(y.d) * y.scales[j];
        if (!d) continue;
        for (int ii = 0; ii < 16; ++ii) {
            int l = nearest_int(x[16 * j + ii] / d);
            l = clamp_i(l, -32, 31);
            L[16 * j + ii] = static_cast<int8_t>(l + 32);
        }
    }
    uint8_t* ql = y.ql;
    uint8_t* qh = y.qh;
    for (int j = 0; j < QK_K; j += 128) {
        for (int l = 0; l < 32; ++l) {
            const uint8_t q1 = L[j + l + 0] & 0xF;
            const uint8_t q2 = L[j + l + 32] & 0xF;
            const uint8_t q3 = L[j + l + 64] & 0xF;
            const uint8_t q4 = L[j + l + 96] & 0xF;
            ql[l + 0] = static_cast<uint8_t>(q1 | (q3 << 4));
            ql[l + 32] = static_cast<uint8_t>(q2 | (q4 << 4));
            qh[l] = static_cast<uint8_t>((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) | ((L[j + l + 64] >> 4) << 4) |
                                         ((L[j + l + 96] >> 4) << 6));
        }
        ql += 64;
        qh += 32;
    }
}

// ---------------------------------------------------------------- Q2_K

// One Q2_K block without importance weights (quantize_row_q2_K_ref).
void q2_K_block_ref(const float* x, block_q2_K& y) {
    uint8_t L[QK_K];
    uint8_t Laux[16];
    float weights[16];
    float mins[QK_K / 16];
    float scales[QK_K / 16];
    const float q4scale = 15.f;

    float max_scale = 0;
    float max_min = 0;
    for (int j = 0; j < QK_K / 16; ++j) {
        for (int l = 0; l < 16; ++l) weights[l] = std::fabs(x[16 * j + l]);
        scales[j] = make_qkx2_quants(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], Laux, -0.5f, 0.1f, 15, true);
        const float scale = scales[j];
        if (scale > max_scale) max_scale = scale;
        const float min = mins[j];
        if (min > max_min) max_min = min;
    }

    if (max_scale > 0) {
        const float iscale = q4scale / max_scale;
        for (int j = 0; j < QK_K / 16; ++j) y.scales[j] = static_cast<uint8_t>(nearest_int(iscale * scales[j]));
        y.d = fp32_to_fp16(max_scale / q4scale);
    } else {
        for (int j = 0; j < QK_K / 16; ++j) y.scales[j] = 0;
        y.d = fp32_to_fp16(0.f);
    }
    if (max_min > 0) {
        const float iscale = q4scale / max_min;
        for (int j = 0; j < QK_K / 16; ++j) {
            const int l = nearest_int(iscale * mins[j]);
            y.scales[j] |= static_cast<uint8_t>(l << 4);
        }
        y.dmin = fp32_to_fp16(max_min / q4scale);
    } else {
        y.dmin = fp32_to_fp16(0.f);
    }
    for (int j = 0; j < QK_K / 16; ++j) {
        const float d = fp16_to_fp32(y.d) * (y.scales[j] & 0xF);
        if (!d) continue;
        const float dm = fp16_to_fp32(y.dmin) * (y.scales[j] >> 4);
        for (int ii = 0; ii < 16; ++ii) {
            int l = nearest_int((x[16 * j + ii] + dm) / d);
            l = clamp_i(l, 0, 3);
            L[16 * j + ii] = static_cast<uint8_t>(l);
        }
    }
    pack_2bit(L, y.qs);
}

// One Q2_K block with importance weights qw[256] (quantize_row_q2_K_impl).
void q2_K_block_impl(const float* x, block_q2_K& y, const float* qw) {
    uint8_t L[QK_K];
    uint8_t Laux[16];
    float mins[QK_K / 16];
    float scales[QK_K / 16];
    float sw[QK_K / 16] = {};
    float weight[16];
    uint8_t Ls[QK_K / 16], Lm[QK_K / 16];

    const float sumx2 = sum_squares(x, QK_K);
    const float sigma2 = sumx2 / QK_K;
    for (int j = 0; j < QK_K / 16; ++j) {
        const float* qwj = qw + 16 * j;
        for (int l = 0; l < 16; ++l) weight[l] = qwj[l] * std::sqrt(sigma2 + x[16 * j + l] * x[16 * j + l]);
        for (int l = 0; l < QK_K / 16; ++l) sw[j] += weight[l];
        scales[j] = make_qkx3_quants(16, 3, x + 16 * j, weight, L + 16 * j, &mins[j], Laux, -0.9f, 0.05f, 36, false);
    }

    float dm = make_qp_quants(QK_K / 16, 15, scales, Ls, sw);
    float mm = make_qp_quants(QK_K / 16, 15, mins, Lm, sw);
    y.d = fp32_to_fp16(dm);
    y.dmin = fp32_to_fp16(mm);
    dm = fp16_to_fp32(y.d);
    mm = fp16_to_fp32(y.dmin);

    for (int j = 0; j < QK_K / 16; ++j) y.scales[j] = static_cast<uint8_t>(Ls[j] | (Lm[j] << 4));

    for (int j = 0; j < QK_K / 16; ++j) {
        const float d = dm * (y.scales[j] & 0xF);
        if (!d) continue;
        const float m = mm * (y.scales[j] >> 4);
        for (int ii = 0; ii < 16; ++ii) {
            int l = nearest_int((x[16 * j + ii] + m) / d);
            l = clamp_i(l, 0, 3);
            L[16 * j + ii] = static_cast<uint8_t>(l);
        }
    }
    pack_2bit(L, y.qs);
}

// ---------------------------------------------------------------- Q3_K

// One Q3_K block without importance weights (quantize_row_q3_K_ref).
void q3_K_block_ref(const float* x, block_q3_K& y) {
    int8_t L[QK_K];
    float scales[QK_K / 16];

    float max_scale = 0;
    float amax = 0;
    for (int j = 0; j < QK_K / 16; ++j) {
        scales[j] = make_q3_quants(16, 4, x + 16 * j, L + 16 * j, true);
        const float scale = std::fabs(scales[j]);
        if (scale > amax) {
            amax = scale;
            max_scale = scales[j];
        }
    }

    std::memset(y.scales, 0, 12);
    if (max_scale) {
        const float iscale = -32.f / max_scale;
        for (int j = 0; j < QK_K / 16; ++j) {
            int8_t l = static_cast<int8_t>(nearest_int(iscale * scales[j]));
            l = static_cast<int8_t>(clamp_i(l, -32, 31) + 32);
            set_q3_scale(y.scales, j, l);
        }
        y.d = fp32_to_fp16(1 / iscale);
    } else {
        y.d = fp32_to_fp16(0.f);
    }
    finish_q3_K(x, y, L);
}

// One Q3_K block with importance weights qw[256] (quantize_row_q3_K_impl).
void q3_K_block_impl(const float* x, block_q3_K& y, const float* qw) {
    int8_t L[QK_K];
    float scales[QK_K / 16];
    float weight[16];
    float sw[QK_K / 16];
    int8_t Ls[QK_K / 16];

    const float sumx2 = sum_squares(x, QK_K);
    const float sigma2 = 2 * sumx2 / QK_K;
    for (int j = 0; j < QK_K / 16; ++j) {
        const float* qwj = qw + 16 * j;
        for (int l = 0; l < 16; ++l) weight[l] = qwj[l] * std::sqrt(sigma2 + x[16 * j + l] * x[16 * j + l]);
        float sumw = 0;
        for (int l = 0; l < 16; ++l) sumw += weight[l];
        sw[j] = sumw;
        scales[j] = make_qx_quants(16, 4, x + 16 * j, L + 16 * j, 1, weight);
    }

    std::memset(y.scales, 0, 12);
    const float d_block = make_qx_quants(QK_K / 16, 32, scales, Ls, 1, sw);
    for (int j = 0; j < QK_K / 16; ++j) set_q3_scale(y.scales, j, Ls[j]);
    y.d = fp32_to_fp16(d_block);
    finish_q3_K(x, y, L);
}

// ---------------------------------------------------------------- Q4_K / Q5_K

// Q4_K/Q5_K block without importance weights (quantize_row_q{4,5}_K_ref): per sub-block
// make_qkx2_quants, then six-bit scales/mins relative to the largest. Leaves levels in L.
void k4_block_ref(const float* x, int nmax, float rmin, float rdelta, int nstep, K4Header& h, uint8_t* L) {
    uint8_t Laux[32];
    float weights[32];
    float mins[QK_K / 32];
    float scales[QK_K / 32];

    float max_scale = 0;
    float max_min = 0;
    for (int j = 0; j < QK_K / 32; ++j) {
        const float sum_x2 = sum_squares(x + 32 * j, 32);
        const float av_x = std::sqrt(sum_x2 / 32);
        for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(x[32 * j + l]);
        scales[j] =
            make_qkx2_quants(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, rmin, rdelta, nstep, false);
        const float scale = scales[j];
        if (scale > max_scale) max_scale = scale;
        const float min = mins[j];
        if (min > max_min) max_min = min;
    }

    pack_k4_scales_ref(scales, mins, max_scale, max_min, h.scales);
    h.d = fp32_to_fp16(max_scale / 63.f);
    h.dmin = fp32_to_fp16(max_min / 63.f);
    requantize_k4(x, h, nmax, L);
}

// Q4_K/Q5_K block with importance weights qw[256] (quantize_row_q{4,5}_K_impl): per sub-block
// make_qkx3_quants, then make_qp_quants on the scales and mins. Leaves levels in L.
void k4_block_impl(const float* x, const float* qw, int nmax, K4Header& h, uint8_t* L) {
    uint8_t Laux[32];
    uint8_t Ls[QK_K / 32];
    uint8_t Lm[QK_K / 32];
    float weights[32];
    float sw[QK_K / 32];
    float mins[QK_K / 32];
    float scales[QK_K / 32];

    const float sum_x2 = sum_squares(x, QK_K);
    const float sigma2 = 2 * sum_x2 / QK_K;
    for (int j = 0; j < QK_K / 32; ++j) {
        const float* qwj = qw + 32 * j;
        for (int l = 0; l < 32; ++l) weights[l] = qwj[l] * std::sqrt(sigma2 + x[32 * j + l] * x[32 * j + l]);
        float sumw = 0;
        for (int l = 0; l < 32; ++l) sumw += weights[l];
        sw[j] = sumw;
        scales[j] =
            make_qkx3_quants(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, -0.9f, 0.05f, 36, false);
    }

    const float d_block = make_qp_quants(QK_K / 32, 63, scales, Ls, sw);
    const float m_block = make_qp_quants(QK_K / 32, 63, mins, Lm, sw);
    for (int j = 0; j < QK_K / 32; ++j) {
        // make_qp_quants already caps levels at 63; ggml's Q5_K re-applies MIN(63, .) (a no-op).
        set_scale_min_k4(h.scales, j, Ls[j], Lm[j]);
    }
    h.d = fp32_to_fp16(d_block);
    h.dmin = fp32_to_fp16(m_block);
    requantize_k4(x, h, nmax, L);
}

// ---------------------------------------------------------------- Q6_K

// One Q6_K block; qw (256 weights) may be null (quantize_row_q6_K_ref vs _impl differ only there).
void q6_K_block(const float* x, block_q6_K& y, const float* qw) {
    int8_t L[QK_K];
    float scales[QK_K / 16];

    float max_scale = 0;
    float max_abs_scale = 0;
    for (int ib = 0; ib < QK_K / 16; ++ib) {
        const float scale = make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib, 1, qw ? qw + 16 * ib : nullptr);
        scales[ib] = scale;
        const float abs_scale = std::fabs(scale);
        if (abs_scale > max_abs_scale) {
            max_abs_scale = abs_scale;
            max_scale = scale;
        }
    }

    if (max_abs_scale < kGroupMaxEps) {
        std::memset(&y, 0, sizeof(block_q6_K));
        y.d = fp32_to_fp16(0.f);
        return;
    }

    const float iscale = -128.f / max_scale;
    y.d = fp32_to_fp16(1 / iscale);
    for (int ib = 0; ib < QK_K / 16; ++ib) {
        const int l = nearest_int(iscale * scales[ib]);
        y.scales[ib] = static_cast<int8_t>(l < 127 ? l : 127);
    }
    finish_q6_K(x, y, L);
}

// Copies d, dmin and the packed scales into a Q4_K or Q5_K block.
template <typename Block>
void store_k4_header(const K4Header& h, Block& y) {
    y.d = h.d;
    y.dmin = h.dmin;
    std::memcpy(y.scales, h.scales, K_SCALE_SIZE);
}

}  // namespace

// ---------------------------------------------------------------- shared scale searches

float make_qx_quants(int n, int nmax, const float* x, int8_t* L, int rmse_type, const float* qw) {
    float amax;
    const float max = signed_absmax(x, n, amax);
    if (amax < kGroupMaxEps) {
        for (int i = 0; i < n; ++i) L[i] = 0;
        return 0.f;
    }
    float iscale = static_cast<float>(-nmax) / max;
    if (rmse_type == 0) {
        for (int i = 0; i < n; ++i) {
            const int l = nearest_int(iscale * x[i]);
            L[i] = static_cast<int8_t>(nmax + clamp_i(l, -nmax, nmax - 1));
        }
        return 1 / iscale;
    }
    bool return_early = false;
    if (rmse_type < 0) {
        rmse_type = -rmse_type;
        return_early = true;
    }
    float sumlx = 0;
    float suml2 = 0;
    for (int i = 0; i < n; ++i) {
        int l = nearest_int(iscale * x[i]);
        l = clamp_i(l, -nmax, nmax - 1);
        L[i] = static_cast<int8_t>(l + nmax);
        const float w = qx_weight(qw, rmse_type, x, i);
        sumlx += w * x[i] * static_cast<float>(l);
        suml2 += w * static_cast<float>(l) * static_cast<float>(l);
    }
    float scale = suml2 ? sumlx / suml2 : 0.0f;
    if (return_early) return suml2 > 0 ? 0.5f * (scale + 1 / iscale) : 1 / iscale;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; ++is) {
        if (is == 0) continue;
        iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(is)) / max;
        sumlx = suml2 = 0;
        for (int i = 0; i < n; ++i) {
            int l = nearest_int(iscale * x[i]);
            l = clamp_i(l, -nmax, nmax - 1);
            const float w = qx_weight(qw, rmse_type, x, i);
            sumlx += w * x[i] * static_cast<float>(l);
            suml2 += w * static_cast<float>(l) * static_cast<float>(l);
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; ++i) {
                const int l = nearest_int(iscale * x[i]);
                L[i] = static_cast<int8_t>(nmax + clamp_i(l, -nmax, nmax - 1));
            }
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

float make_q3_quants(int n, int nmax, const float* x, int8_t* L, bool do_rmse) {
    float amax;
    const float max = signed_absmax(x, n, amax);
    if (amax < kGroupMaxEps) {
        for (int i = 0; i < n; ++i) L[i] = 0;
        return 0.f;
    }
    const float iscale = static_cast<float>(-nmax) / max;
    if (do_rmse) {
        float sumlx = 0;
        float suml2 = 0;
        for (int i = 0; i < n; ++i) {
            int l = nearest_int(iscale * x[i]);
            l = clamp_i(l, -nmax, nmax - 1);
            L[i] = static_cast<int8_t>(l);
            const float w = x[i] * x[i];
            sumlx += w * x[i] * static_cast<float>(l);
            suml2 += w * static_cast<float>(l) * static_cast<float>(l);
        }
        for (int itry = 0; itry < 5; ++itry) {
            int n_changed = 0;
            for (int i = 0; i < n; ++i) {
                const float w = x[i] * x[i];
                float slx = sumlx - w * x[i] * static_cast<float>(L[i]);
                if (slx > 0) {
                    float sl2 = suml2 - w * static_cast<float>(L[i]) * static_cast<float>(L[i]);
                    int new_l = nearest_int(x[i] * sl2 / slx);
                    new_l = clamp_i(new_l, -nmax, nmax - 1);
                    if (new_l != L[i]) {
                        slx += w * x[i] * static_cast<float>(new_l);
                        sl2 += w * static_cast<float>(new_l) * static_cast<float>(new_l);
                        if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
                            L[i] = static_cast<int8_t>(new_l);
                            sumlx = slx;
                            suml2 = sl2;
                            ++n_changed;
                        }
                    }
                }
            }
            if (!n_changed) break;
        }
        for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(L[i] + nmax);
        return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
    }
    for (int i = 0; i < n; ++i) {
        int l = nearest_int(iscale * x[i]);
        l = clamp_i(l, -nmax, nmax - 1);
        L[i] = static_cast<int8_t>(l + nmax);
    }
    return 1 / iscale;
}

namespace {

// make_qkx2_quants / make_qkx3_quants, which ggml spells out twice with the same operations:
// weight(i) is element i's weight. ggml tests `max == min` in qkx2 and `max <= min` in qkx3;
// after `if (min > 0) min = 0` max >= min (or both are NaN), so the two tests agree.
template <typename WeightFn>
float qkx_quants(int n, int nmax, const float* x, WeightFn weight, uint8_t* L, float* the_min, uint8_t* Laux,
                 float rmin, float rdelta, int nstep, bool use_mad) {
    float min = x[0];
    float max = x[0];
    float sum_w = weight(0);
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; ++i) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        const float w = weight(i);
        sum_w += w;
        sum_x += w * x[i];
    }
    if (min > 0) min = 0;
    if (max <= min) {
        std::memset(L, 0, static_cast<size_t>(n));
        *the_min = -min;
        return 0.f;
    }
    float iscale = static_cast<float>(nmax) / (max - min);
    float scale = 1 / iscale;
    float best_mad = 0;
    for (int i = 0; i < n; ++i) {
        const int l = nearest_int(iscale * (x[i] - min));
        L[i] = static_cast<uint8_t>(clamp_i(l, 0, nmax));
        float diff = scale * static_cast<float>(L[i]) + min - x[i];
        diff = use_mad ? std::fabs(diff) : diff * diff;
        best_mad += weight(i) * diff;
    }
    if (nstep < 1) {
        *the_min = -min;
        return scale;
    }
    for (int is = 0; is <= nstep; ++is) {
        iscale = (rmin + rdelta * static_cast<float>(is) + static_cast<float>(nmax)) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; ++i) {
            int l = nearest_int(iscale * (x[i] - min));
            l = clamp_i(l, 0, nmax);
            Laux[i] = static_cast<uint8_t>(l);
            const float w = weight(i);
            const float fl = static_cast<float>(l);
            sum_l += w * fl;
            sum_l2 += w * fl * fl;
            sum_xl += w * fl * x[i];
        }
        const float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0) {
                this_min = 0;
                this_scale = sum_xl / sum_l2;
            }
            float mad = 0;
            for (int i = 0; i < n; ++i) {
                float diff = this_scale * static_cast<float>(Laux[i]) + this_min - x[i];
                diff = use_mad ? std::fabs(diff) : diff * diff;
                mad += weight(i) * diff;
            }
            if (mad < best_mad) {
                for (int i = 0; i < n; ++i) L[i] = Laux[i];
                best_mad = mad;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *the_min = -min;
    return scale;
}

}  // namespace

float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* the_min, uint8_t* Laux,
                       float rmin, float rdelta, int nstep, bool use_mad) {
    return qkx_quants(
        n, nmax, x, [weights](int i) { return weights[i]; }, L, the_min, Laux, rmin, rdelta, nstep, use_mad);
}

float make_qkx3_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* the_min, uint8_t* Laux,
                       float rmin, float rdelta, int nstep, bool use_mad) {
    // Weight of element i: the given weight, or x^2.
    auto weight = [weights, x](int i) { return weights ? weights[i] : x[i] * x[i]; };
    return qkx_quants(n, nmax, x, weight, L, the_min, Laux, rmin, rdelta, nstep, use_mad);
}

float make_qp_quants(int n, int nmax, const float* x, uint8_t* L, const float* quant_weights) {
    float max = 0;
    for (int i = 0; i < n; ++i) max = max_f(max, x[i]);
    if (max < kGroupMaxEps) {
        for (int i = 0; i < n; ++i) L[i] = 0;
        return 0.f;
    }
    float iscale = static_cast<float>(nmax) / max;
    for (int i = 0; i < n; ++i) L[i] = static_cast<uint8_t>(nearest_int(iscale * x[i]));
    const float scale = 1 / iscale;
    float best_mse = 0;
    for (int i = 0; i < n; ++i) {
        const float diff = x[i] - scale * static_cast<float>(L[i]);
        best_mse += quant_weights[i] * diff * diff;
    }
    for (int is = -4; is <= 4; ++is) {
        if (is == 0) continue;
        const float iscale_is = (0.1f * static_cast<float>(is) + static_cast<float>(nmax)) / max;
        const float scale_is = 1 / iscale_is;
        float mse = 0;
        for (int i = 0; i < n; ++i) {
            int l = nearest_int(iscale_is * x[i]);
            l = l < nmax ? l : nmax;
            const float diff = x[i] - scale_is * static_cast<float>(l);
            mse += quant_weights[i] * diff * diff;
        }
        if (mse < best_mse) {
            best_mse = mse;
            iscale = iscale_is;
        }
    }
    float sumlx = 0;
    float suml2 = 0;
    for (int i = 0; i < n; ++i) {
        int l = nearest_int(iscale * x[i]);
        l = l < nmax ? l : nmax;
        L[i] = static_cast<uint8_t>(l);
        const float w = quant_weights[i];
        sumlx += w * x[i] * static_cast<float>(l);
        suml2 += w * static_cast<float>(l) * static_cast<float>(l);
    }
    for (int itry = 0; itry < 5; ++itry) {
        int n_changed = 0;
        for (int i = 0; i < n; ++i) {
            const float w = quant_weights[i];
            float slx = sumlx - w * x[i] * static_cast<float>(L[i]);
            float sl2 = suml2 - w * static_cast<float>(L[i]) * static_cast<float>(L[i]);
            if (slx > 0 && sl2 > 0) {
                int new_l = nearest_int(x[i] * sl2 / slx);
                new_l = new_l < nmax ? new_l : nmax;
                if (new_l != L[i]) {
                    slx += w * x[i] * static_cast<float>(new_l);
                    sl2 += w * static_cast<float>(new_l) * static_cast<float>(new_l);
                    if (slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = static_cast<uint8_t>(new_l);
                        sumlx = slx;
                        suml2 = sl2;
                        ++n_changed;
                    }
                }
            }
        }
        if (!n_changed) break;
    }
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

// ---------------------------------------------------------------- chunk entry points

size_t quantize_q2_K(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix) {
    return for_each_block<block_q2_K>(src, dst, nrows, n_per_row, QK_K, imatrix,
                                      [](const float* x, block_q2_K& y, const float* qw) {
                                          if (qw)
                                              q2_K_block_impl(x, y, qw);
                                          else
                                              q2_K_block_ref(x, y);
                                      });
}

size_t quantize_q3_K(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix) {
    return for_each_block<block_q3_K>(src, dst, nrows, n_per_row, QK_K, imatrix,
                                      [](const float* x, block_q3_K& y, const float* qw) {
                                          if (qw)
                                              q3_K_block_impl(x, y, qw);
                                          else
                                              q3_K_block_ref(x, y);
                                      });
}

size_t quantize_q4_K(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix) {
    return for_each_block<block_q4_K>(src, dst, nrows, n_per_row, QK_K, imatrix,
                                      [](const float* x, block_q4_K& y, const float* qw) {
                                          uint8_t L[QK_K];
                                          K4Header h;
                                          if (qw)
                                              k4_block_impl(x, qw, 15, h, L);
                                          else
                                              k4_block_ref(x, 15, -1.f, 0.1f, 20, h, L);
                                          store_k4_header(h, y);
                                          pack_q4_K(L, y.qs);
                                      });
}

size_t quantize_q5_K(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix) {
    return for_each_block<block_q5_K>(src, dst, nrows, n_per_row, QK_K, imatrix,
                                      [](const float* x, block_q5_K& y, const float* qw) {
                                          uint8_t L[QK_K];
                                          K4Header h;
                                          if (qw)
                                              k4_block_impl(x, qw, 31, h, L);
                                          else
                                              k4_block_ref(x, 31, -0.5f, 0.1f, 15, h, L);
                                          store_k4_header(h, y);
                                          pack_q5_K(L, y.qs, y.qh);
                                      });
}

size_t quantize_q6_K(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix) {
    return for_each_block<block_q6_K>(src, dst, nrows, n_per_row, QK_K, imatrix,
                                      [](const float* x, block_q6_K& y, const float* qw) { q6_K_block(x, y, qw); });
}

}  // namespace oiw::quant
