#include "libformat/io/text_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "libformat/error.h"
#include "libformat/io/input_file.h"

namespace oiw {

std::string read_text_file(const std::string& path, size_t cap) {
    InputFd in(path);
    std::string text;
    char buf[1 << 16];
    for (;;) {
        const ssize_t n = ::read(in.fd(), buf, sizeof buf);
        if (n < 0) {
            if (errno == EINTR) continue;
            throw FormatError(ErrorKind::Io, path, "", std::string("read failed: ") + std::strerror(errno));
        }
        if (n == 0) return text;
        if (static_cast<size_t>(n) > cap - text.size())
            throw FormatError(ErrorKind::TooLarge, path, "", fmt::format("text file is larger than {} bytes", cap));
        text.append(buf, static_cast<size_t>(n));
    }
}

std::vector<std::string> split_lines(std::string_view text) {
    std::vector<std::string> lines;
    while (!text.empty()) {
        const size_t nl = text.find('\n');
        lines.emplace_back(text.substr(0, nl));
        text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    }
    return lines;
}

}  // namespace oiw
