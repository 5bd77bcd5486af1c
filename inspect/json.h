// A small streaming JSON writer (pretty-printed, RFC 8259 output) for the tools' reports. No
// dependency beyond fmt. (Tests read JSON with nlohmann-json.)
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace oiw::json {

// Appends `s` as a JSON string literal (quotes included). Invalid UTF-8 bytes become U+FFFD.
void append_string(std::string& out, std::string_view s);

// Streaming writer. The call sequence is not checked: callers nest begin_*/end_* and put key()
// before each member value themselves.
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

}  // namespace oiw::json
