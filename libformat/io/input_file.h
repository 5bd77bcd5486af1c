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

// Adds a file identity to the registry of the run's inputs (the process's lifetime), under the
// path it was opened by (thread-safe).
void register_input(dev_t dev, ino_t ino, const std::string& path);
// The path by which this process opened (dev, ino) as an input, or nullopt (thread-safe).
std::optional<std::string> registered_input(dev_t dev, ino_t ino);

}  // namespace oiw
