#include "inspect/json.h"

#include <cmath>
#include <cstdlib>
#include <stdexcept>

#include <fmt/format.h>

namespace oiw::json {

// ---------------------------------------------------------------------------------------------
// Writing

namespace {

// Code points U+10FF80..U+10FFFF stand for single bytes 0x80..0xFF (see append_string).
constexpr uint32_t kByteEscapeBase = 0x10FF00;

// Length of the valid UTF-8 sequence starting at s[i], or 0 if invalid. Sequences encoding a
// byte-escape code point count as invalid, so that their bytes are escaped one by one.
size_t utf8_len(std::string_view s, size_t i) {
    const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char c = b(i);
    size_t n;
    uint32_t cp;
    if (c < 0x80) return 1;
    if ((c & 0xE0) == 0xC0) { n = 2; cp = c & 0x1F; }
    else if ((c & 0xF0) == 0xE0) { n = 3; cp = c & 0x0F; }
    else if ((c & 0xF8) == 0xF0) { n = 4; cp = c & 0x07; }
    else return 0;
    if (i + n > s.size()) return 0;
    for (size_t k = 1; k < n; ++k) {
        if ((b(i + k) & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (b(i + k) & 0x3F);
    }
    // Overlong forms, surrogates and out-of-range code points are invalid.
    if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF) || cp >= kByteEscapeBase + 0x80)
        return 0;
    return n;
}

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
                    if (c < 0x20 || c == 0x7f) out += fmt::format("\\u{:04x}", c);
                    else out += static_cast<char>(c);
            }
            ++i;
            continue;
        }
        const size_t n = utf8_len(s, i);
        if (n == 0) {  // byte 0xNN -> U+10FFNN, written as the surrogate pair \udbff\udfNN
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
    if (!std::isfinite(v)) out_ += "null";
    else out_ += fmt::format("{}", v);
}

void Writer::null() {
    before_value();
    out_ += "null";
}

void Writer::raw(std::string_view text) {
    before_value();
    out_.append(text);
}

// ---------------------------------------------------------------------------------------------
// Reading

const Value* Value::find(std::string_view key) const {
    if (kind != Kind::Object) return nullptr;
    for (const auto& [k, v] : members)
        if (k == key) return &v;
    return nullptr;
}

const Value& Value::at(std::string_view key) const {
    const Value* v = find(key);
    if (!v) throw std::runtime_error("JSON: missing key '" + std::string(key) + "'");
    return *v;
}

namespace {

class Parser {
public:
    explicit Parser(std::string_view t) : t_(t) {}

    Value document() {
        Value v = value(0);
        ws();
        if (p_ != t_.size()) fail("trailing characters");
        return v;
    }

private:
    std::string_view t_;
    size_t p_ = 0;

    [[noreturn]] void fail(const char* what) const {
        throw std::runtime_error(fmt::format("JSON: {} at offset {}", what, p_));
    }
    void ws() {
        while (p_ < t_.size() && (t_[p_] == ' ' || t_[p_] == '\n' || t_[p_] == '\r' || t_[p_] == '\t')) ++p_;
    }
    char peek() {
        ws();
        if (p_ >= t_.size()) fail("unexpected end");
        return t_[p_];
    }
    void expect(char c) {
        if (peek() != c) fail("unexpected character");
        ++p_;
    }
    bool literal(std::string_view w) {
        if (t_.substr(p_, w.size()) != w) return false;
        p_ += w.size();
        return true;
    }

    Value value(int depth) {
        if (depth > 256) fail("nesting too deep");
        Value v;
        const char c = peek();
        if (c == '{') {
            v.kind = Value::Kind::Object;
            ++p_;
            if (peek() == '}') { ++p_; return v; }
            for (;;) {
                if (peek() != '"') fail("expected a key");
                std::string k = string();
                expect(':');
                v.members.emplace_back(std::move(k), value(depth + 1));
                if (peek() == ',') { ++p_; continue; }
                expect('}');
                return v;
            }
        }
        if (c == '[') {
            v.kind = Value::Kind::Array;
            ++p_;
            if (peek() == ']') { ++p_; return v; }
            for (;;) {
                v.items.push_back(value(depth + 1));
                if (peek() == ',') { ++p_; continue; }
                expect(']');
                return v;
            }
        }
        if (c == '"') {
            v.kind = Value::Kind::String;
            v.text = string();
            return v;
        }
        if (literal("true")) { v.kind = Value::Kind::Bool; v.boolean = true; return v; }
        if (literal("false")) { v.kind = Value::Kind::Bool; return v; }
        if (literal("null")) return v;
        return number();
    }

    Value number() {
        const size_t start = p_;
        if (p_ < t_.size() && t_[p_] == '-') ++p_;
        auto digits = [&] {
            const size_t s = p_;
            while (p_ < t_.size() && t_[p_] >= '0' && t_[p_] <= '9') ++p_;
            if (p_ == s) fail("malformed number");
        };
        digits();
        if (p_ < t_.size() && t_[p_] == '.') { ++p_; digits(); }
        if (p_ < t_.size() && (t_[p_] == 'e' || t_[p_] == 'E')) {
            ++p_;
            if (p_ < t_.size() && (t_[p_] == '+' || t_[p_] == '-')) ++p_;
            digits();
        }
        Value v;
        v.kind = Value::Kind::Number;
        v.text = std::string(t_.substr(start, p_ - start));
        v.number = std::strtod(v.text.c_str(), nullptr);
        return v;
    }

    static void put_utf8(std::string& o, uint32_t cp) {
        if (cp < 0x80) o += static_cast<char>(cp);
        else if (cp < 0x800) { o += static_cast<char>(0xC0 | (cp >> 6)); o += static_cast<char>(0x80 | (cp & 0x3F)); }
        else if (cp < 0x10000) {
            o += static_cast<char>(0xE0 | (cp >> 12));
            o += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            o += static_cast<char>(0x80 | (cp & 0x3F));
        } else {
            o += static_cast<char>(0xF0 | (cp >> 18));
            o += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
            o += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            o += static_cast<char>(0x80 | (cp & 0x3F));
        }
    }

    uint32_t hex4() {
        if (p_ + 4 > t_.size()) fail("truncated \\u escape");
        uint32_t v = 0;
        for (int i = 0; i < 4; ++i) {
            const char h = t_[p_++];
            v <<= 4;
            if (h >= '0' && h <= '9') v |= h - '0';
            else if (h >= 'a' && h <= 'f') v |= h - 'a' + 10;
            else if (h >= 'A' && h <= 'F') v |= h - 'A' + 10;
            else fail("bad \\u escape");
        }
        return v;
    }

    std::string string() {
        expect('"');
        std::string o;
        for (;;) {
            if (p_ >= t_.size()) fail("unterminated string");
            const char c = t_[p_++];
            if (c == '"') return o;
            if (static_cast<unsigned char>(c) < 0x20) fail("control character in string");
            if (c != '\\') { o += c; continue; }
            if (p_ >= t_.size()) fail("unterminated escape");
            const char e = t_[p_++];
            switch (e) {
                case '"': o += '"'; break;
                case '\\': o += '\\'; break;
                case '/': o += '/'; break;
                case 'b': o += '\b'; break;
                case 'f': o += '\f'; break;
                case 'n': o += '\n'; break;
                case 'r': o += '\r'; break;
                case 't': o += '\t'; break;
                case 'u': {
                    uint32_t cp = hex4();
                    if (cp >= 0xD800 && cp < 0xDC00 && t_.substr(p_, 2) == "\\u") {
                        p_ += 2;
                        const uint32_t lo = hex4();
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    }
                    put_utf8(o, cp);
                    break;
                }
                default: fail("bad escape");
            }
        }
    }
};

}  // namespace

Value parse(std::string_view text) { return Parser(text).document(); }

}  // namespace oiw::json
