#include "libformat/io/input_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>

#include "libformat/error.h"

namespace oiw {
namespace {

std::mutex registry_mu;
std::map<std::pair<dev_t, ino_t>, std::string>& registry() {
    static std::map<std::pair<dev_t, ino_t>, std::string> r;
    return r;
}

}  // namespace

InputFd::InputFd(const std::string& path, bool streams) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd_ < 0) throw FormatError(ErrorKind::Io, path, "", std::string("cannot open: ") + std::strerror(errno));
    if (::fstat(fd_, &st_) != 0) {
        const int e = errno;
        ::close(fd_);
        throw FormatError(ErrorKind::Io, path, "", std::string("cannot stat: ") + std::strerror(e));
    }
    const bool stream = S_ISFIFO(st_.st_mode) || S_ISSOCK(st_.st_mode) || S_ISCHR(st_.st_mode);
    if (!S_ISREG(st_.st_mode) && !(streams && stream)) {
        ::close(fd_);
        throw FormatError(ErrorKind::Io, path, "", S_ISDIR(st_.st_mode) ? "is a directory" : "not a regular file");
    }
    register_input(st_.st_dev, st_.st_ino, path);
}

InputFd::~InputFd() { ::close(fd_); }

void register_input(dev_t dev, ino_t ino, const std::string& path) {
    std::lock_guard lk(registry_mu);
    registry().try_emplace({dev, ino}, path);
}

std::optional<std::string> registered_input(dev_t dev, ino_t ino) {
    std::lock_guard lk(registry_mu);
    auto it = registry().find({dev, ino});
    if (it == registry().end()) return std::nullopt;
    return it->second;
}

}  // namespace oiw
