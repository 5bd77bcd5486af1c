// Slow-path audit: what in a model makes batch-1 decode slow on a given runtime profile.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "inspect/profile.h"
#include "libformat/model.h"
#include "libformat/traffic.h"

namespace oiw::inspect {

enum class FlagKind {
    NoSimdDot,    // matmul weights whose type has only a scalar dot product in the runtime
    Unsupported,  // matmul weights whose type the runtime cannot multiply at all
    RowNot256,    // row length not a multiple of 256: K-quants impossible
    FloatMatmul,  // F32/F16/BF16 matrices on the matmul path (routers, lm_head, ...)
    NoRepack,     // repackable type whose row count is not a multiple of repack_rows
    LmHeadShare,  // lm_head above 15% of bytes/token
};
// Stable identifier used in JSON: "no-simd-dot", "unsupported", "row-not-256", "float-matmul",
// "no-repack", "lm-head-share".
std::string_view flag_id(FlagKind k);

// Thresholds (documented in docs/gguf-inspect.md).
inline constexpr double kLmHeadShareLimit = 0.15;     // lm-head-share fires above this
inline constexpr double kFloatMatmulMinShare = 0.01;  // float-matmul fires from this share on

struct Flag {
    FlagKind kind = FlagKind::NoSimdDot;
    std::string subject;           // "Q5_0", "row 576", "routers", "lm_head"
    std::string message;           // one line: what and how much
    std::string suggestion;        // one line: what to change
    std::string cite;              // profile evidence ("" when not from the profile)
    uint64_t bytes_per_token = 0;  // traffic of the affected tensors
    double share = 0;              // bytes_per_token / total bytes per token
    std::vector<size_t> tensors;   // affected tensor indices
};

// Flags in a fixed order: by kind (enum order), then by bytes per token, largest first.
std::vector<Flag> audit(const Model& f, const traffic::Analysis& a, const Profile& p);

}  // namespace oiw::inspect
