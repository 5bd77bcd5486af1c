#include "libformat/traffic.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>

#include <fmt/format.h>

#include "libformat/names.h"

namespace oiw::traffic {

std::string_view group_id(Group g) {
    switch (g) {
        case Group::Embedding: return "embedding";
        case Group::Attention: return "attention";
        case Group::Ffn: return "ffn";
        case Group::Experts: return "experts";
        case Group::SharedExperts: return "shared_experts";
        case Group::Routers: return "routers";
        case Group::Norms: return "norms";
        case Group::LmHead: return "lm_head";
        case Group::Other: return "other";
    }
    return "other";
}

std::string_view group_label(Group g) {
    switch (g) {
        case Group::Embedding: return "embedding";
        case Group::Attention: return "attention";
        case Group::Ffn: return "dense FFN";
        case Group::Experts: return "experts";
        case Group::SharedExperts: return "shared experts";
        case Group::Routers: return "routers";
        case Group::Norms: return "norms";
        case Group::LmHead: return "lm_head";
        case Group::Other: return "other";
    }
    return "other";
}

NameParts split_name(std::string_view name) {
    NameParts p;
    std::string_view rest = name;
    size_t after = 0;
    if (const auto n = block_index(name, &after)) {
        p.layer = *n;
        rest = rest.substr(after);
    }
    p.stem = rest.substr(0, rest.find('.'));
    return p;
}

Group classify(std::string_view name) {
    const std::string_view s = split_name(name).stem;
    auto has = [&](std::string_view x) { return s.find(x) != std::string_view::npos; };
    auto starts = [&](std::string_view x) { return s.substr(0, x.size()) == x; };
    if (s == "output") return Group::LmHead;
    if (has("norm")) return Group::Norms;
    if (s == "token_embd" || s == "position_embd" || s == "token_types") return Group::Embedding;
    if (starts("ffn_gate_inp") || s == "exp_probs_b") return Group::Routers;
    if (has("_exps")) return Group::Experts;
    if (has("_shexp")) return Group::SharedExperts;
    if (starts("attn_")) return Group::Attention;
    if (starts("ffn_")) return Group::Ffn;
    return Group::Other;
}

namespace {

// <arch>.<suffix> as a u32 count, falling back to any key ending in ".<suffix>" when the
// architecture is unknown.
std::optional<uint64_t> arch_uint(const Metadata& kvs, const std::string& arch, const std::string& suffix) {
    if (!arch.empty()) return kvs.get_uint(arch + "." + suffix, UINT32_MAX);
    const std::string tail = "." + suffix;
    for (const auto& kv : kvs)
        if (kv.key.size() > tail.size() && kv.key.compare(kv.key.size() - tail.size(), tail.size(), tail) == 0)
            return kvs.get_uint(kv.key, UINT32_MAX);
    return std::nullopt;
}

void add(Totals& t, const GgufTensorInfo& ti, uint64_t bpt) {
    t.count += 1;
    t.n_elements += static_cast<uint64_t>(ti.n_elements());
    t.n_bytes += ti.n_bytes;
    t.bytes_per_token += bpt;
}

}  // namespace

Analysis analyze(const Model& f) { return analyze(f.metadata(), f.tensors()); }

Analysis analyze(const Metadata& kvs, const std::vector<GgufTensorInfo>& infos) {
    Analysis a;
    ModelFacts& m = a.model;
    m.architecture = kvs.get_string("general.architecture").value_or("");
    m.name = kvs.get_string("general.name").value_or("");
    if (auto ft = kvs.get_uint("general.file_type", UINT32_MAX)) m.file_type = static_cast<uint32_t>(*ft);
    m.expert_count = arch_uint(kvs, m.architecture, "expert_count");
    m.expert_used_count = arch_uint(kvs, m.architecture, "expert_used_count");

    const bool has_output =
        std::any_of(infos.begin(), infos.end(), [](const GgufTensorInfo& t) { return t.name == "output.weight"; });
    bool has_token_embd = false;
    for (const auto& t : infos) has_token_embd |= split_name(t.name).stem == "token_embd";
    m.tied_embeddings = has_token_embd && !has_output;

    // Fraction of each expert tensor read per token.
    const bool moe = m.expert_count && *m.expert_count > 0;
    uint64_t used = moe ? std::min(m.expert_used_count.value_or(*m.expert_count), *m.expert_count) : 0;
    if (moe) a.traffic.expert_fraction = static_cast<double>(used) / static_cast<double>(*m.expert_count);

    std::map<int, LayerTotals> layers;
    std::array<TypeTotals, kGgmlTypeCount> types{};
    a.tensors.resize(infos.size());
    for (size_t i = 0; i < infos.size(); ++i) {
        const GgufTensorInfo& t = infos[i];
        TensorFacts& tf = a.tensors[i];
        const NameParts parts = split_name(t.name);
        tf.layer = parts.layer;
        tf.group = classify(t.name);
        if (tf.group == Group::Embedding && parts.stem == "token_embd" && m.tied_embeddings) tf.group = Group::LmHead;
        tf.matmul = t.n_dims >= 2 && tf.group != Group::Embedding && tf.group != Group::Norms;

        if (tf.group == Group::Embedding && t.n_dims >= 2) {
            tf.bytes_per_token = row_size(t.type, t.ne[0]);
        } else if (tf.group == Group::Experts && moe && t.n_dims >= 2 &&
                   static_cast<uint64_t>(t.ne[t.n_dims - 1]) == *m.expert_count) {
            // n_bytes * used / count exactly: n_bytes is a whole number of experts' bytes.
            const uint64_t per_expert = t.n_bytes / *m.expert_count;
            tf.bytes_per_token = per_expert * used;
        } else {
            tf.bytes_per_token = t.n_bytes;
        }

        m.n_elements += static_cast<uint64_t>(t.n_elements());
        m.n_bytes += t.n_bytes;
        add(a.by_group[static_cast<size_t>(tf.group)], t, tf.bytes_per_token);
        TypeTotals& tt = types[static_cast<size_t>(t.type)];
        tt.type = t.type;
        add(tt, t, tf.bytes_per_token);
        LayerTotals& lt = layers[tf.layer];
        lt.layer = tf.layer;
        add(lt, t, tf.bytes_per_token);
        a.traffic.by_group[static_cast<size_t>(tf.group)] += tf.bytes_per_token;
        a.traffic.bytes_per_token += tf.bytes_per_token;
    }
    for (const auto& tt : types)
        if (tt.count) a.by_type.push_back(tt);
    for (auto& [layer, lt] : layers) a.by_layer.push_back(lt);
    if (a.traffic.bytes_per_token > 0)
        a.traffic.lm_head_share = static_cast<double>(a.traffic.by_group[static_cast<size_t>(Group::LmHead)]) /
                                  static_cast<double>(a.traffic.bytes_per_token);
    return a;
}

double parse_bandwidth(std::string_view text) {
    auto bad = [&](const std::string& why) -> double {
        throw FormatError(ErrorKind::Usage, "", "bandwidth '" + std::string(text) + "'", why);
    };
    std::string s;
    for (char c : text)
        if (c != ' ') s += c;
    if (s.size() >= 2 && (s.substr(s.size() - 2) == "/s" || s.substr(s.size() - 2) == "/S")) s.resize(s.size() - 2);
    if (s.empty()) return bad("empty value");
    char* end = nullptr;
    const double num = std::strtod(s.c_str(), &end);
    if (end == s.c_str()) return bad("expected a number such as 20GB/s");
    std::string unit(end);
    for (auto& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (!unit.empty() && unit.back() == 'B') unit.pop_back();
    double mult = 1;
    static const std::pair<const char*, double> kUnits[] = {
        {"", 1},           {"K", 1e3},           {"M", 1e6},
        {"G", 1e9},        {"T", 1e12},          {"KI", 1024.0},
        {"MI", 1048576.0}, {"GI", 1073741824.0}, {"TI", 1099511627776.0}};
    bool found = false;
    for (const auto& [u, f] : kUnits)
        if (unit == u) {
            mult = f;
            found = true;
        }
    if (!found) return bad("unknown unit (use B, KB, MB, GB, TB, KiB, MiB, GiB, TiB, optionally /s)");
    const double v = num * mult;
    if (!(v > 0) || !std::isfinite(v)) return bad("must be a positive number");
    return v;
}

}  // namespace oiw::traffic
