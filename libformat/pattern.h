// Tensor-name patterns from users and files (--tensor-type, --keep, plan files, gguf-plan's --pin,
// --tie and gains, oiw4-convert's --encode/--requant, oiw4-check's --tensor): llama-quantize's
// syntax and semantics (ECMAScript, searched anywhere in the name, as std::regex_search), matched
// by RE2 in time linear in the name and without recursion, whatever the pattern.
#pragma once
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace re2 {
class RE2;
}

namespace oiw {

class Pattern {
public:
    static constexpr size_t kMaxBytes = 64 * 1024;  // longer patterns are refused
    static constexpr int kMaxNesting = 1000;        // deeper ( ... ) nesting is refused

    // Compiles `pattern`. Throws FormatError(Usage) whose subject is `option` and the pattern (cut
    // when long) for a syntax error, a backreference or lookaround (RE2 cannot express them), more
    // than kMaxBytes, or nesting deeper than kMaxNesting.
    Pattern(std::string_view pattern, std::string_view option);

    // True when the pattern matches somewhere in `name` (std::regex_search's answer).
    bool search(std::string_view name) const;

    const std::string& source() const { return source_; }

    // The one name the pattern matches when it is an anchored literal, ^name$ with only plain
    // characters, backslash-escaped punctuation and \xNN (what gguf-plan writes for each tensor),
    // else nullopt. Lets a caller find such rules by name instead of searching each.
    const std::optional<std::string>& exact_name() const { return exact_; }

private:
    std::string source_;
    std::optional<std::string> exact_;
    std::shared_ptr<const re2::RE2> re_;  // shared by copies; RE2 matching is thread-safe
};

// The RE2 syntax of ECMAScript pattern `ecma` (what Pattern compiles): `.` becomes [^\n\r] and \s
// becomes [\t\n\v\f\r ] as in std::regex. Throws FormatError(Usage) as Pattern does.
std::string ecmascript_to_re2(std::string_view ecma, std::string_view option);

}  // namespace oiw
