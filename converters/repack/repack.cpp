#include "converters/repack/repack.h"

#include "libformat/blocks.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "libformat/fp16.h"

namespace oiw {

namespace {

// Packs 8 six-bit (scale, min) pairs into 12 bytes (the layout in blocks.h), the inverse of get_scale_min_k4.
void put_scales_mins(const uint8_t* sc, const uint8_t* m, uint8_t* q) {
    for (int j = 0; j < 4; ++j) {
        q[j] = static_cast<uint8_t>((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
        q[j + 4] = static_cast<uint8_t>((m[j] & 63) | ((m[j + 4] >> 4) << 6));
        q[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0xF) | ((m[j + 4] & 0xF) << 4));
    }
}

// make_block_q4_Kx8: scales[12k..12k+11] packs sub-block k's (scale, min) of the 8 rows the way
// Q4_K packs its 8 sub-blocks (row r in the place of sub-block r); qs interleaves the rows'
// quants `il` bytes at a time (chunk i comes from row i % 8, bytes (i / 8) * il ..).
template <int il>
void make_x8(const block_q4_K* const in[8], block_q4_Kx8& out) {
    for (int r = 0; r < 8; ++r) {
        out.d[r] = in[r]->d;
        out.dmin[r] = in[r]->dmin;
    }
    for (int i = 0; i < 1024 / il; ++i) std::memcpy(out.qs + i * il, in[i % 8]->qs + (i / 8) * il, il);
    for (int k = 0; k < 8; ++k) {
        uint8_t sc[8], m[8];
        for (int r = 0; r < 8; ++r) get_scale_min_k4(k, in[r]->scales, &sc[r], &m[r]);
        put_scales_mins(sc, m, out.scales + 12 * k);
    }
}

template <int il>
void split_x8(const block_q4_Kx8& in, block_q4_K* const out[8]) {
    for (int r = 0; r < 8; ++r) {
        out[r]->d = in.d[r];
        out[r]->dmin = in.dmin[r];
    }
    for (int i = 0; i < 1024 / il; ++i) std::memcpy(out[i % 8]->qs + (i / 8) * il, in.qs + i * il, il);
    uint8_t sc[8][8], m[8][8];  // [row][sub-block]
    for (int k = 0; k < 8; ++k)
        for (int r = 0; r < 8; ++r) get_scale_min_k4(r, in.scales + 12 * k, &sc[r][k], &m[r][k]);
    for (int r = 0; r < 8; ++r) put_scales_mins(sc[r], m[r], out[r]->scales);
}

template <int il>
void repack_x8(const block_q4_K* src, block_q4_Kx8* dst, int64_t rows, int64_t nb) {
    for (int64_t g = 0; g < rows / 8; ++g)
        for (int64_t x = 0; x < nb; ++x) {
            const block_q4_K* in[8];
            for (int r = 0; r < 8; ++r) in[r] = src + (g * 8 + r) * nb + x;
            make_x8<il>(in, dst[g * nb + x]);
        }
}

template <int il>
void unpack_x8(const block_q4_Kx8* src, block_q4_K* dst, int64_t rows, int64_t nb) {
    for (int64_t g = 0; g < rows / 8; ++g)
        for (int64_t x = 0; x < nb; ++x) {
            block_q4_K* out[8];
            for (int r = 0; r < 8; ++r) out[r] = dst + (g * 8 + r) * nb + x;
            split_x8<il>(src[g * nb + x], out);
        }
}

}  // namespace

void repack_q4_k_to_q4_kx8(const block_q4_K* src, block_q4_Kx8* dst, int64_t rows, int64_t nb, int interleave) {
    if (interleave == 4)
        repack_x8<4>(src, dst, rows, nb);
    else
        repack_x8<8>(src, dst, rows, nb);
}

void unpack_q4_kx8_to_q4_k(const block_q4_Kx8* src, block_q4_K* dst, int64_t rows, int64_t nb, int interleave) {
    if (interleave == 4)
        unpack_x8<4>(src, dst, rows, nb);
    else
        unpack_x8<8>(src, dst, rows, nb);
}

void q4_0_to_oiw4(const block_q4_0* src, uint8_t* qs, float* d, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        std::memcpy(qs + 16 * i, src[i].qs, 16);
        d[i] = fp16_to_fp32(src[i].d);
    }
}

float oiw4_to_q4_0(const uint8_t* qs, const float* d, block_q4_0* dst, int64_t n) {
    float max_err = 0;
    for (int64_t i = 0; i < n; ++i) {
        dst[i].d = fp32_to_fp16(d[i]);
        std::memcpy(dst[i].qs, qs + 16 * i, 16);
        const float err = std::fabs(d[i] - fp16_to_fp32(dst[i].d));
        if (err > max_err) max_err = err;  // NaN scales stay NaN in fp16: not an error
    }
    return max_err;
}

void quantize_oiw4(const float* x, uint8_t* qs, float* d, int64_t n) {
    for (int64_t i = 0; i < n; ++i, x += 32) {
        float amax = 0, max = 0;
        for (int j = 0; j < 32; ++j)
            if (amax < std::fabs(x[j])) {
                amax = std::fabs(x[j]);
                max = x[j];
            }
        const float di = max / -8;
        const float id = di ? 1.0f / di : 0.0f;
        d[i] = di;
        for (int j = 0; j < 16; ++j) {
            const int q0 = std::min(15, static_cast<int>(static_cast<int8_t>(x[j] * id + 8.5f)));
            const int q1 = std::min(15, static_cast<int>(static_cast<int8_t>(x[16 + j] * id + 8.5f)));
            qs[16 * i + j] = static_cast<uint8_t>(q0 | (q1 << 4));
        }
    }
}

}  // namespace oiw
