// Lookup tables of ggml's i-quants and fp4 types (ggml-common.h, ggml 0.11), shared by the
// dequantizers and the quantizers. Every table is a verbatim transcription; tests pin their
// structure (value sets, sort order) and the golden dequant outputs pin their contents.
#pragma once
#include <cstdint>

namespace oiw {

inline constexpr int NGRID_IQ1S = 2048;
// Offset added to every IQ1_S / IQ1_M grid value (sign taken from the block's delta bit).
inline constexpr float IQ1S_DELTA = 0.125f;
inline constexpr float IQ1M_DELTA = 0.125f;

// kmask_iq2xs[j] = 1 << j: selects the sign bit of element j of an 8-element group.
extern const uint8_t kmask_iq2xs[8];
// 7 stored sign bits -> 8 sign bits: bit 7 is the parity of the low 7 (even count of minuses).
extern const uint8_t ksigns_iq2xs[128];
// The 16 non-linear IQ4_NL / IQ4_XS levels, ascending.
extern const int8_t kvalues_iq4nl[16];
// E2M1 values doubled (index = 4-bit code, bit 3 = sign), shared by MXFP4 and NVFP4.
extern const int8_t kvalues_mxfp4[16];

// Grids of 8 unsigned byte magnitudes per entry, little-endian (byte i = element i).
//   iq2 grids: bytes in {0x08, 0x19, 0x2b}      iq1s grid: signed bytes in {-1, 0, +1}
extern const uint64_t iq2xxs_grid[256];
extern const uint64_t iq2xs_grid[512];
extern const uint64_t iq2s_grid[1024];
extern const uint64_t iq1s_grid[NGRID_IQ1S];
// Grids of 4 byte magnitudes per entry.
//   iq3xxs: bytes in {4, 12, 20, 28, 36, 44, 52, 62}   iq3s: bytes in {1, 3, 5, ..., 15}
extern const uint32_t iq3xxs_grid[256];
extern const uint32_t iq3s_grid[512];

}  // namespace oiw
