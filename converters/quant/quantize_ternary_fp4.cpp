// Ternary (TQ1_0, TQ2_0) and 4-bit float (MXFP4) quantizers: one scale per block, each element
// the nearest of a few fixed levels. A transcription of ggml-quants.c (ggml 0.11.1), bit-exact
// with ggml_quantize_chunk: every float expression keeps ggml's operand order.
#include <cmath>
#include <cstdint>
#include <initializer_list>

#include "converters/quant/iq_tables.h"
#include "converters/quant/quantize_impl.h"
#include "libformat/blocks.h"
#include "libformat/fp16.h"

namespace oiw::quant {
namespace {

// Largest |x| of n floats, as ggml's MAX(amax, fabsf(v)) scan.
float abs_max(const float* x, int n) {
    float amax = 0.0f;
    for (int j = 0; j < n; ++j) amax = max_f(amax, std::fabs(x[j]));
    return amax;
}

// Ternary digit of v in [-1, 1]: lroundf(v) + 1 (ties away from zero).
inline int trit(float v) { return static_cast<int>(std::lround(v)) + 1; }

// Base-3 number q (0..242, first trit most significant) scaled to a byte: ceil(q * 256 / 243).
inline uint8_t trits_to_byte(uint8_t q) {
    return static_cast<uint8_t>((static_cast<uint16_t>(q) * 256 + (243 - 1)) / 243);
}

// quantize_row_tq1_0_ref for one block: d = absmax; 5 trits per qs byte (elements m + n*stride),
// then 4 trits per qh byte, shifted to the top trit positions.
void tq1_0_block(const float* x, block_tq1_0& y) {
    const float d = abs_max(x, QK_K);
    const float id = d ? 1.0f / d : 0.0f;
    y.d = fp32_to_fp16(d);

    // 48 qs bytes: the first 32 cover 160 elements (stride 32), the last 16 cover 80 (stride 16).
    int pos = 0;
    for (const int stride : {32, 16}) {
        for (int m = 0; m < stride; ++m) {
            uint8_t q = 0;
            for (int n = 0; n < 5; ++n) q = static_cast<uint8_t>(q * 3 + trit(x[m + n * stride] * id));
            y.qs[pos + m] = trits_to_byte(q);
        }
        pos += stride;
        x += 5 * stride;
    }
    constexpr int kQh = QK_K / 64;
    for (int j = 0; j < kQh; ++j) {
        uint8_t q = 0;
        for (int m = 0; m < 4; ++m) q = static_cast<uint8_t>(q * 3 + trit(x[j + m * kQh] * id));
        q = static_cast<uint8_t>(q * 3);
        y.qh[j] = trits_to_byte(q);
    }
}

// quantize_row_tq2_0_ref for one block: d = absmax; byte m of each 32-byte group holds the
// 2-bit codes (trit) of elements m, m+32, m+64, m+96 of its 128-element span, low bits first.
void tq2_0_block(const float* x, block_tq2_0& y) {
    const float d = abs_max(x, QK_K);
    const float id = d ? 1.0f / d : 0.0f;
    y.d = fp32_to_fp16(d);
    for (int j = 0; j < QK_K / 4; j += 32) {
        for (int m = 0; m < 32; ++m) {
            uint8_t q = 0;
            for (int n = 0; n < 4; ++n) q = static_cast<uint8_t>(q + ((trit(x[m + n * 32] * id) & 3) << (2 * n)));
            y.qs[j + m] = q;
        }
        x += 4 * 32;
    }
}

// Index of the MXFP4 level (kvalues_mxfp4[i] * d) nearest to x; first one on ties.
int best_index_mxfp4(float x, float d) {
    int best_index = 0;
    float best_err = std::fabs(static_cast<float>(kvalues_mxfp4[0]) * d - x);
    for (int i = 1; i < 16; ++i) {
        const float err = std::fabs(static_cast<float>(kvalues_mxfp4[i]) * d - x);
        if (err < best_err) {
            best_index = i;
            best_err = err;
        }
    }
    return best_index;
}

// quantize_row_mxfp4_ref for one block: e = floor(log2(absmax)) - 2 + 127, nearest level per element.
void mxfp4_block(const float* x, block_mxfp4& y) {
    float amax = 0.0f;
    for (int j = 0; j < QK_MXFP4; ++j) {
        if (amax < std::fabs(x[j])) amax = std::fabs(x[j]);
    }
    // ggml converts the float straight to uint8_t; x86 truncates through int32 (tiny amax wraps).
    const uint8_t e = amax > 0.0f ? static_cast<uint8_t>(static_cast<int>(std::floor(std::log2(amax)) - 2 + 127)) : 0;
    const float d = e8m0_to_fp32_half(e);
    y.e = e;
    for (int j = 0; j < QK_MXFP4 / 2; ++j) {
        const int x0 = best_index_mxfp4(x[j], d);
        const int x1 = best_index_mxfp4(x[QK_MXFP4 / 2 + j], d);
        y.qs[j] = static_cast<uint8_t>(x0 | (x1 << 4));
    }
}

// Drops importance weights for types whose ggml quantizer ignores them.
template <typename Block>
size_t plain_blocks(const float* src, void* dst, int64_t nrows, int64_t n_per_row, int block_size,
                    void (*fn)(const float*, Block&)) {
    return for_each_block<Block>(src, dst, nrows, n_per_row, block_size, nullptr,
                                 [fn](const float* x, Block& y, const float*) { fn(x, y); });
}

}  // namespace

size_t quantize_tq1_0(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float*) {
    return plain_blocks<block_tq1_0>(src, dst, nrows, n_per_row, QK_K, tq1_0_block);
}
size_t quantize_tq2_0(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float*) {
    return plain_blocks<block_tq2_0>(src, dst, nrows, n_per_row, QK_K, tq2_0_block);
}
size_t quantize_mxfp4(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float*) {
    return plain_blocks<block_mxfp4>(src, dst, nrows, n_per_row, QK_MXFP4, mxfp4_block);
}

}  // namespace oiw::quant
