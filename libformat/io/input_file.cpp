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

struct Registered {
    std::string path;
    int64_t birth_ns;
};
std::mutex registry_mu;
std::map<std::pair<dev_t, ino_t>, Registered>& registry() {
    static std::map<std::pair<dev_t, ino_t>, Registered> r;
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
    register_input(file_identity(fd_, st_), path);
}

InputFd::~InputFd() { ::close(fd_); }

namespace {

// (dev, ino) from `st`, the birth time from statx(dirfd, path, flags) when the filesystem has one.
FileIdentity identity(const struct stat& st, int dirfd, const char* path, int flags) {
    FileIdentity id{st.st_dev, st.st_ino};
    struct statx sx {};
    if (::statx(dirfd, path, flags, STATX_BTIME, &sx) == 0 && (sx.stx_mask & STATX_BTIME) != 0)
        id.birth_ns = static_cast<int64_t>(sx.stx_btime.tv_sec) * 1000000000 + sx.stx_btime.tv_nsec;
    return id;
}

}  // namespace

FileIdentity file_identity(int fd, const struct stat& st) { return identity(st, fd, "", AT_EMPTY_PATH); }
FileIdentity file_identity(const std::string& path, const struct stat& st) {
    return identity(st, AT_FDCWD, path.c_str(), 0);
}

void register_input(const FileIdentity& id, const std::string& path) {
    std::lock_guard lk(registry_mu);
    auto [it, added] = registry().try_emplace({id.dev, id.ino}, Registered{path, id.birth_ns});
    if (!added && it->second.birth_ns >= 0 && id.birth_ns >= 0 && it->second.birth_ns != id.birth_ns)
        it->second = {path, id.birth_ns};  // the inode number now names another file
}

std::optional<std::string> registered_input(const FileIdentity& id) {
    std::lock_guard lk(registry_mu);
    auto it = registry().find({id.dev, id.ino});
    if (it == registry().end()) return std::nullopt;
    if (it->second.birth_ns >= 0 && id.birth_ns >= 0 && it->second.birth_ns != id.birth_ns) return std::nullopt;
    return it->second.path;
}

}  // namespace oiw
