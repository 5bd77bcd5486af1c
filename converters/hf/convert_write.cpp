#include "converters/hf/convert.h"

#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "libformat/error.h"
#include "libformat/fp16.h"
#include "libformat/gguf/gguf.h"

namespace oiw::hf {

namespace {

// Source element i of a tensor as float (F32, F16 or BF16, little-endian).
float element(const uint8_t* p, Dtype d, uint64_t i) {
    if (d == Dtype::F32) {
        float f;
        std::memcpy(&f, p + 4 * i, 4);
        return f;
    }
    uint16_t h;
    std::memcpy(&h, p + 2 * i, 2);
    return d == Dtype::F16 ? fp16_to_fp32(h) : bf16_to_fp32(h);
}

// Output row r's source row under LlamaModel.permute: rows (head, pair half j, i) are read as
// (head, i, j), i.e. the two halves of each head's rows interleaved.
uint64_t source_row(uint64_t r, uint64_t rows, int64_t heads) {
    if (heads == 0) return r;
    const uint64_t per_head = rows / static_cast<uint64_t>(heads), half = per_head / 2;
    const uint64_t h = r / per_head, within = r % per_head, i = within / 2, j = within % 2;
    return h * per_head + j * half + i;
}

}  // namespace

void write_convert(const ConvertPlan& plan, const std::string& out) {
    std::vector<std::string> inputs;
    for (const PlannedTensor& t : plan.tensors) inputs.push_back(t.source.part->path());
    GgufWriter w(out, inputs);
    w.set_kvs(plan.kvs);
    for (const PlannedTensor& t : plan.tensors) w.add_tensor(t.name, t.type, t.ne);
    std::vector<uint8_t> buf;
    for (const PlannedTensor& t : plan.tensors) {
        const Tensor& src = *t.source.tensor;
        const uint8_t* p = t.source.part->bytes(src).data();
        const uint64_t cols = static_cast<uint64_t>(t.ne[0]), rows = src.elements / std::max<uint64_t>(cols, 1);
        buf.resize(row_size(t.type, t.ne[0]));
        for (uint64_t r = 0; r < rows; ++r) {
            const uint64_t base = source_row(r, rows, t.permute_heads) * cols;
            for (uint64_t c = 0; c < cols; ++c) {
                const float x = element(p, src.dtype, base + c);
                if (!std::isfinite(x))
                    throw FormatError(ErrorKind::BadData, t.source.part->path(), "tensor '" + src.name + "'",
                                      fmt::format("non-finite value {} at element {}", x, base + c));
                if (t.type == GgmlType::F32)
                    std::memcpy(buf.data() + 4 * c, &x, 4);
                else {
                    const uint16_t h = t.type == GgmlType::F16 ? fp32_to_fp16(x) : fp32_to_bf16(x);
                    std::memcpy(buf.data() + 2 * c, &h, 2);
                }
            }
            w.write_tensor_data(buf);
        }
        t.source.part->release(src);
    }
    w.finish();
}

}  // namespace oiw::hf
