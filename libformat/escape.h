// Escaping of untrusted text (key and tensor names, string values, paths) before it reaches a
// terminal, a report or an error message.
#pragma once
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

}  // namespace oiw
