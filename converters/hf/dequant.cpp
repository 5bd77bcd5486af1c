#include "converters/hf/dequant.h"

#include <array>
#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "libformat/error.h"
#include "libformat/fp16.h"

namespace oiw::hf {
namespace {

// float8_e4m3fn byte b as float:  s eeee mmm
//   e = 0:        (-1)^s * m/8 * 2^-6          (subnormal)
//   e = 1..15:    (-1)^s * (1 + m/8) * 2^(e-7)  (e = 15, m = 7: NaN; there is no infinity)
float e4m3_value(uint8_t b) {
    const int e = (b >> 3) & 15, m = b & 7;
    if (e == 15 && m == 7) return std::numeric_limits<float>::quiet_NaN();
    const float mag =
        e == 0 ? std::ldexp(static_cast<float>(m) / 8.0f, -6) : std::ldexp(1.0f + static_cast<float>(m) / 8.0f, e - 7);
    return (b & 0x80) ? -mag : mag;
}

struct Tables {
    std::array<float, 256> e4m3{}, e5m2{};
};

const Tables& tables() {
    static const Tables t = [] {
        Tables x;
        for (int b = 0; b < 256; ++b) {
            x.e4m3[static_cast<size_t>(b)] = e4m3_value(static_cast<uint8_t>(b));
            x.e5m2[static_cast<size_t>(b)] = fp16_to_fp32(static_cast<uint16_t>(b << 8));  // E5M2 = F16's top byte
        }
        return x;
    }();
    return t;
}

}  // namespace

bool decodable(Dtype d) {
    return d == Dtype::F32 || d == Dtype::F16 || d == Dtype::BF16 || d == Dtype::F8E4M3 || d == Dtype::F8E5M2 ||
           d == Dtype::I8;
}

float decode_element(const uint8_t* p, Dtype d, uint64_t i) {
    switch (d) {
        case Dtype::F32: {
            float f;
            std::memcpy(&f, p + 4 * i, 4);
            return f;
        }
        case Dtype::F16:
        case Dtype::BF16: {
            uint16_t h;
            std::memcpy(&h, p + 2 * i, 2);
            return d == Dtype::F16 ? fp16_to_fp32(h) : bf16_to_fp32(h);
        }
        case Dtype::F8E4M3: return tables().e4m3[p[i]];
        case Dtype::F8E5M2: return tables().e5m2[p[i]];
        case Dtype::I8: return static_cast<float>(static_cast<int8_t>(p[i]));
        default: return std::numeric_limits<float>::quiet_NaN();  // not decodable: callers check first
    }
}

void decode_run(const uint8_t* p, Dtype d, float* f, size_t n) {
    if (d == Dtype::F8E4M3 || d == Dtype::F8E5M2) {
        const std::array<float, 256>& t = d == Dtype::F8E4M3 ? tables().e4m3 : tables().e5m2;
        for (size_t j = 0; j < n; ++j) f[j] = t[p[j]];
        return;
    }
    for (size_t j = 0; j < n; ++j) f[j] = decode_element(p, d, j);
}

float Scale::at(uint64_t row, uint64_t col) const {
    return decode_element(part->bytes(*tensor).data(), tensor->dtype, index(row, col));
}

void Scale::apply(float* f, size_t n, uint64_t first, uint64_t cols) const {
    const uint8_t* p = part->bytes(*tensor).data();
    uint64_t row = first / cols, col = first % cols;
    for (size_t j = 0; j < n;) {
        // one run of columns sharing a factor: up to the next block edge or the row's end
        const uint64_t edge = std::min(cols, (col / div[1] + 1) * div[1]);
        const float s = decode_element(p, tensor->dtype, index(row, col));
        const size_t run = static_cast<size_t>(std::min<uint64_t>(edge - col, n - j));
        for (size_t k = 0; k < run; ++k) f[j + k] *= s;
        j += run;
        col += run;
        if (col == cols) {
            col = 0;
            ++row;
        }
    }
}

Scale plan_scale(const File& part, const Tensor& scale, const Tensor& weight, const std::vector<uint64_t>& block) {
    const std::string subject = "tensor '" + scale.name + "'";
    auto refuse = [&](const std::string& why) { throw FormatError(ErrorKind::BadDims, part.path(), subject, why); };
    if (scale.dtype != Dtype::F32 && scale.dtype != Dtype::F16 && scale.dtype != Dtype::BF16)
        refuse(fmt::format("a scale is F32, F16 or BF16, not {}", dtype_name(scale.dtype)));
    if (weight.shape.size() != 2)
        refuse(fmt::format("scales '{}' of {} dimensions (a scaled weight is a matrix)", weight.name,
                           weight.shape.size()));
    const std::vector<uint64_t>& s = scale.shape;
    if (s.size() > 2 || (!block.empty() && (s.size() != 2 || block.size() > 2)))
        refuse(fmt::format("shape [{}] with block size [{}] does not fit the matrix '{}' [{}]", fmt::join(s, ", "),
                           fmt::join(block, ", "), weight.name, fmt::join(weight.shape, ", ")));
    Scale out;
    out.part = &part;
    out.tensor = &scale;
    const size_t offset = s.size() - block.size();  // dequant_simple's dim_offset
    for (size_t j = 0; j < 2; ++j) {
        const uint64_t w = weight.shape[j];
        const uint64_t b = j >= offset && j < s.size() ? block[j - offset] : 1;
        const uint64_t n = j < s.size() ? s[j] : 1;  // unsqueezed trailing dimensions are 1
        if (b == 0) refuse("a block size of 0");
        const uint64_t need = (w + b - 1) / b;
        if (n == need) {
            out.div[j] = b;
            out.stride[j] = j == 0 && s.size() == 2 ? s[1] : 1;
        } else if (n == 1 && b == 1) {  // torch broadcasts a dimension of 1
            out.stride[j] = 0;
        } else {
            refuse(fmt::format("shape [{}] with block size [{}] does not cover the matrix '{}' [{}]",
                               fmt::join(s, ", "), fmt::join(block, ", "), weight.name, fmt::join(weight.shape, ", ")));
        }
    }
    return out;
}

}  // namespace oiw::hf
