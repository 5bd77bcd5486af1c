#include "libformat/types.h"

#include "libformat/names.h"

namespace oiw {

std::optional<TypeTraits> type_traits(uint32_t id) {
    if (id >= kGgmlTypeCount) return std::nullopt;
    return kTypeTraits[id];
}

const TypeTraits& traits(GgmlType t) { return kTypeTraits.at(static_cast<uint32_t>(t)); }

std::optional<GgmlType> type_from_name(std::string_view name) {
    const TypeTraits* row = find_by_name(
        kTypeTraits, name, [](const TypeTraits& r) { return r.name; }, [](const TypeTraits& r) { return !r.removed; });
    if (!row) return std::nullopt;
    return row->id;
}

bool type_id_valid(uint32_t id) { return id < kGgmlTypeCount && !kTypeTraits[id].removed; }

uint64_t row_size(GgmlType t, int64_t ne0) {
    const TypeTraits& tt = traits(t);
    return static_cast<uint64_t>(ne0) / tt.block_size * tt.type_size;
}

double type_bpw(GgmlType t) {
    const TypeTraits& tt = traits(t);
    return 8.0 * tt.type_size / tt.block_size;
}

}  // namespace oiw
