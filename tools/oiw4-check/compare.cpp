// oiw4-check SOURCE CONVERTED: the two models' tensor sets paired by name; matrices run through
// both semantics on both sides, vectors compared byte for byte; per-tensor verdicts and summaries.
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <random>
#include <unordered_map>

#include "converters/matmul/matvec.h"
#include "converters/quant/kernels.h"
#include "libformat/escape.h"
#include "libformat/io/mapped_file.h"
#include "libformat/json.h"
#include "libformat/oiw4/oiw4.h"
#include "libformat/parallel.h"
#include "libformat/pattern.h"
#include "tools/common/tool_support.h"
#include "tools/oiw4-check/commands.h"

namespace oiw::check {
namespace {

using matmul::MatVec;
using matmul::TensorEntry;
using matmul::TensorSource;

// Error statistics of one semantics: converted output c against source output s.
struct Stats {
    double max_abs = 0, err2 = 0, ref2 = 0, cc = 0, cs = 0;
    bool identical = true, present = false;
    void add(double s, double c, bool same_bits) {
        present = true;
        const double e = c - s;
        max_abs = std::max(max_abs, std::fabs(e));
        err2 += e * e;
        ref2 += s * s;
        cc += c * c;
        cs += c * s;
        identical = identical && same_bits;
    }
    // sqrt(err2 / ref2); infinite when NaN or Inf outputs made it undefined.
    double rel_rms() const {
        const double r = ref2 > 0 ? std::sqrt(err2 / ref2) : (err2 > 0 ? INFINITY : 0);
        return std::isnan(r) ? INFINITY : r;
    }
    double cosine() const { return (ref2 > 0 && cc > 0) ? cs / std::sqrt(ref2 * cc) : (err2 == 0 ? 1 : 0); }
};

// One tensor of either model. `src` / `dst` are null on the side it is missing from.
struct Row {
    const TensorEntry* src = nullptr;
    const TensorEntry* dst = nullptr;
    std::string verdict;
    bool lossless = false, ok = false, identical = false;
    bool matrix = false;  // run through the matmul (else compared byte for byte)
    double limit = -1;    // lossy pairs: the relative RMS limit
    Stats exact, integer;
    std::string src_kind() const { return src ? src->kind : ""; }
    std::string dst_kind() const { return dst ? dst->kind : ""; }
    const std::string& name() const { return src ? src->info.name : dst->info.name; }
};

// Heavy-tailed seeded activations: x = z1 * exp(z2), z ~ N(0, 1) (a Gaussian scale mixture).
std::vector<float> seeded_vectors(uint64_t seed, int64_t cols, int n) {
    std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(cols));
    std::normal_distribution<double> z;
    std::vector<float> v(static_cast<size_t>(cols) * n);
    for (auto& x : v) x = static_cast<float>(z(rng) * std::exp(z(rng)));
    return v;
}

// Raw little-endian f32 activations: a whole number of floats, at least one, all finite.
std::vector<float> load_activations(const std::string& path) {
    const MappedFile f(path);
    const auto b = f.bytes();
    if (b.size() % 4 != 0) throw FormatError(ErrorKind::Truncated, path, "", "size is not a multiple of 4 (raw f32)");
    if (b.empty()) throw FormatError(ErrorKind::Truncated, path, "", "empty: no activation vector");
    std::vector<float> v(b.size() / 4);
    std::memcpy(v.data(), b.data(), b.size());
    for (size_t i = 0; i < v.size(); ++i)
        if (!std::isfinite(v[i]))
            throw FormatError(ErrorKind::BadData, path, fmt::format("float {}", i),
                              fmt::format("is {} (activations must be finite)", v[i]));
    return v;
}

// The relative RMS limit of a lossy pair converted to `dst`: --max-rel-rms for its kind, else the
// kernel table's limit of the ggml type it holds.
double limit_of(const TensorEntry& dst, const std::map<std::string, double>& overrides) {
    const auto it = overrides.find(dst.kind);
    return it != overrides.end() ? it->second : max_rel_rms(dst.holds);
}

bool same_shape(const GgufTensorInfo& a, const GgufTensorInfo& b) { return a.n_dims == b.n_dims && a.ne == b.ne; }

// Classifies a tensor present on both sides: shape, then matrix (run later) or vector (bytes now).
void pair(const TensorSource& src, const TensorSource& dst, Row& row) {
    const GgufTensorInfo &s = row.src->info, &d = row.dst->info;
    row.lossless = row.src->holds == row.dst->holds;  // Q4_0 <-> oiw4, Q4_K <-> q4kx8(-il4): same values
    if (!same_shape(s, d)) {
        row.verdict = fmt::format("shape differs: {} vs {}", s.shape_string(), d.shape_string());
        return;
    }
    row.matrix = s.n_dims >= 2;
    if (row.matrix) return;
    if (!row.lossless) {
        row.verdict = fmt::format("type differs: {} -> {} (1-D tensors must be kept)", row.src->kind, row.dst->kind);
        return;
    }
    const auto a = src.ggml_bytes(s.name), b = dst.ggml_bytes(d.name);
    row.ok = row.identical = a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size()) == 0;
    row.verdict = row.ok ? "bit-identical" : "bytes differ";
}

// Every tensor of either model whose name matches `re`: the source's in order, then the
// converted model's extras in order.
std::vector<Row> plan_rows(const TensorSource& src, const TensorSource& dst, const Pattern& re) {
    std::unordered_map<std::string, const TensorEntry*> in_dst;
    for (const auto& e : dst.entries()) in_dst.emplace(e.info.name, &e);
    std::vector<Row> rows;
    for (const auto& e : src.entries()) {
        if (!re.search(e.info.name)) continue;
        Row row;
        row.src = &e;
        const auto it = in_dst.find(e.info.name);
        if (it == in_dst.end()) {
            row.verdict = "missing in converted";
        } else {
            row.dst = it->second;
            in_dst.erase(it);
            pair(src, dst, row);
        }
        rows.push_back(std::move(row));
    }
    for (const auto& e : dst.entries()) {
        if (!in_dst.count(e.info.name) || !re.search(e.info.name)) continue;
        Row row;
        row.dst = &e;
        row.verdict = "extra in converted (not in source)";
        rows.push_back(std::move(row));
    }
    return rows;
}

// Refuses an activations file whose length is not a whole number of rows of every compared matrix.
void check_activations(const std::vector<Row>& rows, size_t n_floats, const std::string& path) {
    for (const auto& r : rows) {
        if (!r.matrix) continue;
        const auto cols = static_cast<size_t>(r.src->info.ne[0]);
        if (n_floats % cols != 0)
            throw FormatError(ErrorKind::Truncated, path, r.name(),
                              fmt::format("{} floats are not a multiple of the row length {}", n_floats, cols));
    }
}

void run_vectors(const MatVec& s, const MatVec& c, const std::vector<float>& xs, int nvec, int threads, Row& row) {
    const int64_t rows = s.rows(), cols = s.cols();
    std::vector<double> es(rows), ec(rows);
    std::vector<float> is(rows), ic(rows);
    const bool integer = s.has_integer() && c.has_integer();
    for (int v = 0; v < nvec; ++v) {
        const float* x = xs.data() + static_cast<size_t>(v) * cols;
        s.exact(x, es.data(), threads);
        c.exact(x, ec.data(), threads);
        for (int64_t r = 0; r < rows; ++r) row.exact.add(es[r], ec[r], std::memcmp(&es[r], &ec[r], 8) == 0);
        if (!integer) continue;
        s.integer(x, is.data(), threads);
        c.integer(x, ic.data(), threads);
        for (int64_t r = 0; r < rows; ++r) row.integer.add(is[r], ic[r], std::memcmp(&is[r], &ic[r], 4) == 0);
    }
}

// Runs one matrix pair and gives its verdict.
void compare_matrix(const TensorSource& src, const TensorSource& dst, const CompareOptions& o,
                    const std::vector<float>& file_acts, int threads, Row& row) {
    const auto s = src.tensor(row.src->info.name), c = dst.tensor(row.dst->info.name);
    if (!s || !c) throw FormatError(ErrorKind::Unsupported, o.source, row.name(), "no matmul for this tensor");
    const int64_t cols = s->cols();
    int nvec = o.vectors;
    std::vector<float> xs;
    if (file_acts.empty()) {
        xs = seeded_vectors(o.seed, cols, nvec);
    } else {
        nvec = static_cast<int>(std::min<int64_t>(nvec, static_cast<int64_t>(file_acts.size()) / cols));
        xs.assign(file_acts.begin(), file_acts.begin() + static_cast<std::ptrdiff_t>(nvec * cols));
    }
    run_vectors(*s, *c, xs, nvec, threads, row);
    const bool same = row.exact.identical && (!row.integer.present || row.integer.identical);
    if (row.lossless) {
        row.ok = row.identical = same;
        row.verdict = row.ok ? "bit-identical" : "lossless pair differs";
    } else {
        row.limit = limit_of(*row.dst, o.max_rel_rms);
        row.ok = row.exact.rel_rms() <= row.limit;
        row.identical = row.ok && same;
        row.verdict = row.ok ? "within limit" : "relative RMS above limit";
    }
}

// Summary of a set of rows.
struct Sum {
    size_t n = 0, failed = 0, identical = 0, missing = 0, extra = 0;
    double worst_exact = 0, worst_integer = 0, min_cos = 1;
    void add(const Row& r) {
        ++n;
        failed += !r.ok;
        identical += r.identical;
        missing += !r.dst;
        extra += !r.src;
        if (!r.matrix || !r.exact.present) return;
        worst_exact = std::max(worst_exact, r.exact.rel_rms());
        worst_integer = std::max(worst_integer, r.integer.rel_rms());
        const double c = r.exact.cosine();
        if (std::isnan(c) || c < min_cos) min_cos = c;  // NaN sticks
    }
};

void stats_json(json::Writer& w, std::string_view key, const Stats& s) {
    w.key(key);
    if (!s.present) return w.null();
    w.begin_object();
    w.field("max_abs_error", s.max_abs);
    w.field("rel_rms_error", s.rel_rms());
    w.field("cosine", s.cosine());
    w.field("bit_identical", s.identical);
    w.end_object();
}

void sum_json(json::Writer& w, const Sum& s, bool overall) {
    w.begin_object();
    w.field("tensors", uint64_t{s.n});
    w.field("failed", uint64_t{s.failed});
    w.field("bit_identical", uint64_t{s.identical});
    if (overall) {
        w.field("missing", uint64_t{s.missing});
        w.field("extra", uint64_t{s.extra});
    }
    w.field("worst_rel_rms_exact", s.worst_exact);
    w.field("worst_rel_rms_integer", s.worst_integer);
    w.field("min_cosine", s.min_cos);
    w.end_object();
}

// A kind as JSON: the string, or null for the side a tensor is missing from.
void kind_json(json::Writer& w, std::string_view key, const TensorEntry* e) {
    w.key(key);
    e ? w.value(e->kind) : w.null();
}

void print_json(const CompareOptions& o, const std::vector<Row>& rows, const std::map<std::string, Sum>& per,
                const Sum& all) {
    json::Writer w;
    w.begin_object();
    w.field("source", o.source);
    w.field("converted", o.converted);
    w.key("tensors");
    w.begin_array();
    for (const Row& r : rows) {
        w.begin_object();
        w.field("name", r.name());
        kind_json(w, "source_kind", r.src);
        kind_json(w, "converted_kind", r.dst);
        w.field("lossless", r.lossless);
        w.field("ok", r.ok);
        w.field("bit_identical", r.identical);
        w.field("verdict", r.verdict);
        w.key("max_rel_rms");
        r.limit >= 0 ? w.value(r.limit) : w.null();
        stats_json(w, "exact", r.exact);
        stats_json(w, "integer", r.integer);
        w.end_object();
    }
    w.end_array();
    w.key("summary");
    w.begin_object();
    for (const auto& [k, s] : per) {
        w.key(k);
        sum_json(w, s, false);
    }
    w.end_object();
    w.key("overall");
    sum_json(w, all, true);
    w.field("ok", all.failed == 0);
    w.end_object();
    fmt::print("{}\n", w.str());
}

void print_text(const std::vector<Row>& rows, const std::map<std::string, Sum>& per, const Sum& all) {
    fmt::print("{:<40} {:>6} -> {:<9} {:>11} {:>11} {:>11} {:>11}  {}\n", "tensor", "source", "conv", "exact rRMS",
               "int rRMS", "cosine", "int max|e|", "verdict");
    for (const auto& r : rows) {
        const std::string name = escape_text(r.name());
        const std::string src = r.src ? r.src_kind() : "-", dst = r.dst ? r.dst_kind() : "-";
        if (!r.matrix || !r.exact.present) {
            fmt::print("{:<40} {:>6} -> {:<9} {:>11} {:>11} {:>11} {:>11}  {}\n", name, src, dst, "", "", "", "",
                       r.verdict);
            continue;
        }
        fmt::print("{:<40} {:>6} -> {:<9} {:>11.4e} {:>11.4e} {:>11.8f} {:>11.4e}  {}{}\n", name, src, dst,
                   r.exact.rel_rms(), r.integer.rel_rms(), r.exact.cosine(), r.integer.max_abs, r.verdict,
                   r.limit < 0 ? "" : fmt::format(" (limit {:.3g})", r.limit));
    }
    for (const auto& [k, s] : per)
        fmt::print(
            "summary {:<9} {} tensors, {} bit-identical, worst rRMS exact {:.4e} integer {:.4e}, min cosine {:.8f}, {} "
            "failed\n",
            k, s.n, s.identical, s.worst_exact, s.worst_integer, s.min_cos, s.failed);
    fmt::print("overall: {} tensors, {} bit-identical, {} failed ({} missing in converted, {} extra)\n", all.n,
               all.identical, all.failed, all.missing, all.extra);
}

// Refuses a --max-rel-rms key that names no kind.
void check_kind_name(const std::string& kind) {
    if (!type_from_name(kind) && (!encoding_from_name(kind) || kind == "raw"))
        throw FormatError(ErrorKind::Usage, "", "--max-rel-rms",
                          "unknown kind '" + kind + "' (a ggml type, oiw4, q4kx8 or q4kx8-il4)");
}

}  // namespace

int resolve_threads(unsigned t) { return static_cast<int>(thread_count(t, UINT64_MAX)); }

int run_compare(const CompareOptions& o) {
    for (const auto& [kind, limit] : o.max_rel_rms) check_kind_name(kind);
    const auto src = matmul::open_tensor_source(o.source);
    const auto dst = matmul::open_tensor_source(o.converted);
    const int threads = resolve_threads(o.threads);
    const std::vector<float> file_acts = o.activations.empty() ? std::vector<float>{} : load_activations(o.activations);
    const Pattern re(o.tensor_regex.empty() ? std::string_view(".*") : o.tensor_regex, "--tensor");

    std::vector<Row> rows = plan_rows(*src, *dst, re);
    if (!file_acts.empty()) check_activations(rows, file_acts.size(), o.activations);
    const auto row_bytes = [](const Row& r) {  // both sides are read
        return (r.src ? r.src->info.n_bytes : 0) + (r.dst ? r.dst->info.n_bytes : 0);
    };
    uint64_t total = 0, done = 0;
    for (const auto& r : rows) total += row_bytes(r);
    Progress progress("oiw4-check", rows.size(), total);
    for (size_t i = 0; i < rows.size(); ++i) {
        progress.update(i, done, rows[i].name());
        if (rows[i].matrix) compare_matrix(*src, *dst, o, file_acts, threads, rows[i]);
        done += row_bytes(rows[i]);
    }
    progress.done();

    std::map<std::string, Sum> per;  // by converted kind (tensors missing from CONVERTED: overall only)
    Sum all;
    for (const auto& r : rows) {
        if (r.dst) per[r.dst_kind()].add(r);
        all.add(r);
    }
    o.json ? print_json(o, rows, per, all) : print_text(rows, per, all);
    if (all.failed == 0) return kExitOk;
    for (const auto& r : rows) {
        if (r.ok) continue;
        fmt::print(stderr, "oiw4-check: {}: {}{}\n", escape_text(r.name()), r.verdict,
                   all.failed > 1 ? fmt::format(" (and {} more failed tensors)", all.failed - 1) : "");
        break;
    }
    return kExitDiffers;
}

}  // namespace oiw::check
