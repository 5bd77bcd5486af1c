#include "libformat/ftype.h"

#include <array>
#include <cctype>
#include <utility>

namespace oiw {
namespace {

// llama.cpp include/llama.h (commit 1348f67): enum llama_ftype.
constexpr std::array<std::pair<uint32_t, std::string_view>, 36> kFtypes = {{
    {0, "ALL_F32"},          {1, "MOSTLY_F16"},        {2, "MOSTLY_Q4_0"},      {3, "MOSTLY_Q4_1"},
    {7, "MOSTLY_Q8_0"},      {8, "MOSTLY_Q5_0"},       {9, "MOSTLY_Q5_1"},      {10, "MOSTLY_Q2_K"},
    {11, "MOSTLY_Q3_K_S"},   {12, "MOSTLY_Q3_K_M"},    {13, "MOSTLY_Q3_K_L"},   {14, "MOSTLY_Q4_K_S"},
    {15, "MOSTLY_Q4_K_M"},   {16, "MOSTLY_Q5_K_S"},    {17, "MOSTLY_Q5_K_M"},   {18, "MOSTLY_Q6_K"},
    {19, "MOSTLY_IQ2_XXS"},  {20, "MOSTLY_IQ2_XS"},    {21, "MOSTLY_Q2_K_S"},   {22, "MOSTLY_IQ3_XS"},
    {23, "MOSTLY_IQ3_XXS"},  {24, "MOSTLY_IQ1_S"},     {25, "MOSTLY_IQ4_NL"},   {26, "MOSTLY_IQ3_S"},
    {27, "MOSTLY_IQ3_M"},    {28, "MOSTLY_IQ2_S"},     {29, "MOSTLY_IQ2_M"},    {30, "MOSTLY_IQ4_XS"},
    {31, "MOSTLY_IQ1_M"},    {32, "MOSTLY_BF16"},      {36, "MOSTLY_TQ1_0"},    {37, "MOSTLY_TQ2_0"},
    {38, "MOSTLY_MXFP4_MOE"}, {39, "MOSTLY_NVFP4"},    {40, "MOSTLY_Q1_0"},     {kFtypeGuessed, "GUESSED"},
}};

bool iequal(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (std::toupper(static_cast<unsigned char>(a[i])) != std::toupper(static_cast<unsigned char>(b[i]))) return false;
    return true;
}

std::string_view strip_prefix(std::string_view s) {
    for (std::string_view p : {"MOSTLY_", "ALL_"})
        if (s.size() > p.size() && iequal(s.substr(0, p.size()), p)) return s.substr(p.size());
    return s;
}

}  // namespace

std::string_view ftype_name(uint32_t ftype) {
    if (ftype != kFtypeGuessed) ftype &= ~kFtypeGuessed;
    for (const auto& [id, name] : kFtypes)
        if (id == ftype) return name;
    return {};
}

std::optional<uint32_t> ftype_from_name(std::string_view name) {
    for (const auto& [id, full] : kFtypes)
        if (iequal(name, full) || iequal(strip_prefix(name), strip_prefix(full))) return id;
    return std::nullopt;
}

}  // namespace oiw
