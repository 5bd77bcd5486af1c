// Human tables and Markdown for gguf-inspect: the layout of the report document (document.h),
// built by inspect/document.cpp with SI-rounded figures for tables and exact integers for
// Markdown. Tables fit a terminal width (cells cut at the end or in the middle, paragraphs
// wrapped) and may use ANSI colour.
#include <algorithm>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "inspect/document.h"
#include "inspect/render.h"

namespace oiw::inspect {
namespace {

using doc::Block;
using doc::Section;
using doc::Table;

// ---------------------------------------------------------------------------------------------
// Layout helpers

// Largest prefix length <= n that does not split a UTF-8 sequence.
size_t utf8_cut(std::string_view s, size_t n) {
    if (n >= s.size()) return s.size();
    while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
    return n;
}

std::string trunc_end(std::string_view s, size_t w) {
    if (s.size() <= w) return std::string(s);
    if (w <= 3) return std::string(s.substr(0, utf8_cut(s, w)));
    return std::string(s.substr(0, utf8_cut(s, w - 3))) + "...";
}

std::string trunc_middle(std::string_view s, size_t w) {
    if (s.size() <= w) return std::string(s);
    if (w <= 2) return std::string(s.substr(0, w));
    const size_t tail = (w - 1) / 2, head = w - 1 - tail;
    return std::string(s.substr(0, head)) + "~" + std::string(s.substr(s.size() - tail));
}

// Word-wraps `para` to `width`; continuation lines get the paragraph's leading indent + 4.
void wrap(std::string& out, std::string_view para, size_t width) {
    size_t indent = 0;
    while (indent < para.size() && para[indent] == ' ') ++indent;
    const std::string cont(indent + 4, ' ');
    std::string line(para.substr(0, indent));
    size_t pos = indent;
    bool first_word = true;
    while (pos < para.size()) {
        size_t end = para.find(' ', pos);
        if (end == std::string_view::npos) end = para.size();
        std::string_view word = para.substr(pos, end - pos);
        pos = end + 1;
        if (word.empty()) continue;
        if (!first_word && line.size() + 1 + word.size() > width) {
            out += line + "\n";
            line = cont;
            first_word = true;
        }
        if (!first_word) line += ' ';
        // A single word longer than the line is cut.
        line += word.size() > width - std::min(width, line.size())
                    ? trunc_end(word, width - std::min(width - 1, line.size()))
                    : std::string(word);
        first_word = false;
    }
    out += line + "\n";
}

struct Style {
    bool color;
    std::string bold(std::string_view s) const { return color ? fmt::format("\x1b[1m{}\x1b[0m", s) : std::string(s); }
    std::string title(std::string_view s) const {
        return color ? fmt::format("\x1b[1;36m{}\x1b[0m", s) : std::string(s);
    }
    std::string warn(std::string_view s) const { return color ? fmt::format("\x1b[33m{}\x1b[0m", s) : std::string(s); }
};

void emit_table(std::string& out, const Table& t, size_t width, const Style& st) {
    const size_t n = t.head.size();
    std::vector<size_t> w(n, 0);
    for (size_t c = 0; c < n; ++c) w[c] = t.head[c].size();
    for (const auto& r : t.rows)
        for (size_t c = 0; c < n; ++c) w[c] = std::max(w[c], r[c].size());
    size_t total = 2 * (n - 1);
    for (size_t c = 0; c < n; ++c) total += w[c];
    for (const auto& [c, minw] : t.shrink) {
        if (total <= width) break;
        const size_t can = w[c] > minw ? w[c] - minw : 0;
        const size_t cut = std::min(can, total - width);
        w[c] -= cut;
        total -= cut;
    }
    auto cell = [&](const std::string& s, size_t c) {
        const bool mid = std::find(t.middle.begin(), t.middle.end(), c) != t.middle.end();
        std::string v = s.size() <= w[c] ? s : mid ? trunc_middle(s, w[c]) : trunc_end(s, w[c]);
        const std::string pad(w[c] - std::min(w[c], v.size()), ' ');
        return t.align[c] == 'r' ? pad + v : v + pad;
    };
    auto line = [&](const std::vector<std::string>& r, bool head) {
        std::string l;
        for (size_t c = 0; c < n; ++c) {
            if (c) l += "  ";
            l += cell(r[c], c);
        }
        while (!l.empty() && l.back() == ' ') l.pop_back();
        out += (head ? st.bold(l) : l) + "\n";
    };
    line(t.head, true);
    for (const auto& r : t.rows) line(r, false);
}

std::string emit_text(const std::vector<Section>& doc, const RenderOptions& o) {
    const Style st{o.color};
    std::string out;
    bool first = true;
    for (const auto& s : doc) {
        if (!first) out += "\n";
        first = false;
        out += st.title("== " + s.title + " ==") + "\n";
        for (const auto& b : s.blocks) {
            switch (b.kind) {
                case Block::Kind::Fields: {
                    size_t lw = 0;
                    for (const auto& [k, v] : b.fields) lw = std::max(lw, k.size());
                    for (const auto& [k, v] : b.fields) {
                        const size_t avail = o.width > lw + 2 ? o.width - lw - 2 : 10;
                        out += fmt::format("{:<{}}  {}\n", k, lw, o.full ? v : trunc_end(v, avail));
                    }
                    break;
                }
                case Block::Kind::Table:
                    emit_table(out, b.table, o.full ? std::numeric_limits<size_t>::max() / 2 : o.width, st);
                    break;
                case Block::Kind::Text:
                    for (const auto& p : b.text) {
                        if (p.rfind('[', 0) == 0) {
                            // Flag headline: colour the whole wrapped paragraph.
                            std::string tmp;
                            wrap(tmp, p, o.width);
                            out += st.warn(tmp.substr(0, tmp.size() - 1)) + "\n";
                        } else {
                            wrap(out, p, o.width);
                        }
                    }
                    break;
            }
        }
    }
    return out;
}

std::string md_escape(std::string_view s) {
    std::string o;
    for (char c : s) {
        if (c == '|')
            o += "\\|";
        else
            o += c;
    }
    return o;
}

std::string emit_markdown(const std::vector<Section>& doc) {
    std::string out;
    for (const auto& s : doc) {
        out += "## " + s.title + "\n\n";
        for (const auto& b : s.blocks) {
            switch (b.kind) {
                case Block::Kind::Fields:
                    for (const auto& [k, v] : b.fields) out += "- **" + k + "**: " + md_escape(v) + "\n";
                    out += "\n";
                    break;
                case Block::Kind::Table: {
                    const Table& t = b.table;
                    out += "|";
                    for (const auto& h : t.head) out += " " + md_escape(h) + " |";
                    out += "\n|";
                    for (char a : t.align) out += a == 'r' ? "---:|" : "---|";
                    out += "\n";
                    for (const auto& r : t.rows) {
                        out += "|";
                        for (const auto& c : r) out += " " + md_escape(c) + " |";
                        out += "\n";
                    }
                    out += "\n";
                    break;
                }
                case Block::Kind::Text:
                    for (const auto& p : b.text) {
                        size_t indent = 0;
                        while (indent < p.size() && p[indent] == ' ') ++indent;
                        out += (indent ? "  - " : "- ") + md_escape(p.substr(indent)) + "\n";
                    }
                    out += "\n";
                    break;
            }
        }
    }
    return out;
}

}  // namespace

std::string render_table(const Report& r, const RenderOptions& o) {
    return emit_text(doc::build_report(r, o, false), o);
}

std::string render_markdown(const Report& r, const RenderOptions& o) {
    return emit_markdown(doc::build_report(r, o, true));
}

std::string render_diff_table(const DiffReport& r, const RenderOptions& o) {
    return emit_text(doc::build_diff(r, o), o);
}

}  // namespace oiw::inspect
