#include "tools/common/split_cli.h"

#include <charconv>

#include <fmt/format.h>

#include "libformat/error.h"

namespace oiw {

uint64_t parse_split_size(std::string_view s, const std::string& option) {
    uint64_t n = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    uint64_t unit = 1;
    const std::string_view rest(p, s.data() + s.size() - p);
    if (rest == "K")
        unit = 1000;
    else if (rest == "M")
        unit = 1000 * 1000;
    else if (rest == "G")
        unit = 1000 * 1000 * 1000;
    else if (rest == "T")
        unit = 1000ull * 1000 * 1000 * 1000;
    else if (!rest.empty())
        ec = std::errc::invalid_argument;
    if (ec != std::errc() || n == 0 || n > UINT64_MAX / unit)
        throw FormatError(
            ErrorKind::Usage, "", option + " '" + std::string(s) + "'",
            "expected a positive whole number of bytes, optionally with K, M, G or T (decimal: 4G = 4000000000)");
    return n * unit;
}

void parse_shard(std::string_view s, SplitOptions& opt) {
    unsigned k = 0, n = 0;
    const char *b = s.data(), *e = b + s.size();
    auto r1 = std::from_chars(b, e, k);
    bool ok = r1.ec == std::errc() && r1.ptr < e && *r1.ptr == '/';
    if (ok) {
        auto r2 = std::from_chars(r1.ptr + 1, e, n);
        ok = r2.ec == std::errc() && r2.ptr == e && k >= 1 && k <= n && n <= kMaxShards;
    }
    if (!ok)
        throw FormatError(ErrorKind::Usage, "", "--shard '" + std::string(s) + "'",
                          fmt::format("expected K/N with 1 <= K <= N <= {}", kMaxShards));
    opt.shard = k;
    opt.shards = n;
}

}  // namespace oiw
