// A small streaming JSON writer (pretty-printed or compact, RFC 8259 output) for the tools'
// reports. No dependency beyond fmt and libformat's UTF-8 check. (Tests read JSON with nlohmann-json.)
#pragma once
#include <cstdint>
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

// A number written with exactly `decimals` digits after the point, as fmt's {:.Nf} would.
struct Fixed {
    double v;
    int decimals;
};

// Streaming writer. The call sequence is not checked: callers nest begin_*/end_* and put key()
// before each member value themselves.
//   Writer w; w.begin_object(); w.key("a"); w.value(1); w.end_object(); w.str()
class Writer {
public:
    explicit Writer(int indent = 2) : indent_(indent) {}  // indent 0: one line, no spaces
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
    void value(Fixed f);   // likewise
    void null();
    // "k": v -- key(k) then value(v).
    template <typename T>
    void field(std::string_view k, const T& v) {
        key(k);
        value(v);
    }
    // Writes pre-formatted JSON text as one value.
    void raw(std::string_view text);
    const std::string& str() const { return out_; }
    std::string take() { return std::move(out_); }

private:
    std::string out_;
    int indent_;
    struct Level {
        bool array;
        bool empty;
        bool compact;
    };
    std::vector<Level> stack_;
    bool after_key_ = false;
    void before_value();
    void separator(Level& l);
    void newline();
    void close(char bracket);
};

}  // namespace oiw::json
