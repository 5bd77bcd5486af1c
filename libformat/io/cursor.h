// Bounded little-endian cursor over a byte image: every read is checked against the end and a
// short read throws FormatError(Truncated) naming the file, the subject and the field.
#pragma once
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>

#include <fmt/format.h>

#include "libformat/error.h"

namespace oiw {

class ByteCursor {
public:
    // `file` must outlive the cursor (it is named in errors).
    ByteCursor(std::span<const uint8_t> bytes, const std::string& file) : b_(bytes), file_(file) {}
    uint64_t pos() const { return pos_; }
    uint64_t remaining() const { return b_.size() - pos_; }

    // Throws unless `n` more bytes are available.
    void need(uint64_t n, const std::string& subject, const char* what) const {
        if (n > remaining())
            throw FormatError(
                ErrorKind::Truncated, file_, subject,
                fmt::format("{} needs {} bytes at offset {} but only {} remain", what, n, pos_, remaining()));
    }
    // Reads one trivially copyable little-endian value.
    template <typename T>
    T get(const std::string& subject, const char* what) {
        static_assert(std::is_trivially_copyable_v<T>);
        need(sizeof(T), subject, what);
        T v;
        std::memcpy(&v, b_.data() + pos_, sizeof(T));
        pos_ += sizeof(T);
        return v;
    }
    // Hands out the next `n` bytes as a view.
    std::span<const uint8_t> take(uint64_t n, const std::string& subject, const char* what) {
        need(n, subject, what);
        auto s = b_.subspan(pos_, n);
        pos_ += n;
        return s;
    }
    // Reads a u64-length-prefixed string of at most `max_len` bytes (and at most the bytes left).
    std::string str(const std::string& subject, const char* what, uint64_t max_len = UINT64_MAX) {
        const uint64_t len = get<uint64_t>(subject, what);
        if (len > remaining())
            throw FormatError(ErrorKind::TooLarge, file_, subject,
                              fmt::format("{} length {} exceeds the {} bytes left", what, len, remaining()));
        if (len > max_len)
            throw FormatError(ErrorKind::TooLarge, file_, subject,
                              fmt::format("{} length {} exceeds the limit of {} bytes", what, len, max_len));
        auto s = take(len, subject, what);
        return std::string(reinterpret_cast<const char*>(s.data()), s.size());
    }

private:
    std::span<const uint8_t> b_;
    const std::string& file_;
    uint64_t pos_ = 0;
};

}  // namespace oiw
