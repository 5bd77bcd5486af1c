// gguf-plan's measurement: per (tensor, candidate type), the importance-weighted relative error
// of quantizing and dequantizing the tensor's rows,
//     err = mean over sampled rows of  sum_j w_j (x_j - q(x)_j)^2 / sum_j w_j x_j^2,
// with w_j the imatrix value of column j (the mean of the squared activation; per expert for 3-D
// tensors), or 1 without an imatrix. Quantization uses the same imatrix, as gguf-requant does.
// Sample: every row of a matrix (one expert's slice for 3-D tensors) with at most
// kPlanSampleRows rows; otherwise kPlanSampleRows rows evenly spaced (row i * n / kPlanSampleRows),
// so the sample is fixed and reproducible.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "libformat/model.h"

namespace oiw {

inline constexpr int64_t kPlanSampleRows = 256;

struct MeasureTask {
    size_t input_index = 0;       // tensor in the model
    std::vector<GgmlType> types;  // candidate types (the row length must allow each)
};

// Called after each (tensor, type) measurement, from one thread at a time: measurements done and
// in all, sampled weights done and in all, and the tensor just measured.
using MeasureProgress = std::function<void(size_t done, size_t total, uint64_t weights_done, uint64_t weights_total,
                                           const std::string& tensor)>;

// err[t][k] for tasks[t].types[k], measured on `threads` threads (0: all cores). `imatrix` maps
// tensor names to ne0 * n_matrices weights (entries of another size are a FormatError naming the tensor).
std::vector<std::vector<double>> measure_errors(const Model& model, const std::vector<MeasureTask>& tasks,
                                                const std::map<std::string, std::vector<float>>& imatrix,
                                                const MeasureProgress& progress = {}, unsigned threads = 0);

// The error of one tensor at one type (the same computation, single-threaded).
double measure_error(const Model& model, size_t input_index, GgmlType type, const std::vector<float>* imatrix);

}  // namespace oiw
