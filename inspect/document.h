// The report document shared by the renderers: sections of fields, tables and text, built once
// from a Report (or DiffReport) by document.cpp and laid out as tables, Markdown (render_text.cpp)
// or HTML (render_html.cpp). Figures are formatted by the builders, so every output shows the
// same numbers.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "inspect/render.h"

namespace oiw::inspect::doc {

struct Table {
    std::vector<std::string> head;
    std::string align;  // one 'l' or 'r' per column
    std::vector<std::vector<std::string>> rows;
    // Columns that may be truncated to fit the width, in order, with their minimum widths (a
    // column may appear again with a smaller minimum).
    std::vector<std::pair<size_t, size_t>> shrink;
    std::vector<size_t> middle;  // columns cut in the middle (names); others are cut at the end
};

struct Block {
    enum class Kind { Fields, Table, Text } kind = Kind::Text;
    std::vector<std::pair<std::string, std::string>> fields;
    Table table;
    std::vector<std::string> text;  // paragraphs; leading spaces are kept as a hanging indent
};

struct Section {
    std::string title;
    std::vector<Block> blocks;
    // Stable identifier ("header", "metadata", "tensors", "digests", "by-type", "by-group",
    // "by-layer", "traffic", "audit"; diff: "files", "diff-header", "diff-metadata",
    // "diff-tensors", "totals", "data").
    std::string id;
};

// The report's sections in order. Strings from the file are passed through escape_text (no
// control bytes); `exact` gives exact integers (Markdown, HTML), otherwise SI-rounded figures.
std::vector<Section> build_report(const Report& r, const RenderOptions& o, bool exact);
// The diff's sections in order (strings escaped as above).
std::vector<Section> build_diff(const DiffReport& r, const RenderOptions& o);

}  // namespace oiw::inspect::doc
