#include "libformat/io/text_file.h"

#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "libformat/error.h"
#include "libformat/io/input_file.h"

namespace oiw {

void read_text_blocks(const std::string& path, size_t cap, const std::function<void(std::string_view)>& block) {
    InputFd in(path, /*streams=*/true);
    const bool stream = !S_ISREG(in.stat().st_mode);
    std::vector<char> buf(size_t{1} << 16);
    size_t total = 0;
    for (;;) {
        // A stream is waited for (a FIFO until its writer opens, writes or closes, as cat waits).
        pollfd p{in.fd(), POLLIN, 0};
        if (stream && ::poll(&p, 1, -1) < 0 && errno != EINTR)
            throw FormatError(ErrorKind::Io, path, "", std::string("poll failed: ") + std::strerror(errno));
        const ssize_t n = ::read(in.fd(), buf.data(), buf.size());
        if (n < 0) {
            if (errno == EINTR || (stream && errno == EAGAIN)) continue;
            throw FormatError(ErrorKind::Io, path, "", std::string("read failed: ") + std::strerror(errno));
        }
        if (n == 0) return;
        if (static_cast<size_t>(n) > cap - total)
            throw FormatError(ErrorKind::TooLarge, path, "", fmt::format("text file is larger than {} bytes", cap));
        total += static_cast<size_t>(n);
        block(std::string_view(buf.data(), static_cast<size_t>(n)));
    }
}

std::string read_text_file(const std::string& path, size_t cap) {
    std::string text;
    read_text_blocks(path, cap, [&](std::string_view b) { text.append(b); });
    return text;
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
