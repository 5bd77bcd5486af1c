// Opening input files: regular files only, never blocking, and remembered so that no output of
// the run can replace them (AtomicFile consults the registry).
#pragma once
#include <sys/stat.h>

#include <optional>
#include <string>

namespace oiw {

// An open read-only descriptor of a regular file and its fstat; closes on destruction.
class InputFd {
public:
    // Opens `path` (O_RDONLY | O_NONBLOCK | O_CLOEXEC: a FIFO cannot block the open), then refuses
    // anything but a regular file ("is a directory", "not a regular file"), or with `streams` also
    // accepts a pipe, FIFO, socket or character device (text read to its end, e.g. <(grep ...) or
    // /dev/stdin; the descriptor stays non-blocking: poll before reading). Records the file's (st_dev, st_ino) in the
    // process-wide input registry. Throws FormatError(Io) naming `path`.
    explicit InputFd(const std::string& path, bool streams = false);
    ~InputFd();
    InputFd(const InputFd&) = delete;
    InputFd& operator=(const InputFd&) = delete;
    int fd() const { return fd_; }
    const struct stat& stat() const { return st_; }

private:
    int fd_ = -1;
    struct stat st_ {};
};

// A file's identity: its (st_dev, st_ino) and, where the filesystem records it, its birth time, so
// that a later file given a deleted input's inode number is not taken for that input.
struct FileIdentity {
    dev_t dev;
    ino_t ino;
    int64_t birth_ns = -1;  // statx's btime in ns; -1: not recorded (then (dev, ino) alone decides)
};
// The identity of the open file `fd`, `st` its fstat; of the file at `path`, `st` its stat.
FileIdentity file_identity(int fd, const struct stat& st);
FileIdentity file_identity(const std::string& path, const struct stat& st);

// Adds a file identity to the registry of the run's inputs (the process's lifetime), under the
// path it was opened by (thread-safe).
void register_input(const FileIdentity& id, const std::string& path);
// The path by which this process opened file `id` as an input, or nullopt (thread-safe): same
// (dev, ino), and the same birth time when both are known.
std::optional<std::string> registered_input(const FileIdentity& id);

}  // namespace oiw
