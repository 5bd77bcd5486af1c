// HTML reports for gguf-inspect: one self-contained file (inline CSS and SVG, no script, no
// network; well-formed XHTML-compatible markup). Drawn from the report document the tables and
// Markdown print (inspect/document.h) and from the analysis behind it: a type map (layers x
// tensor classes, coloured by bits per weight, slow paths outlined), bytes per token by group
// and by layer, then the text report's sections.
#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "inspect/document.h"
#include "inspect/render.h"
#include "libformat/escape.h"

namespace oiw::inspect {
namespace {

// Text of the report document (already passed through escape_text) as markup.
std::string X(std::string_view s) { return escape_xml(s); }
// Text from the file (names, metadata strings) as markup.
std::string F(std::string_view s) { return escape_xml(escape_text(s)); }

// ---------------------------------------------------------------------------------------------
// Colours

// Viridis (matplotlib), 11 stops: dark purple (few bits) to yellow (many); colour-blind safe and
// monotonic in lightness, so it also reads in grey.
constexpr std::array<std::array<int, 3>, 11> kViridis = {{{68, 1, 84},
                                                          {72, 36, 117},
                                                          {65, 68, 135},
                                                          {53, 95, 141},
                                                          {42, 120, 142},
                                                          {33, 145, 140},
                                                          {34, 168, 132},
                                                          {68, 191, 112},
                                                          {122, 209, 81},
                                                          {189, 223, 38},
                                                          {253, 231, 37}}};
// The colour scale: log2 of bits per weight from 1.5 (IQ1_S) to 16 (F16/BF16); F32 gets the top colour.
constexpr double kMinBpw = 1.5, kMaxBpw = 16;

// Position of `bpw` on the colour scale, 0..1.
double bpw_pos(double bpw) { return std::clamp(std::log2(bpw / kMinBpw) / std::log2(kMaxBpw / kMinBpw), 0.0, 1.0); }

std::string viridis(double t) {
    const double x = std::clamp(t, 0.0, 1.0) * 10;
    const size_t i = std::min<size_t>(static_cast<size_t>(x), 9);
    const double f = x - static_cast<double>(i);
    auto mix = [&](int k) {
        return static_cast<int>(std::lround(kViridis[i][k] + (kViridis[i + 1][k] - kViridis[i][k]) * f));
    };
    return fmt::format("#{:02x}{:02x}{:02x}", mix(0), mix(1), mix(2));
}

// Fill for a type, and whether a label on it must be light.
std::string type_fill(GgmlType t) { return viridis(bpw_pos(type_bpw(t))); }
bool dark_fill(GgmlType t) { return bpw_pos(type_bpw(t)) < 0.55; }

// Okabe-Ito categorical colours, one per group (colour-blind safe).
std::string_view group_color(traffic::Group g) {
    switch (g) {
        case traffic::Group::Embedding: return "#999999";
        case traffic::Group::Attention: return "#0072b2";
        case traffic::Group::Ffn: return "#56b4e9";
        case traffic::Group::Experts: return "#009e73";
        case traffic::Group::SharedExperts: return "#cc79a7";
        case traffic::Group::Routers: return "#d55e00";
        case traffic::Group::Norms: return "#f0e442";
        case traffic::Group::LmHead: return "#e69f00";
        case traffic::Group::Other: return "#000000";
    }
    return "#000000";
}

double share_of(uint64_t part, uint64_t whole) {
    return whole ? static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

// ---------------------------------------------------------------------------------------------
// Type map

// Column of a tensor: its stem ("attn_q"); inside a block all norms share the column "norms".
std::string column_of(std::string_view name, const traffic::TensorFacts& tf) {
    if (tf.layer >= 0 && tf.group == traffic::Group::Norms) return "norms";
    return std::string(traffic::split_name(name).stem);
}

// Known columns in reading order; others follow alphabetically, "norms" last.
int column_rank(std::string_view c) {
    static constexpr std::string_view kOrder[] = {"token_embd",    "position_embd",  "token_types",   "attn_q",
                                                  "attn_k",        "attn_v",         "attn_qkv",      "attn_output",
                                                  "ffn_gate",      "ffn_up",         "ffn_down",      "ffn_gate_inp",
                                                  "ffn_gate_exps", "ffn_up_exps",    "ffn_down_exps", "ffn_gate_shexp",
                                                  "ffn_up_shexp",  "ffn_down_shexp", "output_norm",   "output"};
    if (c == "norms") return 1000;
    for (size_t i = 0; i < std::size(kOrder); ++i)
        if (kOrder[i] == c) return static_cast<int>(i);
    return 100;
}
bool column_less(const std::string& x, const std::string& y) {
    const int rx = column_rank(x), ry = column_rank(y);
    return rx != ry ? rx < ry : x < y;
}

// One model drawn as a type map, with the tensors to outline and why.
struct Side {
    const Model& m;
    const traffic::Analysis& a;
    std::string caption;                  // markup
    std::map<size_t, std::string> marks;  // tensor index -> reason (plain text, escaped on output)
    std::string mark_class;               // "slow" (audit) or "changed" (diff)
};

using CellKey = std::pair<int, std::string>;  // (layer or -1, column)

// The map stays proportional to the model, whatever its naming: at most kMaxColumns columns in
// blocks and kMaxOutside outside them (the ones with the most tensors; the rest fold into one
// "(other)" column) and at most kMaxRows rows (beyond, each row is a band of consecutive layers).
// A cell's hover text lists at most kMaxCellTensors tensors.
constexpr size_t kMaxColumns = 48, kMaxOutside = 24, kMaxRows = 512, kMaxCellTensors = 12;
// Rows of a document table the page shows (tensors, metadata, diffs of 100k-tensor models).
constexpr size_t kMaxTableRows = 2000;
const std::string kOtherColumn = "(other)";

// Geometry shared by the maps drawn side by side: the union of their columns and layers.
struct Grid {
    std::vector<std::string> outside, columns;  // columns outside blocks / in blocks, as drawn
    std::vector<int> layers;                    // first layer of each row
    std::map<std::string, std::string> folded;  // column -> kOtherColumn
    int band = 1;                               // layers per row
    std::string note;                           // what was folded (empty: nothing)
    int cw = 56, ch = 18;                       // cell size (px)
    bool labels = true;                         // type names in the cells (else on hover only)
    int every = 1;                              // a row label every this many rows
};

// Cell of each tensor: (layer, column) as named, or as drawn on `g` (folded columns, bands).
std::map<CellKey, std::vector<size_t>> cells_of(const Side& s, const Grid* g = nullptr) {
    std::map<CellKey, std::vector<size_t>> cells;
    for (size_t i = 0; i < s.m.tensors().size(); ++i) {
        int layer = s.a.tensors[i].layer;
        std::string column = column_of(s.m.tensors()[i].name, s.a.tensors[i]);
        if (g) {
            if (g->folded.count(column)) column = kOtherColumn;
            if (layer >= 0) layer = layer / g->band * g->band;
        }
        cells[{layer, std::move(column)}].push_back(i);
    }
    return cells;
}

// Keeps the `cap` columns of `count` with the most tensors (ties: reading order); records the
// others in g.folded. Returns the kept ones, plus kOtherColumn when something was folded.
std::vector<std::string> fold_columns(const std::map<std::string, size_t>& count, size_t cap, Grid& g) {
    std::vector<std::string> cols;
    cols.reserve(count.size());
    for (const auto& [c, n] : count) cols.push_back(c);
    if (cols.size() <= cap) return cols;
    std::stable_sort(cols.begin(), cols.end(),
                     [&](const std::string& x, const std::string& y) { return count.at(x) > count.at(y); });
    for (size_t k = cap - 1; k < cols.size(); ++k) g.folded[cols[k]] = kOtherColumn;
    const size_t n_folded = cols.size() - (cap - 1);
    cols.resize(cap - 1);
    cols.push_back(kOtherColumn);
    g.note += fmt::format("{}{} columns with the fewest tensors are drawn as one column \"{}\".",
                          g.note.empty() ? "" : " ", n_folded, kOtherColumn);
    return cols;
}

Grid grid_for(const std::vector<const Side*>& sides) {
    std::map<std::string, size_t> out, cols;
    int max_layer = -1;
    for (const Side* s : sides)
        for (const auto& [key, idx] : cells_of(*s)) {
            (key.first < 0 ? out : cols)[key.second] += idx.size();
            max_layer = std::max(max_layer, key.first);
        }
    Grid g;
    g.outside = fold_columns(out, kMaxOutside, g);
    g.columns = fold_columns(cols, kMaxColumns, g);
    std::sort(g.outside.begin(), g.outside.end(), column_less);
    std::sort(g.columns.begin(), g.columns.end(), column_less);
    g.band = std::max(1, static_cast<int>((static_cast<size_t>(max_layer) + kMaxRows) / kMaxRows));
    if (g.band > 1)
        g.note += fmt::format("{}Each row is {} consecutive layers; a cell shows the type of its largest tensor.",
                              g.note.empty() ? "" : " ", g.band);
    std::set<int> layers;
    for (const Side* s : sides)
        for (const auto& [key, idx] : cells_of(*s, &g))
            if (key.first >= 0) layers.insert(key.first);
    g.layers.assign(layers.begin(), layers.end());
    // Cells shrink to keep the map about 800 px tall and 700 px wide; below 12 x 36 px the type
    // names move to the hover text.
    const int nrows = std::max<int>(1, static_cast<int>(g.layers.size()));
    const int ncols = std::max<int>(1, static_cast<int>(g.columns.size()));
    g.ch = std::clamp(800 / nrows, 4, 18);
    g.cw = std::clamp(700 / ncols, 20, 60);
    g.labels = g.ch >= 12 && g.cw >= 36;
    g.every = g.ch >= 11 ? 1 : g.ch * 5 >= 11 ? 5 : 10;
    return g;
}

// The main tensor of a cell (its colour and label): the largest matmul weight, else the largest.
size_t main_tensor(const Side& s, const std::vector<size_t>& idx) {
    return *std::max_element(idx.begin(), idx.end(), [&](size_t x, size_t y) {
        const auto kx = std::make_pair(s.a.tensors[x].matmul, s.m.tensors()[x].n_bytes);
        const auto ky = std::make_pair(s.a.tensors[y].matmul, s.m.tensors()[y].n_bytes);
        return kx < ky;
    });
}

// One cell: <g class="cell"> with data attributes, hover text, fill, outline and label.
void cell(std::string& o, const Side& s, const std::vector<size_t>& idx, int layer, const std::string& column, int x,
          int y, int w, int h, bool label) {
    const size_t mi = main_tensor(s, idx);
    const GgmlType t = s.m.tensors()[mi].type;
    std::string title, why;
    size_t listed = 0, marks = 0;
    for (size_t i : idx) {
        const auto& ti = s.m.tensors()[i];
        if (listed++ < kMaxCellTensors)
            title += fmt::format("{}{}: {} {}, {} B, {} B/token", title.empty() ? "" : "\n", escape_text(ti.name),
                                 type_name(ti.type), ti.shape_string(), ti.n_bytes, s.a.tensors[i].bytes_per_token);
        if (auto it = s.marks.find(i); it != s.marks.end() && marks++ < kMaxCellTensors) why += "\n" + it->second;
    }
    if (idx.size() > kMaxCellTensors) title += fmt::format("\n... {} tensors in this cell", idx.size());
    const bool marked = !why.empty();
    o += fmt::format("<g class=\"cell{}\"{} data-column=\"{}\" data-type=\"{}\"><title>{}{}</title>",
                     marked ? " " + s.mark_class : "", layer >= 0 ? fmt::format(" data-layer=\"{}\"", layer) : "",
                     F(column), type_name(t), X(title), X(why));
    o += fmt::format("<rect class=\"c\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"/>", x, y, w, h,
                     type_fill(t));
    // The outline thins on small cells so their colour still shows.
    const double inset = h >= 12 ? 1.5 : 0.75;
    if (marked)
        o += fmt::format("<rect class=\"m{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>", h >= 12 ? "" : " thin",
                         x + inset, y + inset, w - 2 * inset, h - 2 * inset);
    if (label)
        o += fmt::format("<text x=\"{}\" y=\"{}\" class=\"{}\">{}</text>", x + w / 2, y + h / 2,
                         dark_fill(t) ? "lt" : "dt", type_name(t));
    o += "</g>";
}

// Per-layer bytes/token of each group (the analysis' per-tensor figures summed), largest layer total.
struct LayerBars {
    std::map<int, std::array<uint64_t, traffic::kGroupCount>> by_layer;
    uint64_t max = 0;
};
LayerBars layer_bars(const traffic::Analysis& a, int band) {
    LayerBars b;
    for (const auto& tf : a.tensors)
        if (tf.layer >= 0) b.by_layer[tf.layer / band * band][static_cast<size_t>(tf.group)] += tf.bytes_per_token;
    for (const auto& [layer, groups] : b.by_layer) {
        uint64_t total = 0;
        for (uint64_t v : groups) total += v;
        b.max = std::max(b.max, total);
    }
    return b;
}

constexpr int kLeft = 64, kTop = 96, kBarGap = 16, kBarWidth = 240;

// The cells outside blocks (token_embd, output, ...) as one strip.
std::string outside_svg(const Side& s, const Grid& g) {
    if (g.outside.empty()) return "";
    const auto cells = cells_of(s, &g);
    const int w = 96, h = 26;
    std::string o = fmt::format(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"strip\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} "
        "{1}\">",
        kLeft + static_cast<int>(g.outside.size()) * (w + 6), h + 18);
    int x = kLeft;
    for (const auto& c : g.outside) {
        o += fmt::format("<text x=\"{}\" y=\"12\" class=\"col\">{}</text>", x + w / 2, F(c));
        if (auto it = cells.find({-1, c}); it != cells.end())
            cell(o, s, it->second, -1, c, x, 16, w, h, true);
        else
            o += fmt::format("<rect class=\"none\" x=\"{}\" y=\"16\" width=\"{}\" height=\"{}\"/>", x, w, h);
        x += w + 6;
    }
    return o + "</svg>";
}

// Layers x columns; with `bars`, each row continues with its stacked bytes/token bar.
std::string map_svg(const Side& s, const Grid& g, bool bars) {
    const auto cells = cells_of(s, &g);
    const int nc = static_cast<int>(g.columns.size()), nr = static_cast<int>(g.layers.size());
    const int map_w = kLeft + nc * g.cw;
    const int width = map_w + (bars ? kBarGap + kBarWidth + 8 : 8), height = kTop + nr * g.ch + 8;
    std::string o = fmt::format(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"map\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\">",
        width, height);
    for (int c = 0; c < nc; ++c)
        o += fmt::format("<text class=\"colv\" transform=\"translate({},{}) rotate(-60)\">{}</text>",
                         kLeft + c * g.cw + g.cw / 2 + 3, kTop - 4, F(g.columns[c]));
    const LayerBars lb = layer_bars(s.a, g.band);
    if (bars && lb.max > 0)
        o += fmt::format("<text x=\"{}\" y=\"{}\" class=\"axis\">bytes/token per layer (bar = {} B)</text>",
                         map_w + kBarGap, kTop - 6, lb.max);
    for (int r = 0; r < nr; ++r) {
        const int layer = g.layers[r], y = kTop + r * g.ch;
        if ((layer / g.band) % g.every == 0)
            o += fmt::format("<text x=\"{}\" y=\"{}\" class=\"row\">blk.{}{}</text>", kLeft - 4, y + g.ch / 2 + 4,
                             layer, g.band > 1 ? fmt::format("-{}", layer + g.band - 1) : "");
        for (int c = 0; c < nc; ++c) {
            const int x = kLeft + c * g.cw;
            if (auto it = cells.find({layer, g.columns[c]}); it != cells.end())
                cell(o, s, it->second, layer, g.columns[c], x, y, g.cw, g.ch, g.labels);
            else
                o += fmt::format("<rect class=\"none\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>", x, y, g.cw,
                                 g.ch);
        }
        auto it = lb.by_layer.find(layer);
        if (!bars || it == lb.by_layer.end() || lb.max == 0) continue;
        uint64_t total = 0;
        for (uint64_t v : it->second) total += v;
        o += fmt::format(
            "<g class=\"layer-bar\" data-layer=\"{}\" data-bytes-per-token=\"{}\"><title>blk.{}{}: {} B/token", layer,
            total, layer, g.band > 1 ? fmt::format("-{}", layer + g.band - 1) : "", total);
        for (traffic::Group gr : traffic::kAllGroups)
            if (it->second[static_cast<size_t>(gr)])
                o += fmt::format("\n{}: {} B", traffic::group_label(gr), it->second[static_cast<size_t>(gr)]);
        o += "</title>";
        double x = map_w + kBarGap;
        for (traffic::Group gr : traffic::kAllGroups) {
            const double w = static_cast<double>(kBarWidth) * share_of(it->second[static_cast<size_t>(gr)], lb.max);
            if (w <= 0) continue;
            o += fmt::format("<rect x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\"/>", x, y + 1, w,
                             std::max(1, g.ch - 2), group_color(gr));
            x += w;
        }
        o += "</g>";
    }
    return o + "</svg>";
}

// Legend: the types present by bits per weight (swatch, name, bpw), the outline, the colour
// scale, and with `groups` the bar colours.
std::string legend(const std::set<GgmlType>& types, std::string_view mark_class, std::string_view mark_text,
                   bool groups) {
    std::string o = "<div class=\"legend\">";
    std::vector<GgmlType> by_bpw(types.begin(), types.end());
    std::stable_sort(by_bpw.begin(), by_bpw.end(), [](GgmlType x, GgmlType y) { return type_bpw(x) < type_bpw(y); });
    for (GgmlType t : by_bpw)
        o += fmt::format(
            "<span class=\"key\"><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"14\" height=\"14\"><rect "
            "width=\"14\" height=\"14\" "
            "fill=\"{}\"/></svg> {} ({:.2f} bpw)</span>",
            type_fill(t), type_name(t), type_bpw(t));
    o += fmt::format(
        "<span class=\"key\"><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"14\" height=\"14\"><g "
        "class=\"{}\"><rect width=\"14\" "
        "height=\"14\" fill=\"#bbbbbb\"/><rect class=\"m\" x=\"1.5\" y=\"1.5\" width=\"11\" height=\"11\"/></g></svg> "
        "{}</span>",
        mark_class, X(mark_text));
    o += "<div class=\"scale\">colour: bits per weight (log scale) ";
    for (double b : {1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 16.0})
        o += fmt::format("<span class=\"tick\" style=\"background:{};color:{}\">{}{}</span>", viridis(bpw_pos(b)),
                         bpw_pos(b) < 0.55 ? "#fff" : "#000", b, b == kMaxBpw ? "+" : "");
    o += "</div>";
    if (groups) {
        o += "<div class=\"scale\">per-layer bars: ";
        for (traffic::Group g : traffic::kAllGroups)
            o += fmt::format(
                "<span class=\"key\"><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"14\" height=\"14\"><rect "
                "width=\"14\" height=\"14\" "
                "fill=\"{}\"/></svg> {}</span>",
                group_color(g), traffic::group_label(g));
        o += "</div>";
    }
    return o + "</div>";
}

std::set<GgmlType> types_of(const Model& m) {
    std::set<GgmlType> s;
    for (const auto& t : m.tensors()) s.insert(t.type);
    return s;
}

// ---------------------------------------------------------------------------------------------
// Document sections and page

std::string section_html(const doc::Section& s) {
    std::string o = fmt::format("<section id=\"{}\"><h2>{}</h2>", X(s.id), X(s.title));
    for (const auto& b : s.blocks) {
        switch (b.kind) {
            case doc::Block::Kind::Fields:
                o += "<table class=\"fields\">";
                for (const auto& [k, v] : b.fields) o += fmt::format("<tr><th>{}</th><td>{}</td></tr>", X(k), X(v));
                o += "</table>";
                break;
            case doc::Block::Kind::Table: {
                const auto& t = b.table;
                auto cls = [&](size_t c) { return t.align[c] == 'r' ? " class=\"r\"" : ""; };
                o += "<table><thead><tr>";
                for (size_t c = 0; c < t.head.size(); ++c) o += fmt::format("<th{}>{}</th>", cls(c), X(t.head[c]));
                o += "</tr></thead><tbody>";
                for (size_t r = 0; r < t.rows.size() && r < kMaxTableRows; ++r) {
                    o += "<tr>";
                    for (size_t c = 0; c < t.rows[r].size(); ++c)
                        o += fmt::format("<td{}>{}</td>", cls(c), X(t.rows[r][c]));
                    o += "</tr>";
                }
                o += "</tbody></table>";
                if (t.rows.size() > kMaxTableRows)
                    o += fmt::format(
                        "<p class=\"note fold\">The first {} of {} rows; the text report and --json list them all.</p>",
                        kMaxTableRows, t.rows.size());
                break;
            }
            case doc::Block::Kind::Text:
                for (const auto& p : b.text) {
                    const bool sub = !p.empty() && p[0] == ' ';
                    const bool head = !p.empty() && p[0] == '[';
                    o += fmt::format("<p class=\"{}\">{}</p>",
                                     head  ? "flag"
                                     : sub ? "sub"
                                           : "note",
                                     X(sub ? p.substr(p.find_first_not_of(' ')) : p));
                }
                break;
        }
    }
    return o + "</section>";
}

// The document's sections with these ids, in this order (absent ones skipped); `folded` ones in <details>.
std::string sections(const std::vector<doc::Section>& d, std::initializer_list<std::string_view> ids,
                     bool folded = false) {
    std::string o;
    for (std::string_view id : ids)
        for (const auto& s : d)
            if (s.id == id)
                o += folded ? fmt::format("<details><summary>{}</summary>{}</details>", X(s.title), section_html(s))
                            : section_html(s);
    return o;
}

constexpr std::string_view kStyle = R"(
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#111;background:#fff;margin:24px;max-width:1400px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:24px 0 8px;border-bottom:1px solid #ccc}
.sub0{color:#555;margin:0 0 12px;word-break:break-all}
table{border-collapse:collapse;margin:4px 0 8px;font-size:13px}
th,td{border:1px solid #ddd;padding:2px 8px;text-align:left;vertical-align:top}
thead th{background:#f2f2f2}td.r,th.r{text-align:right;font-variant-numeric:tabular-nums}
table.fields th{background:#f7f7f7;font-weight:600;white-space:nowrap}
td{word-break:break-word}
svg text{font:10px system-ui,sans-serif}
text.col{text-anchor:middle;fill:#333}text.colv{fill:#333}text.row{text-anchor:end;fill:#333}
text.lt{text-anchor:middle;dominant-baseline:central;fill:#fff}text.dt{text-anchor:middle;dominant-baseline:central;fill:#000}text.axis{fill:#555}
rect.none{fill:#f4f4f4;stroke:#e4e4e4}
rect.c{stroke:#fff;stroke-width:1}.m{fill:none;stroke:#000;stroke-width:2.5}
.changed .m{stroke:#d55e00;stroke-width:3}.m.thin{stroke-width:1.5}
.maps{display:flex;flex-wrap:wrap;gap:24px;align-items:flex-start}.maps figure{margin:0}
figcaption{font-weight:600;margin:4px 0;word-break:break-all;max-width:700px}
.legend{margin:8px 0;font-size:12px}.key{display:inline-block;margin:2px 12px 2px 0;white-space:nowrap}
.key svg{vertical-align:-2px}.scale{margin-top:4px}.tick{display:inline-block;padding:1px 6px;margin-right:2px;border-radius:2px}
p.flag{margin:10px 0 2px;font-weight:600}p.sub{margin:0 0 0 24px;color:#333}p.note{margin:4px 0}
.callout{font-size:15px;margin:6px 0}.callout b{font-size:17px}
details{margin:12px 0}summary{cursor:pointer;font-weight:600}
svg.map,svg.strip,svg.groups,svg.layers{display:block;max-width:100%;height:auto}
@media print{body{margin:0;max-width:none}h2{break-after:avoid}svg,table{break-inside:avoid}details{display:none}}
)";

std::string page(std::string_view title, const std::string& body) {
    return fmt::format(
        "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\"><head><meta charset=\"utf-8\"/>"
        "<meta name=\"viewport\" content=\"width=device-width, "
        "initial-scale=1\"/><title>{}</title><style>{}</style></head>"
        "<body>{}</body></html>\n",
        title, kStyle, body);
}

// Bytes per token by group as one stacked bar, with the lm_head share and the tokens/s ceiling.
std::string traffic_html(const Report& r) {
    const traffic::Analysis& a = r.analysis;
    const uint64_t total = a.traffic.bytes_per_token;
    std::string o = "<section id=\"bytes-per-token\"><h2>Bytes per token (batch-1 decode)</h2>";
    o += fmt::format(
        "<p class=\"callout\">Each decoded token reads <b>{} B</b> ({:.2f} MB) of weights; lm_head share "
        "<b>{:.1f}%</b>.</p>",
        total, static_cast<double>(total) / 1e6, a.traffic.lm_head_share * 100);
    if (r.bandwidth)
        o += fmt::format(
            "<p class=\"callout ceiling\" data-tokens-per-s=\"{:.2f}\">Memory-bound ceiling at {:.3g} GB/s: <b>{:.2f} "
            "tokens/s</b> "
            "(weights only, no KV cache).</p>",
            total ? *r.bandwidth / static_cast<double>(total) : 0.0, *r.bandwidth / 1e9,
            total ? *r.bandwidth / static_cast<double>(total) : 0.0);
    else
        o += "<p class=\"note\">Pass <code>--bandwidth</code> (e.g. 20GB/s) for the tokens/s ceiling.</p>";
    const int w = 900, h = 34;
    o += fmt::format(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"groups\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} "
        "{1}\">",
        w, h);
    double x = 0;
    for (traffic::Group g : traffic::kAllGroups) {
        const uint64_t b = a.traffic.by_group[static_cast<size_t>(g)];
        if (!b) continue;
        const double sw = w * share_of(b, total), sh = share_of(b, total) * 100;
        o += fmt::format(
            "<g class=\"group-seg\" data-group=\"{}\" data-bytes-per-token=\"{}\"><title>{}: {} B/token "
            "({:.1f}%)</title>"
            "<rect x=\"{:.1f}\" y=\"0\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\"/>",
            traffic::group_id(g), b, traffic::group_label(g), b, sh, x, sw, h, group_color(g));
        if (sw > 90)
            o += fmt::format("<text x=\"{:.1f}\" y=\"{}\" class=\"{}\">{} {:.1f}%</text>", x + sw / 2, h / 2,
                             g == traffic::Group::Attention || g == traffic::Group::Experts ||
                                     g == traffic::Group::Other || g == traffic::Group::Routers
                                 ? "lt"
                                 : "dt",
                             traffic::group_label(g), sh);
        o += "</g>";
        x += sw;
    }
    o += "</svg><div class=\"legend\">";
    for (traffic::Group g : traffic::kAllGroups)
        if (const uint64_t b = a.traffic.by_group[static_cast<size_t>(g)])
            o += fmt::format(
                "<span class=\"key\"><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"14\" height=\"14\"><rect "
                "width=\"14\" height=\"14\" "
                "fill=\"{}\"/></svg> {} {} B ({:.1f}%)</span>",
                group_color(g), traffic::group_label(g), b, share_of(b, total) * 100);
    return o +
           "</div><p class=\"note\">Per-layer bars: right of the type map (tensors outside blocks are not in "
           "them).</p></section>";
}

// Flag reasons by tensor, for the outlines (lm-head-share is a finding, not a slow path).
std::map<size_t, std::string> slow_marks(const Report& r) {
    std::map<size_t, std::string> m;
    if (!r.flags) return m;
    for (const auto& fl : *r.flags) {
        if (fl.kind == FlagKind::LmHeadShare) continue;
        for (size_t i : fl.tensors)
            m[i] += (m[i].empty() ? "" : "\n") +
                    fmt::format("slow path [{}]: {}", flag_id(fl.kind), escape_text(fl.message));
    }
    return m;
}

}  // namespace

std::string render_html(const Report& r, const RenderOptions& o) {
    const auto d = doc::build_report(r, o, true);
    const std::string name = r.analysis.model.name.empty() ? r.file.path() : r.analysis.model.name;
    Side s{r.file, r.analysis, "", slow_marks(r), "slow"};
    const Grid g = grid_for({&s});
    std::string b = fmt::format("<h1>gguf-inspect: {}</h1><p class=\"sub0\">{}</p>", F(name), F(r.file.path()));
    b += sections(d, {"header"});
    b += "<section id=\"type-map\"><h2>Type map</h2>";
    b += legend(
        types_of(r.file), "slow",
        r.profile ? fmt::format("slow path on {} (hover for the reason)", r.profile->name) : "slow path (audit off)",
        true);
    b += outside_svg(s, g) + map_svg(s, g, true);
    if (!g.note.empty()) b += fmt::format("<p class=\"note fold\">{}</p>", X(g.note));
    b += "</section>";
    b += traffic_html(r);
    b += sections(d, {"audit", "by-type", "by-group", "by-layer", "traffic"});
    b += sections(d, {"metadata", "tensors", "digests"}, true);
    return page("gguf-inspect: " + F(name), b);
}

std::string render_diff_html(const DiffReport& r, const RenderOptions& o) {
    const auto d = doc::build_diff(r, o);
    const Diff& df = r.diff;
    std::map<size_t, std::string> ma, mb;
    for (const auto& td : df.tensors_changed) {
        const auto& x = r.a.tensors()[td.a];
        const auto& y = r.b.tensors()[td.b];
        const std::string why = fmt::format("changed: {} {} -> {} {}, {} -> {} B/token", type_name(x.type),
                                            x.shape_string(), type_name(y.type), y.shape_string(),
                                            r.aa.tensors[td.a].bytes_per_token, r.ab.tensors[td.b].bytes_per_token);
        ma[td.a] = mb[td.b] = why;
    }
    for (size_t i : df.tensors_removed) ma[i] = "removed in B";
    for (size_t j : df.tensors_added) mb[j] = "added in B";
    Side sa{r.a, r.aa, "A: " + F(r.a_path()), std::move(ma), "changed"};
    Side sb{r.b, r.ab, "B: " + F(r.b_path()), std::move(mb), "changed"};
    const Grid g = grid_for({&sa, &sb});

    std::string b =
        fmt::format("<h1>gguf-inspect diff</h1><p class=\"sub0\">{} vs {}</p>", F(r.a_path()), F(r.b_path()));
    b += sections(d, {"files"});
    b += "<section id=\"type-maps\"><h2>Type maps</h2>";
    std::set<GgmlType> types = types_of(r.a);
    types.merge(types_of(r.b));
    b += legend(types, "changed", "changed, added or removed (hover for A -> B)", false);
    b += "<div class=\"maps\">";
    for (const Side* s : {&sa, &sb})
        b += fmt::format("<figure><figcaption>{}</figcaption>{}{}</figure>", s->caption, outside_svg(*s, g),
                         map_svg(*s, g, false));
    b += "</div>";
    if (!g.note.empty()) b += fmt::format("<p class=\"note fold\">{}</p>", X(g.note));
    b += "</section>";

    // Per-layer bytes/token, A above B (in the map's bands of g.band layers).
    std::map<int, std::pair<uint64_t, uint64_t>> layers;
    const auto band_of = [&](int l) { return l < 0 ? l : l / g.band * g.band; };
    for (const auto& lt : r.aa.by_layer) layers[band_of(lt.layer)].first += lt.bytes_per_token;
    for (const auto& lt : r.ab.by_layer) layers[band_of(lt.layer)].second += lt.bytes_per_token;
    uint64_t max = 0;
    for (const auto& [l, v] : layers)
        if (l >= 0) max = std::max({max, v.first, v.second});
    b += "<section id=\"layer-traffic\"><h2>Bytes per token by layer, A and B</h2>";
    if (auto it = layers.find(-1); it != layers.end())
        b += fmt::format("<p class=\"note\">Outside blocks: A {} B, B {} B per token.</p>", it->second.first,
                         it->second.second);
    const int rh = std::clamp(720 / std::max<int>(1, static_cast<int>(layers.size())), 6, 24), bw = 560;
    const int nrows = static_cast<int>(layers.size() - layers.count(-1));
    b += fmt::format(
        "<div class=\"legend\"><span class=\"key\"><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"14\" "
        "height=\"14\"><rect width=\"14\" "
        "height=\"14\" fill=\"#0072b2\"/></svg> A</span><span class=\"key\"><svg xmlns=\"http://www.w3.org/2000/svg\" "
        "width=\"14\" "
        "height=\"14\"><rect width=\"14\" height=\"14\" fill=\"#e69f00\"/></svg> B (bar = {} B)</span></div>",
        max);
    b += fmt::format(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"layers\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} "
        "{1}\">",
        kLeft + bw + 220, nrows * rh + 4);
    int y = 0;
    const int every = rh >= 11 ? 1 : rh * 5 >= 11 ? 5 : 10;
    for (const auto& [l, v] : layers) {
        if (l < 0) continue;
        const double wa = bw * share_of(v.first, max), wb = bw * share_of(v.second, max);
        const int64_t dv = static_cast<int64_t>(v.second) - static_cast<int64_t>(v.first);
        const std::string span = g.band > 1 ? fmt::format("-{}", l + g.band - 1) : "";
        b += fmt::format(
            "<g class=\"layer-diff\" data-layer=\"{}\" data-a=\"{}\" data-b=\"{}\"><title>blk.{}{}: A {} B/token, B {} "
            "B/token ({:+})</title>",
            l, v.first, v.second, l, span, v.first, v.second, dv);
        if ((l / g.band) % every == 0)
            b += fmt::format("<text x=\"{}\" y=\"{}\" class=\"row\">blk.{}{}</text>", kLeft - 4, y + rh / 2 + 4, l,
                             span);
        b += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"#0072b2\"/>", kLeft, y + 1, wa,
                         std::max(1, rh / 2 - 1));
        b += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"#e69f00\"/>", kLeft, y + rh / 2,
                         wb, std::max(1, rh / 2 - 1));
        if (rh >= 12 && dv != 0)
            b += fmt::format("<text x=\"{:.1f}\" y=\"{}\" class=\"axis\">{:+.1f}%</text>", kLeft + std::max(wa, wb) + 6,
                             y + rh / 2 + 4,
                             v.first ? 100.0 * static_cast<double>(dv) / static_cast<double>(v.first) : 100.0);
        b += "</g>";
        y += rh;
    }
    b += "</svg></section>";
    b += sections(d, {"totals", "diff-header", "diff-metadata", "diff-tensors", "data"});
    return page("gguf-inspect diff", b);
}

}  // namespace oiw::inspect
