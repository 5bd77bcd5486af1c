// quantize_chunk: the driver over the kernel table (optimized row kernels with the reference as
// fallback), plus the F16/BF16 conversions, the legacy 32-element quants (Q4_0, Q4_1, Q5_0,
// Q5_1, Q8_0), the 1-bit Q1_0 and the non-linear 4-bit quants (IQ4_NL, IQ4_XS).
// A transcription of ggml-quants.c / ggml.c (ggml 0.11.1), bit-exact with ggml_quantize_chunk:
// every float expression keeps ggml's operand order and every narrowing conversion is explicit.
// The k-quants and the shared scale searches live in quantize_k.cpp.
#include <cfloat>
#include <cmath>
#include <cstring>
#include <string>

#include "converters/quant/dispatch.h"
#include "converters/quant/iq_tables.h"
#include "converters/quant/quantize_impl.h"
#include "converters/quant/quants.h"
#include "libformat/blocks.h"
#include "libformat/error.h"
#include "libformat/fp16.h"

namespace oiw {
namespace {

using quant::for_each_block;
using quant::kGroupMaxEps;
using quant::make_qkx3_quants;
using quant::make_qx_quants;
using quant::nearest_int;
using quant::sum_squares;

// Index of the level in the ascending table val[n] nearest to x; ties go up (ggml's best_index_int8).
int best_index_int8(int n, const int8_t* val, float x) {
    if (x <= val[0]) return 0;
    if (x >= val[n - 1]) return n - 1;
    int ml = 0, mu = n - 1;
    while (mu - ml > 1) {
        const int mav = (ml + mu) / 2;
        if (x < val[mav])
            mu = mav;
        else
            ml = mav;
    }
    return x - val[mu - 1] < val[mu] - x ? mu - 1 : mu;
}

// ggml's MIN(hi, v) for ints.
inline int min_i(int hi, int v) { return hi < v ? hi : v; }

// Importance weights of one 32-element block: qw[j] * sqrt(sigma2 + x[j]^2).
void block_weights(const float* xb, const float* qw, float sigma2, float* weight) {
    for (int j = 0; j < 32; ++j) weight[j] = qw[j] * std::sqrt(sigma2 + xb[j] * xb[j]);
}

// Packs 32 five-bit levels L into qs (low nibbles: j | j+16 << 4) and qh (bit 4 of element j at bit j).
void pack_5bit(const uint8_t* L, uint8_t* qs, uint8_t* qh_out) {
    uint32_t qh = 0;
    for (int j = 0; j < 16; ++j) {
        const uint8_t xi0 = L[j];
        const uint8_t xi1 = L[j + 16];
        qs[j] = static_cast<uint8_t>((xi0 & 0x0F) | ((xi1 & 0x0F) << 4));
        qh |= ((xi0 & 0x10u) >> 4) << (j + 0);
        qh |= ((xi1 & 0x10u) >> 4) << (j + 16);
    }
    std::memcpy(qh_out, &qh, sizeof(qh));
}

// Value of largest magnitude in a 32-block (first one on ties), as ggml's amax/max scan.
float signed_absmax(const float* x) {
    float amax;
    return quant::signed_absmax(x, 32, amax);
}

// Smallest and largest value of a 32-block.
void block_min_max(const float* x, float& min, float& max) {
    min = FLT_MAX;
    max = -FLT_MAX;
    for (int j = 0; j < 32; ++j) {
        const float v = x[j];
        if (v < min) min = v;
        if (v > max) max = v;
    }
}

// ---------------------------------------------------------------- reference blocks (no imatrix)

// quantize_row_q4_0_ref for one block: d = absmax-signed / -8, q = x/d + 8.5 truncated.
void q4_0_block_ref(const float* x, block_q4_0& y) {
    const float max = signed_absmax(x);
    const float d = max / -8;
    const float id = d ? 1.0f / d : 0.0f;
    y.d = fp32_to_fp16(d);
    for (int j = 0; j < 16; ++j) {
        const float x0 = x[0 + j] * id;
        const float x1 = x[16 + j] * id;
        const uint8_t xi0 = static_cast<uint8_t>(min_i(15, static_cast<int8_t>(x0 + 8.5f)));
        const uint8_t xi1 = static_cast<uint8_t>(min_i(15, static_cast<int8_t>(x1 + 8.5f)));
        y.qs[j] = static_cast<uint8_t>(xi0 | (xi1 << 4));
    }
}

// quantize_row_q4_1_ref for one block: d = (max - min) / 15, m = min.
void q4_1_block_ref(const float* x, block_q4_1& y) {
    float min, max;
    block_min_max(x, min, max);
    const float d = (max - min) / 15;
    const float id = d ? 1.0f / d : 0.0f;
    y.d = fp32_to_fp16(d);
    y.m = fp32_to_fp16(min);
    for (int j = 0; j < 16; ++j) {
        const float x0 = (x[0 + j] - min) * id;
        const float x1 = (x[16 + j] - min) * id;
        const uint8_t xi0 = static_cast<uint8_t>(min_i(15, static_cast<int8_t>(x0 + 0.5f)));
        const uint8_t xi1 = static_cast<uint8_t>(min_i(15, static_cast<int8_t>(x1 + 0.5f)));
        y.qs[j] = static_cast<uint8_t>(xi0 | (xi1 << 4));
    }
}

// quantize_row_q5_0_ref for one block: d = absmax-signed / -16, q = x/d + 16.5 truncated.
void q5_0_block_ref(const float* x, block_q5_0& y) {
    const float max = signed_absmax(x);
    const float d = max / -16;
    const float id = d ? 1.0f / d : 0.0f;
    y.d = fp32_to_fp16(d);
    uint8_t L[32];
    for (int j = 0; j < 32; ++j) L[j] = static_cast<uint8_t>(min_i(31, static_cast<int8_t>(x[j] * id + 16.5f)));
    pack_5bit(L, y.qs, y.qh);
}

// quantize_row_q5_1_ref for one block: d = (max - min) / 31, m = min.
void q5_1_block_ref(const float* x, block_q5_1& y) {
    float min, max;
    block_min_max(x, min, max);
    const float d = (max - min) / 31;
    const float id = d ? 1.0f / d : 0.0f;
    y.d = fp32_to_fp16(d);
    y.m = fp32_to_fp16(min);
    uint8_t L[32];
    // Not shared with q4_1: ggml converts straight to uint8_t here, without q4_1's int8_t + MIN(15).
    for (int j = 0; j < 32; ++j) L[j] = static_cast<uint8_t>((x[j] - min) * id + 0.5f);
    pack_5bit(L, y.qs, y.qh);
}

// quantize_row_q8_0_ref for one block: d = absmax / 127, q = round(x/d).
void q8_0_block_ref(const float* x, block_q8_0& y) {
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) {
        const float a = std::fabs(x[j]);
        amax = amax > a ? amax : a;
    }
    const float d = amax / 127;
    const float id = d ? 1.0f / d : 0.0f;
    y.d = fp32_to_fp16(d);
    for (int j = 0; j < 32; ++j) y.qs[j] = static_cast<int8_t>(std::round(x[j] * id));
}

// quantize_row_q1_0_ref for one block: d = mean |x| (summed left to right); bit j (LSB first)
// set when x[j] >= 0 (so -0 is positive and NaN negative).
void q1_0_block_ref(const float* x, block_q1_0& y) {
    float sum_abs = 0.0f;
    for (int j = 0; j < QK1_0; ++j) sum_abs += std::fabs(x[j]);
    y.d = fp32_to_fp16(sum_abs / QK1_0);
    std::memset(y.qs, 0, sizeof(y.qs));
    for (int j = 0; j < QK1_0; ++j)
        if (x[j] >= 0.0f) y.qs[j / 8] = static_cast<uint8_t>(y.qs[j / 8] | (1 << (j % 8)));
}

// ---------------------------------------------------------------- weighted rows (imatrix)

// The loop of quantize_row_q{4,5}_{0,1}_impl: weights qw * sqrt(sigma2 + x^2) per 32-block with
// sigma2 over the whole row, then fn(xb, weight, y[ib]) for each block.
template <typename Block, typename Fn>
void weighted_blocks(const float* x, Block* y, int64_t n_per_row, const float* quant_weights, Fn fn) {
    float weight[32];
    const float sigma2 = sum_squares(x, n_per_row) / static_cast<float>(n_per_row);
    for (int64_t ib = 0; ib < n_per_row / 32; ++ib) {
        const float* xb = x + 32 * ib;
        block_weights(xb, quant_weights + 32 * ib, sigma2, weight);
        fn(xb, weight, y[ib]);
    }
}

// quantize_row_q4_0_impl: per block make_qx_quants(nmax 8) with row-sigma2 weights.
void q4_0_row_impl(const float* x, block_q4_0* y, int64_t n_per_row, const float* quant_weights) {
    weighted_blocks(x, y, n_per_row, quant_weights, [](const float* xb, const float* weight, block_q4_0& b) {
        int8_t L[32];
        const float d = make_qx_quants(32, 8, xb, L, 1, weight);
        b.d = fp32_to_fp16(d);
        for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(L[j] | (L[j + 16] << 4));
    });
}

// quantize_row_q4_1_impl: per block make_qkx3_quants(nmax 15) with row-sigma2 weights.
void q4_1_row_impl(const float* x, block_q4_1* y, int64_t n_per_row, const float* quant_weights) {
    weighted_blocks(x, y, n_per_row, quant_weights, [](const float* xb, const float* weight, block_q4_1& b) {
        uint8_t L[32], Laux[32];
        float min;
        const float d = make_qkx3_quants(32, 15, xb, weight, L, &min, Laux, -0.9f, 0.05f, 36, false);
        b.d = fp32_to_fp16(d);
        b.m = fp32_to_fp16(-min);
        for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(L[j] | (L[j + 16] << 4));
    });
}

// quantize_row_q5_0_impl: per block make_qx_quants(nmax 16) with row-sigma2 weights.
void q5_0_row_impl(const float* x, block_q5_0* y, int64_t n_per_row, const float* quant_weights) {
    weighted_blocks(x, y, n_per_row, quant_weights, [](const float* xb, const float* weight, block_q5_0& b) {
        int8_t L[32];
        const float d = make_qx_quants(32, 16, xb, L, 1, weight);
        b.d = fp32_to_fp16(d);
        pack_5bit(reinterpret_cast<const uint8_t*>(L), b.qs, b.qh);
    });
}

// quantize_row_q5_1_impl: per block make_qkx3_quants(nmax 31) with row-sigma2 weights.
void q5_1_row_impl(const float* x, block_q5_1* y, int64_t n_per_row, const float* quant_weights) {
    weighted_blocks(x, y, n_per_row, quant_weights, [](const float* xb, const float* weight, block_q5_1& b) {
        uint8_t L[32], Laux[32];
        float min;
        const float d = make_qkx3_quants(32, 31, xb, weight, L, &min, Laux, -0.9f, 0.05f, 36, false);
        b.d = fp32_to_fp16(d);
        b.m = fp32_to_fp16(-min);
        pack_5bit(L, b.qs, b.qh);
    });
}

// ---------------------------------------------------------------- IQ4_NL / IQ4_XS

// Output of one quantize_row_iq4_nl_impl call (fields copied into the packed block by the caller).
struct Iq4Out {
    uint16_t d = 0;                 // fp16 super-block scale
    uint16_t scales_h = 0;          // IQ4_XS: high 2 bits of the eight 6-bit block scales
    uint8_t scales_l[QK_K / 64]{};  // IQ4_XS: low 4 bits of the block scales
    uint8_t q4[QK_K / 2]{};         // packed 4-bit indices into kvalues_iq4nl
};

// quantize_row_iq4_nl_impl with ntry = 7 (the ggml_quantize_chunk path): `super_block` (32 for
// IQ4_NL, 256 for IQ4_XS) values in blocks of 32; per block a scale search over 15 candidate
// scales picks the best weighted least-squares fit onto the non-linear levels; IQ4_XS then
// quantizes the block scales to 6 bits and re-picks every index. qw (super_block weights) may be null.
// Kept in one piece, as ggml's, to be read side by side with it:
// NOLINTNEXTLINE(readability-function-size)
void iq4_nl_impl(int super_block, const float* x, const float* quant_weights, Iq4Out& out) {
    constexpr int kBlock = 32;
    constexpr int kNtry = 7;
    const int8_t* values = kvalues_iq4nl;  // ascending, as best_index_int8 requires
    float scales[QK_K / kBlock];
    float weight[kBlock];
    uint8_t L[QK_K];

    float sigma2 = 0;
    for (int j = 0; j < super_block; ++j) sigma2 += x[j] * x[j];
    sigma2 *= 2.f / static_cast<float>(super_block);

    out.d = fp32_to_fp16(0.f);

    const int nblocks = super_block / kBlock;
    float max_scale = 0, amax_scale = 0;
    for (int ib = 0; ib < nblocks; ++ib) {
        const float* xb = x + ib * kBlock;
        uint8_t* Lb = L + ib * kBlock;
        if (quant_weights) {
            const float* qw = quant_weights + ib * kBlock;
            for (int j = 0; j < kBlock; ++j) weight[j] = qw[j] * std::sqrt(sigma2 + xb[j] * xb[j]);
        } else {
            for (int j = 0; j < kBlock; ++j) weight[j] = xb[j] * xb[j];
        }
        float amax;
        const float max = quant::signed_absmax(xb, kBlock, amax);
        if (amax < kGroupMaxEps) {
            // ggml leaves L untouched here; both callers below rewrite every index anyway.
            scales[ib] = 0;
            std::memset(Lb, 0, kBlock);
            continue;
        }
        float d = -max / values[0];
        float id = 1 / d;
        float sumqx = 0, sumq2 = 0;
        for (int j = 0; j < kBlock; ++j) {
            const float al = id * xb[j];
            const int l = best_index_int8(16, values, al);
            Lb[j] = static_cast<uint8_t>(l);
            const float q = values[l];
            const float w = weight[j];
            sumqx += w * q * xb[j];
            sumq2 += w * q * q;
        }
        d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
        float best = d * sumqx;
        for (int itry = -kNtry; itry <= kNtry; ++itry) {
            id = static_cast<float>(itry + values[0]) / max;
            sumqx = sumq2 = 0;
            for (int j = 0; j < kBlock; ++j) {
                const float al = id * xb[j];
                const int l = best_index_int8(16, values, al);
                const float q = values[l];
                const float w = weight[j];
                sumqx += w * q * xb[j];
                sumq2 += w * q * q;
            }
            if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
                d = sumqx / sumq2;
                best = d * sumqx;
            }
        }
        scales[ib] = d;
        const float abs_d = std::fabs(d);
        if (abs_d > amax_scale) {
            amax_scale = abs_d;
            max_scale = d;
        }
    }

    if (nblocks > 1) {
        out.scales_h = 0;
        const float d = -max_scale / 32;
        out.d = fp32_to_fp16(d);
        const float id = d ? 1 / d : 0.f;
        for (int ib = 0; ib < nblocks; ++ib) {
            int l = nearest_int(id * scales[ib]);
            l = l < -32 ? -32 : (l > 31 ? 31 : l);
            const float dl = d * static_cast<float>(l);
            const float idl = dl ? 1 / dl : 0.f;
            uint8_t* Lb = L + ib * kBlock;
            const float* xb = x + ib * kBlock;
            for (int j = 0; j < kBlock; ++j) Lb[j] = static_cast<uint8_t>(best_index_int8(16, values, idl * xb[j]));
            l += 32;
            const uint8_t l_l = static_cast<uint8_t>(l & 0xf);
            const uint8_t l_h = static_cast<uint8_t>(l >> 4);
            if (ib % 2 == 0)
                out.scales_l[ib / 2] = l_l;
            else
                out.scales_l[ib / 2] |= static_cast<uint8_t>(l_l << 4);
            out.scales_h |= static_cast<uint16_t>(l_h << 2 * (ib % 8));
        }
    } else {
        out.d = fp32_to_fp16(scales[0]);
        const float id = scales[0] ? 1 / scales[0] : 0;
        for (int j = 0; j < super_block; ++j) L[j] = static_cast<uint8_t>(best_index_int8(16, values, id * x[j]));
    }

    for (int i = 0; i < super_block / 32; ++i) {
        for (int j = 0; j < 16; ++j)
            out.q4[16 * i + j] = static_cast<uint8_t>(L[32 * i + j] | (L[32 * i + 16 + j] << 4));
    }
}

// ---------------------------------------------------------------- chunk drivers

// Legacy type: reference kernel per block without imatrix, weighted row kernel with one.
template <typename Block, typename RefFn, typename RowFn>
size_t quantize_legacy(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix, RefFn ref,
                       RowFn row_impl) {
    if (!imatrix) {
        return for_each_block<Block>(src, dst, nrows, n_per_row, 32, nullptr,
                                     [&](const float* x, Block& y, const float*) { ref(x, y); });
    }
    Block* y = static_cast<Block*>(dst);
    const int64_t nb = n_per_row / 32;
    for (int64_t row = 0; row < nrows; ++row) row_impl(src + row * n_per_row, y + row * nb, n_per_row, imatrix);
    return static_cast<size_t>(nrows * nb) * sizeof(Block);
}

// Name of a type for error messages, safe for out-of-range ids.
std::string type_label(GgmlType t) {
    const auto tt = type_traits(static_cast<uint32_t>(t));
    return tt ? std::string(tt->name) : "type " + std::to_string(static_cast<uint32_t>(t));
}

}  // namespace

bool can_quantize(GgmlType t) {
    return static_cast<uint32_t>(t) < kGgmlTypeCount && reference_kernels()[static_cast<size_t>(t)].quantize;
}

bool quantize_requires_imatrix(GgmlType t) {
    return can_quantize(t) && reference_kernels()[static_cast<size_t>(t)].imatrix == Imatrix::Required;
}

size_t quantize_chunk(GgmlType t, const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix) {
    if (!can_quantize(t) || nrows < 0 || n_per_row <= 0 || n_per_row % traits(t).block_size != 0)
        return quantize_chunk_ref(t, src, dst, nrows, n_per_row, imatrix);  // reports the error
    const TypeKernels& k = type_kernels(t);
    if (k.imatrix == Imatrix::Ignored) imatrix = nullptr;
    const FastRowFn fast = imatrix ? k.fast.weighted : k.fast.plain;
    if (!fast) return quantize_chunk_ref(t, src, dst, nrows, n_per_row, imatrix);
    const size_t row_bytes = row_size(t, n_per_row);
    uint8_t* out = static_cast<uint8_t*>(dst);
    for (int64_t r = 0; r < nrows; ++r) {
        const float* x = src + r * n_per_row;
        uint8_t* y = out + static_cast<size_t>(r) * row_bytes;
        if (!fast(x, y, n_per_row, imatrix)) k.quantize(x, y, 1, n_per_row, imatrix);
    }
    return static_cast<size_t>(nrows) * row_bytes;
}

size_t quantize_chunk_ref(GgmlType t, const float* src, void* dst, int64_t nrows, int64_t n_per_row,
                          const float* imatrix) {
    if (!can_quantize(t)) {
        throw FormatError(ErrorKind::Unsupported, "", type_label(t), "no quantization kernel for this type");
    }
    if (nrows < 0 || n_per_row < 0) {
        throw FormatError(
            ErrorKind::Usage, "", type_label(t),
            "negative shape: nrows " + std::to_string(nrows) + ", n_per_row " + std::to_string(n_per_row));
    }
    const int64_t bs = traits(t).block_size;
    if (n_per_row % bs != 0) {
        throw FormatError(
            ErrorKind::BadBlock, "", type_label(t),
            "n_per_row " + std::to_string(n_per_row) + " is not a multiple of the block size " + std::to_string(bs));
    }
    const TypeKernels& k = reference_kernels()[static_cast<size_t>(t)];
    if (k.imatrix == Imatrix::Required && !imatrix) {
        throw FormatError(ErrorKind::Usage, "", type_label(t),
                          "quantizing to this type requires importance weights (an imatrix)");
    }
    return k.quantize(src, dst, nrows, n_per_row, imatrix);
}

// ---------------------------------------------------------------- kernels of the table

namespace quant {

size_t quantize_f16(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float*) {
    uint16_t* y = static_cast<uint16_t*>(dst);
    const int64_t n = nrows * n_per_row;
    for (int64_t i = 0; i < n; ++i) y[i] = fp32_to_fp16(src[i]);
    return static_cast<size_t>(n) * 2;
}

size_t quantize_bf16(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float*) {
    uint16_t* y = static_cast<uint16_t*>(dst);
    const int64_t n = nrows * n_per_row;
    for (int64_t i = 0; i < n; ++i) y[i] = fp32_to_bf16(src[i]);
    return static_cast<size_t>(n) * 2;
}

size_t quantize_q4_0(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix) {
    return quantize_legacy<block_q4_0>(src, dst, nrows, n_per_row, imatrix, q4_0_block_ref, q4_0_row_impl);
}
size_t quantize_q4_1(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix) {
    return quantize_legacy<block_q4_1>(src, dst, nrows, n_per_row, imatrix, q4_1_block_ref, q4_1_row_impl);
}
size_t quantize_q5_0(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix) {
    return quantize_legacy<block_q5_0>(src, dst, nrows, n_per_row, imatrix, q5_0_block_ref, q5_0_row_impl);
}
size_t quantize_q5_1(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix) {
    return quantize_legacy<block_q5_1>(src, dst, nrows, n_per_row, imatrix, q5_1_block_ref, q5_1_row_impl);
}

size_t quantize_q8_0(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float*) {
    // ggml ignores importance weights for Q8_0
    return for_each_block<block_q8_0>(src, dst, nrows, n_per_row, 32, nullptr,
                                      [](const float* x, block_q8_0& y, const float*) { q8_0_block_ref(x, y); });
}

size_t quantize_q1_0(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float*) {
    // ggml ignores importance weights for Q1_0
    return for_each_block<block_q1_0>(src, dst, nrows, n_per_row, QK1_0, nullptr,
                                      [](const float* x, block_q1_0& y, const float*) { q1_0_block_ref(x, y); });
}

size_t quantize_iq4_nl(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix) {
    return for_each_block<block_iq4_nl>(src, dst, nrows, n_per_row, QK4_NL, imatrix,
                                        [](const float* x, block_iq4_nl& y, const float* qw) {
                                            Iq4Out out;
                                            iq4_nl_impl(QK4_NL, x, qw, out);
                                            y.d = out.d;
                                            std::memcpy(y.qs, out.q4, sizeof(y.qs));
                                        });
}

size_t quantize_iq4_xs(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix) {
    return for_each_block<block_iq4_xs>(src, dst, nrows, n_per_row, QK_K, imatrix,
                                        [](const float* x, block_iq4_xs& y, const float* qw) {
                                            Iq4Out out;
                                            iq4_nl_impl(QK_K, x, qw, out);
                                            y.d = out.d;
                                            y.scales_h = out.scales_h;
                                            std::memcpy(y.scales_l, out.scales_l, sizeof(y.scales_l));
                                            std::memcpy(y.qs, out.q4, sizeof(y.qs));
                                        });
}

// Thresholds t[k], k = 0..14: best_index(x) == #{k : !(x < t[k])}. Between levels a = val[k]
// and b = val[k+1] the reference picks k+1 exactly when !(fl(x - a) < fl(b - x)); that
// predicate is monotone in x (both roundings are monotone), so it flips at one float t[k],
// found by walking from the midpoint with nextafter.
const float* iq4nl_thresholds() {
    struct Thresholds {
        float t[15];
        Thresholds() {
            for (int k = 0; k < 15; ++k) {
                const float a = kvalues_iq4nl[k], b = kvalues_iq4nl[k + 1];
                auto picks_low = [&](float x) { return x - a < b - x; };
                float x = (a + b) / 2;
                if (picks_low(x)) {
                    while (picks_low(x)) x = std::nextafter(x, INFINITY);
                } else {
                    for (float p = std::nextafter(x, -INFINITY); !picks_low(p); p = std::nextafter(p, -INFINITY)) x = p;
                }
                t[k] = x;
            }
        }
    };
    static const Thresholds th;
    return th.t;
}

int iq4nl_best_index(float x) {
    const float* t = iq4nl_thresholds();
    int l = 0;
    for (int k = 0; k < 15; ++k) l += !(x < t[k]);
    return l;
}

}  // namespace quant
}  // namespace oiw
