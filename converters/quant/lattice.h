// The hot loops of the lattice i-quant quantizers (IQ1_S .. IQ3_S, quantize_lattice.cpp) behind a
// table of function pointers, so that per-ISA files (x86/quantize_iq_avx2.cpp) can replace them
// with byte-identical versions while the block drivers stay in one place.
//
// A grid "key" packs one level (0 .. 2^bits - 1) per coordinate, coordinate i at bits
// [bits*i, bits*(i+1)):
//
//   IQ3 (dims 4, bits 3):  key = l3 l2 l1 l0          (12 bits, 3 per level, l0 lowest)
//   IQ2 / IQ1 (dims 8, bits 2):  key = l7 l6 .. l1 l0 (16 bits, 2 per level)
#pragma once
#include <cstdint>

#include "libformat/types.h"

namespace oiw::quant {

// A grid's search structures as plain pointers (valid for the program's lifetime).
struct LatticeView {
    int dims = 0;                          // coordinates per point: 8 (iq1/iq2) or 4 (iq3)
    int bits = 0;                          // bits per coordinate in a key: 2 or 3
    const int8_t* coords = nullptr;        // point j: its dims coordinates 2*level + 1
    const int32_t* map = nullptr;          // key -> point index, or -(1 + offset of its neighbour list)
    const uint16_t* neighbours = nullptr;  // list at offset o: count at [o], point indices at [o+1 .. o+count]
    const uint16_t* list_keys = nullptr;   // key of the point at neighbours[o + j]; 16 readable entries past the end
};

// Parameters of the scale search shared by IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS and IQ3_S.
struct GridSearch {
    int max_q;           // levels per coordinate (ggml's kMaxQ)
    int nsteps;          // trial scales is = -nsteps..nsteps
    float step;          // trial inverse-scale increment
    bool start_on_grid;  // initial "on grid" state of every group (IQ3_S: false)
    bool refine_all;     // final refit re-snaps every group, not only the off-grid ones (IQ3_S, IQ2_XXS)
    bool refit_always;   // refit whenever the scale is positive, even with every group on the grid (IQ2_XXS)
};

// The outcome of an IQ1 block's split search: levels 0 below sorted position i1, 1 up to i2, 2
// above; `pattern` is the delta choice (IQ1_S: +1 for x_p, -1 for x_m; IQ1_M: 0..3, bit 1 = first
// half uses x_m, bit 0 = second half does); i1 = -1 when no split fits.
struct Iq1Split {
    float scale = 0;  // enters as the fallback scale (the block's max), leaves as the fit's
    int i1 = -1, i2 = -1, pattern = 0;
};

// The replaceable loops. Each returns false only where the reference finds no grid point with a
// finite error (non-finite input); the driver then reports the row as the reference does.
struct LatticeKernels {
    // The scale search of quantize_row_iq2_xs_impl & co for one block of n magnitudes xval (n/dims
    // groups): trial inverse scales id = (2*max_q - 1 + is*step) / max, each group's levels
    // snapped onto the grid (neighbours weighted by waux), the best weighted fit (weight) kept,
    // then the refit. `scale` enters as the start value and leaves as the result; L (n levels)
    // enters as the fallback levels and leaves as the final ones.
    bool (*search)(const LatticeView& g, const GridSearch& p, int n, const float* xval, const float* weight,
                   const float* waux, float max, float& scale, int8_t* L);
    // Position (0-based) in the neighbour list at offset `list` of the point minimising
    // sum_i weight[i] * (scale * level_value[level_i] - xval[i])^2 over the g.dims coordinates,
    // accumulated in coordinate order, first on ties; -1 when none is below FLT_MAX.
    // level_value has 8 entries (unused levels may hold anything finite).
    int (*best_neighbour)(const LatticeView& g, int32_t list, const float* level_value, const float* xval,
                          const float* weight, float scale);
    // quantize_row_iq1_s_impl's exhaustive split search of a block of n = 32 sorted values: sumx
    // and sumw are the n+1 prefix sums of weight*x and weight in sorted order (16 more entries
    // readable); x_p / x_m the level values of the two delta signs.
    void (*iq1_s_split)(const float* sumx, const float* sumw, const float* x_p, const float* x_m, Iq1Split& s);
    // quantize_row_iq1_m_impl's split search of a block of 16 values xb (weights weight), idx
    // their ascending order: the four sums of every split accumulated from scratch in sorted order.
    void (*iq1_m_split)(const float* xb, const float* weight, const int* idx, const float* x_p, const float* x_m,
                        Iq1Split& s);
    // idx = 0..n-1 ordered by ascending xb, equal values in index order (a stable sort, as glibc's
    // qsort of ggml's (value, index) pairs leaves them).
    void (*sort_indices)(const float* xb, int n, int* idx);
};

// The odd level values 2l+1 of the iq2/iq3 grids (LatticeKernels::best_neighbour's level_value).
// Not inline: each file gets its own internal copy, so no ISA object defines a weak symbol.
alignas(64) constexpr float kOddLevels[8] = {1, 3, 5, 7, 9, 11, 13, 15};
// Most trial scales of a GridSearch (2 * nsteps + 1 <= 31, IQ3_XXS), rounded up to whole vectors.
constexpr int kMaxTrials = 32;

// The end of every version of LatticeKernels::search, given each trial c's fit sums (sumqx[c],
// sumq2[c]), the keys of its snapped groups (keys[j][c]) and their on-grid bits (bit c of
// on_bits[j]): the reference's choice among the trials in trial order, the winner's levels into L,
// then the refit (re-snapping through k's neighbour search).
bool finish_grid_search(const LatticeKernels& k, const LatticeView& g, const GridSearch& p, int n, int trials,
                        const float* xval, const float* weight, const float* waux, const float* sumqx,
                        const float* sumq2, const uint32_t (*keys)[kMaxTrials], const uint32_t* on_bits, float& scale,
                        int8_t* L);

// The scalar reference loops (ggml-quants.c's, operand for operand).
const LatticeKernels& reference_lattice_kernels();

// One row (n_per_row a multiple of 256) of lattice type t (IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S,
// IQ3_XXS, IQ3_S) into dst with kernels k; imatrix: n_per_row weights or null. False when a
// kernel found no finite grid point (dst unspecified).
bool quantize_lattice_row(GgmlType t, const LatticeKernels& k, const float* x, void* dst, int64_t n_per_row,
                          const float* imatrix);

}  // namespace oiw::quant
