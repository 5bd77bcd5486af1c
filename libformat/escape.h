// Escaping of untrusted text (key and tensor names, string values, paths) before it reaches a
// terminal, a report or an error message.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace oiw {

// `s` with every control byte made visible: line feed as \n, the other C0 controls (NUL, CR,
// ESC, ...) and DEL as \xNN; backslash as \\ (unless `backslash` is false) and `quote` (if not
// NUL) as \" too. Other bytes (UTF-8 included) are kept. The result never contains a control
// byte, so one name cannot move the cursor, recolour the terminal or split a line; with
// `backslash` it is also reversible (names, quoted values). Error messages pass false: they
// quote user text such as regular expressions, whose backslashes must read as typed.
std::string escape_text(std::string_view s, char quote = '\0', bool backslash = true);

// The inverse of escape_text(s) (no quote, backslashes escaped): \n, \xNN and \\ decoded. Empty
// optional for text escape_text cannot have written (a lone or unknown escape, a control byte).
std::optional<std::string> unescape_text(std::string_view s);

// `s` as XML character data or attribute value (HTML/SVG reports): & < > " ' become entities;
// valid UTF-8 is kept, except what XML 1.0 forbids or hides (C0 controls but tab and line feed,
// CR, DEL, C1 controls, U+FFFE, U+FFFF), whose bytes are written as \xNN, as is every byte
// that is not part of a valid UTF-8 sequence. Any byte string gives well-formed markup; pass
// text through escape_text first to keep it reversible.
std::string escape_xml(std::string_view s);

// Length (1..4) of the valid UTF-8 sequence at s[i], its code point in `cp`; 0 when invalid
// (truncated, overlong, surrogate, above U+10FFFF). The one UTF-8 check (XML and JSON escaping).
size_t utf8_sequence(std::string_view s, size_t i, char32_t& cp);

}  // namespace oiw
