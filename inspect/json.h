// A small JSON writer (streaming, pretty-printed, RFC 8259 output) and a small reader used by
// tests and tools that consume our own reports. No dependency beyond fmt.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oiw::json {

// Appends `s` as a JSON string literal (quotes included). Valid UTF-8 is kept; each byte 0xNN
// that is not part of a valid sequence becomes the code point U+10FF00+0xNN (written
// "\udbff\udfNN"), as do the bytes of a valid sequence for U+10FF80..U+10FFFF, so that
// different byte strings always give different JSON strings: decode by mapping every
// U+10FF80..U+10FFFF back to its low byte.
void append_string(std::string& out, std::string_view s);

// Streaming writer. Call sequence is checked only loosely (debug asserts); keys go through key().
//   Writer w; w.begin_object(); w.key("a"); w.value(1); w.end_object(); w.str()
class Writer {
public:
    explicit Writer(int indent = 2) : indent_(indent) {}
    void begin_object();
    void end_object();
    // A compact array is written on one line ("[256, 32000]"), nested values included.
    void begin_array(bool compact = false);
    void end_array();
    void key(std::string_view k);
    void value(std::string_view s);
    void value(const char* s) { value(std::string_view(s)); }
    void value(const std::string& s) { value(std::string_view(s)); }
    void value(bool b);
    void value(int64_t v);
    void value(uint64_t v);
    void value(int v) { value(static_cast<int64_t>(v)); }
    void value(unsigned v) { value(static_cast<uint64_t>(v)); }
    void value(double v);  // non-finite values are written as null
    void null();
    // Writes pre-formatted JSON text as one value.
    void raw(std::string_view text);
    const std::string& str() const { return out_; }
    std::string take() { return std::move(out_); }

private:
    std::string out_;
    int indent_;
    struct Level { bool array; bool empty; bool compact; };
    std::vector<Level> stack_;
    bool after_key_ = false;
    void before_value();
    void separator(Level& l);
    void newline();
    void close(char bracket);
};

// Parsed JSON value (numbers kept as double plus the original text).
struct Value {
    enum class Kind { Null, Bool, Number, String, Array, Object } kind = Kind::Null;
    bool boolean = false;
    double number = 0;
    std::string text;  // String: the decoded string; Number: the literal as written
    std::vector<Value> items;
    std::vector<std::pair<std::string, Value>> members;  // in document order

    bool is_null() const { return kind == Kind::Null; }
    bool is_bool() const { return kind == Kind::Bool; }
    bool is_number() const { return kind == Kind::Number; }
    bool is_string() const { return kind == Kind::String; }
    bool is_array() const { return kind == Kind::Array; }
    bool is_object() const { return kind == Kind::Object; }
    // Member lookup; nullptr when absent or not an object.
    const Value* find(std::string_view key) const;
    // Member lookup that throws std::runtime_error naming the key when absent.
    const Value& at(std::string_view key) const;
    const Value& at(size_t i) const { return items.at(i); }
};

// Parses a whole document; throws std::runtime_error with the byte offset on malformed input.
Value parse(std::string_view text);

}  // namespace oiw::json
