#include "libformat/pattern.h"

#include <re2/re2.h>

#include <fmt/format.h>

#include "libformat/error.h"

namespace oiw {
namespace {

// isspace in the C locale (\t \n \v \f \r and space): std::regex's \s for char; RE2's lacks \v.
constexpr std::string_view kSpace = "\\x09-\\x0d ";
// Its complement over bytes, for \S inside a bracket expression.
constexpr std::string_view kNonSpace = "\\x00-\\x08\\x0e-\\x1f\\x21-\\xff";

// The value of hex digit `h`, or -1.
int hex_digit(char h) {
    return h >= '0' && h <= '9'   ? h - '0'
           : h >= 'a' && h <= 'f' ? h - 'a' + 10
           : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                  : -1;
}

// The pattern as an error subject: option and pattern, the pattern cut after 80 bytes.
std::string subject_of(std::string_view pattern, std::string_view option) {
    if (pattern.size() <= 80) return fmt::format("{} '{}'", option, pattern);
    return fmt::format("{} '{}...' ({} bytes)", option, pattern.substr(0, 80), pattern.size());
}

class Translator {
public:
    Translator(std::string_view p, std::string_view option) : p_(p), option_(option) {}

    std::string run() {
        if (p_.size() > Pattern::kMaxBytes)
            fail(fmt::format("pattern of {} bytes; at most {} are accepted", p_.size(), Pattern::kMaxBytes));
        out_.reserve(p_.size() + 16);
        int depth = 0;
        while (i_ < p_.size()) {
            const char c = p_[i_++];
            if (c == '\\') {
                escape(false);
            } else if (c == '[') {
                bracket();
            } else if (c == '.') {
                out_ += "[^\\n\\r]";
            } else if (c == '(') {
                if (++depth > Pattern::kMaxNesting)
                    fail(fmt::format("groups nested deeper than {}", Pattern::kMaxNesting));
                group();
            } else {
                if (c == ')') --depth;
                out_ += c;
            }
        }
        return std::move(out_);
    }

private:
    [[noreturn]] void fail(const std::string& what) const {
        throw FormatError(ErrorKind::Usage, "", subject_of(p_, option_), what);
    }
    bool next_is(char c) const { return i_ < p_.size() && p_[i_] == c; }

    // "(" just read: plain and (?: groups pass; ECMAScript's lookaround cannot be matched in linear
    // time, and the (?flags) forms RE2 knows are not ECMAScript.
    void group() {
        out_ += '(';
        if (!next_is('?')) return;
        const char k = i_ + 1 < p_.size() ? p_[i_ + 1] : '\0';
        if (k == ':') {
            out_ += "?:";
            i_ += 2;
        } else if (k == '=' || k == '!') {
            fail("lookahead (?= / (?! is not supported: patterns are matched in linear time (RE2)");
        } else if (k == '<') {
            fail("lookbehind and named groups are not supported: patterns are matched in linear time (RE2)");
        } else {
            fail("'(?' must start (?: (a non-capturing group)");
        }
    }

    // A hex number of exactly `n` digits at i_, or -1.
    int hex(size_t n) {
        if (i_ + n > p_.size()) return -1;
        int v = 0;
        for (size_t k = 0; k < n; ++k) {
            const int d = hex_digit(p_[i_ + k]);
            if (d < 0) return -1;
            v = v * 16 + d;
        }
        i_ += n;
        return v;
    }

    void byte(int v) { out_ += fmt::format("\\x{:02x}", v); }

    // "\" just read, outside or inside [...]: libstdc++'s ECMAScript escapes. Unknown escaped
    // letters are the letter itself there, so RE2's own (\A, \z, \p, \Q ...) never apply.
    void escape(bool in_bracket) {
        if (i_ == p_.size()) fail("trailing backslash");
        const char e = p_[i_++];
        switch (e) {
            case 'd':
            case 'D':
            case 'w':
            case 'W':
                out_ += '\\';
                out_ += e;
                return;
            case 'f': return byte('\f');
            case 'n': return byte('\n');
            case 'r': return byte('\r');
            case 't': return byte('\t');
            case 'v': return byte('\v');
            case 'b':
            case 'B':
                if (in_bracket && e == 'b') return byte(0x08);  // [\b] is backspace
                out_ += '\\';
                out_ += e;
                return;
            case 's': out_ += in_bracket ? std::string(kSpace) : "[" + std::string(kSpace) + "]"; return;
            case 'S': out_ += in_bracket ? std::string(kNonSpace) : "[^" + std::string(kSpace) + "]"; return;
            case '0': return byte(0);
            case 'c':  // libstdc++ reads \cX as X itself, not as a control byte
                if (i_ == p_.size()) fail("\\c at the end of the pattern");
                return byte(static_cast<unsigned char>(p_[i_++]));
            case 'x':
            case 'u': {
                const int v = hex(e == 'x' ? 2 : 4);
                if (v < 0) fail(fmt::format("\\{} needs {} hex digits", e, e == 'x' ? 2 : 4));
                if (v > 0xff) fail("\\u escapes above \\u00ff cannot match a byte of a tensor name");
                return byte(v);
            }
            case 'k': fail("named backreferences (\\k) are not supported: patterns are matched in linear time (RE2)");
            default: break;
        }
        if (e >= '1' && e <= '9')
            fail(in_bracket
                     ? "a backreference cannot appear in [...]"
                     : "backreferences (\\1 ... \\9) are not supported: patterns are matched in linear time (RE2)");
        const auto u = static_cast<unsigned char>(e);
        if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || u >= 0x80) {
            out_ += e;  // identity escape: the letter (or byte) itself
        } else {
            byte(u);  // punctuation and controls, as bytes (RE2 knows no escape for some)
        }
    }

    // "[" just read: a bracket expression up to its unescaped "]". ECMAScript's [] matches
    // nothing and [^] any byte; [:class:] passes through.
    void bracket() {
        const bool negated = next_is('^');
        if (negated) ++i_;
        if (next_is(']')) {
            ++i_;
            out_ += negated ? "[\\x00-\\xff]" : "[^\\x00-\\xff]";
            return;
        }
        out_ += negated ? "[^" : "[";
        while (i_ < p_.size()) {
            const char c = p_[i_++];
            if (c == ']') {
                out_ += ']';
                return;
            }
            if (c == '\\') {
                escape(true);
            } else if (c == '[' && next_is(':')) {
                const auto end = p_.find(":]", i_ + 1);
                if (end == std::string_view::npos) fail("unterminated [: character class");
                out_ += p_.substr(i_ - 1, end + 2 - (i_ - 1));
                i_ = end + 2;
            } else if (c == '[') {
                out_ += "\\[";
            } else {
                out_ += c;
            }
        }
        fail("missing ] (unterminated bracket expression)");
    }

    std::string_view p_, option_;
    size_t i_ = 0;
    std::string out_;
};

// The name an anchored literal pattern ^...$ matches (Pattern::exact_name), else nullopt.
std::optional<std::string> literal_of(std::string_view p) {
    if (p.size() < 2 || p.front() != '^' || p.back() != '$') return std::nullopt;
    std::string out;
    for (size_t i = 1; i + 1 < p.size(); ++i) {
        const char c = p[i];
        if (c != '\\') {
            if (std::string_view(".^$|()[]{}*+?").find(c) != std::string_view::npos) return std::nullopt;
            out += c;
            continue;
        }
        if (i + 2 >= p.size()) return std::nullopt;  // the backslash would escape the final $
        const char e = p[++i];
        if (e == 'x' && i + 3 < p.size() && hex_digit(p[i + 1]) >= 0 && hex_digit(p[i + 2]) >= 0) {
            out += static_cast<char>(hex_digit(p[i + 1]) * 16 + hex_digit(p[i + 2]));
            i += 2;
        } else if (std::string_view(".^$|()[]{}*+?\\/-=:_#").find(e) != std::string_view::npos) {
            out += e;
        } else {
            return std::nullopt;
        }
    }
    return out;
}

}  // namespace

std::string ecmascript_to_re2(std::string_view ecma, std::string_view option) { return Translator(ecma, option).run(); }

Pattern::Pattern(std::string_view pattern, std::string_view option) : source_(pattern) {
    const std::string translated = ecmascript_to_re2(pattern, option);
    RE2::Options o;
    o.set_encoding(RE2::Options::EncodingLatin1);  // bytes, as std::regex over char
    o.set_log_errors(false);
    o.set_max_mem(64 << 20);  // room for a kMaxBytes pattern's program
    auto re = std::make_shared<const re2::RE2>(translated, o);
    if (!re->ok())
        throw FormatError(ErrorKind::Usage, "", subject_of(pattern, option),
                          "invalid regular expression: " + re->error());
    re_ = std::move(re);
    exact_ = literal_of(pattern);
}

bool Pattern::search(std::string_view name) const { return re2::RE2::PartialMatch(name, *re_); }

}  // namespace oiw
