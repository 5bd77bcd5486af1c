// llama.cpp's `general.file_type` values (enum llama_ftype in include/llama.h, commit 1348f67):
// the "mostly" type a converter or llama-quantize was asked for. One table, shared by
// gguf-inspect (names in reports) and the requantizer (its presets are rows of this table).
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>

namespace oiw {

enum class LlamaFtype : uint32_t {
    ALL_F32 = 0,
    MOSTLY_F16 = 1,
    MOSTLY_Q4_0 = 2,
    MOSTLY_Q4_1 = 3,
    // 4 (MOSTLY_Q4_1_SOME_F16), 5 (Q4_2) and 6 (Q4_3) removed
    MOSTLY_Q8_0 = 7,
    MOSTLY_Q5_0 = 8,
    MOSTLY_Q5_1 = 9,
    MOSTLY_Q2_K = 10,
    MOSTLY_Q3_K_S = 11,
    MOSTLY_Q3_K_M = 12,
    MOSTLY_Q3_K_L = 13,
    MOSTLY_Q4_K_S = 14,
    MOSTLY_Q4_K_M = 15,
    MOSTLY_Q5_K_S = 16,
    MOSTLY_Q5_K_M = 17,
    MOSTLY_Q6_K = 18,
    MOSTLY_IQ2_XXS = 19,
    MOSTLY_IQ2_XS = 20,
    MOSTLY_Q2_K_S = 21,
    MOSTLY_IQ3_XS = 22,
    MOSTLY_IQ3_XXS = 23,
    MOSTLY_IQ1_S = 24,
    MOSTLY_IQ4_NL = 25,
    MOSTLY_IQ3_S = 26,
    MOSTLY_IQ3_M = 27,
    MOSTLY_IQ2_S = 28,
    MOSTLY_IQ2_M = 29,
    MOSTLY_IQ4_XS = 30,
    MOSTLY_IQ1_M = 31,
    MOSTLY_BF16 = 32,
    // 33..35 (MOSTLY_Q4_0_4_4, _4_8, _8_8) removed
    MOSTLY_TQ1_0 = 36,
    MOSTLY_TQ2_0 = 37,
    MOSTLY_MXFP4_MOE = 38,
    MOSTLY_NVFP4 = 39,
    MOSTLY_Q1_0 = 40,
    GUESSED = 1024,  // bit llama.cpp ORs into a file type it guessed rather than read
};

// Bit llama.cpp ORs into a file type it guessed rather than read (LLAMA_FTYPE_GUESSED).
inline constexpr uint32_t kFtypeGuessed = static_cast<uint32_t>(LlamaFtype::GUESSED);

struct FtypeInfo {
    LlamaFtype id;
    std::string_view name;  // the enumerator without LLAMA_FTYPE_ ("MOSTLY_Q4_K_M")
};

inline constexpr FtypeInfo kFtypes[] = {
    {LlamaFtype::ALL_F32, "ALL_F32"},
    {LlamaFtype::MOSTLY_F16, "MOSTLY_F16"},
    {LlamaFtype::MOSTLY_Q4_0, "MOSTLY_Q4_0"},
    {LlamaFtype::MOSTLY_Q4_1, "MOSTLY_Q4_1"},
    {LlamaFtype::MOSTLY_Q8_0, "MOSTLY_Q8_0"},
    {LlamaFtype::MOSTLY_Q5_0, "MOSTLY_Q5_0"},
    {LlamaFtype::MOSTLY_Q5_1, "MOSTLY_Q5_1"},
    {LlamaFtype::MOSTLY_Q2_K, "MOSTLY_Q2_K"},
    {LlamaFtype::MOSTLY_Q3_K_S, "MOSTLY_Q3_K_S"},
    {LlamaFtype::MOSTLY_Q3_K_M, "MOSTLY_Q3_K_M"},
    {LlamaFtype::MOSTLY_Q3_K_L, "MOSTLY_Q3_K_L"},
    {LlamaFtype::MOSTLY_Q4_K_S, "MOSTLY_Q4_K_S"},
    {LlamaFtype::MOSTLY_Q4_K_M, "MOSTLY_Q4_K_M"},
    {LlamaFtype::MOSTLY_Q5_K_S, "MOSTLY_Q5_K_S"},
    {LlamaFtype::MOSTLY_Q5_K_M, "MOSTLY_Q5_K_M"},
    {LlamaFtype::MOSTLY_Q6_K, "MOSTLY_Q6_K"},
    {LlamaFtype::MOSTLY_IQ2_XXS, "MOSTLY_IQ2_XXS"},
    {LlamaFtype::MOSTLY_IQ2_XS, "MOSTLY_IQ2_XS"},
    {LlamaFtype::MOSTLY_Q2_K_S, "MOSTLY_Q2_K_S"},
    {LlamaFtype::MOSTLY_IQ3_XS, "MOSTLY_IQ3_XS"},
    {LlamaFtype::MOSTLY_IQ3_XXS, "MOSTLY_IQ3_XXS"},
    {LlamaFtype::MOSTLY_IQ1_S, "MOSTLY_IQ1_S"},
    {LlamaFtype::MOSTLY_IQ4_NL, "MOSTLY_IQ4_NL"},
    {LlamaFtype::MOSTLY_IQ3_S, "MOSTLY_IQ3_S"},
    {LlamaFtype::MOSTLY_IQ3_M, "MOSTLY_IQ3_M"},
    {LlamaFtype::MOSTLY_IQ2_S, "MOSTLY_IQ2_S"},
    {LlamaFtype::MOSTLY_IQ2_M, "MOSTLY_IQ2_M"},
    {LlamaFtype::MOSTLY_IQ4_XS, "MOSTLY_IQ4_XS"},
    {LlamaFtype::MOSTLY_IQ1_M, "MOSTLY_IQ1_M"},
    {LlamaFtype::MOSTLY_BF16, "MOSTLY_BF16"},
    {LlamaFtype::MOSTLY_TQ1_0, "MOSTLY_TQ1_0"},
    {LlamaFtype::MOSTLY_TQ2_0, "MOSTLY_TQ2_0"},
    {LlamaFtype::MOSTLY_MXFP4_MOE, "MOSTLY_MXFP4_MOE"},
    {LlamaFtype::MOSTLY_NVFP4, "MOSTLY_NVFP4"},
    {LlamaFtype::MOSTLY_Q1_0, "MOSTLY_Q1_0"},
    {LlamaFtype::GUESSED, "GUESSED"},
};

// The name without its "MOSTLY_" / "ALL_" prefix ("Q4_K_M", "F32"), as llama-quantize names its
// presets; empty for ids llama.cpp does not define.
constexpr std::string_view ftype_short_name(LlamaFtype f) {
    for (const FtypeInfo& r : kFtypes) {
        if (r.id != f) continue;
        for (std::string_view p : {"MOSTLY_", "ALL_"})
            if (r.name.starts_with(p)) return r.name.substr(p.size());
        return r.name;
    }
    return {};
}

// "MOSTLY_Q4_K_M" for 15, "ALL_F32" for 0; empty for ids llama.cpp does not define
// (retired ids 4-6 and 33-35 included). The GUESSED bit is ignored.
std::string_view ftype_name(uint32_t ftype);
// Inverse of ftype_name, case-insensitive; the "MOSTLY_"/"ALL_" prefix is optional
// ("q4_k_m", "MOSTLY_Q4_K_M", "f32" all work).
std::optional<uint32_t> ftype_from_name(std::string_view name);

}  // namespace oiw
