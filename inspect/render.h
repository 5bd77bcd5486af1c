// Renderers for gguf-inspect: human tables (fit a terminal width, optional ANSI colour),
// Markdown (exact integers), JSON (schema in docs/gguf-inspect.md) and a self-contained HTML
// page (type map, bytes/token charts). They build strings; the tool decides where they go.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "inspect/audit.h"
#include "inspect/diff.h"
#include "inspect/digest.h"
#include "inspect/profile.h"
#include "libformat/model.h"
#include "libformat/traffic.h"

namespace oiw::inspect {

inline constexpr std::string_view kReportSchema = "oiw.gguf-inspect.report/1";
inline constexpr std::string_view kDiffSchema = "oiw.gguf-inspect.diff/1";
// Arrays longer than this are abbreviated unless RenderOptions::full.
inline constexpr size_t kArrayPreview = 8;

struct Report {
    const Model& file;
    const traffic::Analysis& analysis;
    const Profile* profile = nullptr;  // audit profile; flags below were computed with it
    const std::vector<Flag>* flags = nullptr;
    std::optional<double> bandwidth;  // bytes per second, for the tokens/s ceiling
    std::optional<HashAlgo> hash;     // with digests
    const std::vector<std::string>* digests = nullptr;
};

struct RenderOptions {
    bool full = false;   // every array element, whole strings
    bool color = false;  // ANSI colour (tables only)
    size_t width = 100;  // table output fits this many columns (unless `full` forces long values)
};

std::string render_table(const Report& r, const RenderOptions& o);
std::string render_markdown(const Report& r, const RenderOptions& o);
std::string render_json(const Report& r, const RenderOptions& o);
// One self-contained XHTML-compatible page: header facts, a type map (layers x tensor classes,
// coloured by bits per weight, slow paths outlined with the reason on hover), bytes/token by
// group and by layer, the tokens/s ceiling, the audit and summary tables; metadata and tensors folded.
std::string render_html(const Report& r, const RenderOptions& o);

struct DiffReport {
    const Model& a;
    const traffic::Analysis& aa;
    const Model& b;
    const traffic::Analysis& ab;
    const Diff& diff;
    std::string b_name = {};  // shown for B instead of its path when set (a plan preview, an OIW4 file)
    std::string a_name = {};  // the same for A (an OIW4 file)

    const std::string& a_path() const { return a_name.empty() ? a.path() : a_name; }
    const std::string& b_path() const { return b_name.empty() ? b.path() : b_name; }
};

std::string render_diff_table(const DiffReport& r, const RenderOptions& o);
std::string render_diff_json(const DiffReport& r, const RenderOptions& o);
// One self-contained page: both type maps side by side with changed, added and removed tensors
// outlined, per-layer bytes/token of A and B, and the diff's tables.
std::string render_diff_html(const DiffReport& r, const RenderOptions& o);

// Quantity with an SI suffix and one decimal: 999 -> "999", 6720000 -> "6.7M", 2.19e9 -> "2.2G".
std::string si(double v);
// Value type as shown in tables: "u32", "str", "arr[str,32000]".
std::string value_type_string(const GgufValue& v);

}  // namespace oiw::inspect
