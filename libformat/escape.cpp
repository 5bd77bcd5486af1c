#include "libformat/escape.h"

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

}  // namespace oiw
