// An output file that appears complete or not at all, and never clobbers what it must not.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace oiw {

// Bytes go to a temp file in the target's directory: an unnamed O_TMPFILE inode where the
// filesystem has one, else a hidden ".NAME.tmp.XXXXXX" (NAME cut so the name fits NAME_MAX).
// commit() fsyncs it and renames it over the target in one step; until then the target is
// untouched. Several files are published as one set with complete() on each, then
// publish_all(). A writer destroyed before commit() leaves no temp file, and neither does
// SIGINT/SIGTERM/SIGHUP (unless the signal is ignored or has another handler): a handler
// installed with the first named temp file unlinks every live one, then the signal's default
// action kills the process; a signal arriving while publish_all() renames is held until the
// last rename. SIGKILL leaves nothing of an unnamed temp file, but a named one stays.
// Setting OIW_ATOMIC_NO_TMPFILE=1 in the environment forces the named temp file (tests).
class AtomicFile {
public:
    // Opens the temp file for `path`. A symlink is resolved: its final target is replaced, the link
    // stays. Refused (FormatError naming `path`): a directory, a device, FIFO or socket, and a file
    // that is an input of this run (registered by InputFd, or the same inode as one of `inputs`).
    // An existing target's permission bits (and owner/group where permitted) carry over to the
    // new file; a new file gets 0666 minus the umask. With `follow_symlinks` false (files at a
    // path the tool chose, such as a sidecar), a symlink at `path` is refused instead of followed,
    // and the rename replaces whatever entry `path` names then, never a link's target.
    explicit AtomicFile(std::string path, const std::vector<std::string>& inputs = {}, bool follow_symlinks = true);
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
    // Flushes and fsyncs the temp file and frees the write buffer; nothing more can be written and
    // the target is still untouched. An unnamed temp file stays open (nothing to clean up after a
    // SIGKILL) while fewer than held_temp_cap() completed ones are held open in the process; past
    // that it is given its hidden name and closed. Throws FormatError(Io) naming the path.
    void complete();
    // complete(), then publish_all() of this file alone: re-checks the target, renames the temp
    // file onto it and fsyncs the directory. Throws FormatError(Io/Usage); the target is then
    // unchanged, and the temp file goes when the AtomicFile is destroyed.
    void commit();
    // Publishes complete()d files as one set: stages each one (names its temp file, closes it,
    // re-checks its target), then renames them onto their targets back to back with
    // SIGINT/SIGTERM/SIGHUP held until the last rename, then fsyncs their directories.
    // `published` counts the files renamed so far: on a throw, files [0, published) replaced
    // their targets, the others left theirs untouched (their temps go with their AtomicFiles).
    static void publish_all(std::span<AtomicFile* const> files, size_t& published);
    // How many complete()d unnamed temp files are kept open at once: half the RLIMIT_NOFILE soft
    // limit (a process's other files keep the other half).
    static size_t held_temp_cap();
    // Bytes written so far.
    uint64_t size() const { return written_; }
    // The path as given.
    const std::string& path() const { return path_; }

private:
    std::string path_, target_, dir_, tmp_path_;  // target_: symlinks resolved; tmp_path_: named temp
    std::vector<std::string> inputs_;
    int fd_ = -1, slot_ = -1;
    bool committed_ = false, completed_ = false, held_ = false, has_mode_ = false;
    mode_t mode_ = 0;
    uid_t uid_ = 0;
    gid_t gid_ = 0;
    uint64_t written_ = 0;
    std::vector<uint8_t> buf_;
    void check_target();
    void name_temp(bool create);
    void drop_temp();
    void close_fd();
    // Names the temp file (if unnamed), closes it and re-checks the target: only the rename is left.
    void stage();
    void write_all(const uint8_t* p, size_t n);
    void flush();
};

}  // namespace oiw
