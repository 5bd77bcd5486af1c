// llama.cpp's `general.file_type` values (enum llama_ftype in include/llama.h): the "mostly"
// type a converter or llama-quantize was asked for. Shared by gguf-inspect and the requantizer.
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>

namespace oiw {

// Bit llama.cpp ORs into a file type it guessed rather than read (LLAMA_FTYPE_GUESSED).
inline constexpr uint32_t kFtypeGuessed = 1024;

// "MOSTLY_Q4_K_M" for 15, "ALL_F32" for 0; empty for ids llama.cpp does not define
// (retired ids 4-6 and 33-35 included). The GUESSED bit is ignored.
std::string_view ftype_name(uint32_t ftype);
// Inverse of ftype_name, case-insensitive; the "MOSTLY_"/"ALL_" prefix is optional
// ("q4_k_m", "MOSTLY_Q4_K_M", "f32" all work).
std::optional<uint32_t> ftype_from_name(std::string_view name);

}  // namespace oiw
