// Values of gguf-requant's and gguf-plan's options as llama-quantize spells them (presets, types,
// REGEX=TYPE rules and rule files), with errors that name the option they came from.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "converters/planner/planner.h"
#include "converters/requant/requant_plan.h"

namespace oiw {

// The preset named `text` (name, alias or ftype number). Throws FormatError(Usage) whose subject
// is `option` and that lists the valid names.
const RequantPreset& preset_arg(std::string_view text, std::string_view option);

// --tensor-type REGEX=TYPE. Throws FormatError(Usage) naming the option and the spec.
TensorTypeRule tensor_type_arg(std::string_view spec);

// A --tensor-type-file: REGEX=TYPE entries separated by whitespace, one or more per line; blank
// lines skipped and '#' where an entry would start begins a comment to the end of the line, so a
// gguf-plan plan file reads as one. Read with
// read_text_file (a regular file, pipe or FIFO of at most kMaxTextFileBytes). Throws FormatError
// naming the file and line.
std::vector<TensorTypeRule> read_tensor_type_file(const std::string& path);

// --plan PLAN as gguf-requant and gguf-convert take it: the plan file read, refused (FormatError(Usage)
// naming --plan) when made with another imatrix than `imatrix_path`, its predicted size dropped when
// the same imatrix comes under another path (the path is a metadata value, so the size differs by
// the header; the types are still checked one by one); its rules start `p.tensor_types` and its
// preset fills `preset` when empty.
PlanFile plan_arg(const std::string& path, const std::string& imatrix_path, PlanOptions& p, std::string& preset);

// `e` with the option that resolves it appended, when it is a tensor whose row length leaves the
// requested type no fallback: "... e.g. --output-tensor-type F16 (or --leave-output-tensor)"
// (output.weight), --token-embedding-type (token_embd.weight) or --tensor-type. Other errors come
// back unchanged.
FormatError with_option_hint(const FormatError& e);

}  // namespace oiw
