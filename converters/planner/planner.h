// gguf-plan: chooses every quantizable tensor's type so that the summed, gain-weighted
// quantization error (measure.h) is minimal within a budget (file size, bits per weight or bytes
// read per decoded token), solved exactly as a multiple-choice knapsack (solve.h).
//
//   measure_plan  which tensors are quantizable (as gguf-requant plans them), their candidate
//                 types, and the error table (the slow part, done once);
//   choose_plan   gains, pins, ties and a budget -> one type per tensor (milliseconds).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "converters/planner/measure.h"
#include "converters/requant/requant.h"
#include "libformat/model.h"

namespace oiw {

struct PlanCandidate {
    size_t input_index = 0;
    std::string name;
    int layer = -1;                 // N of "blk.N.", -1 outside blocks
    std::vector<GgmlType> types;    // candidates the row length allows
    std::vector<double> err;        // measured error per candidate
    std::vector<uint64_t> bytes;    // data bytes per candidate
    std::vector<uint64_t> traffic;  // bytes read per decoded token per candidate (libformat/traffic.h)
};

struct PlanTable {
    std::vector<PlanCandidate> tensors;  // quantizable tensors, in output order
    uint64_t alignment = 32;             // data alignment of the output
    uint64_t fixed_file_bytes = 0;       // output size minus the candidates' padded data
    uint64_t fixed_tensor_bytes = 0;     // data bytes of the tensors copied unchanged
    uint64_t fixed_traffic = 0;          // their bytes per token
    uint64_t n_elements = 0;             // over all tensors (llama.cpp's bpw denominator)
    bool has_imatrix = false;
};

// Candidate types when none are given: Q2_K Q3_K Q4_K Q5_K Q6_K Q8_0 IQ4_XS, and for rows that
// are not a multiple of 256 the 32-blocks Q4_0 Q5_0 Q5_1 IQ4_NL (gguf-requant's fallback types).
std::vector<GgmlType> default_plan_types();

// Plans `in` as gguf-requant would (pure Q8_0, requantizing allowed) to find the quantizable
// tensors and the fixed part of the file (with the imatrix: its quantize.imatrix.* keys, the path
// as given, so gguf-requant must get the same path string); measures every (tensor, candidate type) on all threads.
// `types` empty: default_plan_types() (the 32-block ones only for rows not a multiple of 256).
// `excluded` types are never candidates (gguf-plan --profile: those without a SIMD dot there).
// Throws FormatError for a bad imatrix or a tensor no candidate fits.
// `progress` and `threads` as measure_errors' (converters/planner/measure.h).
PlanTable measure_plan(const Model& in, const std::vector<GgmlType>& types, const std::string& imatrix_path,
                       const std::vector<GgmlType>& excluded = {}, const MeasureProgress& progress = {},
                       unsigned threads = 0);

enum class BudgetKind { FileSize, Bpw, BytesPerToken };
struct PlanBudget {
    BudgetKind kind = BudgetKind::FileSize;
    double value = 0;  // bytes, bits per weight, or bytes per token
};

struct GainRule {
    std::string pattern;  // regex searched in the tensor name
    double gain = 1;
};
// The documented default gains (docs/gguf-plan.md), after which every tensor gets 1.
std::vector<GainRule> default_gains();
// REGEX=GAIN lines ('#' comments, blank lines allowed; blanks around '=' ignored). Throws
// FormatError(Usage) naming the line.
std::vector<GainRule> read_gains_file(const std::string& path);

struct ChooseOptions {
    PlanBudget budget;
    std::vector<GainRule> gains;       // first match wins; default_gains() are tried after these
    std::vector<TensorTypeRule> pins;  // REGEX=TYPE: matching tensors get TYPE (first match wins)
    std::vector<std::string> ties;     // tensors matching one regex within one layer share a type
    std::vector<double> measured;      // parallel to the table (gguf-plan --calibrate): replaces default_gains()
};

struct PlanResult {
    std::vector<GgmlType> type;  // parallel to PlanTable::tensors
    std::vector<double> gain;
    PlanBudget budget;
    uint64_t budget_units = 0;  // the budget as the solver saw it (bytes, or bytes per token)
    uint64_t file_size = 0;     // predicted output size
    double bpw = 0;             // tensor data bits per weight
    uint64_t bytes_per_token = 0;
    double error = 0, lower_bound = 0;  // sum of gain * err, and the Lagrangian bound of it
    uint64_t grid_unit = 1;
    const RequantPreset* preset = nullptr;  // general.file_type: the preset of the most used type
};

// Chooses the types. Throws FormatError(Usage) for an impossible budget, a bad regex, a pin
// whose type is not a candidate of a tensor, or a tie group with no common candidate.
PlanResult choose_plan(const PlanTable& table, const ChooseOptions& opt);

// Summed gain-weighted error of given types (parallel to table.tensors), e.g. a preset's.
double plan_error(const PlanTable& table, const std::vector<double>& gain, const std::vector<GgmlType>& types);

// The plan file: '#' header lines (budget, predicted size, bpw, bytes/token, error, bound, the
// imatrix: "no", or imatrix_id's "xxh3:HASH PATH" passed as `imatrix`, preset), then one
// "^exact\.name$=TYPE" line per tensor (llama-quantize's --tensor-type-file).
std::string format_plan_file(const PlanTable& table, const PlanResult& r, const std::string& imatrix = "");
// An imatrix file as a plan records it: "xxh3:HASH PATH" (HASH of the file's bytes: the same
// imatrix under another path is recognised; PATH escaped, one line). Throws FormatError(Io) when it cannot be read.
std::string imatrix_id(const std::string& path);
std::string format_plan_json(const PlanTable& table, const PlanResult& r);

struct PlanFile {
    std::vector<TensorTypeRule> rules;
    std::vector<std::string> names;  // the exact tensor name of each rule
    uint64_t predicted_size = 0;     // 0 when the header has none
    std::string preset;              // "" when the header has none
    std::string imatrix = "?";       // "# imatrix:": "no", imatrix_id's "xxh3:HASH PATH", or "?" (unrecorded, "yes")
};
// Why `imatrix_path` ("" for none) is not the imatrix `plan` was made with, or "" when it is (same
// bytes under any path) or the plan does not say. Names the plan's file and hash.
std::string plan_imatrix_mismatch(const PlanFile& plan, const std::string& imatrix_path);
// Reads a plan file (read_text_file). Entries must be anchored exact names "^name$=TYPE".
// Throws FormatError(Usage) naming the file and line.
PlanFile read_plan_file(const std::string& path);

// The plan file's content for a result (what read_plan_file returns for format_plan_file's text).
PlanFile plan_file_of(const PlanTable& table, const PlanResult& r);

// gguf-requant's options that execute a plan: its preset (for general.file_type) and its rules.
RequantOptions requant_options_for(const PlanFile& plan, const std::string& imatrix_path);

// What a plan promised against what a conversion planned or wrote: "" when every planned tensor
// (by name) has its planned type and the file has the predicted size (when the plan has one),
// otherwise the first difference, e.g. "tensor 'blk.0.ffn_up.weight' is Q4_K, the plan says Q5_K".
std::string plan_mismatch(const PlanFile& plan, const std::vector<std::pair<std::string, GgmlType>>& types,
                          uint64_t file_size);

}  // namespace oiw
