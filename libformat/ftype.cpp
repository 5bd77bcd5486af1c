#include "libformat/ftype.h"

#include "libformat/names.h"

namespace oiw {
namespace {

std::string_view strip_prefix(std::string_view s) {
    for (std::string_view p : {"MOSTLY_", "ALL_"})
        if (s.size() > p.size() && iequals(s.substr(0, p.size()), p)) return s.substr(p.size());
    return s;
}

}  // namespace

std::string_view ftype_name(uint32_t ftype) {
    if (ftype != kFtypeGuessed) ftype &= ~kFtypeGuessed;
    for (const FtypeInfo& r : kFtypes)
        if (static_cast<uint32_t>(r.id) == ftype) return r.name;
    return {};
}

std::optional<uint32_t> ftype_from_name(std::string_view name) {
    const FtypeInfo* row = find_by_name(kFtypes, name, [](const FtypeInfo& r) { return r.name; });
    if (!row) row = find_by_name(kFtypes, strip_prefix(name), [](const FtypeInfo& r) { return strip_prefix(r.name); });
    if (!row) return std::nullopt;
    return static_cast<uint32_t>(row->id);
}

}  // namespace oiw
