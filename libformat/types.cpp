#include "libformat/types.h"

#include <array>
#include <cctype>

namespace oiw {
namespace {

constexpr TypeTraits live(std::string_view n, uint32_t bs, uint32_t ts, bool q) { return {n, bs, ts, q, false}; }
constexpr TypeTraits dead(std::string_view n) { return {n, 0, 0, true, true}; }

// Indexed by ggml type id. Sizes as ggml-common.h block structs.
constexpr std::array<TypeTraits, kGgmlTypeCount> kTable = {{
    live("F32", 1, 4, false),      // 0
    live("F16", 1, 2, false),      // 1
    live("Q4_0", 32, 18, true),    // 2
    live("Q4_1", 32, 20, true),    // 3
    dead("Q4_2"),                  // 4
    dead("Q4_3"),                  // 5
    live("Q5_0", 32, 22, true),    // 6
    live("Q5_1", 32, 24, true),    // 7
    live("Q8_0", 32, 34, true),    // 8
    live("Q8_1", 32, 36, true),    // 9
    live("Q2_K", 256, 84, true),   // 10
    live("Q3_K", 256, 110, true),  // 11
    live("Q4_K", 256, 144, true),  // 12
    live("Q5_K", 256, 176, true),  // 13
    live("Q6_K", 256, 210, true),  // 14
    live("Q8_K", 256, 292, true),  // 15
    live("IQ2_XXS", 256, 66, true),  // 16
    live("IQ2_XS", 256, 74, true),   // 17
    live("IQ3_XXS", 256, 98, true),  // 18
    live("IQ1_S", 256, 50, true),    // 19
    live("IQ4_NL", 32, 18, true),    // 20
    live("IQ3_S", 256, 110, true),   // 21
    live("IQ2_S", 256, 82, true),    // 22
    live("IQ4_XS", 256, 136, true),  // 23
    live("I8", 1, 1, false),         // 24
    live("I16", 1, 2, false),        // 25
    live("I32", 1, 4, false),        // 26
    live("I64", 1, 8, false),        // 27
    live("F64", 1, 8, false),        // 28
    live("IQ1_M", 256, 56, true),    // 29
    live("BF16", 1, 2, false),       // 30
    dead("Q4_0_4_4"),                // 31
    dead("Q4_0_4_8"),                // 32
    dead("Q4_0_8_8"),                // 33
    live("TQ1_0", 256, 54, true),    // 34
    live("TQ2_0", 256, 66, true),    // 35
    dead("IQ4_NL_4_4"),              // 36
    dead("IQ4_NL_4_8"),              // 37
    dead("IQ4_NL_8_8"),              // 38
    live("MXFP4", 32, 17, true),     // 39
    live("NVFP4", 64, 36, true),     // 40
    live("Q1_0", 128, 18, true),     // 41
}};

bool iequal(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (std::toupper(static_cast<unsigned char>(a[i])) != std::toupper(static_cast<unsigned char>(b[i])))
            return false;
    return true;
}

}  // namespace

std::optional<TypeTraits> type_traits(uint32_t id) {
    if (id >= kGgmlTypeCount) return std::nullopt;
    return kTable[id];
}

const TypeTraits& traits(GgmlType t) { return kTable.at(static_cast<uint32_t>(t)); }

std::optional<GgmlType> type_from_name(std::string_view name) {
    for (uint32_t id = 0; id < kGgmlTypeCount; ++id)
        if (!kTable[id].removed && iequal(kTable[id].name, name)) return static_cast<GgmlType>(id);
    return std::nullopt;
}

bool type_id_valid(uint32_t id) { return id < kGgmlTypeCount && !kTable[id].removed; }

uint64_t row_size(GgmlType t, int64_t ne0) {
    const TypeTraits& tt = traits(t);
    return static_cast<uint64_t>(ne0) / tt.block_size * tt.type_size;
}

double type_bpw(GgmlType t) {
    const TypeTraits& tt = traits(t);
    return 8.0 * tt.type_size / tt.block_size;
}

}  // namespace oiw
