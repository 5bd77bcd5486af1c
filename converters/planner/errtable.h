// gguf-plan's sidecar cache of the error table (PlanTable), so that re-planning the same input for
// another budget skips the measurement. Text: a first line "oiw-errtable 1 KEY", then the table
// (doubles in hexadecimal floating point, so they round-trip exactly).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "converters/planner/measure.h"
#include "converters/planner/planner.h"

namespace oiw {

// The cache key of a measurement: XXH3 of the input's size and header bytes (metadata and tensor
// infos), the candidate and excluded types, the imatrix path as given and the imatrix file's bytes.
std::string errtable_key(const Model& in, const std::vector<GgmlType>& types, const std::string& imatrix_path,
                         const std::vector<GgmlType>& excluded);

std::string format_errtable(const PlanTable& table, const std::string& key);
// The table when `text` is a well-formed cache for `key`, else nullopt (a stale or damaged cache
// is measured again, never an error).
std::optional<PlanTable> parse_errtable(const std::string& text, const std::string& key);

}  // namespace oiw
