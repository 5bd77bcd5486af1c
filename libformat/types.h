// The ggml tensor type table (ggml 0.11.1, ggml.c type_traits and ggml-cpu.c type_traits_cpu):
// one constexpr row per type id, retired ids kept as tombstones. Bytes per block come from the
// block structs of blocks.h. Adding a type: its id here, its row in kTypeTraits, its struct in
// blocks.h, its row in the kernel table (converters/quant/kernels.cpp) and, where ggml-cpu has a
// vec_dot, its integer dot (converters/matmul/reference.cpp); docs/design.md lists the rest.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "libformat/blocks.h"

namespace oiw {

// ggml type ids exactly as stored in GGUF tensor infos.
enum class GgmlType : uint32_t {
    F32 = 0,
    F16 = 1,
    Q4_0 = 2,
    Q4_1 = 3,
    // 4 (Q4_2) and 5 (Q4_3) removed from ggml
    Q5_0 = 6,
    Q5_1 = 7,
    Q8_0 = 8,
    Q8_1 = 9,
    Q2_K = 10,
    Q3_K = 11,
    Q4_K = 12,
    Q5_K = 13,
    Q6_K = 14,
    Q8_K = 15,
    IQ2_XXS = 16,
    IQ2_XS = 17,
    IQ3_XXS = 18,
    IQ1_S = 19,
    IQ4_NL = 20,
    IQ3_S = 21,
    IQ2_S = 22,
    IQ4_XS = 23,
    I8 = 24,
    I16 = 25,
    I32 = 26,
    I64 = 27,
    F64 = 28,
    IQ1_M = 29,
    BF16 = 30,
    // 31..33 (Q4_0_4_4, Q4_0_4_8, Q4_0_8_8) removed from gguf files
    TQ1_0 = 34,
    TQ2_0 = 35,
    // 36..38 (IQ4_NL_4_4, IQ4_NL_4_8, IQ4_NL_8_8) removed from gguf files
    MXFP4 = 39,
    NVFP4 = 40,
    Q1_0 = 41,
};

struct TypeTraits {
    GgmlType id;            // the row's own id (the table is indexed by it)
    std::string_view name;  // ggml's upper-case name ("Q4_K"); tombstones carry the old name
    uint32_t block_size;    // elements per block (0 for tombstones)
    uint32_t type_size;     // bytes per block (0 for tombstones)
    bool quantized;         // block-quantized (not a plain scalar type)
    bool removed;           // retired id: never valid in a file
    // ggml-cpu's vec_dot_type: the type activations are converted to for a dot product with this
    // type (Q8_0 for Q4_0, Q8_K for the K-quants); nullopt when ggml-cpu has none for it.
    std::optional<GgmlType> vec_dot_type;
};

namespace detail {
using T = GgmlType;
constexpr TypeTraits scalar(T id, std::string_view n, uint32_t bytes, std::optional<T> dot) {
    return {id, n, 1, bytes, false, false, dot};
}
template <typename Block>
constexpr TypeTraits blocks(T id, std::string_view n, uint32_t block_size, std::optional<T> dot) {
    return {id, n, block_size, sizeof(Block), true, false, dot};
}
constexpr TypeTraits dead(uint32_t id, std::string_view n) { return {T(id), n, 0, 0, true, true, std::nullopt}; }
constexpr auto none = std::nullopt;
}  // namespace detail

// Indexed by ggml type id.
inline constexpr auto kTypeTraits = [] {
    using namespace detail;
    return std::array{
        scalar(T::F32, "F32", 4, T::F32),
        scalar(T::F16, "F16", 2, T::F16),
        blocks<block_q4_0>(T::Q4_0, "Q4_0", QK4_0, T::Q8_0),
        blocks<block_q4_1>(T::Q4_1, "Q4_1", QK4_1, T::Q8_1),
        dead(4, "Q4_2"),
        dead(5, "Q4_3"),
        blocks<block_q5_0>(T::Q5_0, "Q5_0", QK5_0, T::Q8_0),
        blocks<block_q5_1>(T::Q5_1, "Q5_1", QK5_1, T::Q8_1),
        blocks<block_q8_0>(T::Q8_0, "Q8_0", QK8_0, T::Q8_0),
        blocks<block_q8_1>(T::Q8_1, "Q8_1", QK8_1, T::Q8_1),
        blocks<block_q2_K>(T::Q2_K, "Q2_K", QK_K, T::Q8_K),
        blocks<block_q3_K>(T::Q3_K, "Q3_K", QK_K, T::Q8_K),
        blocks<block_q4_K>(T::Q4_K, "Q4_K", QK_K, T::Q8_K),
        blocks<block_q5_K>(T::Q5_K, "Q5_K", QK_K, T::Q8_K),
        blocks<block_q6_K>(T::Q6_K, "Q6_K", QK_K, T::Q8_K),
        blocks<block_q8_K>(T::Q8_K, "Q8_K", QK_K, none),
        blocks<block_iq2_xxs>(T::IQ2_XXS, "IQ2_XXS", QK_K, T::Q8_K),
        blocks<block_iq2_xs>(T::IQ2_XS, "IQ2_XS", QK_K, T::Q8_K),
        blocks<block_iq3_xxs>(T::IQ3_XXS, "IQ3_XXS", QK_K, T::Q8_K),
        blocks<block_iq1_s>(T::IQ1_S, "IQ1_S", QK_K, T::Q8_K),
        blocks<block_iq4_nl>(T::IQ4_NL, "IQ4_NL", QK4_NL, T::Q8_0),
        blocks<block_iq3_s>(T::IQ3_S, "IQ3_S", QK_K, T::Q8_K),
        blocks<block_iq2_s>(T::IQ2_S, "IQ2_S", QK_K, T::Q8_K),
        blocks<block_iq4_xs>(T::IQ4_XS, "IQ4_XS", QK_K, T::Q8_K),
        scalar(T::I8, "I8", 1, none),
        scalar(T::I16, "I16", 2, none),
        scalar(T::I32, "I32", 4, none),
        scalar(T::I64, "I64", 8, none),
        scalar(T::F64, "F64", 8, none),
        blocks<block_iq1_m>(T::IQ1_M, "IQ1_M", QK_K, T::Q8_K),
        scalar(T::BF16, "BF16", 2, T::BF16),
        dead(31, "Q4_0_4_4"),
        dead(32, "Q4_0_4_8"),
        dead(33, "Q4_0_8_8"),
        blocks<block_tq1_0>(T::TQ1_0, "TQ1_0", QK_K, T::Q8_K),
        blocks<block_tq2_0>(T::TQ2_0, "TQ2_0", QK_K, T::Q8_K),
        dead(36, "IQ4_NL_4_4"),
        dead(37, "IQ4_NL_4_8"),
        dead(38, "IQ4_NL_8_8"),
        blocks<block_mxfp4>(T::MXFP4, "MXFP4", QK_MXFP4, T::Q8_0),
        blocks<block_nvfp4>(T::NVFP4, "NVFP4", QK_NVFP4, T::Q8_0),
        blocks<block_q1_0>(T::Q1_0, "Q1_0", QK1_0, T::Q8_0),
    };
}();

// Number of ggml type ids (GGML_TYPE_COUNT), tombstones included.
inline constexpr uint32_t kGgmlTypeCount = static_cast<uint32_t>(kTypeTraits.size());

static_assert(
    [] {
        for (uint32_t i = 0; i < kGgmlTypeCount; ++i)
            if (static_cast<uint32_t>(kTypeTraits[i].id) != i) return false;
        return true;
    }(),
    "kTypeTraits rows must be in type id order");

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
