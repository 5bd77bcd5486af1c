// Runtime profiles: per ggml type, whether a runtime has a SIMD dot product for it and whether it
// repacks it. Data files in inspect/profiles/<name>.profile (format in docs/gguf-inspect.md),
// installed to <prefix>/share/oiw/profiles.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "libformat/types.h"

namespace oiw::inspect {

inline constexpr std::string_view kDefaultProfile = "ggml-x86-avx2";

enum class Dot : uint8_t {
    Simd,         // "yes": a vectorised dot product / matmul kernel
    Scalar,       // "no": runs, through a scalar loop
    Unsupported,  // "unsupported": the runtime cannot multiply by this type at all
};

struct ProfileEntry {
    GgmlType type = GgmlType::F32;
    Dot dot = Dot::Scalar;
    std::string repack;  // packed layout ("Q4_Kx8"), empty when the type is not repacked
    std::string cite;    // where in the runtime's source this was read
};

struct Profile {
    std::string name;          // "ggml-x86-avx2"
    std::string runtime;       // what it describes
    std::string version;       // the runtime version the entries were read from
    std::string source;        // source files consulted
    std::string path;          // file it was loaded from ("" for parse_profile)
    uint32_t repack_rows = 8;  // rows repacked together (tensor ne[1] must be a multiple)
    std::array<std::optional<ProfileEntry>, kGgmlTypeCount> entries;  // by type id

    const ProfileEntry* entry(GgmlType t) const {
        const auto& e = entries[static_cast<size_t>(t)];
        return e ? &*e : nullptr;
    }
};

// Parses profile text; `origin` names it in errors. Throws FormatError(Usage) naming the line.
Profile parse_profile(std::string_view text, const std::string& origin);
// Loads a profile by name (looked up as <profile_dir()>/<name>.profile) or by path (anything
// containing '/' or ending in ".profile"), read with read_text_file (a regular file of at most
// kMaxTextFileBytes).
Profile load_profile(const std::string& name_or_path);
// Directory searched by load_profile: $OIW_PROFILE_DIR if set, else ../share/oiw/profiles from
// the running binary's directory (<prefix>/bin -> <prefix>/share/oiw/profiles; the build tree
// has the same layout).
std::string profile_dir();
// Names of the profiles in profile_dir(), sorted.
std::vector<std::string> profile_names();

}  // namespace oiw::inspect
