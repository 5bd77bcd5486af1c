#include "converters/hf/model_name.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <set>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "converters/hf/case_table.h"
#include "libformat/error.h"
#include "libformat/escape.h"

namespace oiw::hf {
namespace {

bool digit(char c) { return c >= '0' && c <= '9'; }
bool alpha(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }
bool word(char c) { return alpha(c) || digit(c) || c == '_'; }
char lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }
char upper(char c) { return static_cast<char>(std::toupper(static_cast<unsigned char>(c))); }

std::string lowered(std::string_view s) {
    std::string o(s);
    for (char& c : o) c = lower(c);
    return o;
}

// Matches \d+ at s[i..], advancing i; false when no digit.
bool digits(std::string_view s, size_t& i) {
    const size_t b = i;
    while (i < s.size() && digit(s[i])) ++i;
    return i > b;
}

// (v|iter)?\d+([.]\d+)*, case-insensitive, whole part.
bool is_version(std::string_view p) {
    const std::string s = lowered(p);
    size_t i = s.starts_with("iter") ? 4 : s.starts_with("v") ? 1 : 0;
    if (!digits(s, i)) return false;
    while (i < s.size()) {
        if (s[i] != '.') return false;
        ++i;
        if (!digits(s, i)) return false;
    }
    return true;
}

// i?q\d(_\w)*|b?fp?(16|32), case-insensitive, whole part.
bool is_quant_type(std::string_view p) {
    const std::string s = lowered(p);
    size_t i = s.starts_with("iq") ? 2 : s.starts_with("q") ? 1 : 0;
    if (i > 0) {
        if (i >= s.size() || !digit(s[i])) return false;
        for (++i; i < s.size(); i += 2)
            if (s[i] != '_' || i + 1 >= s.size() || !word(s[i + 1])) return false;
        return true;
    }
    std::string_view r = s;
    if (r.starts_with('b')) r.remove_prefix(1);
    if (!r.starts_with('f')) return false;
    r.remove_prefix(1);
    if (r.starts_with('p')) r.remove_prefix(1);
    return r == "16" || r == "32";
}

// (([A]|\d+[x])?\d+([._]\d+)?[KMBT][\d]?|small|mini|medium|large|x?xl), case-insensitive.
bool is_size(std::string_view p) {
    const std::string s = lowered(p);
    for (const char* w : {"small", "mini", "medium", "large", "xl", "xxl"})
        if (s == w) return true;
    // The optional prefix is ambiguous with the digits that follow (\d+x\d+ vs \d+): try both.
    auto rest = [&](size_t i) {
        if (!digits(s, i)) return false;
        if (i < s.size() && (s[i] == '.' || s[i] == '_')) {
            ++i;
            if (!digits(s, i)) return false;
        }
        if (i >= s.size() || std::string_view("kmbt").find(s[i]) == std::string_view::npos) return false;
        ++i;
        if (i < s.size() && digit(s[i])) ++i;
        return i == s.size();
    };
    if (rest(0)) return true;
    if (s.starts_with('a') && rest(1)) return true;
    size_t i = 0;
    return digits(s, i) && i < s.size() && s[i] == 'x' && rest(i + 1);
}

bool is_finetune_word(std::string_view p) {
    const std::string s = lowered(p);
    return s == "chat" || s == "instruct" || s == "vision" || s == "lora";
}

// float(part[:-1]) as Python parses it: digits with at most one '.', else nullopt.
std::optional<double> py_float(const std::string& s) {
    if (s.empty()) return std::nullopt;
    size_t i = 0;
    if (!digits(s, i)) return std::nullopt;
    if (i < s.size() && s[i] == '.') {
        ++i;
        if (!digits(s, i)) return std::nullopt;
    }
    if (i != s.size()) return std::nullopt;
    return std::strtod(s.c_str(), nullptr);
}

std::string join(const std::vector<std::string>& parts, const std::vector<std::set<std::string>>& types,
                 const char* type, const char* unless = nullptr) {
    std::string out;
    for (size_t i = 0; i < parts.size(); ++i)
        if (types[i].count(type) && !(unless && types[i].count(unless))) out += (out.empty() ? "" : "-") + parts[i];
    return out;
}

// Refuses a name part the ASCII annotation below would read otherwise than gguf-py's Unicode
// regexes (re.IGNORECASE, \d, \w): a non-ASCII decimal digit, one of the four non-ASCII letters
// that match an ASCII one case-insensitively (İ ı ſ K), or a non-ASCII byte in a quant-type-like
// part ("q4_ü": \w, then str.upper).
void check_unicode_part(const std::string& id, const std::string& part) {
    if (std::all_of(part.begin(), part.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; })) return;
    bool odd = false;
    for (size_t i = 0, n = 0; i < part.size() && !odd; i += n) {
        char32_t cp = 0;
        if ((n = utf8_sequence(part, i, cp)) == 0) {
            n = 1;
            continue;
        }
        const CaseRow* r = cp >= 0x80 ? case_row(cp) : nullptr;
        odd = (r && (r->flags & kCaseDigit)) || cp == 0x130 || cp == 0x131 || cp == 0x17f || cp == 0x212a;
    }
    const std::string low = lowered(part);
    const size_t q = low.starts_with("iq") ? 2 : low.starts_with("q") ? 1 : 0;
    odd = odd || (q > 0 && q < low.size() && digit(low[q]));
    if (odd)
        throw FormatError(ErrorKind::Unsupported, "", "model id '" + id + "'",
                          "the part '" + part +
                              "' has Unicode digits or case-folding letters, which gguf-py's regexes read in ways "
                              "not reproduced here");
}

}  // namespace

ModelIdParts model_id_parts(const std::string& model_id, int64_t total_params) {
    ModelIdParts r;
    if (model_id.find(' ') != std::string::npos) {
        r.full_name = model_id;
        return r;
    }
    std::string name = model_id;
    if (const size_t slash = model_id.find('/'); slash != std::string::npos) {
        const std::string org = model_id.substr(0, slash);
        name = model_id.substr(slash + 1);
        if (org.empty() || org[0] != '.') r.organization = org;  // "./x", "../x": a path, not an org
    }
    r.full_name = name;
    std::vector<std::string> parts;
    for (size_t b = 0;;) {
        const size_t e = name.find('-', b);
        const std::string p = name.substr(b, e == std::string::npos ? std::string::npos : e - b);
        if (!p.empty()) parts.push_back(p);
        if (!p.empty()) check_unicode_part(model_id, p);
        if (e == std::string::npos) break;
        b = e + 1;
    }
    std::vector<std::set<std::string>> types(parts.size());
    for (size_t i = 0; i < parts.size(); ++i) {
        std::string& part = parts[i];
        if (is_version(part)) {
            types[i].insert("version");
        } else if (is_quant_type(part)) {
            types[i].insert("type");
            for (char& c : part) c = upper(c);
        } else if (i > 0 && is_size(part)) {
            for (char& c : part)
                if (c == '_') c = '.';
            if (digit(part.back())) part = part.substr(0, part.size() - 2) + "." + part.back() + part[part.size() - 2];
            if (part.size() > 1 && digit(part[part.size() - 2]) &&
                std::string_view("kmbt").find(part.back()) != std::string_view::npos)
                part.back() = upper(part.back());
            if (total_params != 0) {
                if (const auto v = py_float(part.substr(0, part.size() - 1))) {
                    const size_t scale = std::string_view(" KMBT").find(part.back());
                    const double label =
                        *v * (scale == std::string_view::npos ? 0.001 : std::pow(1000.0, static_cast<double>(scale)));
                    // Python's floor divisions of the (positive) counts.
                    const bool lora = total_params < 0;
                    const int64_t lora_floor = -total_params / 8, near = 7 * total_params / 8;
                    if ((lora && label < static_cast<double>(lora_floor)) ||
                        (!lora && std::abs(label - static_cast<double>(total_params)) > static_cast<double>(near))) {
                        types[i].insert("finetune");
                        part.back() = lower(part.back());
                    }
                }
            }
            if (types[i].empty()) types[i].insert("size_label");
        } else if (i > 0 && is_finetune_word(part)) {
            types[i].insert(total_params < 0 && lowered(part) == "lora" ? "type" : "finetune");
        }
    }
    // Word-only size labels give way when a numeric one is present.
    bool numeric_size = false;
    for (size_t i = 0; i < parts.size(); ++i)
        if (types[i].count("size_label"))
            for (char c : parts[i]) numeric_size |= digit(c);
    if (numeric_size)
        for (size_t i = 0; i < parts.size(); ++i)
            if (types[i].count("size_label") && std::all_of(parts[i].begin(), parts[i].end(), alpha))
                types[i].erase("size_label");
    bool at_start = true;
    for (size_t i = 0; i < parts.size(); ++i) {
        if (at_start && ((types[i].empty() && alpha(parts[i][0])) || types[i].count("version"))) {
            types[i].insert("basename");
        } else {
            at_start = false;
            if (types[i].empty()) types[i].insert("finetune");
        }
    }
    for (size_t i = parts.size(); i-- > 0;) {
        if (types[i].count("basename") && types[i].size() > 1)
            types[i].erase("basename");
        else
            break;
    }
    std::string basename = join(parts, types, "basename"), finetune = join(parts, types, "finetune"),
                version = join(parts, types, "version", "basename"), size;
    std::set<std::string> seen;
    for (size_t i = 0; i < parts.size(); ++i)
        if (types[i].count("size_label") && seen.insert(parts[i]).second) size += (size.empty() ? "" : "-") + parts[i];
    if (!size.empty()) r.size_label = size;
    if (!finetune.empty()) r.finetune = finetune;
    if (!version.empty()) r.version = version;
    if (!basename.empty() && (r.size_label || r.finetune || r.version)) r.basename = basename;
    return r;
}

std::string id_to_title(const std::string& id) {
    // The id as code points (an invalid byte stands for itself, uncased).
    std::vector<std::pair<char32_t, std::string_view>> cps;
    for (size_t i = 0, n = 0; i < id.size(); i += n) {
        char32_t cp = 0;
        n = utf8_sequence(id, i, cp);
        if (n == 0) cp = static_cast<unsigned char>(id[i]), n = 1;
        cps.emplace_back(cp, std::string_view(id).substr(i, n));
    }
    auto flags = [](char32_t cp) {
        const CaseRow* r = case_row(cp);
        return r ? r->flags : 0;
    };
    // str.isspace, for split(); '-' was made a space before it.
    auto space = [](char32_t c) {
        return c == '-' || (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 ||
               c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f ||
               c == 0x205f || c == 0x3000;
    };
    std::string out;
    for (size_t b = 0; b < cps.size();) {
        if (space(cps[b].first)) {
            ++b;
            continue;
        }
        size_t e = b;
        while (e < cps.size() && !space(cps[e].first)) ++e;
        // w.islower(): no upper- or title-case code point and a lowercase one.
        bool any_lower = false, any_upper = false;
        for (size_t k = b; k < e; ++k) {
            const uint8_t f = flags(cps[k].first);
            any_lower |= (f & kCaseLower) != 0;
            any_upper |= (f & (kCaseUpper | kCaseTitle)) != 0;
        }
        // re.match(r'^(v\d+(?:\.\d+)*|\d.*)$', w): a version ("v2", "v1.5") or a word starting with a digit.
        auto digit_at = [&](size_t k) { return k < e && (flags(cps[k].first) & kCaseDigit) != 0; };
        bool versionish = digit_at(b);
        if (!versionish && cps[b].first == 'v' && digit_at(b + 1)) {
            size_t k = b + 1;
            versionish = true;
            while (k < e && versionish) {
                if (digit_at(k)) {
                    ++k;
                } else if (cps[k].first == '.' && digit_at(k + 1)) {
                    k += 2;
                } else {
                    versionish = false;
                }
            }
        }
        if (!out.empty()) out += ' ';
        const bool title = any_lower && !any_upper && !versionish;
        bool prev_cased = false;  // str.title(): a cased run's first code point title-cased, the rest lowered
        for (size_t k = b; k < e; ++k) {
            const CaseRow* r = title ? case_row(cps[k].first) : nullptr;
            const char* mapped = r ? (prev_cased ? r->lower : r->title) : nullptr;
            out += mapped ? std::string_view(mapped) : cps[k].second;
            prev_cased = r && (r->flags & kCaseCased) != 0;
        }
        b = e;
    }
    return out;
}

std::string size_label(int64_t total_params, int64_t shared_params, int64_t expert_params, int64_t expert_count) {
    auto rounded = [](int64_t n) {
        const double x = static_cast<double>(n);
        double scaled;
        char suffix;
        if (x > 1e12)
            scaled = x * 1e-12, suffix = 'T';
        else if (x > 1e9)
            scaled = x * 1e-9, suffix = 'B';
        else if (x > 1e6)
            scaled = x * 1e-6, suffix = 'M';
        else
            scaled = x * 1e-3, suffix = 'K';
        std::string r =
            fmt::format("{}", static_cast<int64_t>(std::nearbyint(scaled)));  // Python round(): half to even
        const size_t lead = r.find_first_not_of('0');
        const int len = lead == std::string::npos ? 0 : static_cast<int>(r.size() - lead);
        return fmt::format("{:.{}f}{}", scaled, std::max(2 - len, 0), suffix);
    };
    if (expert_count > 0)
        return fmt::format("{}x{}", expert_count, rounded(std::abs(shared_params) + std::abs(expert_params)));
    return rounded(std::abs(total_params));
}

}  // namespace oiw::hf
