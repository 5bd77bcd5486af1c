// gguf-plan --calibrate: per-tensor gains measured through the reference forward pass
// (converters/eval/) instead of the documented heuristic ones. For each quantizable tensor i the
// model runs on the calibration text with only tensor i quantized, to its probe type p_i (the
// candidate with the largest measured error: the largest perturbation, so the signal stands well
// above float noise), and
//
//     gain_i = KLD_i / err_i(p_i)
//
// KLD_i: mean KL divergence of the next-token distributions from the unquantized model's, over
// llama-perplexity's scored positions (second half of each chunk); err_i: the error table's
// importance-weighted relative error (measure.h). gain_i * err_i(t) then estimates the KL divergence
// type t alone adds, and the plan's objective, sum_i gain_i * err_i(t_i), the plan's KL divergence
// (additive to first order; docs/gguf-plan.md has the evidence).
//
// The pass runs in exact semantics (f32 activations: what the weights alone do). Each probe resumes
// from the unquantized model's stored input of the tensor's layer, so a tensor of layer L costs
// n_layer - L layers per chunk (token_embd: all of them; output: the head alone).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "converters/planner/planner.h"
#include "libformat/model.h"

namespace oiw {

struct CalibrateOptions {
    int64_t ctx = 128;   // tokens per chunk (BOS first, as gguf-eval)
    int64_t chunks = 4;  // at most this many chunks of the text
    int threads = 1;     // matmul threads
};

struct Calibration {
    std::vector<double> gain;     // parallel to PlanTable::tensors
    std::vector<double> kld;      // KLD_i at the probe type
    std::vector<GgmlType> probe;  // p_i
    int64_t chunks = 0, scored = 0;
};

// Called after each probe from the calling thread: probes done and in all, the tensor just measured.
using CalibrateProgress = std::function<void(size_t done, size_t total, const std::string& tensor)>;

// Measures the gains of `table`'s tensors on `text` tokenized by `in`'s vocabulary. `in` must be a
// model the forward pass knows (eval::known_architectures()); `imatrix` as gguf-requant quantizes
// with it. Throws FormatError for a model the pass cannot run, text shorter than one chunk (naming
// the count), or a non-finite logit.
Calibration calibrate(const Model& in, const PlanTable& table, const std::string& text,
                      const std::map<std::string, std::vector<float>>& imatrix, const CalibrateOptions& o,
                      const CalibrateProgress& progress = {});

// The cache of a calibration (a sidecar beside the error table's): key = XXH3 of the error table's
// key, the text's bytes and the options; gains as hexadecimal floats (exact round trip).
std::string calibration_key(const std::string& errtable_key, const std::string& text, const CalibrateOptions& o);
std::string format_calibration(const Calibration& c, const PlanTable& table, const std::string& key);
// nullopt unless `text` is a well-formed cache for `key` and `table`'s tensors.
std::optional<Calibration> parse_calibration(const std::string& text, const PlanTable& table, const std::string& key);

}  // namespace oiw
