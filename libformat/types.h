// The ggml tensor type table (ggml 0.11): one row per type id, retired ids kept as tombstones.
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>

namespace oiw {

// ggml type ids exactly as stored in GGUF tensor infos.
enum class GgmlType : uint32_t {
    F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3,
    // 4 (Q4_2) and 5 (Q4_3) removed from ggml
    Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9,
    Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15,
    IQ2_XXS = 16, IQ2_XS = 17, IQ3_XXS = 18, IQ1_S = 19, IQ4_NL = 20, IQ3_S = 21, IQ2_S = 22,
    IQ4_XS = 23, I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28, IQ1_M = 29, BF16 = 30,
    // 31..33 (Q4_0_4_4, Q4_0_4_8, Q4_0_8_8) removed from gguf files
    TQ1_0 = 34, TQ2_0 = 35,
    // 36..38 (IQ4_NL_4_4, IQ4_NL_4_8, IQ4_NL_8_8) removed from gguf files
    MXFP4 = 39, NVFP4 = 40, Q1_0 = 41,
};

inline constexpr uint32_t kGgmlTypeCount = 42;

struct TypeTraits {
    std::string_view name;  // ggml's upper-case name ("Q4_K"); tombstones carry the old name
    uint32_t block_size;    // elements per block (0 for tombstones)
    uint32_t type_size;     // bytes per block (0 for tombstones)
    bool quantized;         // block-quantized (not a plain scalar type)
    bool removed;           // retired id: never valid in a file
};

// Row of the table for `id`; ids >= kGgmlTypeCount yield a nullopt.
std::optional<TypeTraits> type_traits(uint32_t id);
// Row of the table for a known type.
const TypeTraits& traits(GgmlType t);
// Name of a known type ("Q4_K").
inline std::string_view type_name(GgmlType t) { return traits(t).name; }
// Parses a ggml type name, case-insensitively ("q4_k", "Q4_K"); removed names yield nullopt.
std::optional<GgmlType> type_from_name(std::string_view name);
// True when `id` names a live (not removed, in range) type.
bool type_id_valid(uint32_t id);
// Bytes of one row of `ne0` elements; ne0 must be a multiple of the block size.
uint64_t row_size(GgmlType t, int64_t ne0);
// Bits per weight of a type (type_size * 8 / block_size).
double type_bpw(GgmlType t);

}  // namespace oiw
