// What a plan would write, without writing it: the header gguf-requant --plan would produce,
// opened as a Model so that gguf-inspect's diff and HTML report show the planned types.
#pragma once
#include <string>

#include "converters/planner/planner.h"
#include "libformat/model.h"

namespace oiw {

// The output of `gguf-requant IN OUT --plan` for `plan` (and `imatrix_path`, whose keys the
// output's metadata carries) as a Model: metadata and tensor infos exactly as that output's header,
// tensor bytes all zero (a sparse temporary file of the predicted size, unlinked once mapped, so
// nothing is left behind). Throws FormatError as prepare_requant does, or when the plan's
// predicted size disagrees with the planned header.
Model plan_preview(const Model& in, const PlanFile& plan, const std::string& imatrix_path);

}  // namespace oiw
