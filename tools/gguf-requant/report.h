// gguf-requant reports: the per-tensor plan and totals, as text or JSON.
#pragma once
#include <optional>
#include <string>

#include "converters/requant/requant.h"
#include "tools/gguf-requant/options.h"

namespace oiw::requant_cli {

// Batch-1 decode bytes read per token by the planned output (traffic::analyze's traffic model:
// embedding lookups read one row, expert tensors expert_used/expert_count of their bytes).
double planned_bytes_per_token(const RequantJob& job);

// The plan (--dry-run) or the result of a conversion (`seconds` set) as text lines.
std::string text_report(const ToolOptions& o, const RequantJob& job, std::optional<double> seconds);
// The files this run wrote (one, or the shards it wrote) and their bytes, as summary_line says it.
std::string summary(const ToolOptions& o, const RequantJob& job, double seconds);
// The same as one JSON document.
std::string json_report(const ToolOptions& o, const RequantJob& job, std::optional<double> seconds);

}  // namespace oiw::requant_cli
