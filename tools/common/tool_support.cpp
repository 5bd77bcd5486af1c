#include "tools/common/tool_support.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <limits>

#include <fmt/format.h>

#include "libformat/io/text_file.h"

namespace oiw {

int run_tool(std::string_view tool, const std::function<int()>& body) {
    int rc = kExitError;
    bool reported = false;
    try {
        rc = body();
    } catch (const std::exception& e) {
        fmt::print(stderr, "{}: error: {}\n", tool, e.what());
        reported = true;
    }
    if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
        const int e = errno;
        if (!reported) fmt::print(stderr, "{}: error: cannot write to standard output: {}\n", tool, e ? std::strerror(e) : "write error");
        return kExitError;
    }
    return rc;
}

bool is_tty(int fd) { return ::isatty(fd) == 1; }

namespace {

[[noreturn]] void bad(std::string_view spec, const std::string& why) {
    throw FormatError(ErrorKind::Usage, "", "'" + std::string(spec) + "'", why);
}

template <typename T>
GgufValue parse_int_as(GgufType t, std::string_view spec, const std::string& s) {
    try {
        size_t used = 0;
        if constexpr (std::is_signed_v<T>) {
            long long v = std::stoll(s, &used, 0);
            if (used != s.size() || v < std::numeric_limits<T>::min() || v > std::numeric_limits<T>::max()) throw std::out_of_range("");
            return GgufValue::make_scalar<T>(t, static_cast<T>(v));
        } else {
            if (!s.empty() && s[0] == '-') throw std::out_of_range("");
            unsigned long long v = std::stoull(s, &used, 0);
            if (used != s.size() || v > std::numeric_limits<T>::max()) throw std::out_of_range("");
            return GgufValue::make_scalar<T>(t, static_cast<T>(v));
        }
    } catch (const std::exception&) {
        bad(spec, fmt::format("'{}' is not a valid {} value", s, gguf_type_name(t)));
    }
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
        case GgufType::U8: return {key, parse_int_as<uint8_t>(*t, spec, val)};
        case GgufType::I8: return {key, parse_int_as<int8_t>(*t, spec, val)};
        case GgufType::U16: return {key, parse_int_as<uint16_t>(*t, spec, val)};
        case GgufType::I16: return {key, parse_int_as<int16_t>(*t, spec, val)};
        case GgufType::U32: return {key, parse_int_as<uint32_t>(*t, spec, val)};
        case GgufType::I32: return {key, parse_int_as<int32_t>(*t, spec, val)};
        case GgufType::U64: return {key, parse_int_as<uint64_t>(*t, spec, val)};
        case GgufType::I64: return {key, parse_int_as<int64_t>(*t, spec, val)};
        case GgufType::F32:
        case GgufType::F64: {
            char* end = nullptr;
            double d = std::strtod(val.c_str(), &end);
            if (val.empty() || *end) bad(spec, "'" + val + "' is not a number");
            return *t == GgufType::F32 ? GgufKV{key, GgufValue::make_scalar<float>(*t, static_cast<float>(d))}
                                       : GgufKV{key, GgufValue::make_scalar<double>(*t, d)};
        }
        case GgufType::BOOL:
            if (val == "true" || val == "1") return {key, GgufValue::make_bool(true)};
            if (val == "false" || val == "0") return {key, GgufValue::make_bool(false)};
            bad(spec, "'" + val + "' is not a bool (true/false)");
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
    : label_(std::move(label)), total_items_(total_items), total_bytes_(total_bytes), enabled_(is_tty(2)),
      start_(std::chrono::steady_clock::now()), last_(start_) {}

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
    fmt::print(stderr, "\r\x1b[2K{} [{}/{}] {:<40} {:7.1f} MB/s  ETA {:4.0f}s", label_, i + 1, total_items_, name, mbs, eta);
    std::fflush(stderr);
}

void Progress::done() {
    if (!enabled_ || finished_) return;
    finished_ = true;
    fmt::print(stderr, "\r\x1b[2K");
    std::fflush(stderr);
}

}  // namespace oiw
