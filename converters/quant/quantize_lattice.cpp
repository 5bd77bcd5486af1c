// Lattice i-quant quantizers (IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S; the
// non-linear IQ4_NL / IQ4_XS are in quantize.cpp). A transcription of ggml-quants.c (ggml 0.11.1), bit-exact with
// ggml_quantize_chunk: every float expression keeps ggml's operand order.
//
// The i-quants snap groups of 4 or 8 levels onto a fixed lattice ("grid"). ggml builds, per grid,
// a map from every level combination to its grid index and, for combinations off the grid, a
// list of nearest grid points to try (iq2xs_init_impl / iq3xs_init_impl). Here those are built
// lazily, once per grid, in function-local statics (thread-safe initialization, immutable after).
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "converters/quant/iq_tables.h"
#include "converters/quant/lattice.h"
#include "converters/quant/quantize_impl.h"
#include "libformat/blocks.h"
#include "libformat/error.h"
#include "libformat/fp16.h"

namespace oiw::quant {
namespace {

// Blocks whose largest |x| is below these count as all-zero (ggml's GROUP_MAX_EPS_*).
constexpr float kEpsIq3Xxs = 1e-8f;
constexpr float kEpsIq2S = 1e-8f;
constexpr float kEpsIq1M = 1e-7f;
constexpr float kEpsIq1S = 1e-12f;

[[noreturn]] void fail_non_finite(const char* type) {
    throw FormatError(ErrorKind::Unsupported, "", type, "no grid point fits the block (non-finite values?)");
}

// ================================================================ lattice grids

// A grid with its search structures (ggml's iq2_entry_t / iq3_entry_t); keys as in lattice.h.
struct LatticeGrid {
    int dims = 0;                      // coordinates per point: 8 (iq1/iq2) or 4 (iq3)
    int bits = 0;                      // bits per coordinate in a key: 2 or 3
    std::vector<int8_t> coords;        // point j: coordinates 2*level + 1 at [j*dims, (j+1)*dims)
    std::vector<int32_t> map;          // key -> point index, or -(1 + offset of its neighbour list)
    std::vector<uint16_t> neighbours;  // per off-grid key: count, then point indices by (distance, index)
    std::vector<uint16_t> list_keys;   // key of the point at neighbours[o], plus 16 zeros of padding
    LatticeView view;                  // pointers into the vectors above

    const int8_t* point(int j) const { return coords.data() + static_cast<size_t>(j) * static_cast<size_t>(dims); }
};

const int8_t* point_of(const LatticeView& g, int j) { return g.coords + static_cast<ptrdiff_t>(j) * g.dims; }

// Key of `dims` levels L (each < 2^bits).
inline uint32_t lattice_key(const int8_t* L, int dims, int bits) {
    uint32_t u = 0;
    for (int i = 0; i < dims; ++i) u |= static_cast<uint32_t>(L[i]) << (bits * i);
    return u;
}

// Keys of the points of a ggml-common grid table (one byte per coordinate), which lists the
// points in ascending key order (ggml's kgrid_* tables); level(byte) maps a byte to its level.
template <typename Word, typename LevelFn>
std::vector<uint16_t> grid_keys(const Word* grid, int n, int dims, int bits, LevelFn level) {
    std::vector<uint16_t> keys(static_cast<size_t>(n));
    for (int k = 0; k < n; ++k) {
        uint32_t key = 0;
        for (int i = 0; i < dims; ++i) {
            const int l = level(static_cast<uint8_t>(grid[k] >> (8 * i)));
            if (l < 0) throw std::logic_error("iq grid: unexpected byte in grid table");
            key |= static_cast<uint32_t>(l) << (bits * i);
        }
        if (k > 0 && key <= keys[static_cast<size_t>(k - 1)]) throw std::logic_error("iq grid: keys not ascending");
        keys[static_cast<size_t>(k)] = static_cast<uint16_t>(key);
    }
    return keys;
}

// Byte -> level of the iq2 grids (0x08, 0x19, 0x2b), the iq1s grid (int8 -1, 0, 1), the iq3xxs
// grid (4, 12, ..., 52, 62) and the iq3s grid (1, 3, ..., 15); -1 for anything else.
int iq2_level(uint8_t b) { return b == 0x08 ? 0 : b == 0x19 ? 1 : b == 0x2b ? 2 : -1; }
int iq1_level(uint8_t b) { return b == 0xff ? 0 : b == 0x00 ? 1 : b == 0x01 ? 2 : -1; }
int iq3xxs_level(uint8_t b) {
    static constexpr uint8_t kBytes[8] = {4, 12, 20, 28, 36, 44, 52, 62};
    for (int l = 0; l < 8; ++l) {
        if (kBytes[l] == b) return l;
    }
    return -1;
}
int iq3s_level(uint8_t b) { return (b & 1) && b <= 15 ? (b - 1) / 2 : -1; }

// iq2xs_init_impl / iq3xs_init_impl: the map over all `map_size` keys and, for every key off the
// grid, its neighbours = the grid points at the `nwant` smallest distinct squared distances,
// ordered by (distance, index) as ggml's qsort of (d2, j) pairs leaves them.
// Distances come from two half-key tables (d2 = lo-half part + hi-half part) to keep this fast.
LatticeGrid build_lattice(const std::vector<uint16_t>& keys, int dims, int bits, int nwant, int map_size) {
    LatticeGrid g;
    g.dims = dims;
    g.bits = bits;
    const int n = static_cast<int>(keys.size());
    const uint32_t level_mask = (1u << bits) - 1;
    g.coords.resize(static_cast<size_t>(n) * static_cast<size_t>(dims));
    for (int k = 0; k < n; ++k) {
        for (int i = 0; i < dims; ++i) {
            g.coords[static_cast<size_t>(k) * static_cast<size_t>(dims) + static_cast<size_t>(i)] =
                static_cast<int8_t>(2 * ((keys[static_cast<size_t>(k)] >> (bits * i)) & level_mask) + 1);
        }
    }
    g.map.assign(static_cast<size_t>(map_size), -1);
    for (int k = 0; k < n; ++k) g.map[keys[static_cast<size_t>(k)]] = k;

    // half[(a << hb) | b]: squared distance between the half-keys a (query) and b (grid point).
    const int hb = dims * bits / 2;
    const uint32_t half_mask = (1u << hb) - 1;
    const int half_dims = dims / 2;
    std::vector<int> half(static_cast<size_t>(1) << (2 * hb));
    for (uint32_t a = 0; a <= half_mask; ++a) {
        for (uint32_t b = 0; b <= half_mask; ++b) {
            int d2 = 0;
            for (int i = 0; i < half_dims; ++i) {
                const int da = 2 * static_cast<int>((a >> (bits * i)) & level_mask);
                const int db = 2 * static_cast<int>((b >> (bits * i)) & level_mask);
                d2 += (db - da) * (db - da);
            }
            half[(a << hb) | b] = d2;
        }
    }
    std::vector<uint32_t> lo(static_cast<size_t>(n)), hi(static_cast<size_t>(n));
    for (int k = 0; k < n; ++k) {
        lo[static_cast<size_t>(k)] = keys[static_cast<size_t>(k)] & half_mask;
        hi[static_cast<size_t>(k)] = keys[static_cast<size_t>(k)] >> hb;
    }
    const int max_d2 = dims * (2 * static_cast<int>(level_mask)) * (2 * static_cast<int>(level_mask));
    std::vector<int> d2(static_cast<size_t>(n));
    std::vector<int> count(static_cast<size_t>(max_d2 + 1)), slot(static_cast<size_t>(max_d2 + 1));
    for (int key = 0; key < map_size; ++key) {
        if (g.map[static_cast<size_t>(key)] >= 0) continue;
        const int* tlo = half.data() + ((static_cast<uint32_t>(key) & half_mask) << hb);
        const int* thi = half.data() + ((static_cast<uint32_t>(key) >> hb) << hb);
        std::fill(count.begin(), count.end(), 0);
        for (int j = 0; j < n; ++j) {
            d2[static_cast<size_t>(j)] = tlo[lo[static_cast<size_t>(j)]] + thi[hi[static_cast<size_t>(j)]];
            ++count[static_cast<size_t>(d2[static_cast<size_t>(j)])];
        }
        // The first nwant distinct distances; slot[d] = where points at distance d start.
        int total = 0, nhave = 0, cutoff = -1;
        for (int d = 0; d <= max_d2 && nhave < nwant; ++d) {
            if (!count[static_cast<size_t>(d)]) continue;
            slot[static_cast<size_t>(d)] = total;
            total += count[static_cast<size_t>(d)];
            cutoff = d;
            ++nhave;
        }
        const size_t start = g.neighbours.size();
        g.map[static_cast<size_t>(key)] = -static_cast<int32_t>(start + 1);
        g.neighbours.resize(start + 1 + static_cast<size_t>(total));
        g.neighbours[start] = static_cast<uint16_t>(total);
        uint16_t* list = g.neighbours.data() + start + 1;
        for (int j = 0; j < n; ++j) {
            const int d = d2[static_cast<size_t>(j)];
            if (d <= cutoff) list[slot[static_cast<size_t>(d)]++] = static_cast<uint16_t>(j);
        }
    }
    g.list_keys.assign(g.neighbours.size() + 16, 0);
    for (size_t o = 0; o < g.neighbours.size();) {
        const size_t count = g.neighbours[o];
        for (size_t j = 1; j <= count; ++j) g.list_keys[o + j] = keys[g.neighbours[o + j]];
        o += count + 1;
    }
    g.view = LatticeView{dims, bits, g.coords.data(), g.map.data(), g.neighbours.data(), g.list_keys.data()};
    return g;
}

// The grids of the i-quants (ggml's iq2_data slots and iq3_data slots).
enum class Lattice { Iq2Xxs, Iq2Xs, Iq2S, Iq1S, Iq3Xxs, Iq3S };

// The search structures of a grid, built on first use (thread-safe) and immutable afterwards.
const LatticeGrid& lattice(Lattice which) {
    constexpr int kMap2 = 43692;  // ggml's kmap_size for the 2-bit keys (max key 0xAAAA + 2)
    constexpr int kMap3 = 4096;
    switch (which) {
        case Lattice::Iq2Xxs: {
            static const LatticeGrid g = build_lattice(grid_keys(iq2xxs_grid, 256, 8, 2, iq2_level), 8, 2, 2, kMap2);
            return g;
        }
        case Lattice::Iq2Xs: {
            static const LatticeGrid g = build_lattice(grid_keys(iq2xs_grid, 512, 8, 2, iq2_level), 8, 2, 2, kMap2);
            return g;
        }
        case Lattice::Iq2S: {
            static const LatticeGrid g = build_lattice(grid_keys(iq2s_grid, 1024, 8, 2, iq2_level), 8, 2, 1, kMap2);
            return g;
        }
        case Lattice::Iq1S: {
            static const LatticeGrid g =
                build_lattice(grid_keys(iq1s_grid, NGRID_IQ1S, 8, 2, iq1_level), 8, 2, 3, kMap2);
            return g;
        }
        case Lattice::Iq3Xxs: {
            static const LatticeGrid g = build_lattice(grid_keys(iq3xxs_grid, 256, 4, 3, iq3xxs_level), 4, 3, 2, kMap3);
            return g;
        }
        case Lattice::Iq3S: {
            static const LatticeGrid g = build_lattice(grid_keys(iq3s_grid, 512, 4, 3, iq3s_level), 4, 3, 3, kMap3);
            return g;
        }
    }
    throw std::logic_error("unknown lattice");
}

// Grid index of the levels L (group of g.dims), which must lie on the grid.
int on_grid_index(const LatticeView& g, const int8_t* L) {
    const int idx = g.map[lattice_key(L, g.dims, g.bits)];
    if (idx < 0) throw std::logic_error("iq quantizer: levels not on the grid");
    return idx;
}

// iq2_find_best_neighbour / iq3_find_best_neighbour / iq1_find_best_neighbour2, scalar: see
// LatticeKernels::best_neighbour.
int ref_best_neighbour(const LatticeView& g, int32_t list, const float* level_value, const float* xval,
                       const float* weight, float scale) {
    const uint16_t* neighbours = g.neighbours + list;
    const int num = neighbours[0];
    float best_d2 = FLT_MAX;
    int best = -1;
    for (int j = 1; j <= num; ++j) {
        const int8_t* pg = point_of(g, neighbours[j]);
        float d2 = 0;
        for (int i = 0; i < g.dims; ++i) {
            const float q = level_value[(pg[i] - 1) / 2];
            const float diff = scale * q - xval[i];
            d2 += weight[i] * diff * diff;
        }
        if (d2 < best_d2) {
            best_d2 = d2;
            best = j - 1;
        }
    }
    return best;
}

// Snaps the group of levels at L onto the grid with kernels k: unchanged when on it, else the
// best neighbour for (xval, weight, scale) replaces them. Sets on_grid; false when no neighbour
// has a finite error.
bool snap_to_grid(const LatticeKernels& k, const LatticeView& g, const float* xval, const float* weight, float scale,
                  int8_t* L, bool& on_grid) {
    const uint32_t u = lattice_key(L, g.dims, g.bits);
    on_grid = g.map[u] >= 0;
    if (on_grid) return true;
    const int32_t list = -g.map[u] - 1;
    const int pos = k.best_neighbour(g, list, kOddLevels, xval, weight, scale);
    if (pos < 0) return false;
    const int8_t* pg = point_of(g, g.neighbours[list + 1 + pos]);
    for (int i = 0; i < g.dims; ++i) L[i] = static_cast<int8_t>((pg[i] - 1) / 2);
    return true;
}
// Levels of n values xval at inverse scale id: clamp(nearest_int((id*x - 1) / 2), 0, max_q - 1).
void odd_levels(const float* xval, int n, float id, int max_q, int8_t* L) {
    for (int i = 0; i < n; ++i)
        L[i] = static_cast<int8_t>(clamp_i(nearest_int(0.5f * (id * xval[i] - 1)), 0, max_q - 1));
}

// Weighted fit of xval onto the odd levels 2L+1: accumulates sum w*x*q and sum w*q^2.
void odd_level_sums(const float* xval, const float* weight, const int8_t* L, int n, float& sumqx, float& sumq2) {
    sumqx = 0;
    sumq2 = 0;
    for (int i = 0; i < n; ++i) {
        const float w = weight[i];
        const float q = static_cast<float>(2 * L[i] + 1);
        sumqx += w * xval[i] * q;
        sumq2 += w * q * q;
    }
}

// Takes |x| of an 8-group into xval and returns the sign bits; with an odd count of negatives the
// element of smallest weight*x^2 is flipped too, so the 7 stored bits imply the 8th (even parity).
uint8_t even_signs(const float* xb, const float* weight, float* xval) {
    int nflip = 0;
    uint8_t s = 0;
    for (int i = 0; i < 8; ++i) {
        if (xb[i] >= 0) {
            xval[i] = xb[i];
        } else {
            xval[i] = -xb[i];
            ++nflip;
            s = static_cast<uint8_t>(s | (1 << i));
        }
    }
    if (nflip % 2) {
        int imin = 0;
        float min = weight[imin] * xb[imin] * xb[imin];
        for (int i = 1; i < 8; ++i) {
            const float ax = weight[i] * xb[i] * xb[i];
            if (ax < min) {
                min = ax;
                imin = i;
            }
        }
        xval[imin] = -xval[imin];
        s = static_cast<uint8_t>(s ^ (1 << imin));
    }
    return static_cast<uint8_t>(s & 127);
}

// Takes |x| of an 8-group into xval and returns all 8 sign bits.
uint8_t plain_signs(const float* xb, float* xval) {
    uint8_t s = 0;
    for (int i = 0; i < 8; ++i) {
        if (xb[i] >= 0) {
            xval[i] = xb[i];
        } else {
            xval[i] = -xb[i];
            s = static_cast<uint8_t>(s | (1 << i));
        }
    }
    return s;
}

// Largest of n floats (ggml's MAX scan from x[0]).
float max_of(const float* x, int n) {
    float m = x[0];
    for (int i = 1; i < n; ++i) m = max_f(m, x[i]);
    return m;
}

// The refit that ends LatticeKernels::search: when a group is off the grid (or p.refit_always)
// and scale > 0, re-snaps the off-grid groups (every group with p.refine_all) at 1/scale through
// k's neighbour search, then fits the scale to the new levels L. on_grid: n/dims flags.
bool grid_search_refit(const LatticeKernels& k, const LatticeView& g, const GridSearch& p, int n, const float* xval,
                       const float* weight, const float* waux, const bool* on_grid, float& scale, int8_t* L) {
    const int groups = n / g.dims;
    int n_not_on_grid = 0;
    for (int j = 0; j < groups; ++j) n_not_on_grid += on_grid[j] ? 0 : 1;
    if ((n_not_on_grid > 0 || p.refit_always) && scale > 0) {
        const float id = 1 / scale;
        for (int j = 0; j < groups; ++j) {
            if (on_grid[j] && !p.refine_all) continue;
            const int o = g.dims * j;
            bool unused;
            odd_levels(xval + o, g.dims, id, p.max_q, L + o);
            if (!snap_to_grid(k, g, xval + o, waux + o, scale, L + o, unused)) return false;
        }
        float sumqx, sumq2;
        odd_level_sums(xval, weight, L, n, sumqx, sumq2);
        if (sumq2 > 0) scale = sumqx / sumq2;
    }
    return true;
}

// The reference LatticeKernels::search (quantize_row_iq2_xs_impl & co; IQ2_XXS's loop too).
bool ref_search(const LatticeView& g, const GridSearch& p, int n, const float* xval, const float* weight,
                const float* waux, float max, float& scale, int8_t* L) {
    const LatticeKernels& k = reference_lattice_kernels();
    const int groups = n / g.dims;
    bool on_grid[8], on_grid_aux[8];
    int8_t Laux[32];
    float best = 0;
    for (int j = 0; j < groups; ++j) on_grid[j] = p.start_on_grid;
    for (int is = -p.nsteps; is <= p.nsteps; ++is) {
        const float id = (static_cast<float>(2 * p.max_q - 1) + static_cast<float>(is) * p.step) / max;
        const float this_scale = 1 / id;
        for (int j = 0; j < groups; ++j) {
            const int o = g.dims * j;
            odd_levels(xval + o, g.dims, id, p.max_q, Laux + o);
            if (!snap_to_grid(k, g, xval + o, waux + o, this_scale, Laux + o, on_grid_aux[j])) return false;
        }
        float sumqx, sumq2;
        odd_level_sums(xval, weight, Laux, n, sumqx, sumq2);
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
            scale = sumqx / sumq2;
            best = scale * sumqx;
            std::memcpy(L, Laux, static_cast<size_t>(n));
            for (int j = 0; j < groups; ++j) on_grid[j] = on_grid_aux[j];
        }
    }
    return grid_search_refit(k, g, p, n, xval, weight, waux, on_grid, scale, L);
}
// 4-bit (or 3-bit) block scale index of `scale` relative to d = max_scale/N: nearest_int((scale/d - 1)/2).
inline int odd_scale_index(float id, float scale, int hi) {
    return clamp_i(nearest_int(0.5f * (id * scale - 1)), 0, hi);
}

// Importance weights of n values: qw * sqrt(sigma2 + x^2), or x^2 without qw.
void iq_weights(const float* xb, const float* qw, float sigma2, int n, float* weight) {
    if (qw) {
        for (int i = 0; i < n; ++i) weight[i] = qw[i] * std::sqrt(sigma2 + xb[i] * xb[i]);
    } else {
        for (int i = 0; i < n; ++i) weight[i] = xb[i] * xb[i];
    }
}

// The start of a block in quantize_row_iq2_xxs_impl & co: waux = sqrt(weight); xval = |xb| with
// the sign bits of each 8-group in signs (even_signs when `even`, else plain_signs); L zeroed.
// Returns the largest xval.
float grid_block_start(const float* xb, const float* weight, int n, bool even, float* waux, float* xval, uint8_t* signs,
                       int8_t* L) {
    for (int i = 0; i < n; ++i) waux[i] = std::sqrt(weight[i]);
    for (int k = 0; k < n / 8; ++k) {
        signs[k] = even ? even_signs(xb + 8 * k, weight + 8 * k, xval + 8 * k) : plain_signs(xb + 8 * k, xval + 8 * k);
    }
    std::memset(L, 0, static_cast<size_t>(n));
    return max_of(xval, n);
}

// ggml's "should never happen" branch: a negative block scale turns positive and the sign bits
// of its ngroups 8-groups are inverted with it (only the 7 stored bits when `even`).
void flip_negative_scale(float& scale, uint8_t* signs, int ngroups, bool even) {
    if (scale < 0) {
        scale = -scale;
        for (int k = 0; k < ngroups; ++k) signs[k] = static_cast<uint8_t>(even ? ~signs[k] & 127 : ~signs[k]);
    }
}

// 4-bit block scale indices odd_scale_index(id, scales[ib], 15) of n blocks, two per byte (the
// even block in the low nibble).
void pack_scale_nibbles(float id, const float* scales, int n, uint8_t* out) {
    for (int ib = 0; ib < n; ib += 2) {
        const int l1 = odd_scale_index(id, scales[ib + 0], 15);
        const int l2 = odd_scale_index(id, scales[ib + 1], 15);
        out[ib / 2] = static_cast<uint8_t>(l1 | (l2 << 4));
    }
}

// ================================================================ IQ2_XXS

// quantize_row_iq2_xxs_impl for one super-block: 8 blocks of 32, each 4 grid points (iq2xxs) with
// 7 sign bits per 8 values and a 4-bit scale. qw (256 weights) is required.
bool iq2_xxs_superblock(const LatticeKernels& kern, const float* xbl, const float* qwbl, block_iq2_xxs& y) {
    constexpr int kMaxQ = 3;
    const LatticeGrid& g = lattice(Lattice::Iq2Xxs);
    float scales[QK_K / 32];
    float weight[32], xval[32], waux[32];
    int8_t L[32];
    uint8_t block_signs[4];
    uint32_t q2[2 * (QK_K / 32)] = {};

    y.d = fp32_to_fp16(0.f);
    float max_scale = 0;
    const float sigma2 = sum_squares(xbl, QK_K) / QK_K;

    for (int ib = 0; ib < QK_K / 32; ++ib) {
        const float* xb = xbl + 32 * ib;
        iq_weights(xb, qwbl + 32 * ib, sigma2, 32, weight);
        const float max = grid_block_start(xb, weight, 32, true, waux, xval, block_signs, L);
        if (max < kGroupMaxEps) {
            scales[ib] = 0;
            continue;
        }
        float scale = make_qp_quants(32, kMaxQ + 1, xval, reinterpret_cast<uint8_t*>(L), weight);
        const float eff_max = scale * kMaxQ;
        if (eff_max <= 0) {
            scales[ib] = 0;
            continue;
        }
        // ggml's iq2_xxs search starts from make_qp_quants' scale (and levels) and always re-snaps
        // every group at the end.
        constexpr GridSearch kSearch{kMaxQ, 6, 0.1f, true, true, true};
        if (!kern.search(g.view, kSearch, 32, xval, weight, waux, eff_max, scale, L)) return false;
        flip_negative_scale(scale, block_signs, 4, true);
        for (int j = 0; j < 4; ++j) {
            q2[2 * ib + 0] |= static_cast<uint32_t>(on_grid_index(g.view, L + 8 * j)) << (8 * j);
            q2[2 * ib + 1] |= static_cast<uint32_t>(block_signs[j]) << (7 * j);
        }
        scales[ib] = scale;
        max_scale = max_f(max_scale, scale);
    }

    if (!max_scale) {
        std::memset(y.qs, 0, sizeof(y.qs));
        return true;
    }
    const float d = max_scale / 31;
    y.d = fp32_to_fp16(d);
    const float id = 1 / d;
    for (int ib = 0; ib < QK_K / 32; ++ib)
        q2[2 * ib + 1] |= static_cast<uint32_t>(odd_scale_index(id, scales[ib], 15)) << 28;
    std::memcpy(y.qs, q2, sizeof(y.qs));
    return true;
}

// ================================================================ IQ2_XS / IQ2_S

// quantize_row_iq2_xs_impl for one super-block: 16 blocks of 16, each 2 grid points (iq2xs,
// 9-bit index + 7 sign bits) and a 4-bit scale. qw (256 weights) is required.
bool iq2_xs_superblock(const LatticeKernels& kern, const float* xbl, const float* qwbl, block_iq2_xs& y) {
    constexpr GridSearch kSearch{3, 9, 0.1f, true, false, false};
    const LatticeGrid& g = lattice(Lattice::Iq2Xs);
    float scales[QK_K / 16];
    float weight[16], xval[16], waux[16];
    int8_t L[16];
    uint8_t block_signs[2];
    uint16_t q2[2 * (QK_K / 16)] = {};

    y.d = fp32_to_fp16(0.f);
    std::memset(y.scales, 0, sizeof(y.scales));
    float max_scale = 0;
    const float sigma2 = sum_squares(xbl, QK_K) / QK_K;

    for (int ib = 0; ib < QK_K / 16; ++ib) {
        const float* xb = xbl + 16 * ib;
        iq_weights(xb, qwbl + 16 * ib, sigma2, 16, weight);
        const float max = grid_block_start(xb, weight, 16, true, waux, xval, block_signs, L);
        if (max < kGroupMaxEps) {
            scales[ib] = 0;
            continue;
        }
        float scale = max / static_cast<float>(2 * kSearch.max_q - 1);
        if (!kern.search(g.view, kSearch, 16, xval, weight, waux, max, scale, L)) return false;
        flip_negative_scale(scale, block_signs, 2, true);
        for (int k = 0; k < 2; ++k) {
            q2[2 * ib + k] = static_cast<uint16_t>(on_grid_index(g.view, L + 8 * k) | (block_signs[k] << 9));
        }
        scales[ib] = scale;
        max_scale = max_f(max_scale, scale);
    }

    if (!max_scale) {
        std::memset(y.qs, 0, sizeof(y.qs));
        return true;
    }
    const float d = max_scale / 31;
    y.d = fp32_to_fp16(d);
    const float id = 1 / d;
    pack_scale_nibbles(id, scales, QK_K / 16, y.scales);
    std::memcpy(y.qs, q2, sizeof(y.qs));
    return true;
}

// quantize_row_iq2_s_impl for one super-block: 16 blocks of 16, each 2 grid points (iq2s, 10-bit
// index split over qs/qh) with 8 explicit sign bits and a 4-bit scale. qw may be null.
bool iq2_s_superblock(const LatticeKernels& kern, const float* xbl, const float* qwbl, block_iq2_s& y) {
    constexpr GridSearch kSearch{3, 9, 0.1f, true, false, false};
    const LatticeGrid& g = lattice(Lattice::Iq2S);
    float scales[QK_K / 16];
    float weight[16], xval[16], waux[16];
    int8_t L[16];
    uint8_t block_signs[2];

    std::memset(&y, 0, sizeof(y));
    y.d = fp32_to_fp16(0.f);
    float max_scale = 0;
    const float sigma2 = 2 * sum_squares(xbl, QK_K) / QK_K;

    for (int ib = 0; ib < QK_K / 16; ++ib) {
        const float* xb = xbl + 16 * ib;
        if (qwbl) {
            iq_weights(xb, qwbl + 16 * ib, sigma2, 16, weight);
        } else {
            // Not iq_weights' x^2: ggml's iq2_s adds 0.25 * sigma2 without importance weights.
            for (int i = 0; i < 16; ++i) weight[i] = 0.25f * sigma2 + xb[i] * xb[i];
        }
        const float max = grid_block_start(xb, weight, 16, false, waux, xval, block_signs, L);
        if (max < kEpsIq2S) {
            scales[ib] = 0;
            continue;
        }
        float scale = max / static_cast<float>(2 * kSearch.max_q - 1);
        if (!kern.search(g.view, kSearch, 16, xval, weight, waux, max, scale, L)) return false;
        flip_negative_scale(scale, block_signs, 2, false);
        for (int k = 0; k < 2; ++k) {
            const int grid_index = on_grid_index(g.view, L + 8 * k);
            const int i8 = 2 * ib + k;
            y.qs[i8] = static_cast<uint8_t>(grid_index & 255);
            y.qh[i8 / 4] = static_cast<uint8_t>(y.qh[i8 / 4] | ((grid_index >> 8) << 2 * (i8 % 4)));
            y.qs[QK_K / 8 + i8] = block_signs[k];
        }
        scales[ib] = scale;
        max_scale = max_f(max_scale, scale);
    }

    if (!max_scale) return true;
    const float d = max_scale / 31;
    y.d = fp32_to_fp16(d * 0.9875f);
    const float id = 1 / d;
    pack_scale_nibbles(id, scales, QK_K / 16, y.scales);
    return true;
}

// ================================================================ IQ3_XXS / IQ3_S

// quantize_row_iq3_xxs_impl (grid 256) for one super-block: 8 blocks of 32, each 8 grid points
// (iq3xxs) plus a u32 of 4x7 sign bits and a 4-bit scale. qw may be null.
bool iq3_xxs_superblock(const LatticeKernels& kern, const float* xbl, const float* qwbl, block_iq3_xxs& y) {
    constexpr GridSearch kSearch{8, 15, 0.2f, true, false, false};
    const LatticeGrid& g = lattice(Lattice::Iq3Xxs);
    float scales[QK_K / 32];
    float weight[32], xval[32], waux[32];
    int8_t L[32];
    uint8_t block_signs[4];
    uint8_t q3[QK_K / 4] = {};
    uint32_t scales_and_signs[QK_K / 32] = {};

    y.d = fp32_to_fp16(0.f);
    float max_scale = 0;
    const float sigma2 = 2 * sum_squares(xbl, QK_K) / QK_K;

    for (int ib = 0; ib < QK_K / 32; ++ib) {
        const float* xb = xbl + 32 * ib;
        iq_weights(xb, qwbl ? qwbl + 32 * ib : nullptr, sigma2, 32, weight);
        const float max = grid_block_start(xb, weight, 32, true, waux, xval, block_signs, L);
        if (max < kEpsIq3Xxs) {
            scales[ib] = 0;
            continue;
        }
        float scale = max / static_cast<float>(2 * kSearch.max_q - 1);
        if (!kern.search(g.view, kSearch, 32, xval, weight, waux, max, scale, L)) return false;
        flip_negative_scale(scale, block_signs, 4, true);
        for (int k = 0; k < 8; ++k) q3[8 * ib + k] = static_cast<uint8_t>(on_grid_index(g.view, L + 4 * k));
        scales_and_signs[ib] = static_cast<uint32_t>(block_signs[0]) | (static_cast<uint32_t>(block_signs[1]) << 7) |
                               (static_cast<uint32_t>(block_signs[2]) << 14) |
                               (static_cast<uint32_t>(block_signs[3]) << 21);
        scales[ib] = scale;
        max_scale = max_f(max_scale, scale);
    }

    if (!max_scale) {
        std::memset(y.qs, 0, sizeof(y.qs));
        return true;
    }
    const float d = max_scale / 31;
    y.d = fp32_to_fp16(d * 1.0125f);
    const float id = 1 / d;
    for (int ib = 0; ib < QK_K / 32; ++ib)
        scales_and_signs[ib] |= static_cast<uint32_t>(odd_scale_index(id, scales[ib], 15)) << 28;
    std::memcpy(y.qs, q3, sizeof(q3));
    std::memcpy(y.qs + sizeof(q3), scales_and_signs, sizeof(scales_and_signs));
    return true;
}

// quantize_row_iq3_s_impl (block 32) for one super-block: 8 blocks of 32, each 8 grid points
// (iq3s, 9-bit index split over qs/qh), 32 explicit sign bits; 4-bit scales in pairs. qw may be null.
bool iq3_s_superblock(const LatticeKernels& kern, const float* xbl, const float* qwbl, block_iq3_s& y) {
    constexpr int kBlock = 32;
    constexpr GridSearch kSearch{8, 9, 0.2f, false, true, false};
    const LatticeGrid& g = lattice(Lattice::Iq3S);
    float scales[QK_K / kBlock];
    float weight[kBlock], xval[kBlock], waux[kBlock];
    int8_t L[kBlock];
    uint8_t block_signs[kBlock / 8];

    std::memset(&y, 0, sizeof(y));
    y.d = fp32_to_fp16(0.f);
    // ggml advances these only for non-zero blocks, so data after an all-zero block lands early.
    uint8_t* qs = y.qs;
    uint8_t* signs = y.signs;
    float max_scale = 0;
    const float sigma2 = 2 * sum_squares(xbl, QK_K) / QK_K;

    for (int ib = 0; ib < QK_K / kBlock; ++ib) {
        const float* xb = xbl + kBlock * ib;
        iq_weights(xb, qwbl ? qwbl + kBlock * ib : nullptr, sigma2, kBlock, weight);
        const float max = grid_block_start(xb, weight, kBlock, false, waux, xval, block_signs, L);
        if (!max) {
            scales[ib] = 0;
            continue;
        }
        float scale = max / static_cast<float>(2 * kSearch.max_q - 1);
        if (!kern.search(g.view, kSearch, kBlock, xval, weight, waux, max, scale, L)) return false;
        flip_negative_scale(scale, block_signs, kBlock / 8, false);
        for (int k = 0; k < kBlock / 4; ++k) {
            const int grid_index = on_grid_index(g.view, L + 4 * k);
            const int iq = ib * (kBlock / 4) + k;
            qs[k] = static_cast<uint8_t>(grid_index & 255);
            y.qh[iq / 8] = static_cast<uint8_t>(y.qh[iq / 8] | ((grid_index >> 8) << (iq % 8)));
        }
        qs += kBlock / 4;
        for (int k = 0; k < kBlock / 8; ++k) signs[k] = block_signs[k];
        signs += kBlock / 8;
        scales[ib] = scale;
        max_scale = max_f(max_scale, scale);
    }

    if (!max_scale) return true;
    const float d = max_scale / 31;
    y.d = fp32_to_fp16(d * 1.033f);
    const float id = 1 / d;
    pack_scale_nibbles(id, scales, QK_K / kBlock, y.scales);
    return true;
}

// ================================================================ IQ1_S / IQ1_M

// The reference LatticeKernels::sort_indices (glibc's qsort, a merge sort for arrays this small,
// is stable on ggml's (value, index) pairs).
void ref_sort_indices(const float* xb, int n, int* idx) {
    std::iota(idx, idx + n, 0);
    std::stable_sort(idx, idx + n, [xb](int a, int b) { return xb[a] < xb[b]; });
}

// Grid index of the 8 levels L, or (off the grid) of the best neighbour for level values xx
// (iq1_find_best_neighbour2), whose levels replace L; -1 when no neighbour has a finite error
// (ggml then scans the whole grid, which only happens for non-finite input).
int iq1_grid_index(const LatticeKernels& kern, const LatticeView& g, const float* xb, const float* weight, float scale,
                   const float* xx, int8_t* L, bool& all_on_grid) {
    const uint32_t u = lattice_key(L, 8, 2);
    if (g.map[u] >= 0) return g.map[u];
    all_on_grid = false;
    const int32_t list = -g.map[u] - 1;
    const int pos = kern.best_neighbour(g, list, xx, xb, weight, scale);
    if (pos < 0) return -1;
    const int grid_index = g.neighbours[list + 1 + pos];
    const int8_t* pg = point_of(g, grid_index);
    for (int i = 0; i < 8; ++i) L[i] = static_cast<int8_t>((pg[i] - 1) / 2);
    return grid_index;
}

// Levels of an IQ1 block from the best split (i1, i2) of its sorted values (idx): 0 below i1,
// 1 up to i2, 2 above. A negative scale is made positive by mirroring the levels; returns
// true when that happened (the caller mirrors its delta choice too).
bool iq1_split_levels(const int* idx, int n, int i1, int i2, float& scale, int8_t* L) {
    for (int j = 0; j < i1; ++j) L[idx[j]] = 0;
    for (int j = i1; j < i2; ++j) L[idx[j]] = 1;
    for (int j = i2; j < n; ++j) L[idx[j]] = 2;
    if (scale < 0) {
        for (int j = 0; j < n; ++j) L[j] = static_cast<int8_t>(2 - L[j]);
        scale = -scale;
        return true;
    }
    return false;
}

// Least-squares refit of an IQ1 block's scale onto its chosen grid points index[0..ngroups),
// levels(k) being the level values (x_p or x_m) of 8-group k: sumqx / sumq2 when both are
// positive, else `scale` unchanged.
template <typename LevelsFn>
float iq1_refit_scale(const LatticeGrid& g, const uint16_t* index, int ngroups, const float* xb, const float* weight,
                      LevelsFn levels, float scale) {
    float sumqx = 0, sumq2 = 0;
    for (int k = 0; k < ngroups; ++k) {
        const float* xx = levels(k);
        const int8_t* pg = g.point(index[k]);
        for (int j = 0; j < 8; ++j) {
            const float w = weight[8 * k + j];
            const float q = xx[(pg[j] - 1) / 2];
            sumqx += w * q * xb[8 * k + j];
            sumq2 += w * q * q;
        }
    }
    return sumqx > 0 && sumq2 > 0 ? sumqx / sumq2 : scale;
}

// The reference LatticeKernels::iq1_s_split (n = 32).
void ref_iq1_s_split(const float* sumx, const float* sumw, const float* x_p, const float* x_m, Iq1Split& s) {
    constexpr int kBlock = 32;
    float best_score = -FLT_MAX, scale = s.scale;
    int besti1 = -1, besti2 = -1, best_shift = 0;
    for (int i1 = 0; i1 <= kBlock; ++i1) {
        for (int i2 = i1; i2 <= kBlock; ++i2) {
            float sumqx =
                (sumx[i1] - sumx[0]) * x_p[0] + (sumx[i2] - sumx[i1]) * x_p[1] + (sumx[kBlock] - sumx[i2]) * x_p[2];
            float sumq2 = (sumw[i1] - sumw[0]) * x_p[0] * x_p[0] + (sumw[i2] - sumw[i1]) * x_p[1] * x_p[1] +
                          (sumw[kBlock] - sumw[i2]) * x_p[2] * x_p[2];
            if (sumq2 > 0 && sumqx * sumqx > best_score * sumq2) {
                scale = sumqx / sumq2;
                best_score = scale * sumqx;
                besti1 = i1;
                besti2 = i2;
                best_shift = 1;
            }
            sumqx = (sumx[i1] - sumx[0]) * x_m[0] + (sumx[i2] - sumx[i1]) * x_m[1] + (sumx[kBlock] - sumx[i2]) * x_m[2];
            sumq2 = (sumw[i1] - sumw[0]) * x_m[0] * x_m[0] + (sumw[i2] - sumw[i1]) * x_m[1] * x_m[1] +
                    (sumw[kBlock] - sumw[i2]) * x_m[2] * x_m[2];
            if (sumq2 > 0 && sumqx * sumqx > best_score * sumq2) {
                scale = sumqx / sumq2;
                best_score = scale * sumqx;
                besti1 = i1;
                besti2 = i2;
                best_shift = -1;
            }
        }
    }
    s = Iq1Split{scale, besti1, besti2, best_shift};
}

// quantize_row_iq1_s_impl for one super-block: 8 blocks of 32, each 4 grid points (iq1s, 11-bit
// index) with a shared +-delta and a 3-bit scale. qw (256 weights) is required.
bool iq1_s_superblock(const LatticeKernels& kern, const float* xbl, const float* qwbl, block_iq1_s& y) {
    constexpr int kBlock = 32;
    const LatticeGrid& g = lattice(Lattice::Iq1S);
    // Level values (8 entries for LatticeKernels::best_neighbour; levels 3..7 do not occur).
    const float x_p[8] = {-1 + IQ1S_DELTA, IQ1S_DELTA, 1 + IQ1S_DELTA};
    const float x_m[8] = {-1 - IQ1S_DELTA, -IQ1S_DELTA, 1 - IQ1S_DELTA};
    float scales[QK_K / kBlock];
    int8_t shifts[QK_K / kBlock];
    float weight[kBlock], sumx[kBlock + 16] = {}, sumw[kBlock + 16] = {};
    int idx[kBlock];
    int8_t L[kBlock];
    uint16_t index[kBlock / 8];

    y.d = fp32_to_fp16(0.f);
    std::memset(y.qs, 0, sizeof(y.qs));
    std::memset(y.qh, 0, sizeof(y.qh));
    float max_scale = 0;
    const float sigma2 = 2 * sum_squares(xbl, QK_K) / QK_K;

    for (int ib = 0; ib < QK_K / kBlock; ++ib) {
        const float* xb = xbl + kBlock * ib;
        iq_weights(xb, qwbl + kBlock * ib, sigma2, kBlock, weight);
        float max = std::fabs(xb[0]);
        for (int i = 1; i < kBlock; ++i) max = max_f(max, std::fabs(xb[i]));
        if (max < kEpsIq1S) {
            scales[ib] = 0;
            shifts[ib] = 1;
            continue;
        }
        // Exhaustive weighted least squares over the two split points of the sorted values into
        // the levels (-1, 0, +1) + delta, for delta = +IQ1S_DELTA (x_p) and -IQ1S_DELTA (x_m).
        kern.sort_indices(xb, kBlock, idx);
        sumx[0] = sumw[0] = 0;
        for (int j = 0; j < kBlock; ++j) {
            const int i = idx[j];
            sumx[j + 1] = sumx[j] + weight[i] * xb[i];
            sumw[j + 1] = sumw[j] + weight[i];
        }
        Iq1Split split;
        split.scale = max;
        kern.iq1_s_split(sumx, sumw, x_p, x_m, split);
        float scale = split.scale;
        int best_shift = split.pattern;
        const int besti1 = split.i1, besti2 = split.i2;
        if (besti1 < 0 || besti2 < 0 || best_shift == 0) {
            scales[ib] = 0;
            shifts[ib] = 1;
            continue;
        }
        if (iq1_split_levels(idx, kBlock, besti1, besti2, scale, L)) best_shift = -best_shift;
        bool all_on_grid = true;
        const float* xx = best_shift == 1 ? x_p : x_m;
        for (int j = 0; j < kBlock / 8; ++j) {
            const int gi = iq1_grid_index(kern, g.view, xb + 8 * j, weight + 8 * j, scale, xx, L + 8 * j, all_on_grid);
            if (gi < 0) return false;
            index[j] = static_cast<uint16_t>(gi);
        }
        if (!all_on_grid)
            scale = iq1_refit_scale(
                g, index, kBlock / 8, xb, weight, [xx](int) { return xx; }, scale);
        uint16_t h = 0;
        for (int k = 0; k < kBlock / 8; ++k) {
            y.qs[(kBlock / 8) * ib + k] = static_cast<uint8_t>(index[k] & 255);
            h = static_cast<uint16_t>(h | ((index[k] >> 8) << 3 * k));
        }
        y.qh[ib] = h;
        scales[ib] = scale;
        shifts[ib] = static_cast<int8_t>(best_shift);
        max_scale = max_f(max_scale, scale);
    }

    if (!max_scale) return true;
    const float d = max_scale / 15;
    y.d = fp32_to_fp16(d * 1.125f);
    const float id = 1 / d;
    for (int ib = 0; ib < QK_K / kBlock; ++ib) {
        int l = odd_scale_index(id, scales[ib], 7);
        if (shifts[ib] == -1) l |= 8;
        y.qh[ib] = static_cast<uint16_t>(y.qh[ib] | (l << 12));
    }
    return true;
}

// Split search of quantize_row_iq1_m_impl for one 16-block (values sorted by idx): every split
// (i1, i2) of the sorted values into the levels (-1, 0, +1) + delta, with each 8-half picking its
// own delta sign: k = 2*(first half uses x_m) + (second half uses x_m). The four weighted sums are
// accumulated from scratch per split, in sorted order, as ggml does. The reference
// LatticeKernels::iq1_m_split: s gets the best split and k as its pattern (-1 when none).
void ref_iq1_m_split(const float* xb, const float* weight, const int* idx, const float* x_p, const float* x_m,
                     Iq1Split& s) {
    constexpr int kBlock = 16;
    float best_score = -FLT_MAX, scale = s.scale;
    int besti1 = -1, besti2 = -1, best_k = -1;
    float sumqx[4], sumq2[4];
    // Adds element i at level c: sums [0..3] use (x_p,x_p), (x_p,x_m), (x_m,x_p), (x_m,x_m) per half.
    auto add = [&](int i, int c) {
        const float w = weight[i];
        const int first = i < kBlock / 2;
        // In the first half k = 1 follows x_p and k = 2 x_m; in the second half the reverse.
        const int kp = first ? 1 : 2, km = first ? 2 : 1;
        sumqx[0] += w * x_p[c] * xb[i];
        sumqx[kp] += w * x_p[c] * xb[i];
        sumqx[km] += w * x_m[c] * xb[i];
        sumqx[3] += w * x_m[c] * xb[i];
        sumq2[0] += w * x_p[c] * x_p[c];
        sumq2[kp] += w * x_p[c] * x_p[c];
        sumq2[km] += w * x_m[c] * x_m[c];
        sumq2[3] += w * x_m[c] * x_m[c];
    };
    for (int i1 = 0; i1 <= kBlock; ++i1) {
        for (int i2 = i1; i2 <= kBlock; ++i2) {
            for (int k = 0; k < 4; ++k) sumqx[k] = sumq2[k] = 0;
            for (int j = 0; j < i1; ++j) add(idx[j], 0);
            for (int j = i1; j < i2; ++j) add(idx[j], 1);
            for (int j = i2; j < kBlock; ++j) add(idx[j], 2);
            for (int k = 0; k < 4; ++k) {
                if (sumq2[k] > 0 && sumqx[k] * sumqx[k] > best_score * sumq2[k]) {
                    scale = sumqx[k] / sumq2[k];
                    best_score = scale * sumqx[k];
                    besti1 = i1;
                    besti2 = i2;
                    best_k = k;
                }
            }
        }
    }
    s = Iq1Split{scale, besti1, besti2, best_k};
}

// Levels (x_p or x_m) of half k (0/1) of an IQ1_M block with delta pattern `shift` (0..3).
inline const float* iq1_m_levels(int shift, int k, const float* x_p, const float* x_m) {
    if (k == 0) return shift < 2 ? x_p : x_m;
    return shift % 2 == 0 ? x_p : x_m;
}

// quantize_row_iq1_m_impl for one super-block: 16 blocks of 16, each 2 grid points (iq1s) with
// their own +-delta and a 3-bit scale; the fp16 super-block scale is refit at the end and spread
// over the top nibbles of the four scale words. qw may be null.
bool iq1_m_superblock(const LatticeKernels& kern, const float* xbl, const float* qwbl, block_iq1_m& y) {
    constexpr int kBlock = 16;
    const LatticeGrid& g = lattice(Lattice::Iq1S);
    // Level values (8 entries for LatticeKernels::best_neighbour; levels 3..7 do not occur).
    const float x_p[8] = {-1 + IQ1M_DELTA, IQ1M_DELTA, 1 + IQ1M_DELTA};
    const float x_m[8] = {-1 - IQ1M_DELTA, -IQ1M_DELTA, 1 - IQ1M_DELTA};
    static constexpr uint8_t kMasks[4] = {0x00, 0x80, 0x08, 0x88};
    float scales[QK_K / kBlock];
    int8_t shifts[QK_K / kBlock];
    float weight[kBlock];
    int idx[kBlock];
    int8_t L[kBlock];
    uint16_t index[kBlock / 8];

    std::memset(y.qs, 0, sizeof(y.qs));
    std::memset(y.qh, 0, sizeof(y.qh));
    std::memset(y.scales, 0, sizeof(y.scales));
    float max_scale = 0;
    const float sigma2 = 2 * sum_squares(xbl, QK_K) / QK_K;

    for (int ib = 0; ib < QK_K / kBlock; ++ib) {
        const float* xb = xbl + kBlock * ib;
        iq_weights(xb, qwbl ? qwbl + kBlock * ib : nullptr, sigma2, kBlock, weight);
        float max = std::fabs(xb[0]);
        for (int i = 1; i < kBlock; ++i) max = max_f(max, std::fabs(xb[i]));
        if (max < kEpsIq1M) {
            scales[ib] = 0;
            shifts[ib] = 0;
            continue;
        }
        kern.sort_indices(xb, kBlock, idx);
        Iq1Split split;
        split.scale = max;
        kern.iq1_m_split(xb, weight, idx, x_p, x_m, split);
        float scale = split.scale;
        int best_k = split.pattern;
        const int besti1 = split.i1, besti2 = split.i2;
        if (besti1 < 0 || besti2 < 0 || best_k < 0) {
            scales[ib] = 0;
            shifts[ib] = 0;
            continue;
        }
        if (iq1_split_levels(idx, kBlock, besti1, besti2, scale, L)) best_k = 3 - best_k;
        bool all_on_grid = true;
        for (int j = 0; j < kBlock / 8; ++j) {
            const float* xx = iq1_m_levels(best_k, j, x_p, x_m);
            const int gi = iq1_grid_index(kern, g.view, xb + 8 * j, weight + 8 * j, scale, xx, L + 8 * j, all_on_grid);
            if (gi < 0) return false;
            index[j] = static_cast<uint16_t>(gi);
        }
        if (!all_on_grid) {
            auto levels = [&](int k) { return iq1_m_levels(best_k, k, x_p, x_m); };
            scale = iq1_refit_scale(g, index, kBlock / 8, xb, weight, levels, scale);
        }
        y.qs[2 * ib + 0] = static_cast<uint8_t>(index[0] & 255);
        y.qs[2 * ib + 1] = static_cast<uint8_t>(index[1] & 255);
        y.qh[ib] = static_cast<uint8_t>((index[0] >> 8) | ((index[1] >> 8) << 4));
        scales[ib] = scale;
        shifts[ib] = static_cast<int8_t>(best_k);
        max_scale = max_f(max_scale, scale);
    }

    if (!max_scale) return true;
    uint16_t sc[4] = {0, 0, 0, 0};
    float d = max_scale / 15;
    const float id = 1 / d;
    float sumqx_f = 0, sumq2_f = 0;
    for (int ib = 0; ib < QK_K / kBlock; ++ib) {
        const int l = odd_scale_index(id, scales[ib], 7);
        sc[ib / 4] = static_cast<uint16_t>(sc[ib / 4] | (l << 3 * (ib % 4)));
        y.qh[ib] = static_cast<uint8_t>(y.qh[ib] | kMasks[shifts[ib]]);
        const float* xb = xbl + kBlock * ib;
        iq_weights(xb, qwbl ? qwbl + kBlock * ib : nullptr, sigma2, kBlock, weight);
        for (int k = 0; k < kBlock / 8; ++k) {
            const float* xx = iq1_m_levels(shifts[ib], k, x_p, x_m);
            const int8_t* pg = g.point(y.qs[2 * ib + k] + ((y.qh[ib] << (8 - 4 * k)) & 0x700));
            for (int j = 0; j < 8; ++j) {
                const float w = weight[8 * k + j];
                const float q = xx[(pg[j] - 1) / 2] * static_cast<float>(2 * l + 1);
                sumqx_f += w * q * xb[8 * k + j];
                sumq2_f += w * q * q;
            }
        }
    }
    if (sumq2_f > 0) d = sumqx_f / sumq2_f;
    const uint16_t s = fp32_to_fp16(d * 1.1125f);
    sc[0] = static_cast<uint16_t>(sc[0] | ((s & 0x000f) << 12));
    sc[1] = static_cast<uint16_t>(sc[1] | ((s & 0x00f0) << 8));
    sc[2] = static_cast<uint16_t>(sc[2] | ((s & 0x0f00) << 4));
    sc[3] = static_cast<uint16_t>(sc[3] | (s & 0xf000));
    std::memcpy(y.scales, sc, sizeof(sc));
    return true;
}

// ================================================================ drivers

// The super-block quantizer of `t` over one row with kernels `kern`; false when a kernel found no
// finite grid point.
template <typename Block>
bool row_blocks(const LatticeKernels& kern, const float* x, void* dst, int64_t n_per_row, const float* imatrix,
                bool (*fn)(const LatticeKernels&, const float*, const float*, Block&)) {
    Block* y = static_cast<Block*>(dst);
    for (int64_t i = 0; i < n_per_row / QK_K; ++i) {
        if (!fn(kern, x + QK_K * i, imatrix ? imatrix + QK_K * i : nullptr, y[i])) return false;
    }
    return true;
}

// ggml's quantize_<type> for lattice type t with the reference kernels; non-finite input that
// leaves a group without a grid point is reported as ggml's search would fail on it.
size_t reference_rows(GgmlType t, const char* name, const float* src, void* dst, int64_t nrows, int64_t n_per_row,
                      const float* imatrix) {
    const size_t rb = row_size(t, n_per_row);
    for (int64_t r = 0; r < nrows; ++r) {
        if (!quantize_lattice_row(t, reference_lattice_kernels(), src + r * n_per_row,
                                  static_cast<uint8_t*>(dst) + static_cast<size_t>(r) * rb, n_per_row, imatrix))
            fail_non_finite(name);
    }
    return static_cast<size_t>(nrows) * rb;
}

}  // namespace

bool finish_grid_search(const LatticeKernels& k, const LatticeView& g, const GridSearch& p, int n, int trials,
                        const float* xval, const float* weight, const float* waux, const float* sumqx,
                        const float* sumq2, const uint32_t (*keys)[kMaxTrials], const uint32_t* on_bits, float& scale,
                        int8_t* L) {
    const int groups = n / g.dims;
    bool on_grid[8];
    for (int j = 0; j < groups; ++j) on_grid[j] = p.start_on_grid;
    float best = 0;
    int win = -1;
    for (int c = 0; c < trials; ++c) {
        if (sumq2[c] > 0 && sumqx[c] * sumqx[c] > best * sumq2[c]) {
            scale = sumqx[c] / sumq2[c];
            best = scale * sumqx[c];
            win = c;
        }
    }
    if (win >= 0) {
        const uint32_t mask = (1u << g.bits) - 1;
        for (int j = 0; j < groups; ++j) {
            for (int i = 0; i < g.dims; ++i)
                L[g.dims * j + i] = static_cast<int8_t>((keys[j][win] >> (g.bits * i)) & mask);
            on_grid[j] = (on_bits[j] >> win) & 1;
        }
    }
    return grid_search_refit(k, g, p, n, xval, weight, waux, on_grid, scale, L);
}

const LatticeKernels& reference_lattice_kernels() {
    static constexpr LatticeKernels k{ref_search, ref_best_neighbour, ref_iq1_s_split, ref_iq1_m_split,
                                      ref_sort_indices};
    return k;
}

bool quantize_lattice_row(GgmlType t, const LatticeKernels& k, const float* x, void* dst, int64_t n_per_row,
                          const float* imatrix) {
    switch (t) {
        case GgmlType::IQ2_XXS: return row_blocks<block_iq2_xxs>(k, x, dst, n_per_row, imatrix, iq2_xxs_superblock);
        case GgmlType::IQ2_XS: return row_blocks<block_iq2_xs>(k, x, dst, n_per_row, imatrix, iq2_xs_superblock);
        case GgmlType::IQ2_S: return row_blocks<block_iq2_s>(k, x, dst, n_per_row, imatrix, iq2_s_superblock);
        case GgmlType::IQ3_XXS: return row_blocks<block_iq3_xxs>(k, x, dst, n_per_row, imatrix, iq3_xxs_superblock);
        case GgmlType::IQ3_S: return row_blocks<block_iq3_s>(k, x, dst, n_per_row, imatrix, iq3_s_superblock);
        case GgmlType::IQ1_S: return row_blocks<block_iq1_s>(k, x, dst, n_per_row, imatrix, iq1_s_superblock);
        case GgmlType::IQ1_M: return row_blocks<block_iq1_m>(k, x, dst, n_per_row, imatrix, iq1_m_superblock);
        default: throw std::logic_error("quantize_lattice_row: not a lattice type");
    }
}

size_t quantize_iq3_xxs(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix) {
    return reference_rows(GgmlType::IQ3_XXS, "IQ3_XXS", src, dst, nrows, n_per_row, imatrix);
}
size_t quantize_iq3_s(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix) {
    return reference_rows(GgmlType::IQ3_S, "IQ3_S", src, dst, nrows, n_per_row, imatrix);
}
size_t quantize_iq2_xxs(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix) {
    return reference_rows(GgmlType::IQ2_XXS, "IQ2_XXS", src, dst, nrows, n_per_row, imatrix);
}
size_t quantize_iq2_xs(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix) {
    return reference_rows(GgmlType::IQ2_XS, "IQ2_XS", src, dst, nrows, n_per_row, imatrix);
}
size_t quantize_iq2_s(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix) {
    return reference_rows(GgmlType::IQ2_S, "IQ2_S", src, dst, nrows, n_per_row, imatrix);
}
size_t quantize_iq1_s(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix) {
    return reference_rows(GgmlType::IQ1_S, "IQ1_S", src, dst, nrows, n_per_row, imatrix);
}
size_t quantize_iq1_m(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix) {
    return reference_rows(GgmlType::IQ1_M, "IQ1_M", src, dst, nrows, n_per_row, imatrix);
}

}  // namespace oiw::quant
