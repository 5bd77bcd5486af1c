#include "libformat/escape.h"

#include <algorithm>

#include <fmt/format.h>

namespace oiw {

std::string escape_text(std::string_view s, char quote, bool backslash) {
    std::string o;
    o.reserve(s.size());
    for (const char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        if ((backslash && ch == '\\') || (quote && ch == quote)) {
            o += '\\';
            o += ch;
        } else if (ch == '\n') {
            o += "\\n";
        } else if (c < 0x20 || c == 0x7f) {
            o += fmt::format("\\x{:02x}", c);
        } else {
            o += ch;
        }
    }
    return o;
}

std::optional<std::string> unescape_text(std::string_view s) {
    std::string o;
    o.reserve(s.size());
    const auto hex = [](char h) { return h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : -1; };
    for (size_t i = 0; i < s.size(); ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c < 0x20 || c == 0x7f) return std::nullopt;
        if (c != '\\') {
            o += s[i];
            continue;
        }
        if (++i == s.size()) return std::nullopt;
        if (s[i] == '\\') {
            o += '\\';
        } else if (s[i] == 'n') {
            o += '\n';
        } else if (s[i] == 'x' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
            o += static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2]));
            i += 2;
        } else {
            return std::nullopt;
        }
    }
    return o;
}

size_t utf8_sequence(std::string_view s, size_t i, char32_t& cp) {
    const auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
    const unsigned char c = b(0);
    size_t n;
    if (c < 0x80) return cp = c, 1;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF)
        n = 3, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4)
        n = 4, cp = c & 0x07;
    else
        return 0;
    if (i + n > s.size()) return 0;
    for (size_t k = 1; k < n; ++k) {
        if ((b(k) & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (b(k) & 0x3F);
    }
    static constexpr char32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return n;
}

std::string escape_xml(std::string_view s) {
    std::string o;
    o.reserve(s.size());
    for (size_t i = 0; i < s.size();) {
        char32_t cp = 0;
        const size_t n = utf8_sequence(s, i, cp);
        const bool hidden = n == 0 || (cp < 0x20 && cp != '\t' && cp != '\n') || (cp >= 0x7F && cp <= 0x9F) ||
                            cp == 0xFFFE || cp == 0xFFFF;
        if (hidden) {
            for (size_t k = 0; k < std::max<size_t>(n, 1); ++k)
                o += fmt::format("\\x{:02x}", static_cast<unsigned char>(s[i + k]));
        } else if (cp == '&') {
            o += "&amp;";
        } else if (cp == '<') {
            o += "&lt;";
        } else if (cp == '>') {
            o += "&gt;";
        } else if (cp == '"') {
            o += "&quot;";
        } else if (cp == '\'') {
            o += "&#39;";
        } else {
            o.append(s.substr(i, n));
        }
        i += std::max<size_t>(n, 1);
    }
    return o;
}

}  // namespace oiw
