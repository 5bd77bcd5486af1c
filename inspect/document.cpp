// The report document (document.h): the sections of a report or a diff, built once from the
// analysis and shared by the table, Markdown (render_text.cpp) and HTML (render_html.cpp)
// renderers. Every figure is formatted here, so all outputs show the same numbers.
#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "inspect/document.h"
#include "inspect/render.h"
#include "libformat/escape.h"
#include "libformat/ftype.h"

namespace oiw::inspect {

std::string si(double v) {
    const double a = std::fabs(v);
    if (a < 1000) return v == std::floor(v) ? fmt::format("{:.0f}", v) : fmt::format("{:.1f}", v);
    static const char* kSuffix[] = {"K", "M", "G", "T", "P", "E"};
    int i = -1;
    double x = v;
    while (std::fabs(x) >= 999.95 && i < 5) {
        x /= 1000;
        ++i;
    }
    return fmt::format("{:.1f}{}", x, kSuffix[i]);
}

std::string value_type_string(const GgufValue& v) {
    if (!v.is_array()) return std::string(gguf_type_name(v.type()));
    return fmt::format("arr[{},{}]", gguf_type_name(v.elem_type()), v.count());
}

namespace {

using doc::Block;
using doc::Section;
using doc::Table;

// ---------------------------------------------------------------------------------------------
// Blocks and figures

// A block of each kind around its content.
Block fields(std::vector<std::pair<std::string, std::string>> f) {
    Block b;
    b.kind = Block::Kind::Fields;
    b.fields = std::move(f);
    return b;
}
Block table(Table t) {
    Block b;
    b.kind = Block::Kind::Table;
    b.table = std::move(t);
    return b;
}
Block text(std::vector<std::string> t) {
    Block b;
    b.kind = Block::Kind::Text;
    b.text = std::move(t);
    return b;
}

// Compact shape for tables: "256x32000".
std::string shape_x(const GgufTensorInfo& t) {
    std::string s;
    for (uint32_t d = 0; d < t.n_dims; ++d) s += (d ? "x" : "") + std::to_string(t.ne[d]);
    return s;
}

// Number formatting of one document.
struct Fmt {
    bool exact;  // Markdown: exact integers; tables: SI-rounded
    std::string n(uint64_t v) const { return exact ? fmt::format("{}", v) : si(static_cast<double>(v)); }
    std::string pct(double share) const { return fmt::format("{:.1f}%", share * 100); }
    std::string shape(const GgufTensorInfo& t) const { return exact ? t.shape_string() : shape_x(t); }
};

// Bytes in decimal GB or MB: "1.234 GB", "56.78 MB" (GB from 10^9 bytes on).
std::string gb(uint64_t bytes) { return fmt::format("{:.3f} GB", static_cast<double>(bytes) / 1e9); }
std::string mb(uint64_t bytes) { return fmt::format("{:.2f} MB", static_cast<double>(bytes) / 1e6); }
std::string bytes_h(uint64_t bytes) { return bytes >= 1000000000 ? gb(bytes) : mb(bytes); }

// part / whole, or 0 when whole is 0.
double share_of(uint64_t part, uint64_t whole) {
    return whole ? static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

// ---------------------------------------------------------------------------------------------
// Report sections, in document order

// Header: the file's and the model's facts, one field each.
Section header_section(const Report& r) {
    const Model& f = r.file;
    const traffic::ModelFacts& m = r.analysis.model;
    Section s{"Header", {}, "header"};
    std::string ft = "(not set)";
    if (m.file_type) {
        const auto name = ftype_name(*m.file_type);
        ft = fmt::format("{} ({})", name.empty() ? "UNKNOWN" : name, *m.file_type);
    }
    std::vector<std::pair<std::string, std::string>> fl = {
        {"file", escape_text(f.path())},
        {"version", fmt::format("{}", f.version())},
        {"alignment", fmt::format("{}", f.alignment())},
        {"file size", fmt::format("{} bytes ({})", f.file_size(), bytes_h(f.file_size()))},
        {"architecture", m.architecture.empty() ? "(not set)" : escape_text(m.architecture)},
        {"name", m.name.empty() ? "(not set)" : escape_text(m.name)},
        {"file type", ft},
        {"KV pairs", fmt::format("{}", f.metadata().size())},
        {"tensors", fmt::format("{}", f.tensors().size())},
        {"parameters", fmt::format("{} ({})", m.n_elements, si(static_cast<double>(m.n_elements)))},
        {"tensor bytes", fmt::format("{} ({})", m.n_bytes, bytes_h(m.n_bytes))},
        {"bits per weight", fmt::format("{:.4f}", m.bpw())},
        {"data offset", fmt::format("{}", f.data_offset())},
    };
    if (m.expert_count)
        fl.emplace_back("experts", fmt::format("{} ({} used per token)", *m.expert_count,
                                               m.expert_used_count ? std::to_string(*m.expert_used_count) : "?"));
    fl.emplace_back("embeddings", m.tied_embeddings ? "tied (token_embd is also the lm_head)" : "untied");
    if (f.is_split())
        fl.insert(fl.begin() + 4, {"shards", fmt::format("{} (file size: all shards)", f.shards().size())});
    s.blocks.push_back(fields(std::move(fl)));
    return s;
}

// Shards of a split model: each file's size, tensors and tensor bytes, then the totals.
Section shards_section(const Report& r, const Fmt& F) {
    const Model& f = r.file;
    Section s{fmt::format("Shards ({})", f.shards().size()), {}, "shards"};
    Table t;
    t.head = {"shard", "file", "file size", "tensors", "tensor bytes"};
    t.align = "rlrrr";
    t.shrink = {{1, 24}};
    t.middle = {1};
    std::vector<uint64_t> n(f.shards().size()), bytes(f.shards().size());
    for (size_t i = 0; i < f.tensors().size(); ++i) {
        ++n[f.shard_of(i)];
        bytes[f.shard_of(i)] += f.tensors()[i].n_bytes;
    }
    for (size_t k = 0; k < f.shards().size(); ++k)
        t.rows.push_back({fmt::format("{}", k + 1), escape_text(f.shards()[k].path()), F.n(f.shards()[k].file_size()),
                          F.n(n[k]), F.n(bytes[k])});
    t.rows.push_back({"total", "", F.n(f.file_size()), F.n(f.tensors().size()), F.n(r.analysis.model.n_bytes)});
    s.blocks.push_back(table(std::move(t)));
    return s;
}

// Metadata: every key with its value type and value (arrays abbreviated unless o.full).
Section metadata_section(const Report& r, const RenderOptions& o) {
    const Model& f = r.file;
    const traffic::ModelFacts& m = r.analysis.model;
    Section s{fmt::format("Metadata ({} key/value pairs)", f.metadata().size()), {}, "metadata"};
    Table t;
    t.head = {"key", "type", "value"};
    t.align = "lll";
    t.shrink = {{2, 40}, {0, 32}, {2, 16}, {0, 20}, {1, 10}};
    t.middle = {0};
    const size_t preview = o.full ? std::numeric_limits<size_t>::max() : kArrayPreview;
    for (const auto& kv : f.metadata()) {
        std::string v = kv.value.to_string(preview);
        if (kv.key == "general.file_type" && m.file_type && !ftype_name(*m.file_type).empty())
            v += fmt::format(" ({})", ftype_name(*m.file_type));
        t.rows.push_back({escape_text(kv.key), value_type_string(kv.value), std::move(v)});
    }
    s.blocks.push_back(table(std::move(t)));
    return s;
}

// Tensors: each tensor info with its size, bits per weight, offset and bytes per token.
Section tensors_section(const Report& r, const Fmt& F) {
    const Model& f = r.file;
    Section s{fmt::format("Tensors ({})", f.tensors().size()), {}, "tensors"};
    Table t;
    t.head = {"name", "type", "shape", "params", "bytes", "bpw", "offset", "bytes/token"};
    t.align = "lllrrrrr";
    t.shrink = {{0, 16}, {2, 9}};
    t.middle = {0};
    for (size_t i = 0; i < f.tensors().size(); ++i) {
        const auto& ti = f.tensors()[i];
        const double bpw =
            ti.n_elements() ? 8.0 * static_cast<double>(ti.n_bytes) / static_cast<double>(ti.n_elements()) : 0;
        t.rows.push_back({escape_text(ti.name), std::string(type_name(ti.type)), F.shape(ti),
                          F.n(static_cast<uint64_t>(ti.n_elements())), F.n(ti.n_bytes), fmt::format("{:.2f}", bpw),
                          fmt::format("{}", ti.offset), F.n(r.analysis.tensors[i].bytes_per_token)});
    }
    s.blocks.push_back(table(std::move(t)));
    return s;
}

// Tensor digests: each tensor's name and its digest (r.digests, one per tensor, by r.hash).
Section digests_section(const Report& r) {
    const Model& f = r.file;
    Section d{fmt::format("Tensor digests ({})", hash_name(*r.hash)), {}, "digests"};
    Table dt;
    dt.head = {"name", std::string(hash_name(*r.hash))};
    dt.align = "ll";
    dt.shrink = {{0, 16}};
    dt.middle = {0};
    for (size_t i = 0; i < f.tensors().size(); ++i)
        dt.rows.push_back({escape_text(f.tensors()[i].name), (*r.digests)[i]});
    d.blocks.push_back(table(std::move(dt)));
    return d;
}

// An empty by-type or by-group table; `what` heads the label column.
Table summary_table(const char* what) {
    Table t;
    t.head = {what, "count", "params", "bytes", "% file", "bytes/token", "% traffic"};
    t.align = "lrrrrrr";
    return t;
}

// Adds a row to a summary_table: the label and its totals with their shares of the file and of the traffic.
void summary_row(Table& t, std::string label, const traffic::Totals& x, const Report& r, const Fmt& F) {
    t.rows.push_back({std::move(label), fmt::format("{}", x.count), F.n(x.n_elements), F.n(x.n_bytes),
                      F.pct(share_of(x.n_bytes, r.file.file_size())), F.n(x.bytes_per_token),
                      F.pct(share_of(x.bytes_per_token, r.analysis.traffic.bytes_per_token))});
}

// Summary by type: one row per tensor type, in the analysis's order.
Section by_type_section(const Report& r, const Fmt& F) {
    Section s{"Summary by type", {}, "by-type"};
    Table t = summary_table("type");
    for (const auto& tt : r.analysis.by_type) summary_row(t, std::string(type_name(tt.type)), tt, r, F);
    s.blocks.push_back(table(std::move(t)));
    return s;
}

// Summary by group: one row per group that has tensors.
Section by_group_section(const Report& r, const Fmt& F) {
    Section s{"Summary by group", {}, "by-group"};
    Table t = summary_table("group");
    for (traffic::Group g : traffic::kAllGroups) {
        const traffic::Totals& gt = r.analysis.by_group[static_cast<size_t>(g)];
        if (gt.count) summary_row(t, std::string(traffic::group_label(g)), gt, r, F);
    }
    s.blocks.push_back(table(std::move(t)));
    return s;
}

// Summary by layer: one row per block (and one for the tensors outside blocks) with its traffic share.
Section by_layer_section(const Report& r, const Fmt& F) {
    const uint64_t total_bpt = r.analysis.traffic.bytes_per_token;
    Section s{"Summary by layer", {}, "by-layer"};
    Table t;
    t.head = {"layer", "count", "params", "bytes", "bytes/token", "% traffic"};
    t.align = "lrrrrr";
    for (const auto& lt : r.analysis.by_layer)
        t.rows.push_back({lt.layer < 0 ? "(outside blocks)" : fmt::format("blk.{}", lt.layer),
                          fmt::format("{}", lt.count), F.n(lt.n_elements), F.n(lt.n_bytes), F.n(lt.bytes_per_token),
                          F.pct(share_of(lt.bytes_per_token, total_bpt))});
    s.blocks.push_back(table(std::move(t)));
    return s;
}

// How a token reads group g's weights: "all bytes", "one row per token", "2 of 8 experts", ...
std::string how_read(traffic::Group g, const traffic::Analysis& a) {
    const traffic::ModelFacts& m = a.model;
    std::string how = "all bytes";
    if (g == traffic::Group::Embedding) how = "one row per token";
    if (g == traffic::Group::LmHead && m.tied_embeddings) how = "all bytes (tied token_embd)";
    if (g == traffic::Group::Experts && a.traffic.expert_fraction)
        how = fmt::format("{} of {} experts", m.expert_used_count.value_or(*m.expert_count), *m.expert_count);
    return how;
}

// Per-token weight traffic: the total, lm_head share, experts read and tokens/s ceiling, then the
// bytes per token of each group that has tensors.
Section traffic_section(const Report& r, const Fmt& F) {
    const traffic::Analysis& a = r.analysis;
    const traffic::ModelFacts& m = a.model;
    const uint64_t total_bpt = a.traffic.bytes_per_token;
    Section s{"Per-token weight traffic (batch-1 decode)", {}, "traffic"};
    std::vector<std::pair<std::string, std::string>> fl = {
        {"bytes/token", fmt::format("{} ({})", total_bpt, bytes_h(total_bpt))},
        {"lm_head share", F.pct(a.traffic.lm_head_share)},
    };
    if (a.traffic.expert_fraction)
        fl.emplace_back("expert fraction", fmt::format("{}/{} experts read per token",
                                                       m.expert_used_count.value_or(*m.expert_count), *m.expert_count));
    if (r.bandwidth) {
        const double tps = total_bpt ? *r.bandwidth / static_cast<double>(total_bpt) : 0;
        fl.emplace_back("bandwidth", fmt::format("{:.3g} GB/s", *r.bandwidth / 1e9));
        fl.emplace_back("ceiling", fmt::format("{:.2f} tokens/s (memory-bound; weights only, no KV cache)", tps));
    }
    s.blocks.push_back(fields(std::move(fl)));
    Table t;
    t.head = {"group", "bytes/token", "share", "how it is read"};
    t.align = "lrrl";
    t.shrink = {{3, 10}};
    for (traffic::Group g : traffic::kAllGroups) {
        const uint64_t b = a.traffic.by_group[static_cast<size_t>(g)];
        if (!a.by_group[static_cast<size_t>(g)].count) continue;
        t.rows.push_back({std::string(traffic::group_label(g)), fmt::format("{}", b), F.pct(share_of(b, total_bpt)),
                          how_read(g, a)});
    }
    s.blocks.push_back(table(std::move(t)));
    return s;
}

// Slow-path audit: each flag's headline, suggestion, source and tensors (the first 4 unless o.full).
Section audit_section(const Report& r, const RenderOptions& o) {
    const Profile& p = *r.profile;
    Section s{fmt::format("Slow-path audit: {} ({})", p.name, p.version), {}, "audit"};
    std::vector<std::string> lines;
    if (r.flags->empty()) lines.push_back(fmt::format("no slow paths found for {}", p.name));
    for (const auto& fl : *r.flags) {
        lines.push_back(fmt::format("[{}] {}", flag_id(fl.kind), escape_text(fl.message)));
        lines.push_back("    suggestion: " + escape_text(fl.suggestion));
        if (!fl.cite.empty()) lines.push_back("    source: " + fl.cite);
        std::string names;
        const size_t shown = o.full ? fl.tensors.size() : std::min<size_t>(fl.tensors.size(), 4);
        for (size_t k = 0; k < shown; ++k) names += (k ? ", " : "") + escape_text(r.file.tensors()[fl.tensors[k]].name);
        if (shown < fl.tensors.size()) names += fmt::format(", ... ({} total)", fl.tensors.size());
        lines.push_back("    tensors: " + names);
    }
    s.blocks.push_back(text(std::move(lines)));
    return s;
}

// ---------------------------------------------------------------------------------------------
// Diff sections, in document order

// Files: A and B with their sizes and counts, and the verdict.
Section files_section(const DiffReport& r) {
    const Diff& d = r.diff;
    Section s{"Files", {}, "files"};
    s.blocks.push_back(fields({
        {"A", fmt::format("{} ({} bytes, {} KV, {} tensors)", escape_text(r.a_path()), r.a.file_size(),
                          r.a.metadata().size(), r.a.tensors().size())},
        {"B", fmt::format("{} ({} bytes, {} KV, {} tensors)", escape_text(r.b_path()), r.b.file_size(),
                          r.b.metadata().size(), r.b.tensors().size())},
        {"verdict", d.identical()
                        ? (d.data_compared ? "identical (metadata, tensor infos and data)"
                                           : "identical metadata and tensor infos (data not compared; use --data)")
                        : "different"},
    }));
    return s;
}

// Metadata changes: keys added (B's value), removed (A's) and changed (both; types shown when they differ).
Section diff_metadata_section(const DiffReport& r, const RenderOptions& o) {
    const Diff& d = r.diff;
    const size_t preview = o.full ? std::numeric_limits<size_t>::max() : kArrayPreview;
    Section s{fmt::format("Metadata: {} added, {} removed, {} changed", d.kv_added.size(), d.kv_removed.size(),
                          d.kv_changed.size()),
              {},
              "diff-metadata"};
    Table t;
    t.head = {"", "key", "A", "B"};
    t.align = "llll";
    t.shrink = {{2, 24}, {3, 24}, {1, 24}, {2, 12}, {3, 12}, {1, 16}};
    t.middle = {1};
    for (size_t j : d.kv_added) {
        const auto& kv = r.b.metadata()[j];
        t.rows.push_back(
            {"+", escape_text(kv.key), "", value_type_string(kv.value) + " " + kv.value.to_string(preview)});
    }
    for (size_t i : d.kv_removed) {
        const auto& kv = r.a.metadata()[i];
        t.rows.push_back(
            {"-", escape_text(kv.key), value_type_string(kv.value) + " " + kv.value.to_string(preview), ""});
    }
    for (const auto& [i, j] : d.kv_changed) {
        const auto& x = r.a.metadata()[i];
        const auto& y = r.b.metadata()[j];
        const bool type_change = value_type_string(x.value) != value_type_string(y.value);
        t.rows.push_back({"~", escape_text(x.key),
                          (type_change ? value_type_string(x.value) + " " : "") + x.value.to_string(preview),
                          (type_change ? value_type_string(y.value) + " " : "") + y.value.to_string(preview)});
    }
    s.blocks.push_back(table(std::move(t)));
    return s;
}

// x when it equals y, else "x -> y".
std::string arrow(const std::string& x, const std::string& y) { return x == y ? x : x + " -> " + y; }

// Tensor changes: tensors added, removed and changed, with type, shape, bytes and bytes/token (A -> B).
Section diff_tensors_section(const DiffReport& r) {
    const Diff& d = r.diff;
    Section s{fmt::format("Tensors: {} added, {} removed, {} changed, {} in both", d.tensors_added.size(),
                          d.tensors_removed.size(), d.tensors_changed.size(), d.tensors_common),
              {},
              "diff-tensors"};
    Table t;
    t.head = {"", "name", "type", "shape", "bytes", "bytes/token"};
    t.align = "lllllr";
    t.shrink = {{1, 16}, {3, 9}, {4, 9}};
    t.middle = {1};
    for (size_t j : d.tensors_added) {
        const auto& y = r.b.tensors()[j];
        t.rows.push_back({"+", escape_text(y.name), std::string(type_name(y.type)), shape_x(y),
                          si(static_cast<double>(y.n_bytes)),
                          si(static_cast<double>(r.ab.tensors[j].bytes_per_token))});
    }
    for (size_t i : d.tensors_removed) {
        const auto& x = r.a.tensors()[i];
        t.rows.push_back({"-", escape_text(x.name), std::string(type_name(x.type)), shape_x(x),
                          si(static_cast<double>(x.n_bytes)),
                          si(static_cast<double>(r.aa.tensors[i].bytes_per_token))});
    }
    for (const auto& td : d.tensors_changed) {
        const auto& x = r.a.tensors()[td.a];
        const auto& y = r.b.tensors()[td.b];
        t.rows.push_back({"~", escape_text(x.name),
                          arrow(std::string(type_name(x.type)), std::string(type_name(y.type))),
                          arrow(shape_x(x), shape_x(y)),
                          arrow(si(static_cast<double>(x.n_bytes)), si(static_cast<double>(y.n_bytes))),
                          arrow(si(static_cast<double>(r.aa.tensors[td.a].bytes_per_token)),
                                si(static_cast<double>(r.ab.tensors[td.b].bytes_per_token)))});
    }
    s.blocks.push_back(table(std::move(t)));
    return s;
}

// Adds a totals row: A's and B's figure and the change (with its percentage unless A's is 0).
void totals_row(Table& t, const char* what, uint64_t x, uint64_t y) {
    const int64_t dv = static_cast<int64_t>(y) - static_cast<int64_t>(x);
    t.rows.push_back({what, fmt::format("{}", x), fmt::format("{}", y),
                      x ? fmt::format("{:+} ({:+.1f}%)", dv, 100.0 * static_cast<double>(dv) / static_cast<double>(x))
                        : fmt::format("{:+}", dv)});
}

// Totals: file size, tensors, parameters, tensor bytes and bytes/token of A and B.
Section totals_section(const DiffReport& r) {
    Section s{"Totals", {}, "totals"};
    Table t;
    t.head = {"", "A", "B", "change"};
    t.align = "lrrr";
    totals_row(t, "file size", r.a.file_size(), r.b.file_size());
    totals_row(t, "tensors", r.a.tensors().size(), r.b.tensors().size());
    totals_row(t, "parameters", r.aa.model.n_elements, r.ab.model.n_elements);
    totals_row(t, "tensor bytes", r.aa.model.n_bytes, r.ab.model.n_bytes);
    totals_row(t, "bytes/token", r.aa.traffic.bytes_per_token, r.ab.traffic.bytes_per_token);
    s.blocks.push_back(table(std::move(t)));
    return s;
}

// Data: the common tensors with identical and with different data (the first 12 names of each unless o.full).
Section data_section(const DiffReport& r, const RenderOptions& o) {
    const Diff& d = r.diff;
    Section s{
        fmt::format("Data: {} of {} common tensors identical", d.data_identical.size(), d.tensors_common), {}, "data"};
    std::vector<std::string> lines;
    auto list = [&](const char* label, const std::vector<std::pair<size_t, size_t>>& v) {
        if (v.empty()) return;
        std::string names;
        const size_t shown = o.full ? v.size() : std::min<size_t>(v.size(), 12);
        for (size_t k = 0; k < shown; ++k) names += (k ? ", " : "") + escape_text(r.a.tensors()[v[k].first].name);
        if (shown < v.size()) names += fmt::format(", ... ({} total)", v.size());
        lines.push_back(std::string(label) + names);
    };
    list("identical: ", d.data_identical);
    list("different: ", d.data_different);
    if (lines.empty()) lines.push_back("no tensors in common");
    s.blocks.push_back(text(std::move(lines)));
    return s;
}

}  // namespace

namespace doc {

std::vector<Section> build_report(const Report& r, const RenderOptions& o, bool exact) {
    const Fmt F{exact};
    std::vector<Section> doc;
    doc.push_back(header_section(r));
    if (r.file.is_split()) doc.push_back(shards_section(r, F));
    doc.push_back(metadata_section(r, o));
    doc.push_back(tensors_section(r, F));
    if (r.digests && !r.digests->empty()) doc.push_back(digests_section(r));
    doc.push_back(by_type_section(r, F));
    doc.push_back(by_group_section(r, F));
    doc.push_back(by_layer_section(r, F));
    doc.push_back(traffic_section(r, F));
    if (r.profile && r.flags) doc.push_back(audit_section(r, o));
    return doc;
}

std::vector<Section> build_diff(const DiffReport& r, const RenderOptions& o) {
    const Diff& d = r.diff;
    std::vector<Section> doc;
    doc.push_back(files_section(r));
    if (!d.header.empty()) doc.push_back({"Header", {text(d.header)}, "diff-header"});
    if (!d.kv_added.empty() || !d.kv_removed.empty() || !d.kv_changed.empty())
        doc.push_back(diff_metadata_section(r, o));
    if (!d.tensors_added.empty() || !d.tensors_removed.empty() || !d.tensors_changed.empty())
        doc.push_back(diff_tensors_section(r));
    doc.push_back(totals_section(r));
    if (d.data_compared) doc.push_back(data_section(r, o));
    return doc;
}

}  // namespace doc
}  // namespace oiw::inspect
