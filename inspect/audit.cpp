#include "inspect/audit.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace oiw::inspect {

std::string_view flag_id(FlagKind k) {
    switch (k) {
        case FlagKind::NoSimdDot: return "no-simd-dot";
        case FlagKind::Unsupported: return "unsupported";
        case FlagKind::RowNot256: return "row-not-256";
        case FlagKind::FloatMatmul: return "float-matmul";
        case FlagKind::NoRepack: return "no-repack";
        case FlagKind::LmHeadShare: return "lm-head-share";
    }
    return "?";
}

namespace {

// Decimal megabytes, the unit of the per-token figures in messages.
std::string mb(uint64_t bytes) { return fmt::format("{:.2f} MB", static_cast<double>(bytes) / 1e6); }
std::string pct(double share) { return fmt::format("{:.1f}%", share * 100); }
// "1 matmul tensor", "3 matmul tensors".
std::string tensors_n(size_t n) { return fmt::format("{} matmul tensor{}", n, n == 1 ? "" : "s"); }

bool is_float(GgmlType t) { return t == GgmlType::F32 || t == GgmlType::F16 || t == GgmlType::BF16; }

// General-purpose weight types a suggestion may name, in order of preference among equal bpw.
constexpr GgmlType kCandidates[] = {GgmlType::F16,    GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q6_K, GgmlType::Q5_K,
                                    GgmlType::Q4_K,   GgmlType::Q3_K, GgmlType::Q2_K, GgmlType::Q4_0, GgmlType::IQ4_NL,
                                    GgmlType::IQ4_XS, GgmlType::Q5_1, GgmlType::Q5_0, GgmlType::Q4_1};

// Types with a SIMD dot in `p` whose block size divides every row length in `rows`. The legacy
// 32-wide Q4_1/Q5_0/Q5_1 are offered only where no 256-wide type fits.
std::vector<GgmlType> simd_types_for(const Profile& p, const std::vector<int64_t>& rows) {
    const bool k_ok = std::all_of(rows.begin(), rows.end(), [](int64_t r) { return r % 256 == 0; });
    std::vector<GgmlType> out;
    for (GgmlType t : kCandidates) {
        if (k_ok && (t == GgmlType::Q4_1 || t == GgmlType::Q5_0 || t == GgmlType::Q5_1)) continue;
        const ProfileEntry* e = p.entry(t);
        if (!e || e->dot != Dot::Simd) continue;
        const uint32_t bs = traits(t).block_size;
        if (std::all_of(rows.begin(), rows.end(), [&](int64_t r) { return r % bs == 0; })) out.push_back(t);
    }
    std::stable_sort(out.begin(), out.end(), [](GgmlType x, GgmlType y) { return type_bpw(x) < type_bpw(y); });
    return out;
}

std::string describe(GgmlType t) { return fmt::format("{} ({:.2g} bpw)", type_name(t), type_bpw(t)); }

// In `cands` (ascending bpw, ties in preference order): the preferred type with the highest bpw
// below `bpw`, and the one with the lowest bpw at or above it (never `cur` itself).
const GgmlType* best_below(const std::vector<GgmlType>& cands, double bpw, GgmlType cur) {
    const GgmlType* best = nullptr;
    for (const auto& t : cands)
        if (t != cur && type_bpw(t) < bpw && (!best || type_bpw(t) > type_bpw(*best))) best = &t;
    return best;
}
const GgmlType* best_above(const std::vector<GgmlType>& cands, double bpw, GgmlType cur) {
    for (const auto& t : cands)
        if (t != cur && type_bpw(t) >= bpw) return &t;
    return nullptr;
}

// "requantize to Q8_0 (8.5 bpw) or Q4_0 (4.5 bpw)": nearest SIMD type at or above the current
// bits per weight, and nearest below.
std::string requant_suggestion(const Profile& p, GgmlType cur, const std::vector<int64_t>& rows) {
    const auto cands = simd_types_for(p, rows);
    const GgmlType* above = best_above(cands, type_bpw(cur), cur);
    const GgmlType* below = best_below(cands, type_bpw(cur), cur);
    if (!above && !below) return fmt::format("no general-purpose type with a SIMD dot in {} fits these rows", p.name);
    std::string s = "requantize to ";
    if (above) s += describe(*above);
    if (above && below) s += " or ";
    if (below) s += describe(*below);
    return s + fmt::format(" ({} a SIMD dot in {})", above && below ? "both have" : "has", p.name);
}

template <typename Key>
struct Bucket {
    Key key{};
    uint64_t bpt = 0;
    std::vector<size_t> tensors;
};

// The matmul weights gathered by what a rule looks at.
struct Buckets {
    std::map<uint32_t, Bucket<GgmlType>> by_type;
    std::map<int64_t, Bucket<int64_t>> by_row;       // row length not a multiple of 256
    std::map<uint32_t, Bucket<GgmlType>> no_repack;  // repackable type, rows % repack_rows != 0
    std::map<int, Bucket<traffic::Group>> float_groups;
};

// What the rules read: the tensor infos, their traffic and the profile.
struct Ctx {
    const std::vector<GgufTensorInfo>& infos;
    const traffic::Analysis& a;
    const Profile& p;

    // b as a share of the total bytes per token (0 when there is no traffic).
    double share(uint64_t b) const {
        const uint64_t total = a.traffic.bytes_per_token;
        return total > 0 ? static_cast<double>(b) / static_cast<double>(total) : 0.0;
    }
    // The distinct row lengths of the tensors at idx, ascending.
    std::vector<int64_t> rows_of(const std::vector<size_t>& idx) const {
        std::vector<int64_t> rows;
        rows.reserve(idx.size());
        for (size_t i : idx) rows.push_back(infos[i].ne[0]);
        std::sort(rows.begin(), rows.end());
        rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
        return rows;
    }
    // A flag without message, suggestion or source.
    Flag make(FlagKind k, std::string subject, uint64_t bpt, std::vector<size_t> tensors) const {
        Flag fl;
        fl.kind = k;
        fl.subject = std::move(subject);
        fl.bytes_per_token = bpt;
        fl.share = share(bpt);
        fl.tensors = std::move(tensors);
        return fl;
    }
    // "Q5_0 x11, Q8_0 x2": the types of the tensors at idx, with counts.
    std::string type_counts(const std::vector<size_t>& idx) const {
        std::map<uint32_t, size_t> n;
        for (size_t i : idx) n[static_cast<uint32_t>(infos[i].type)]++;
        std::string out;
        for (const auto& [id, k] : n)
            out += fmt::format("{}{} x{}", out.empty() ? "" : ", ", type_name(static_cast<GgmlType>(id)), k);
        return out;
    }
};

// The matmul weights in the buckets of every rule, each bucket's tensors in file order.
Buckets gather(const Ctx& c) {
    Buckets bk;
    for (size_t i = 0; i < c.infos.size(); ++i) {
        const auto& t = c.infos[i];
        const auto& tf = c.a.tensors[i];
        if (!tf.matmul) continue;
        auto add = [&](auto& bucket, auto key) {
            bucket.key = key;
            bucket.bpt += tf.bytes_per_token;
            bucket.tensors.push_back(i);
        };
        add(bk.by_type[static_cast<uint32_t>(t.type)], t.type);
        if (t.ne[0] % 256 != 0) add(bk.by_row[t.ne[0]], t.ne[0]);
        const ProfileEntry* e = c.p.entry(t.type);
        if (e && !e->repack.empty() && t.ne[1] % c.p.repack_rows != 0)
            add(bk.no_repack[static_cast<uint32_t>(t.type)], t.type);
        if (is_float(t.type)) add(bk.float_groups[static_cast<int>(tf.group)], tf.group);
    }
    return bk;
}

// Rule 1: types without a SIMD dot, or unsupported (a type missing from the profile counts as
// unsupported).
void flag_slow_types(const Ctx& c, const Buckets& bk, std::vector<Flag>& flags) {
    const Profile& p = c.p;
    for (const auto& [id, b] : bk.by_type) {
        const ProfileEntry* e = p.entry(b.key);
        if (e && e->dot == Dot::Simd) continue;
        const std::string tn(type_name(b.key));
        const bool scalar = e && e->dot == Dot::Scalar;
        Flag fl = c.make(scalar ? FlagKind::NoSimdDot : FlagKind::Unsupported, tn, b.bpt, b.tensors);
        const std::string what = !e       ? fmt::format("is not described by profile {}", p.name)
                                 : scalar ? fmt::format("has only a scalar dot product in {}", p.name)
                                          : fmt::format("cannot be multiplied by {}", p.name);
        fl.message =
            fmt::format("{} {}: {}, {}/token ({})", tn, what, tensors_n(b.tensors.size()), mb(b.bpt), pct(fl.share));
        fl.suggestion = requant_suggestion(p, b.key, c.rows_of(b.tensors));
        if (e) fl.cite = p.version + ": " + e->cite;
        flags.push_back(std::move(fl));
    }
}

// Rule 2: row lengths not a multiple of 256.
void flag_short_rows(const Ctx& c, const Buckets& bk, std::vector<Flag>& flags) {
    const Profile& p = c.p;
    for (const auto& [row, b] : bk.by_row) {
        const std::string types = c.type_counts(b.tensors);
        Flag fl = c.make(FlagKind::RowNot256, fmt::format("row {}", row), b.bpt, b.tensors);
        fl.message = fmt::format(
            "row length {} is not a multiple of 256, so K-quants are impossible: {} ({}), "
            "{}/token ({})",
            row, tensors_n(b.tensors.size()), types, mb(b.bpt), pct(fl.share));
        std::string fits;
        for (GgmlType t : simd_types_for(p, {row}))
            if (traits(t).quantized) fits += (fits.empty() ? "" : ", ") + std::string(type_name(t));
        fl.suggestion =
            fits.empty()
                ? fmt::format("no quantized type with a SIMD dot in {} fits rows of {}; keep F16 or pad rows", p.name,
                              row)
                : fmt::format("quantizers fall back to 32-wide blocks here; pick one with a SIMD dot in {}: {}", p.name,
                              fits);
        flags.push_back(std::move(fl));
    }
}

// Rule 3: float matrices on the matmul path (groups from kFloatMatmulMinShare of the traffic on).
void flag_float_matmuls(const Ctx& c, const Buckets& bk, std::vector<Flag>& flags) {
    for (const auto& [g, b] : bk.float_groups) {
        if (c.share(b.bpt) < kFloatMatmulMinShare) continue;
        const std::string types = c.type_counts(b.tensors);
        Flag fl = c.make(FlagKind::FloatMatmul, std::string(traffic::group_id(b.key)), b.bpt, b.tensors);
        fl.message = fmt::format("{}: {} float {} on the matmul path ({}), {}/token ({})", traffic::group_label(b.key),
                                 b.tensors.size(), b.tensors.size() == 1 ? "matrix" : "matrices", types, mb(b.bpt),
                                 pct(fl.share));
        if (b.key == traffic::Group::Routers)
            fl.suggestion =
                "routers are read in full every token: store them as Q8_0 (4x less traffic than F32), or F16 at least";
        else if (b.key == traffic::Group::LmHead)
            fl.suggestion = "quantize the lm_head (Q8_0 or Q6_K keeps quality; 2-4x less traffic)";
        else
            fl.suggestion = "quantize these matrices (Q8_0 halves F16 traffic; 4-bit types quarter it)";
        flags.push_back(std::move(fl));
    }
}

// Rule 4: repackable types whose row count prevents repacking.
void flag_no_repack(const Ctx& c, const Buckets& bk, std::vector<Flag>& flags) {
    const Profile& p = c.p;
    for (const auto& [id, b] : bk.no_repack) {
        const ProfileEntry* e = p.entry(b.key);
        Flag fl = c.make(FlagKind::NoRepack, std::string(type_name(b.key)), b.bpt, b.tensors);
        fl.message = fmt::format(
            "{}: {} with a row count not a multiple of {} cannot be repacked to {}: {}/token "
            "({}) take the plain dot-product path",
            type_name(b.key), tensors_n(b.tensors.size()), p.repack_rows, e->repack, mb(b.bpt), pct(fl.share));
        fl.suggestion = fmt::format("pad or prune rows (ne[1]) to a multiple of {}", p.repack_rows);
        fl.cite = p.version + ": " + e->cite;
        flags.push_back(std::move(fl));
    }
}

// "give output.weight fewer bits (now Q8_0 (8.5 bpw); e.g. Q6_K (6.6 bpw) or Q5_K (5.5 bpw)) or
// prune the vocabulary": up to two lower-bit quantized types with a SIMD dot that fit the rows of
// the lm_head tensors at idx, highest bpw first.
std::string lm_head_suggestion(const Ctx& c, const std::vector<size_t>& idx) {
    const GgufTensorInfo& head = c.infos[idx.front()];
    std::vector<std::string> lower;
    const auto cands = simd_types_for(c.p, c.rows_of(idx));
    double bpw = type_bpw(head.type);
    while (lower.size() < 2) {
        const GgmlType* t = best_below(cands, bpw, head.type);
        if (!t || !traits(*t).quantized) break;
        lower.push_back(describe(*t));
        bpw = type_bpw(*t);
    }
    return fmt::format("give {} fewer bits{} or prune the vocabulary", head.name,
                       lower.empty()
                           ? std::string()
                           : fmt::format(" (now {}; e.g. {})", describe(head.type), fmt::join(lower, " or ")));
}

// Rule 5 (when the lm_head share is above kLmHeadShareLimit): the lm_head's flag.
Flag lm_head_flag(const Ctx& c) {
    const traffic::Analysis& a = c.a;
    const uint64_t lm = a.traffic.by_group[static_cast<size_t>(traffic::Group::LmHead)];
    std::vector<size_t> idx;
    std::string types;
    for (size_t i = 0; i < c.infos.size(); ++i)
        if (a.tensors[i].group == traffic::Group::LmHead) {
            idx.push_back(i);
            types +=
                (types.empty() ? "" : ", ") + std::string(type_name(c.infos[i].type)) + " " + c.infos[i].shape_string();
        }
    Flag fl = c.make(FlagKind::LmHeadShare, "lm_head", lm, idx);
    fl.message = fmt::format("lm_head{} is {} of bytes/token ({} of {}; {})",
                             a.model.tied_embeddings ? " (tied to token_embd)" : "", pct(a.traffic.lm_head_share),
                             mb(lm), mb(a.traffic.bytes_per_token), types);
    fl.suggestion = lm_head_suggestion(c, idx);
    return fl;
}

}  // namespace

std::vector<Flag> audit(const Model& f, const traffic::Analysis& a, const Profile& p) {
    const Ctx c{f.tensors(), a, p};
    const Buckets bk = gather(c);
    std::vector<Flag> flags;
    flag_slow_types(c, bk, flags);
    flag_short_rows(c, bk, flags);
    flag_float_matmuls(c, bk, flags);
    flag_no_repack(c, bk, flags);
    if (a.traffic.lm_head_share > kLmHeadShareLimit) flags.push_back(lm_head_flag(c));
    std::stable_sort(flags.begin(), flags.end(), [](const Flag& x, const Flag& y) {
        if (x.kind != y.kind) return x.kind < y.kind;
        return x.bytes_per_token > y.bytes_per_token;
    });
    return flags;
}

}  // namespace oiw::inspect
