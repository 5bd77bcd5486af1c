// gguf-plan's sidecar cache of the error table (PlanTable), so that re-planning the same input for
// another budget skips the measurement. Text: a first line "oiw-errtable 2 KEY", then the table
// (doubles in hexadecimal floating point, so they round-trip exactly; tensor names as escape_text
// writes them, so a name never adds a line).
#pragma once
#include <optional>
#include <string>
#include <vector>

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

// The sidecar at `path` as text, or nullopt when there is none. It is opened without following a
// symlink (a planted link would make a default run read and write elsewhere) and must be a
// regular file that gguf-plan wrote (first bytes "oiw-errtable "), never anything else a user
// keeps under that name. Throws FormatError(Usage) naming the path otherwise, Io when unreadable.
std::optional<std::string> read_errtable_sidecar(const std::string& path);

}  // namespace oiw
