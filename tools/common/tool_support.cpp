#include "tools/common/tool_support.h"

#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>

#include <fmt/format.h>

#include "libformat/error.h"
#include "libformat/escape.h"
#include "libformat/io/text_file.h"

namespace oiw {

int run_tool(std::string_view tool, const std::function<int()>& body) {
    int rc = kExitError;
    bool reported = false;
    try {
        rc = body();
    } catch (const FormatError& e) {
        fmt::print(stderr, "{}: error: {}\n", tool, e.what());
        reported = true;
    } catch (const std::exception& e) {  // FormatError messages are escaped already; others may carry raw names
        fmt::print(stderr, "{}: error: {}\n", tool, escape_text(e.what(), '\0', false));
        reported = true;
    }
    if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
        const int e = errno;
        if (!reported)
            fmt::print(stderr, "{}: error: cannot write to standard output: {}\n", tool,
                       e ? std::strerror(e) : "write error");
        return kExitError;
    }
    return rc;
}

void write_stdout(std::string_view text) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
        const int e = errno;
        throw FormatError(ErrorKind::Io, "", "",
                          std::string("cannot write to standard output: ") + (e ? std::strerror(e) : "write error"));
    }
}

bool is_tty(int fd) { return ::isatty(fd) == 1; }

std::string written_text(const std::vector<std::string>& files) {
    if (files.size() == 1) return escape_text(files[0]);
    return fmt::format("{} .. {} ({} files)", escape_text(files.front()), escape_text(files.back()), files.size());
}

std::string summary_line(std::string_view tool, const std::vector<std::string>& files, double seconds) {
    uint64_t bytes = 0;
    for (const auto& f : files) bytes += std::filesystem::file_size(f);
    return fmt::format("{}: wrote {} ({} bytes) in {:.2f} s\n", tool, written_text(files), bytes, seconds);
}

namespace {

[[noreturn]] void bad(std::string_view spec, const std::string& why) {
    throw FormatError(ErrorKind::Usage, "", "'" + std::string(spec) + "'", why);
}

[[noreturn]] void bad_value(const std::string& key, const std::string& why) {
    throw FormatError(ErrorKind::Usage, "", "key '" + key + "'", why);
}

// Integers as llama.cpp's --override-kv reads them (std::atol: base 10, so "010" is ten), but
// strictly: an optional sign, digits only, and the value must fit T.
template <typename T>
GgufValue parse_int_as(GgufType t, const std::string& key, std::string_view s) {
    std::string_view digits = s.starts_with('+') ? s.substr(1) : s;
    T v{};
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v, 10);
    if (digits.empty() || digits.starts_with('+') || ec != std::errc() || end != digits.data() + digits.size())
        bad_value(key, fmt::format("'{}' is not a base-10 integer from {} to {} ({})", s,
                                   +std::numeric_limits<T>::min(), +std::numeric_limits<T>::max(), gguf_type_name(t)));
    return GgufValue::make_scalar<T>(t, v);
}

// Reals as llama.cpp's std::atof reads them (decimal, optional exponent), but strictly: the whole
// text must be the number, and it must be finite and representable in T without overflowing to
// infinity or underflowing to zero.
template <typename T>
GgufValue parse_real_as(GgufType t, const std::string& key, std::string_view s) {
    std::string_view text = s.starts_with('+') ? s.substr(1) : s;
    double d = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), d, std::chars_format::general);
    if (text.empty() || text.starts_with('+') || ec == std::errc::invalid_argument || end != text.data() + text.size())
        bad_value(key, fmt::format("'{}' is not a number ({})", s, gguf_type_name(t)));
    const bool nonzero_digits = text.find_first_of("123456789") < text.find_first_of("eE");
    const bool fits = ec == std::errc() && std::isfinite(d) && std::fabs(d) <= std::numeric_limits<T>::max();
    const T v = fits ? static_cast<T>(d) : T{0};
    if (!fits || (v == 0 && nonzero_digits))
        bad_value(key, fmt::format("'{}' is out of range for {} (finite, magnitude {} to {})", s, gguf_type_name(t),
                                   std::numeric_limits<T>::denorm_min(), std::numeric_limits<T>::max()));
    return GgufValue::make_scalar<T>(t, v);
}

}  // namespace

GgufKV parse_kv_assignment(std::string_view spec) {
    auto eq = spec.find('=');
    if (eq == std::string_view::npos || eq == 0) bad(spec, "expected KEY=TYPE:VALUE");
    std::string key(spec.substr(0, eq));
    std::string_view rest = spec.substr(eq + 1);
    auto colon = rest.find(':');
    if (colon == std::string_view::npos) bad(spec, "expected KEY=TYPE:VALUE (missing ':')");
    std::string tname(rest.substr(0, colon));
    std::string val(rest.substr(colon + 1));
    auto t = gguf_type_from_name(tname);
    if (!t) bad(spec, "unknown value type '" + tname + "' (valid: u8 i8 u16 i16 u32 i32 u64 i64 f32 f64 bool str)");
    switch (*t) {
        case GgufType::U8: return {key, parse_int_as<uint8_t>(*t, key, val)};
        case GgufType::I8: return {key, parse_int_as<int8_t>(*t, key, val)};
        case GgufType::U16: return {key, parse_int_as<uint16_t>(*t, key, val)};
        case GgufType::I16: return {key, parse_int_as<int16_t>(*t, key, val)};
        case GgufType::U32: return {key, parse_int_as<uint32_t>(*t, key, val)};
        case GgufType::I32: return {key, parse_int_as<int32_t>(*t, key, val)};
        case GgufType::U64: return {key, parse_int_as<uint64_t>(*t, key, val)};
        case GgufType::I64: return {key, parse_int_as<int64_t>(*t, key, val)};
        case GgufType::F32: return {key, parse_real_as<float>(*t, key, val)};
        case GgufType::F64: return {key, parse_real_as<double>(*t, key, val)};
        case GgufType::BOOL:  // llama.cpp accepts exactly "true" and "false"
            if (val == "true") return {key, GgufValue::make_bool(true)};
            if (val == "false") return {key, GgufValue::make_bool(false)};
            bad_value(key, "'" + val + "' is not a bool (true/false)");
        case GgufType::STRING: return {key, GgufValue::make_string(val)};
        default: bad(spec, "unsupported value type");
    }
}

GgufKV parse_string_array_assignment(std::string_view spec) {
    auto eq = spec.find('=');
    if (eq == std::string_view::npos || eq == 0) bad(spec, "expected KEY=str:@FILE");
    std::string key(spec.substr(0, eq));
    std::string_view rest = spec.substr(eq + 1);
    if (rest.substr(0, 5) != "str:@") bad(spec, "expected KEY=str:@FILE (only string arrays can be read from a file)");
    std::string path(rest.substr(5));
    return {key, GgufValue::make_string_array(split_lines(read_text_file(path)))};
}

Progress::Progress(std::string label, uint64_t total_items, uint64_t total_bytes)
    : label_(std::move(label)),
      total_items_(total_items),
      total_bytes_(total_bytes),
      enabled_(is_tty(2)),
      start_(std::chrono::steady_clock::now()),
      last_(start_) {}

Progress::~Progress() { done(); }

void Progress::update(uint64_t i, uint64_t bytes, std::string_view what) {
    if (!enabled_) return;
    auto now = std::chrono::steady_clock::now();
    if (now - last_ < std::chrono::milliseconds(100) && i + 1 < total_items_) return;
    last_ = now;
    double secs = std::chrono::duration<double>(now - start_).count();
    double mbs = secs > 0 ? bytes / 1e6 / secs : 0;
    double eta = (bytes > 0 && total_bytes_ > bytes) ? secs * (double(total_bytes_) / bytes - 1) : 0;
    std::string name(what.substr(0, 40));
    fmt::print(stderr, "\r\x1b[2K{} [{}/{}] {:<40} {:7.1f} MB/s  ETA {:4.0f}s", label_, i + 1, total_items_, name, mbs,
               eta);
    std::fflush(stderr);
}

void Progress::done() {
    if (!enabled_ || finished_) return;
    finished_ = true;
    fmt::print(stderr, "\r\x1b[2K");
    std::fflush(stderr);
}

}  // namespace oiw
