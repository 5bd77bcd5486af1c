// oiw4-check SOURCE CONVERTED: both semantics on both sides, per-tensor errors, verdicts.
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <regex>
#include <thread>

#include "converters/matmul/matvec.h"
#include "libformat/error.h"
#include "tools/common/tool_support.h"
#include "tools/oiw4-check/commands.h"

namespace oiw::check {
namespace {

using matmul::MatVec;

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
    double rel_rms() const { return ref2 > 0 ? std::sqrt(err2 / ref2) : (err2 > 0 ? INFINITY : 0); }
    double cosine() const { return (ref2 > 0 && cc > 0) ? cs / std::sqrt(ref2 * cc) : (err2 == 0 ? 1 : 0); }
};

struct Row {
    std::string name, src_kind, dst_kind, verdict;
    bool lossless = false, ok = true;
    double limit = 0;
    Stats exact, integer;
};

// Same kind, or a re-layout that keeps every weight and scale bit (either direction).
bool lossless_pair(const std::string& src, const std::string& dst) {
    auto one_way = [](const std::string& a, const std::string& b) {
        return (a == "Q4_0" && b == "oiw4") || (a == "Q4_K" && (b == "q4kx8" || b == "q4kx8-il4"));
    };
    return src == dst || one_way(src, dst) || one_way(dst, src);
}

// Heavy-tailed seeded activations: x = z1 * exp(z2), z ~ N(0, 1) (a Gaussian scale mixture).
std::vector<float> seeded_vectors(uint64_t seed, int64_t cols, int n) {
    std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(cols));
    std::normal_distribution<double> z;
    std::vector<float> v(static_cast<size_t>(cols) * n);
    for (auto& x : v) x = static_cast<float>(z(rng) * std::exp(z(rng)));
    return v;
}

std::vector<float> load_activations(const std::string& path) {
    std::ifstream f(path, std::ios::binary | std::ios::ate);
    if (!f) throw FormatError(ErrorKind::Io, path, "", "cannot open activations file");
    const auto size = static_cast<size_t>(f.tellg());
    if (size % 4 != 0) throw FormatError(ErrorKind::Truncated, path, "", "size is not a multiple of 4 (raw f32)");
    std::vector<float> v(size / 4);
    f.seekg(0);
    f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(size));
    return v;
}

void compare_tensor(const MatVec& s, const MatVec& c, const std::vector<float>& xs, int nvec, int threads, Row& row) {
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

std::string stats_json(const Stats& s) {
    if (!s.present) return "null";
    return fmt::format(R"({{"max_abs_error":{:.9g},"rel_rms_error":{:.9g},"cosine":{:.12g},"bit_identical":{}}})",
                       s.max_abs, s.rel_rms(), s.cosine(), s.identical);
}

}  // namespace

std::string json_str(const std::string& s) {
    std::string out = "\"";
    for (const unsigned char ch : s) {
        if (ch == '"' || ch == '\\') out += {'\\', static_cast<char>(ch)};
        else if (ch < 0x20) out += fmt::format("\\u{:04x}", ch);
        else out += static_cast<char>(ch);
    }
    return out + "\"";
}

int resolve_threads(int t) { return t > 0 ? t : std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }

double default_max_rel_rms(const std::string& kind) {
    static const std::map<std::string, double> limits = {
        {"F32", 1e-6},   {"F16", 2e-3},   {"BF16", 1e-2},  {"Q8_0", 1e-2},   {"Q6_K", 3e-2},
        {"Q5_0", 6e-2},  {"Q5_1", 6e-2},  {"Q5_K", 6e-2},  {"Q4_0", 0.15},   {"Q4_1", 0.15},
        {"Q4_K", 0.12},  {"IQ4_NL", 0.15}, {"IQ4_XS", 0.12}, {"oiw4", 0.15},  {"q4kx8", 0.12}, {"q4kx8-il4", 0.12},
        {"Q3_K", 0.25},  {"IQ3_XXS", 0.25}, {"IQ3_S", 0.25}, {"Q2_K", 0.45},  {"IQ2_XXS", 0.5},
        {"IQ2_XS", 0.5}, {"IQ2_S", 0.5},  {"IQ1_S", 0.8},  {"IQ1_M", 0.8},   {"TQ1_0", 1.0},
        {"TQ2_0", 1.0},  {"MXFP4", 0.2},
    };
    const auto it = limits.find(kind);
    return it == limits.end() ? 1.0 : it->second;
}

int run_compare(const CompareOptions& o) {
    const auto src = matmul::open_tensor_source(o.source);
    const auto dst = matmul::open_tensor_source(o.converted);
    const int threads = resolve_threads(o.threads);
    const std::vector<float> file_acts = o.activations.empty() ? std::vector<float>{} : load_activations(o.activations);
    const std::regex re(o.tensor_regex.empty() ? std::string(".*") : o.tensor_regex);

    std::vector<std::string> names;
    for (const auto& n : src->names())
        if (std::regex_search(n, re)) names.push_back(n);
    Progress progress("oiw4-check", names.size(), 0);
    std::vector<Row> rows;
    std::string first_failure;
    for (size_t i = 0; i < names.size(); ++i) {
        const auto s = src->tensor(names[i]);
        const auto c = dst->tensor(names[i]);
        progress.update(i, 0, names[i]);
        if (!s || !c) continue;  // 1-D tensors or absent on one side: nothing to multiply
        Row row;
        row.name = names[i];
        row.src_kind = s->kind();
        row.dst_kind = c->kind();
        row.lossless = lossless_pair(row.src_kind, row.dst_kind);
        if (s->rows() != c->rows() || s->cols() != c->cols()) {
            row.ok = false;
            row.verdict = "shape differs";
        } else {
            int nvec = o.vectors;
            std::vector<float> xs;
            if (o.activations.empty()) {
                xs = seeded_vectors(o.seed, s->cols(), nvec);
            } else {
                nvec = static_cast<int>(std::min<int64_t>(nvec, static_cast<int64_t>(file_acts.size()) / s->cols()));
                xs.assign(file_acts.begin(), file_acts.begin() + static_cast<std::ptrdiff_t>(nvec * s->cols()));
            }
            if (nvec == 0) continue;  // the activations file is shorter than one row
            compare_tensor(*s, *c, xs, nvec, threads, row);
            if (row.lossless) {
                row.ok = row.exact.identical && (!row.integer.present || row.integer.identical);
                row.verdict = row.ok ? "bit-identical" : "lossless pair differs";
            } else {
                const auto it = o.max_rel_rms.find(row.dst_kind);
                row.limit = it != o.max_rel_rms.end() ? it->second : default_max_rel_rms(row.dst_kind);
                row.ok = row.exact.rel_rms() <= row.limit;
                row.verdict = row.ok ? "within limit" : "relative RMS above limit";
            }
        }
        if (!row.ok && first_failure.empty()) first_failure = row.name + ": " + row.verdict;
        rows.push_back(std::move(row));
    }
    progress.done();

    // Summary per target kind and overall.
    struct Sum {
        size_t n = 0, failed = 0, identical = 0;
        double worst_exact = 0, worst_integer = 0, min_cos = 1;
    };
    std::map<std::string, Sum> per;
    Sum all;
    for (const auto& r : rows) {
        for (Sum* s : {&per[r.dst_kind], &all}) {
            ++s->n;
            s->failed += !r.ok;
            s->identical += r.exact.identical && (!r.integer.present || r.integer.identical);
            s->worst_exact = std::max(s->worst_exact, r.exact.rel_rms());
            s->worst_integer = std::max(s->worst_integer, r.integer.rel_rms());
            s->min_cos = std::min(s->min_cos, r.exact.cosine());
        }
    }
    auto sum_json = [](const Sum& s) {
        return fmt::format(R"({{"tensors":{},"failed":{},"bit_identical":{},"worst_rel_rms_exact":{:.9g},"worst_rel_rms_integer":{:.9g},"min_cosine":{:.12g}}})",
                           s.n, s.failed, s.identical, s.worst_exact, s.worst_integer, s.min_cos);
    };
    if (o.json) {
        fmt::print("{{\"source\":{},\"converted\":{},\"tensors\":[", json_str(o.source), json_str(o.converted));
        for (size_t i = 0; i < rows.size(); ++i) {
            const Row& r = rows[i];
            fmt::print("{}{{\"name\":{},\"source_kind\":{},\"converted_kind\":{},\"lossless\":{},\"ok\":{},\"verdict\":{},"
                       "\"max_rel_rms\":{:.9g},\"exact\":{},\"integer\":{}}}",
                       i ? "," : "", json_str(r.name), json_str(r.src_kind), json_str(r.dst_kind), r.lossless, r.ok,
                       json_str(r.verdict), r.limit, stats_json(r.exact), stats_json(r.integer));
        }
        fmt::print("],\"summary\":{{");
        bool first = true;
        for (const auto& [k, s] : per) {
            fmt::print("{}{}:{}", first ? "" : ",", json_str(k), sum_json(s));
            first = false;
        }
        fmt::print("}},\"overall\":{},\"ok\":{}}}\n", sum_json(all), all.failed == 0);
    } else {
        fmt::print("{:<40} {:>6} -> {:<6} {:>11} {:>11} {:>11} {:>11}  {}\n", "tensor", "source", "conv", "exact rRMS",
                   "int rRMS", "cosine", "int max|e|", "verdict");
        for (const auto& r : rows) {
            fmt::print("{:<40} {:>6} -> {:<6} {:>11.4e} {:>11.4e} {:>11.8f} {:>11.4e}  {}{}\n", r.name, r.src_kind,
                       r.dst_kind, r.exact.rel_rms(), r.integer.rel_rms(), r.exact.cosine(), r.integer.max_abs,
                       r.verdict, r.lossless || r.limit == 0 ? "" : fmt::format(" (limit {:.3g})", r.limit));
        }
        for (const auto& [k, s] : per) {
            fmt::print("summary {:<8} {} tensors, {} bit-identical, worst rRMS exact {:.4e} integer {:.4e}, min cosine {:.8f}, {} failed\n",
                       k, s.n, s.identical, s.worst_exact, s.worst_integer, s.min_cos, s.failed);
        }
        fmt::print("overall: {} tensors, {} bit-identical, {} failed\n", all.n, all.identical, all.failed);
    }
    if (!first_failure.empty()) {
        fmt::print(stderr, "oiw4-check: {}\n", first_failure);
        return kExitDiffers;
    }
    return kExitOk;
}

}  // namespace oiw::check
