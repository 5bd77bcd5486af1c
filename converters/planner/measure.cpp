#include "converters/planner/measure.h"

#include <algorithm>
#include <mutex>
#include <numeric>

#include <fmt/format.h>

#include "converters/quant/quants.h"
#include "libformat/parallel.h"

namespace oiw {

double measure_error(const Model& model, size_t input_index, GgmlType type, const std::vector<float>* imatrix) {
    const GgufTensorInfo& t = model.tensors().at(input_index);
    const int64_t ne0 = t.ne[0], n_mat = t.ne[2] * t.ne[3], per_mat = t.ne[1];
    if (imatrix && static_cast<int64_t>(imatrix->size()) != ne0 * n_mat)
        throw FormatError(ErrorKind::Usage, "", "tensor '" + t.name + "'",
                          fmt::format("imatrix entry has {} values, expected {}", imatrix->size(), ne0 * n_mat));
    const auto data = model.tensor_data(input_index);
    const uint64_t src_row = row_size(t.type, ne0);
    std::vector<float> x(static_cast<size_t>(ne0)), y(static_cast<size_t>(ne0));
    std::vector<uint8_t> q(row_size(type, ne0));
    const int64_t n_sample = std::min(per_mat, kPlanSampleRows);
    double sum = 0;
    for (int64_t m = 0; m < n_mat; ++m) {
        const float* w = imatrix ? imatrix->data() + m * ne0 : nullptr;
        for (int64_t s = 0; s < n_sample; ++s) {
            const int64_t row = m * per_mat + s * per_mat / n_sample;
            const uint8_t* src = data.data() + static_cast<uint64_t>(row) * src_row;
            dequantize_row(t.type, src, x.data(), ne0);  // F32 rows: a copy
            quantize_chunk(type, x.data(), q.data(), 1, ne0, w);
            dequantize_row(type, q.data(), y.data(), ne0);
            double num = 0, den = 0;
            for (int64_t j = 0; j < ne0; ++j) {
                const double wj = w ? w[j] : 1.0, e = static_cast<double>(x[j]) - y[j];
                num += wj * e * e;
                den += wj * static_cast<double>(x[j]) * x[j];
            }
            sum += den > 0 ? num / den : 0;
        }
    }
    return sum / static_cast<double>(n_mat * n_sample);
}

std::vector<std::vector<double>> measure_errors(const Model& model, const std::vector<MeasureTask>& tasks,
                                                const std::map<std::string, std::vector<float>>& imatrix,
                                                const MeasureProgress& progress, unsigned threads) {
    std::vector<std::pair<size_t, size_t>> jobs;  // (task, type index)
    std::vector<uint64_t> weight;
    std::vector<std::vector<double>> err(tasks.size());
    for (size_t i = 0; i < tasks.size(); ++i) {
        const GgufTensorInfo& t = model.tensors().at(tasks[i].input_index);
        err[i].resize(tasks[i].types.size());
        for (size_t k = 0; k < tasks[i].types.size(); ++k) {
            jobs.emplace_back(i, k);
            weight.push_back(static_cast<uint64_t>(t.ne[0] * t.ne[2] * t.ne[3] * std::min(t.ne[1], kPlanSampleRows)));
        }
    }
    const uint64_t weights_total = std::accumulate(weight.begin(), weight.end(), uint64_t{0});
    std::mutex mu;
    size_t done = 0;
    uint64_t weights_done = 0;
    parallel_for(
        jobs.size(), weight,
        [&](size_t j) {
            const auto [i, k] = jobs[j];
            const std::string& name = model.tensors()[tasks[i].input_index].name;
            const auto it = imatrix.find(name);
            err[i][k] = measure_error(model, tasks[i].input_index, tasks[i].types[k],
                                      it == imatrix.end() ? nullptr : &it->second);
            if (!progress) return;
            std::lock_guard lock(mu);
            weights_done += weight[j];
            progress(++done, jobs.size(), weights_done, weights_total, name);
        },
        threads);
    return err;
}

}  // namespace oiw
