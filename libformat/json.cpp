#include "libformat/json.h"

#include <cmath>

#include <fmt/format.h>

#include "libformat/escape.h"

namespace oiw::json {

namespace {

// Code points U+10FF80..U+10FFFF stand for single bytes 0x80..0xFF (see append_string).
constexpr uint32_t kByteEscapeBase = 0x10FF00;

}  // namespace

void append_string(std::string& out, std::string_view s) {
    out += '"';
    for (size_t i = 0; i < s.size();) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        if (c < 0x80) {
            switch (c) {
                case '"': out += "\\\""; break;
                case '\\': out += "\\\\"; break;
                case '\n': out += "\\n"; break;
                case '\r': out += "\\r"; break;
                case '\t': out += "\\t"; break;
                case '\b': out += "\\b"; break;
                case '\f': out += "\\f"; break;
                default:
                    if (c < 0x20 || c == 0x7f)
                        out += fmt::format("\\u{:04x}", c);
                    else
                        out += static_cast<char>(c);
            }
            ++i;
            continue;
        }
        char32_t cp = 0;
        const size_t n = utf8_sequence(s, i, cp);
        // An invalid sequence's lead byte, or a sequence encoding a byte-escape code point, is
        // escaped alone: byte 0xNN -> U+10FFNN, written as the surrogate pair \udbff\udfNN.
        if (n == 0 || cp >= kByteEscapeBase + 0x80) {
            out += fmt::format("\\udbff\\udf{:02x}", c);
            ++i;
        } else {
            out.append(s.substr(i, n));
            i += n;
        }
    }
    out += '"';
}

void Writer::newline() {
    if (indent_ <= 0) return;
    out_ += '\n';
    out_.append(stack_.size() * static_cast<size_t>(indent_), ' ');
}

// Comma and line break (or space, inside compact arrays) before the next element of `l`.
void Writer::separator(Level& l) {
    const bool first = l.empty;
    l.empty = false;
    if (!first) out_ += ',';
    if (l.compact) {
        if (!first && indent_ > 0) out_ += ' ';
    } else {
        newline();
    }
}

void Writer::before_value() {
    if (after_key_) {
        after_key_ = false;
        return;
    }
    if (!stack_.empty()) separator(stack_.back());
}

void Writer::begin_object() {
    before_value();
    out_ += '{';
    const bool compact = !stack_.empty() && stack_.back().compact;
    stack_.push_back({false, true, compact});
}

void Writer::begin_array(bool compact) {
    before_value();
    out_ += '[';
    compact = compact || (!stack_.empty() && stack_.back().compact);
    stack_.push_back({true, true, compact});
}

void Writer::close(char bracket) {
    const Level l = stack_.back();
    stack_.pop_back();
    if (!l.empty && !l.compact) newline();
    out_ += bracket;
}

void Writer::end_object() { close('}'); }

void Writer::end_array() { close(']'); }

void Writer::key(std::string_view k) {
    separator(stack_.back());
    append_string(out_, k);
    out_ += indent_ > 0 ? ": " : ":";
    after_key_ = true;
}

void Writer::value(std::string_view s) {
    before_value();
    append_string(out_, s);
}

void Writer::value(bool b) {
    before_value();
    out_ += b ? "true" : "false";
}

void Writer::value(int64_t v) {
    before_value();
    out_ += fmt::format("{}", v);
}

void Writer::value(uint64_t v) {
    before_value();
    out_ += fmt::format("{}", v);
}

void Writer::value(double v) {
    before_value();
    if (!std::isfinite(v))
        out_ += "null";
    else
        out_ += fmt::format("{}", v);
}

void Writer::value(Fixed f) {
    before_value();
    if (!std::isfinite(f.v))
        out_ += "null";
    else
        out_ += fmt::format("{:.{}f}", f.v, f.decimals);
}

void Writer::null() {
    before_value();
    out_ += "null";
}

void Writer::raw(std::string_view text) {
    before_value();
    out_.append(text);
}

}  // namespace oiw::json
