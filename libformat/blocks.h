// One packed struct per ggml block type (layouts of ggml-common.h), each size pinned by static_assert.
// Half-precision fields are raw IEEE-754 binary16 bits (see fp16.h).
#pragma once
#include <cstdint>

namespace oiw {

inline constexpr int QK4_0 = 32, QK4_1 = 32, QK5_0 = 32, QK5_1 = 32, QK8_0 = 32, QK8_1 = 32;
inline constexpr int QK_K = 256, K_SCALE_SIZE = 12, QK4_NL = 32, QK_MXFP4 = 32, QK_NVFP4 = 64, QK1_0 = 128;

#pragma pack(push, 1)
// One block struct per line, a table to read down:
// clang-format off
// Q4_0: x = d * (q - 8); qs[j] low nibble = element j, high nibble = element j + 16.
struct block_q4_0 { uint16_t d; uint8_t qs[QK4_0 / 2]; };
// Q4_1: x = d * q + m.
struct block_q4_1 { uint16_t d; uint16_t m; uint8_t qs[QK4_1 / 2]; };
// Q5_0: 5th bit of element j in bit j of qh (little-endian u32); x = d * (q - 16).
struct block_q5_0 { uint16_t d; uint8_t qh[4]; uint8_t qs[QK5_0 / 2]; };
struct block_q5_1 { uint16_t d; uint16_t m; uint8_t qh[4]; uint8_t qs[QK5_1 / 2]; };
struct block_q8_0 { uint16_t d; int8_t qs[QK8_0]; };
// Q8_1: s = d * sum(qs).
struct block_q8_1 { uint16_t d; uint16_t s; int8_t qs[QK8_1]; };

// K-quants: 256-element super-blocks.
struct block_q2_K { uint8_t scales[QK_K / 16]; uint8_t qs[QK_K / 4]; uint16_t d; uint16_t dmin; };
struct block_q3_K { uint8_t hmask[QK_K / 8]; uint8_t qs[QK_K / 4]; uint8_t scales[12]; uint16_t d; };
//  Q4_K/Q5_K scales[12]: 8 six-bit scales + 8 six-bit mins, packed
//  j<4 : sc = scales[j] & 63,          m = scales[j+4] & 63
//  j>=4: sc = (scales[j+4] & 0xF) | ((scales[j-4] >> 6) << 4)
//        m  = (scales[j+4] >>  4) | ((scales[j]   >> 6) << 4)
struct block_q4_K { uint16_t d; uint16_t dmin; uint8_t scales[K_SCALE_SIZE]; uint8_t qs[QK_K / 2]; };
struct block_q5_K { uint16_t d; uint16_t dmin; uint8_t scales[K_SCALE_SIZE]; uint8_t qh[QK_K / 8]; uint8_t qs[QK_K / 2]; };
struct block_q6_K { uint8_t ql[QK_K / 2]; uint8_t qh[QK_K / 4]; int8_t scales[QK_K / 16]; uint16_t d; };
struct block_q8_K { float d; int8_t qs[QK_K]; int16_t bsums[QK_K / 16]; };

// i-quants.
struct block_iq2_xxs { uint16_t d; uint16_t qs[QK_K / 8]; };
struct block_iq2_xs { uint16_t d; uint16_t qs[QK_K / 8]; uint8_t scales[QK_K / 32]; };
struct block_iq2_s { uint16_t d; uint8_t qs[QK_K / 4]; uint8_t qh[QK_K / 32]; uint8_t scales[QK_K / 32]; };
struct block_iq3_xxs { uint16_t d; uint8_t qs[3 * QK_K / 8]; };
struct block_iq3_s { uint16_t d; uint8_t qs[QK_K / 4]; uint8_t qh[QK_K / 32]; uint8_t signs[QK_K / 8]; uint8_t scales[QK_K / 64]; };
struct block_iq1_s { uint16_t d; uint8_t qs[QK_K / 8]; uint16_t qh[QK_K / 32]; };
struct block_iq1_m { uint8_t qs[QK_K / 8]; uint8_t qh[QK_K / 16]; uint8_t scales[QK_K / 32]; };
struct block_iq4_nl { uint16_t d; uint8_t qs[QK4_NL / 2]; };
struct block_iq4_xs { uint16_t d; uint16_t scales_h; uint8_t scales_l[QK_K / 64]; uint8_t qs[QK_K / 2]; };

// Ternary and fp4 types.
struct block_tq1_0 { uint8_t qs[(QK_K - 4 * QK_K / 64) / 5]; uint8_t qh[QK_K / 64]; uint16_t d; };
struct block_tq2_0 { uint8_t qs[QK_K / 4]; uint16_t d; };
struct block_mxfp4 { uint8_t e; uint8_t qs[QK_MXFP4 / 2]; };
struct block_nvfp4 { uint8_t d[QK_NVFP4 / 16]; uint8_t qs[QK_NVFP4 / 2]; };
struct block_q1_0 { uint16_t d; uint8_t qs[QK1_0 / 8]; };

// Q4_Kx8 (ggml-cpu repack.h block_q4_Kx8, built by repack.cpp make_block_q4_Kx8): the 256-wide
// block column x of 8 consecutive Q4_K rows. d[r], dmin[r] of row r; scales[12k .. 12k+11] holds
// sub-block k's 6-bit scale and min of the 8 rows, packed the way Q4_K packs its 8 sub-blocks
// (row r in the place of sub-block r); qs chunk i of IL bytes (IL = 8 on x86, 4 on ARM) holds
// row i % 8's quant bytes (i / 8) * IL .. + IL.
struct block_q4_Kx8 { uint16_t d[8]; uint16_t dmin[8]; uint8_t scales[96]; uint8_t qs[1024]; };
// clang-format on
#pragma pack(pop)

// The 12-byte scales field of Q4_K and Q5_K (and each 12-byte group of Q4_Kx8): eight 6-bit
// scales s0..s7 and mins m0..m7 of the eight 32-weight sub-blocks.
//   byte  0..3  : s0..s3 in bits 0-5, bits 4-5 of s4..s7 in bits 6-7
//   byte  4..7  : m0..m3 in bits 0-5, bits 4-5 of m4..m7 in bits 6-7
//   byte  8..11 : s4..s7 bits 0-3 in bits 0-3, m4..m7 bits 0-3 in bits 4-7
// ggml's get_scale_min_k4: scale *sc and min *m of sub-block j (0..7).
inline void get_scale_min_k4(int j, const uint8_t* q, uint8_t* sc, uint8_t* m) {
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        *m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

static_assert(sizeof(block_q4_0) == 18 && sizeof(block_q4_1) == 20);
static_assert(sizeof(block_q5_0) == 22 && sizeof(block_q5_1) == 24);
static_assert(sizeof(block_q8_0) == 34 && sizeof(block_q8_1) == 36);
static_assert(sizeof(block_q2_K) == 84 && sizeof(block_q3_K) == 110);
static_assert(sizeof(block_q4_K) == 144 && sizeof(block_q5_K) == 176);
static_assert(sizeof(block_q6_K) == 210 && sizeof(block_q8_K) == 292);
static_assert(sizeof(block_iq2_xxs) == 66 && sizeof(block_iq2_xs) == 74 && sizeof(block_iq2_s) == 82);
static_assert(sizeof(block_iq3_xxs) == 98 && sizeof(block_iq3_s) == 110);
static_assert(sizeof(block_iq1_s) == 50 && sizeof(block_iq1_m) == 56);
static_assert(sizeof(block_iq4_nl) == 18 && sizeof(block_iq4_xs) == 136);
static_assert(sizeof(block_tq1_0) == 54 && sizeof(block_tq2_0) == 66);
static_assert(sizeof(block_q4_Kx8) == 1152);
static_assert(sizeof(block_mxfp4) == 17 && sizeof(block_nvfp4) == 36 && sizeof(block_q1_0) == 18);

}  // namespace oiw
