#include "converters/planner/planner.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "converters/planner/measure.h"
#include "converters/planner/solve.h"
#include "libformat/escape.h"
#include "libformat/io/hash.h"
#include "libformat/io/mapped_file.h"
#include "libformat/io/text_file.h"
#include "libformat/json.h"
#include "libformat/names.h"
#include "libformat/pattern.h"
#include "libformat/traffic.h"

namespace oiw {
namespace {

using T = GgmlType;

[[noreturn]] void usage(const std::string& subject, const std::string& what) {
    throw FormatError(ErrorKind::Usage, "", subject, what);
}

// `name` as a regex matching exactly it: metacharacters escaped with a backslash, control bytes
// (and DEL) as \xNN, so a plan line never holds a line break or a terminal escape, and upper-case
// letters as \xNN too, as they survive the lower-casing every REGEX=TYPE rule goes through.
std::string escape_name(const std::string& name) {
    std::string out;
    for (char c : name) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u == 0x7f || (c >= 'A' && c <= 'Z')) {
            out += fmt::format("\\x{:02x}", u);
            continue;
        }
        if (std::string_view(".^$|()[]{}*+?\\").find(c) != std::string_view::npos) out += '\\';
        out += c;
    }
    return out;
}

}  // namespace

std::vector<GgmlType> default_plan_types() {
    return {T::Q2_K, T::Q3_K, T::Q4_K, T::Q5_K, T::Q6_K, T::Q8_0, T::IQ4_XS, T::Q4_0, T::Q5_0, T::Q5_1, T::IQ4_NL};
}

PlanTable measure_plan(const Model& in, const std::vector<GgmlType>& types, const std::string& imatrix_path,
                       const std::vector<GgmlType>& excluded, const MeasureProgress& progress, unsigned threads) {
    RequantOptions ro;
    ro.plan.preset = &find_preset("Q8_0");
    ro.plan.pure = true;
    ro.allow_requantize = true;
    ro.dry_run = true;
    ro.imatrix_path = imatrix_path;            // its quantize.imatrix.* keys count in the file size
    RequantJob job = prepare_requant(in, ro);  // also loads the imatrix (job.imatrix)

    PlanTable table;
    table.alignment = in.alignment();
    table.fixed_file_bytes = job.file_size;
    const bool defaults = types.empty();
    std::vector<GgmlType> cands = defaults ? default_plan_types() : types;
    std::erase_if(cands, [&](GgmlType t) { return std::find(excluded.begin(), excluded.end(), t) != excluded.end(); });
    std::vector<MeasureTask> tasks;
    for (const TensorPlan& tp : job.plan.tensors) {
        table.n_elements += static_cast<uint64_t>(tp.n_elements);
        if (!traits(tp.dst_type).quantized) {
            table.fixed_tensor_bytes += tp.dst_bytes;
            continue;
        }
        table.fixed_file_bytes -= align_up(tp.dst_bytes, table.alignment);
        const GgufTensorInfo& t = in.tensors()[tp.input_index];
        PlanCandidate c{tp.input_index, tp.name, block_index(tp.name).value_or(-1), {}, {}, {}, {}};
        for (GgmlType ty : cands) {
            const int64_t block = traits(ty).block_size;
            if (t.ne[0] % block != 0) continue;
            if (defaults && block < 256 && t.ne[0] % 256 == 0 && ty != T::Q8_0) continue;  // 32-blocks: fallbacks only
            c.types.push_back(ty);
            c.bytes.push_back(row_size(ty, t.ne[0]) * static_cast<uint64_t>(t.n_rows()));
        }
        if (c.types.empty())
            usage("tensor '" + tp.name + "'", fmt::format("no candidate type fits its row length {}", t.ne[0]));
        tasks.push_back({tp.input_index, c.types});
        table.tensors.push_back(std::move(c));
    }

    // Bytes per token from the traffic model, one analysis per candidate type.
    std::map<size_t, size_t> by_index;
    for (size_t i = 0; i < table.tensors.size(); ++i) by_index[table.tensors[i].input_index] = i;
    const auto base = traffic::analyze(in.metadata(), in.tensors());
    for (size_t i = 0; i < in.tensors().size(); ++i)
        if (!by_index.count(i)) table.fixed_traffic += base.tensors[i].bytes_per_token;
    for (GgmlType ty : cands) {
        std::vector<GgufTensorInfo> infos = in.tensors();
        for (auto& [idx, ci] : by_index) {
            infos[idx].type = ty;
            infos[idx].n_bytes =
                infos[idx].ne[0] % traits(ty).block_size ? 0 : row_size(ty, infos[idx].ne[0]) * infos[idx].n_rows();
        }
        const auto a = traffic::analyze(in.metadata(), infos);
        for (auto& [idx, ci] : by_index) {
            PlanCandidate& c = table.tensors[ci];
            for (size_t k = 0; k < c.types.size(); ++k)
                if (c.types[k] == ty) {
                    c.traffic.resize(c.types.size());
                    c.traffic[k] = a.tensors[idx].bytes_per_token;
                }
        }
    }

    table.has_imatrix = !imatrix_path.empty();
    auto err = measure_errors(in, tasks, job.imatrix, progress, threads);
    for (size_t i = 0; i < table.tensors.size(); ++i) table.tensors[i].err = std::move(err[i]);
    return table;
}

std::vector<GainRule> default_gains() {
    return {{"^output\\.weight$", 2.0}, {"attn_v\\.", 2.0}, {"attn_qkv\\.", 1.5}, {"ffn_down", 1.5}};
}

std::vector<GainRule> read_gains_file(const std::string& path) {
    std::istringstream f(read_text_file(path));
    std::vector<GainRule> rules;
    std::string line;
    for (int n = 1; std::getline(f, line); ++n) {
        line.erase(0, line.find_first_not_of(" \t\r"));
        line.erase(line.find_last_not_of(" \t\r") + 1);
        if (line.empty() || line[0] == '#') continue;
        const auto eq = line.rfind('=');
        char* end = nullptr;
        const double g = eq == std::string::npos ? -1 : std::strtod(line.c_str() + eq + 1, &end);
        if (eq == std::string::npos || eq == 0 || end == line.c_str() + eq + 1 || *end || !std::isfinite(g) || g < 0)
            throw FormatError(ErrorKind::Usage, path, fmt::format("line {}", n),
                              "expected REGEX=GAIN with a finite gain >= 0");
        std::string pattern = line.substr(0, eq);
        pattern.erase(pattern.find_last_not_of(" \t") + 1);  // "REGEX = GAIN" reads as "REGEX=GAIN"
        try {
            const Pattern compiled(pattern, "gain pattern");  // a bad pattern is reported with its file and line
        } catch (const FormatError& e) {
            throw FormatError(ErrorKind::Usage, path, fmt::format("line {}", n), e.what());
        }
        rules.push_back({pattern, g});
    }
    return rules;
}

double plan_error(const PlanTable& table, const std::vector<double>& gain, const std::vector<GgmlType>& types) {
    double sum = 0;
    for (size_t i = 0; i < table.tensors.size(); ++i) {
        const auto& c = table.tensors[i];
        const auto k = std::find(c.types.begin(), c.types.end(), types[i]) - c.types.begin();
        if (static_cast<size_t>(k) == c.types.size())
            usage("tensor '" + c.name + "'", fmt::format("type {} was not measured", type_name(types[i])));
        sum += gain[i] * c.err[k];
    }
    return sum;
}

namespace {

// Each tensor's gain: that of the first --gains rule whose pattern it matches, else its measured
// gain when there are measured ones, else that of the first default rule it matches, else 1.
std::vector<double> tensor_gains(const PlanTable& table, const std::vector<GainRule>& user_gains,
                                 const std::vector<double>& measured) {
    if (!measured.empty() && measured.size() != table.tensors.size())
        throw FormatError(ErrorKind::Usage, "", "gains",
                          fmt::format("{} measured gains for {} tensors", measured.size(), table.tensors.size()));
    std::vector<GainRule> gains = user_gains;
    if (measured.empty())
        for (auto& g : default_gains()) gains.push_back(g);
    std::vector<Pattern> gain_res;
    gain_res.reserve(gains.size());
    for (const auto& g : gains) gain_res.emplace_back(g.pattern, "gain pattern");
    std::vector<double> out = measured.empty() ? std::vector<double>(table.tensors.size(), 1.0) : measured;
    for (size_t i = 0; i < out.size(); ++i)
        for (size_t k = 0; k < gains.size(); ++k)
            if (gain_res[k].search(table.tensors[i].name)) {
                out[i] = gains[k].gain;
                break;
            }
    return out;
}

// The knapsack's groups of tensors that get one type: those the same --tie pattern matches within
// one layer (the first matching pattern counts), every other tensor alone.
std::vector<std::vector<size_t>> tie_groups(const PlanTable& table, const std::vector<std::string>& ties) {
    std::vector<Pattern> tie_res;
    tie_res.reserve(ties.size());
    for (const auto& t : ties) tie_res.emplace_back(t, "tie pattern");
    std::map<std::pair<size_t, int>, size_t> tie_group;
    std::vector<std::vector<size_t>> groups;
    for (size_t i = 0; i < table.tensors.size(); ++i) {
        size_t tie = tie_res.size();
        for (size_t k = 0; k < tie_res.size() && tie == tie_res.size(); ++k)
            if (tie_res[k].search(table.tensors[i].name)) tie = k;
        if (tie == tie_res.size()) {
            groups.push_back({i});
            continue;
        }
        auto [it, fresh] = tie_group.try_emplace({tie, table.tensors[i].layer}, groups.size());
        if (fresh) groups.emplace_back();
        groups[it->second].push_back(i);
    }
    return groups;
}

// Candidate k of tensor c in the budget's unit: file bytes (aligned), tensor bytes or bytes per token.
uint64_t candidate_cost(const PlanTable& table, BudgetKind kind, const PlanCandidate& c, size_t k) {
    switch (kind) {
        case BudgetKind::FileSize: return align_up(c.bytes[k], table.alignment);
        case BudgetKind::Bpw: return c.bytes[k];
        case BudgetKind::BytesPerToken: return c.traffic[k];
    }
    return 0;
}

// The budget left for the planned tensors in the budget's unit (after what stays unchanged), and
// the unit's granularity (the alignment for file sizes). Throws when the budget is impossible.
std::pair<uint64_t, uint64_t> budget_units(const PlanTable& table, const PlanBudget& budget) {
    uint64_t fixed = 0, min_unit = 1;
    double limit = 0;
    switch (budget.kind) {
        case BudgetKind::FileSize:
            fixed = table.fixed_file_bytes, min_unit = table.alignment, limit = budget.value;
            break;
        case BudgetKind::Bpw:
            fixed = table.fixed_tensor_bytes,
            limit = std::floor(budget.value * static_cast<double>(table.n_elements) / 8);
            break;
        case BudgetKind::BytesPerToken: fixed = table.fixed_traffic, limit = std::floor(budget.value); break;
    }
    if (!(limit >= static_cast<double>(fixed)))
        usage("budget", fmt::format("impossible: the tensors kept unchanged alone need {} bytes", fixed));
    return {static_cast<uint64_t>(std::min(limit, 1.8e19)) - fixed, min_unit};
}

// The types group g may take: those every member allows, or its members' pin (the first pinned
// member's). Throws when none is left or a pin is not among them.
std::vector<GgmlType> group_types(const PlanTable& table, const std::vector<TensorTypeRule>& pins,
                                  const std::vector<Pattern>& pin_res, const std::vector<size_t>& g) {
    std::vector<GgmlType> common = table.tensors[g[0]].types;
    std::optional<GgmlType> pin;
    for (size_t i : g) {
        const auto& ts = table.tensors[i].types;
        std::erase_if(common, [&](GgmlType t) { return std::find(ts.begin(), ts.end(), t) == ts.end(); });
        for (size_t k = 0; k < pin_res.size() && !pin; ++k)
            if (pin_res[k].search(table.tensors[i].name)) pin = pins[k].type;
    }
    if (pin) {
        if (std::find(common.begin(), common.end(), *pin) == common.end())
            usage(
                "tensor '" + table.tensors[g[0]].name + "'",
                fmt::format("pinned type {} is not a candidate its row length (and its ties) allow", type_name(*pin)));
        common = {*pin};
    }
    if (common.empty())
        usage("tensor '" + table.tensors[g[0]].name + "'", "its tie group has no candidate type in common");
    return common;
}

// Fills r's totals for its chosen types: file size, bits per weight, bytes per token, and the
// preset whose default type holds the most bytes (general.file_type of the plan's output).
void plan_totals(const PlanTable& table, PlanResult& r) {
    r.file_size = table.fixed_file_bytes;
    uint64_t data = table.fixed_tensor_bytes;
    r.bytes_per_token = table.fixed_traffic;
    std::map<GgmlType, uint64_t> count;
    for (size_t i = 0; i < table.tensors.size(); ++i) {
        const auto& c = table.tensors[i];
        const size_t j = static_cast<size_t>(std::find(c.types.begin(), c.types.end(), r.type[i]) - c.types.begin());
        r.file_size += align_up(c.bytes[j], table.alignment);
        data += c.bytes[j];
        r.bytes_per_token += c.traffic[j];
        count[r.type[i]] += c.bytes[j];
    }
    r.bpw = table.n_elements ? 8.0 * static_cast<double>(data) / static_cast<double>(table.n_elements) : 0;
    GgmlType most = T::Q8_0;
    uint64_t best = 0;
    for (auto [t, b] : count)
        if (b > best) best = b, most = t;
    for (const auto& p : requant_presets())
        if (p.default_type == most) {
            r.preset = &p;
            break;
        }
    if (!r.preset) r.preset = &find_preset("Q8_0");
}

}  // namespace

PlanResult choose_plan(const PlanTable& table, const ChooseOptions& opt) {
    PlanResult r;
    r.budget = opt.budget;
    r.gain = tensor_gains(table, opt.gains, opt.measured);
    const std::vector<std::vector<size_t>> groups = tie_groups(table, opt.ties);
    std::vector<Pattern> pin_res;
    pin_res.reserve(opt.pins.size());
    for (const auto& p : opt.pins) pin_res.emplace_back(p.pattern, "pin rule");
    const auto [budget, min_unit] = budget_units(table, opt.budget);
    r.budget_units = budget;

    // One knapsack item per group, one choice per type it may take: cost and gain-weighted error
    // summed over its members.
    std::vector<KnapsackItem> items;
    std::vector<std::vector<GgmlType>> item_types;
    for (const auto& g : groups) {
        std::vector<GgmlType> types = group_types(table, opt.pins, pin_res, g);
        KnapsackItem item;
        for (GgmlType t : types) {
            KnapsackChoice ch;
            for (size_t i : g) {
                const auto& c = table.tensors[i];
                const size_t k = static_cast<size_t>(std::find(c.types.begin(), c.types.end(), t) - c.types.begin());
                ch.cost += candidate_cost(table, opt.budget.kind, c, k);
                ch.value += r.gain[i] * c.err[k];
            }
            item.push_back(ch);
        }
        items.push_back(std::move(item));
        item_types.push_back(std::move(types));
    }
    const KnapsackResult k = solve_knapsack(items, r.budget_units, min_unit);
    r.grid_unit = k.unit;
    r.error = k.value;
    r.lower_bound = k.lower_bound;
    r.type.resize(table.tensors.size());
    for (size_t gi = 0; gi < groups.size(); ++gi)
        for (size_t i : groups[gi]) r.type[i] = item_types[gi][k.choice[gi]];
    plan_totals(table, r);
    return r;
}

namespace {
std::string budget_text(const PlanBudget& b) {
    switch (b.kind) {
        case BudgetKind::FileSize: return fmt::format("file-size {:.0f} bytes", b.value);
        case BudgetKind::Bpw: return fmt::format("bpw {}", b.value);
        case BudgetKind::BytesPerToken: return fmt::format("bytes-per-token {:.0f}", b.value);
    }
    return "";
}
}  // namespace

std::string imatrix_id(const std::string& path) {
    const MappedFile f(path);
    return "xxh3:" + xxh3_hex(f.bytes()) + " " + escape_text(path);
}

std::string plan_imatrix_mismatch(const PlanFile& plan, const std::string& imatrix_path) {
    if (plan.imatrix == "?") return "";
    if (plan.imatrix == "no")
        return imatrix_path.empty() ? "" : "this plan was made without an imatrix; run without --imatrix";
    const std::string recorded = plan.imatrix.substr(0, plan.imatrix.find(' '));
    const std::string made_with = fmt::format("this plan was made with imatrix {} ({})",
                                              escape_text(plan.imatrix.substr(recorded.size() + 1)), recorded);
    if (imatrix_path.empty()) return made_with + "; pass it with --imatrix";
    const std::string given = imatrix_id(imatrix_path);
    if (given.substr(0, given.find(' ')) != recorded)
        return fmt::format("{}; --imatrix {} is another file ({})", made_with, escape_text(imatrix_path),
                           given.substr(0, given.find(' ')));
    return "";
}

std::string format_plan_file(const PlanTable& table, const PlanResult& r, const std::string& imatrix) {
    std::string s = "# gguf-plan 1\n";
    s += fmt::format("# budget: {}\n# predicted-size: {}\n# bpw: {:.4f}\n# bytes-per-token: {}\n",
                     budget_text(r.budget), r.file_size, r.bpw, r.bytes_per_token);
    s += fmt::format("# error: {:.9g}\n# lower-bound: {:.9g}\n# imatrix: {}\n# preset: {}\n", r.error, r.lower_bound,
                     table.has_imatrix ? (imatrix.empty() ? "yes" : imatrix) : "no", r.preset->name);
    for (size_t i = 0; i < table.tensors.size(); ++i)
        s += fmt::format("^{}$={}\n", escape_name(table.tensors[i].name), type_name(r.type[i]));
    return s;
}

std::string format_plan_json(const PlanTable& table, const PlanResult& r) {
    json::Writer w;
    w.begin_object();
    w.field("budget", budget_text(r.budget));
    w.field("predicted_size", r.file_size);
    w.field("bpw", r.bpw);
    w.field("bytes_per_token", r.bytes_per_token);
    w.field("error", r.error);
    w.field("lower_bound", r.lower_bound);
    w.field("preset", r.preset->name);
    w.key("tensors");
    w.begin_array();
    for (size_t i = 0; i < table.tensors.size(); ++i) {
        const auto& c = table.tensors[i];
        const size_t j = static_cast<size_t>(std::find(c.types.begin(), c.types.end(), r.type[i]) - c.types.begin());
        w.begin_object();
        w.field("name", c.name);
        w.field("type", type_name(r.type[i]));
        w.field("gain", r.gain[i]);
        w.field("error", c.err[j]);
        w.field("bytes", c.bytes[j]);
        w.end_object();
    }
    w.end_array();
    w.end_object();
    return w.take() + "\n";
}

PlanFile read_plan_file(const std::string& path) {
    std::istringstream f(read_text_file(path));
    PlanFile p;
    std::string line;
    for (int n = 1; std::getline(f, line); ++n) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty()) continue;
        auto bad = [&](const std::string& what) {
            throw FormatError(ErrorKind::Usage, path, fmt::format("line {}", n), what);
        };
        if (line[0] == '#') {
            if (line.rfind("# predicted-size: ", 0) == 0) {
                char* end = nullptr;
                p.predicted_size = std::strtoull(line.c_str() + 18, &end, 10);
                if (*end || !p.predicted_size) bad("bad predicted-size");
            } else if (line.rfind("# preset: ", 0) == 0) {
                p.preset = line.substr(10);
            } else if (line.rfind("# imatrix: ", 0) == 0) {
                p.imatrix = line.substr(11);
                if (p.imatrix == "yes") p.imatrix = "?";
                if (p.imatrix != "?" && p.imatrix != "no" &&
                    (!p.imatrix.starts_with("xxh3:") || p.imatrix.find(' ') == std::string::npos))
                    bad("bad imatrix line (expected no, yes or xxh3:HASH PATH)");
            }
            continue;
        }
        const auto eq = line.rfind('=');
        if (eq == std::string::npos || eq < 2) bad("expected an anchored exact tensor name, ^name$=TYPE");
        std::optional<std::string> name;  // escape_name undone
        try {
            name = Pattern(std::string_view(line).substr(0, eq), "rule").exact_name();
            p.rules.push_back(parse_type_rule(line, "rule"));
        } catch (const FormatError& e) {
            bad(e.what());
        }
        if (!name) bad("expected an anchored exact tensor name, ^name$=TYPE");
        p.names.push_back(std::move(*name));
    }
    if (p.rules.empty()) throw FormatError(ErrorKind::Usage, path, "plan", "no tensor lines");
    return p;
}

PlanFile plan_file_of(const PlanTable& table, const PlanResult& r) {
    PlanFile p;
    for (size_t i = 0; i < table.tensors.size(); ++i) {
        p.rules.push_back({"^" + escape_name(table.tensors[i].name) + "$", r.type[i]});
        p.names.push_back(table.tensors[i].name);
    }
    p.predicted_size = r.file_size;
    p.preset = std::string(r.preset->name);
    return p;
}

RequantOptions requant_options_for(const PlanFile& plan, const std::string& imatrix_path) {
    RequantOptions ro;
    ro.plan.preset = &find_preset(plan.preset.empty() ? "Q8_0" : plan.preset);
    ro.plan.tensor_types = plan.rules;
    ro.plan.has_imatrix = !imatrix_path.empty();
    ro.imatrix_path = imatrix_path;
    return ro;
}

std::string plan_mismatch(const PlanFile& plan, const std::vector<std::pair<std::string, GgmlType>>& types,
                          uint64_t file_size) {
    std::map<std::string, GgmlType> got(types.begin(), types.end());
    for (size_t i = 0; i < plan.names.size(); ++i) {
        const auto it = got.find(plan.names[i]);
        if (it == got.end())
            return fmt::format("the plan names tensor '{}', which the model does not have", escape_text(plan.names[i]));
        if (it->second != plan.rules[i].type)
            return fmt::format("tensor '{}' is {}, the plan says {}", escape_text(plan.names[i]), type_name(it->second),
                               type_name(plan.rules[i].type));
    }
    if (plan.predicted_size && file_size != plan.predicted_size)
        return fmt::format("the file is {} bytes, the plan predicted {}", file_size, plan.predicted_size);
    return "";
}

}  // namespace oiw
