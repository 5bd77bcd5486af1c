#include "converters/quant/validate.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

#include <fmt/format.h>

#include "libformat/blocks.h"
#include "libformat/error.h"

namespace oiw {
namespace {

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

const char* fp16_special(uint16_t h) { return special<uint16_t>(h, 0x7c00, 0x03ff); }

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
template <typename Bits>
std::string scan_values(std::span<const uint8_t> bytes, Bits exp, Bits man) {
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
template <typename Block, size_t MinOffset>
std::string scan_dm(std::span<const uint8_t> bytes, const char* min_name) {
    const char* const names[2] = {"d", min_name};
    return scan_scales(bytes, sizeof(Block), {offsetof(Block, d), MinOffset}, names);
}

// IQ1_M keeps its fp16 scale in the top nibbles of the four 16-bit words of `scales`.
std::string scan_iq1_m(std::span<const uint8_t> bytes) {
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

std::string scan_q8_k(std::span<const uint8_t> bytes) {
    for (size_t b = 0; b * sizeof(block_q8_K) < bytes.size(); ++b)
        if (const char* s =
                special<uint32_t>(load<uint32_t>(bytes.data() + b * sizeof(block_q8_K) + offsetof(block_q8_K, d)),
                                  0x7f800000u, 0x007fffffu))
            return fmt::format("{} scale d in block {}", s, b);
    return {};
}

std::string scan_mxfp4(std::span<const uint8_t> bytes) {
    for (size_t b = 0; b * sizeof(block_mxfp4) < bytes.size(); ++b)
        if (bytes[b * sizeof(block_mxfp4) + offsetof(block_mxfp4, e)] == 0xff)
            return fmt::format("invalid exponent 0xff in block {}", b);
    return {};
}

}  // namespace

std::string find_invalid_data(GgmlType t, std::span<const uint8_t> bytes) {
    switch (t) {
        case GgmlType::F32: return scan_values<uint32_t>(bytes, 0x7f800000u, 0x007fffffu);
        case GgmlType::F64: return scan_values<uint64_t>(bytes, 0x7ff0000000000000ull, 0x000fffffffffffffull);
        case GgmlType::F16: return scan_values<uint16_t>(bytes, 0x7c00, 0x03ff);
        case GgmlType::BF16: return scan_values<uint16_t>(bytes, 0x7f80, 0x007f);
        case GgmlType::Q4_0: return scan_d<block_q4_0>(bytes);
        case GgmlType::Q4_1: return scan_dm<block_q4_1, offsetof(block_q4_1, m)>(bytes, "m");
        case GgmlType::Q5_0: return scan_d<block_q5_0>(bytes);
        case GgmlType::Q5_1: return scan_dm<block_q5_1, offsetof(block_q5_1, m)>(bytes, "m");
        case GgmlType::Q8_0: return scan_d<block_q8_0>(bytes);
        case GgmlType::Q8_1: return scan_dm<block_q8_1, offsetof(block_q8_1, s)>(bytes, "s");
        case GgmlType::Q2_K: return scan_dm<block_q2_K, offsetof(block_q2_K, dmin)>(bytes, "dmin");
        case GgmlType::Q3_K: return scan_d<block_q3_K>(bytes);
        case GgmlType::Q4_K: return scan_dm<block_q4_K, offsetof(block_q4_K, dmin)>(bytes, "dmin");
        case GgmlType::Q5_K: return scan_dm<block_q5_K, offsetof(block_q5_K, dmin)>(bytes, "dmin");
        case GgmlType::Q6_K: return scan_d<block_q6_K>(bytes);
        case GgmlType::Q8_K: return scan_q8_k(bytes);
        case GgmlType::IQ2_XXS: return scan_d<block_iq2_xxs>(bytes);
        case GgmlType::IQ2_XS: return scan_d<block_iq2_xs>(bytes);
        case GgmlType::IQ2_S: return scan_d<block_iq2_s>(bytes);
        case GgmlType::IQ3_XXS: return scan_d<block_iq3_xxs>(bytes);
        case GgmlType::IQ3_S: return scan_d<block_iq3_s>(bytes);
        case GgmlType::IQ1_S: return scan_d<block_iq1_s>(bytes);
        case GgmlType::IQ1_M: return scan_iq1_m(bytes);
        case GgmlType::IQ4_NL: return scan_d<block_iq4_nl>(bytes);
        case GgmlType::IQ4_XS: return scan_d<block_iq4_xs>(bytes);
        case GgmlType::TQ1_0: return scan_d<block_tq1_0>(bytes);
        case GgmlType::TQ2_0: return scan_d<block_tq2_0>(bytes);
        case GgmlType::Q1_0: return scan_d<block_q1_0>(bytes);
        case GgmlType::MXFP4: return scan_mxfp4(bytes);
        case GgmlType::NVFP4:  // UE4M3 scales: every byte value is valid
        case GgmlType::I8:
        case GgmlType::I16:
        case GgmlType::I32:
        case GgmlType::I64: return {};
    }
    return {};
}

void validate_rows(GgmlType t, std::span<const uint8_t> rows, uint64_t row_bytes, int64_t first_row,
                   const std::string& file, const std::string& tensor, const char* what) {
    for (uint64_t off = 0; off < rows.size(); off += row_bytes) {
        const std::string bad = find_invalid_data(t, rows.subspan(off, row_bytes));
        if (!bad.empty())
            throw FormatError(ErrorKind::BadData, file, "tensor '" + tensor + "'",
                              fmt::format("row {}: {} {} data: {}", first_row + static_cast<int64_t>(off / row_bytes),
                                          what, type_name(t), bad));
    }
}

}  // namespace oiw
