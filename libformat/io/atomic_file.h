// An output file that appears complete or not at all, and never clobbers what it must not.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace oiw {

// Bytes go to a temp file in the target's directory: an unnamed O_TMPFILE inode where the
// filesystem has one, else a hidden ".NAME.tmp.XXXXXX" (NAME cut so the name fits NAME_MAX).
// commit() fsyncs it and renames it over the target in one step; until then the target is
// untouched. A writer destroyed before commit() leaves no temp file, and neither does
// SIGINT/SIGTERM/SIGHUP (unless the signal is ignored or has another handler): a handler
// installed with the first named temp file unlinks every live one, then the signal's default
// action kills the process. Setting OIW_ATOMIC_NO_TMPFILE=1 in the environment forces the named
// temp file (tests).
class AtomicFile {
public:
    // Opens the temp file for `path`. A symlink is resolved: its final target is replaced, the link
    // stays. Refused (FormatError naming `path`): a directory, a device, FIFO or socket, and a file
    // that is an input of this run (registered by InputFd, or the same inode as one of `inputs`).
    // An existing target's permission bits (and owner/group where permitted) carry over to the
    // new file; a new file gets 0666 minus the umask.
    explicit AtomicFile(std::string path, const std::vector<std::string>& inputs = {});
    ~AtomicFile();
    AtomicFile(const AtomicFile&) = delete;
    AtomicFile& operator=(const AtomicFile&) = delete;

    // Appends bytes (buffered). Throws FormatError(Io) naming the path when the write fails.
    void write(const void* p, size_t n);
    // Appends n zero bytes without writing them: the file is extended (ftruncate) and they read
    // back as zeros from a hole where the filesystem has holes. Throws FormatError(Io) on failure.
    void skip(uint64_t n);
    // Overwrites bytes already written at [offset, offset + n) (a header patched at the end).
    // Throws FormatError(Usage) when the range is not inside size(), FormatError(Io) on failure.
    void write_at(uint64_t offset, const void* p, size_t n);
    // Flushes, fsyncs, re-checks the target and renames the temp file onto it, then fsyncs the
    // directory. Throws FormatError(Io/Usage); the target is then unchanged, and the temp file goes
    // when the AtomicFile is destroyed.
    void commit();
    // Bytes written so far.
    uint64_t size() const { return written_; }
    // The path as given.
    const std::string& path() const { return path_; }

private:
    std::string path_, target_, dir_, tmp_path_;  // target_: symlinks resolved; tmp_path_: named temp
    std::vector<std::string> inputs_;
    int fd_ = -1, slot_ = -1;
    bool committed_ = false, has_mode_ = false;
    mode_t mode_ = 0;
    uid_t uid_ = 0;
    gid_t gid_ = 0;
    uint64_t written_ = 0;
    std::vector<uint8_t> buf_;
    void check_target();
    void name_temp(bool create);
    void drop_temp();
    void write_all(const uint8_t* p, size_t n);
    void flush();
};

}  // namespace oiw
