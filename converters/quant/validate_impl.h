// The validation column of the kernel table (kernels.h `find_invalid`): ggml's
// ggml_validate_row_data (ggml-quants.c) split into one scanner per kind of block. Each takes
// whole blocks of its type and describes the first invalid value ("NaN at element 5", "inf scale d
// in block 2"), or returns an empty string. Internal to converters/quant: kernels.cpp names one
// scanner in each type's row; callers use find_invalid_data / validate_rows (validate.h).
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>

#include <fmt/format.h>

#include "libformat/blocks.h"

namespace oiw::quant::valid {

template <typename T>
T load(const uint8_t* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// Special values of a binary floating-point format with exponent mask `exp` and mantissa mask
// `man` (all exponent bits set: inf when the mantissa is zero, NaN otherwise).
template <typename Bits>
const char* special(Bits v, Bits exp, Bits man) {
    if ((v & exp) != exp) return nullptr;
    return (v & man) ? "NaN" : "inf";
}

inline const char* fp16_special(uint16_t h) { return special<uint16_t>(h, 0x7c00, 0x03ff); }

// True when one of the kChunk values at `p` has all exponent bits set: a fixed trip count and
// no early exit, so the compiler vectorizes it (the common, all-valid case).
constexpr size_t kChunk = 256;
template <typename Bits>
bool chunk_has_special(const uint8_t* p, Bits exp) {
    Bits hit = 0;
    for (size_t i = 0; i < kChunk; ++i) hit |= static_cast<Bits>((load<Bits>(p + i * sizeof(Bits)) & exp) == exp);
    return hit != 0;
}

// Element values of a float type (F16/BF16/F32/F64): whole chunks are screened branch-free, then
// a chunk that has a special value (and the tail) is searched element by element.
template <typename Bits, Bits exp, Bits man>
std::string scan_values(std::span<const uint8_t> bytes) {
    const size_t n = bytes.size() / sizeof(Bits);
    for (size_t c = 0; c < n; c += kChunk) {
        if (c + kChunk <= n && !chunk_has_special<Bits>(bytes.data() + c * sizeof(Bits), exp)) continue;
        for (size_t i = c; i < std::min(n, c + kChunk); ++i)
            if (const char* s = special<Bits>(load<Bits>(bytes.data() + i * sizeof(Bits)), exp, man))
                return fmt::format("{} at element {}", s, i);
    }
    return {};
}

// fp16 fields at byte offsets `offs` of each block of `block_bytes`.
template <size_t N>
std::string scan_scales(std::span<const uint8_t> bytes, size_t block_bytes, const size_t (&offs)[N],
                        const char* const (&names)[N]) {
    for (size_t b = 0; b * block_bytes < bytes.size(); ++b)
        for (size_t k = 0; k < N; ++k)
            if (const char* s = fp16_special(load<uint16_t>(bytes.data() + b * block_bytes + offs[k])))
                return fmt::format("{} scale {} in block {}", s, names[k], b);
    return {};
}

template <typename Block>
std::string scan_d(std::span<const uint8_t> bytes) {
    return scan_scales(bytes, sizeof(Block), {offsetof(Block, d)}, {"d"});
}
template <typename Block, size_t MinOffset, const char* MinName>
std::string scan_dm(std::span<const uint8_t> bytes) {
    const char* const names[2] = {"d", MinName};
    return scan_scales(bytes, sizeof(Block), {offsetof(Block, d), MinOffset}, names);
}

// IQ1_M keeps its fp16 scale in the top nibbles of the four 16-bit words of `scales`.
inline std::string scan_iq1_m(std::span<const uint8_t> bytes) {
    for (size_t b = 0; b * sizeof(block_iq1_m) < bytes.size(); ++b) {
        const uint8_t* sc = bytes.data() + b * sizeof(block_iq1_m) + offsetof(block_iq1_m, scales);
        const uint16_t s0 = load<uint16_t>(sc), s1 = load<uint16_t>(sc + 2), s2 = load<uint16_t>(sc + 4),
                       s3 = load<uint16_t>(sc + 6);
        const uint16_t h =
            static_cast<uint16_t>((s0 >> 12) | ((s1 >> 8) & 0x00f0) | ((s2 >> 4) & 0x0f00) | (s3 & 0xf000));
        if (const char* s = fp16_special(h)) return fmt::format("{} scale in block {}", s, b);
    }
    return {};
}

inline std::string scan_q8_k(std::span<const uint8_t> bytes) {
    for (size_t b = 0; b * sizeof(block_q8_K) < bytes.size(); ++b)
        if (const char* s =
                special<uint32_t>(load<uint32_t>(bytes.data() + b * sizeof(block_q8_K) + offsetof(block_q8_K, d)),
                                  0x7f800000u, 0x007fffffu))
            return fmt::format("{} scale d in block {}", s, b);
    return {};
}

inline std::string scan_mxfp4(std::span<const uint8_t> bytes) {
    for (size_t b = 0; b * sizeof(block_mxfp4) < bytes.size(); ++b)
        if (bytes[b * sizeof(block_mxfp4) + offsetof(block_mxfp4, e)] == 0xff)
            return fmt::format("invalid exponent 0xff in block {}", b);
    return {};
}

// F32, F64, F16 and BF16 values: all exponent bits set is inf or NaN.
inline constexpr auto scan_f32 = scan_values<uint32_t, 0x7f800000u, 0x007fffffu>;
inline constexpr auto scan_f64 = scan_values<uint64_t, 0x7ff0000000000000ull, 0x000fffffffffffffull>;
inline constexpr auto scan_f16 = scan_values<uint16_t, 0x7c00, 0x03ff>;
inline constexpr auto scan_bf16 = scan_values<uint16_t, 0x7f80, 0x007f>;

// Blocks with a second fp16 field: Q4_1/Q5_1's m, Q8_1's s, the K-quants' dmin.
inline constexpr char kM[] = "m", kS[] = "s", kDmin[] = "dmin";
template <typename Block>
inline constexpr auto scan_d_m = scan_dm<Block, offsetof(Block, m), kM>;
template <typename Block>
inline constexpr auto scan_d_s = scan_dm<Block, offsetof(Block, s), kS>;
template <typename Block>
inline constexpr auto scan_d_dmin = scan_dm<Block, offsetof(Block, dmin), kDmin>;

// Types whose every bit pattern is a valid value (integers; NVFP4's UE4M3 scales).
inline std::string nothing_to_check(std::span<const uint8_t>) { return {}; }

}  // namespace oiw::quant::valid
