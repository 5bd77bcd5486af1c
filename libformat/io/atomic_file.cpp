#include "libformat/io/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <mutex>
#include <random>

#include <fmt/format.h>

#include "libformat/error.h"
#include "libformat/io/input_file.h"

namespace oiw {
namespace {

constexpr size_t kBufSize = 1 << 20;
constexpr int kMaxSymlinks = 40;  // as the kernel's MAXSYMLINKS
constexpr std::string_view kTempSuffix = ".tmp.XXXXXX";
constexpr size_t kMaxTempBase = NAME_MAX - 1 - kTempSuffix.size();  // "." + base + suffix fits NAME_MAX

// Named temp files alive in this process, unlinked by the signal handler: room for every shard
// of a split output (at most 65535) named at once, with slots to spare. g_temps_end bounds the
// slots ever used; g_temps_next is where the search for a free one starts.
constexpr size_t kMaxLiveTemps = size_t{1} << 17;
std::atomic<const char*> g_live_temps[kMaxLiveTemps];
std::atomic<size_t> g_temps_end{0}, g_temps_next{0};
static_assert(std::atomic<const char*>::is_always_lock_free);
// n > 0: n publish_all() calls are renaming (a signal waits in g_deferred_signal); 0: idle;
// -1: a signal handler is unlinking the temp files before the process dies.
std::atomic<int> g_signal_state{0}, g_deferred_signal{0};
std::atomic<size_t> g_held_temps{0};  // complete()d unnamed temp files still open

[[noreturn]] void unlink_temps_and_die(int sig) {
    const size_t end = g_temps_end.load();
    for (size_t i = 0; i < end; ++i)
        if (const char* p = g_live_temps[i].load()) ::unlink(p);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    ::sigemptyset(&dfl.sa_mask);
    ::sigaction(sig, &dfl, nullptr);
    sigset_t set;
    ::sigemptyset(&set);
    ::sigaddset(&set, sig);
    ::sigprocmask(SIG_UNBLOCK, &set, nullptr);
    ::raise(sig);
    ::_exit(128 + sig);  // the default action was overridden after all
}

extern "C" void on_signal(int sig) {
    for (;;) {
        int state = 0;
        if (g_signal_state.compare_exchange_strong(state, -1) || state < 0) break;
        g_deferred_signal.store(sig);  // the last publish_all() to finish dies of it
        if (g_signal_state.load() > 0) return;
    }
    unlink_temps_and_die(sig);
}

// Installs the handler for SIGINT/SIGTERM/SIGHUP where the disposition is still the default.
void install_signal_handlers() {
    static std::once_flag once;
    std::call_once(once, [] {
        for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
            struct sigaction old {};
            if (::sigaction(sig, nullptr, &old) != 0 || (old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL)
                continue;
            struct sigaction sa {};
            sa.sa_handler = on_signal;
            ::sigfillset(&sa.sa_mask);
            ::sigaction(sig, &sa, nullptr);
        }
    });
}

// Publishes `path` to the signal handler; returns its slot.
int track_temp(const std::string& file, const char* path) {
    install_signal_handlers();
    const size_t start = g_temps_next.load();
    for (size_t n = 0; n < kMaxLiveTemps; ++n) {
        const size_t i = (start + n) % kMaxLiveTemps;
        const char* expected = nullptr;
        if (!g_live_temps[i].compare_exchange_strong(expected, path)) continue;
        for (size_t end = g_temps_end.load(); end <= i && !g_temps_end.compare_exchange_weak(end, i + 1);) {}
        g_temps_next.store(i + 1);
        return static_cast<int>(i);
    }
    throw FormatError(ErrorKind::Io, file, "", "too many output files open at once");
}

// While alive, SIGINT/SIGTERM/SIGHUP wait (on_signal defers them); the last destructor then dies
// of a signal that came meanwhile, after unlinking the temp files still live.
class SignalsHeld {
public:
    explicit SignalsHeld(const std::string& file) {
        install_signal_handlers();
        int state = g_signal_state.load();
        do {
            if (state < 0) throw FormatError(ErrorKind::Io, file, "", "interrupted by a signal: not renamed");
        } while (!g_signal_state.compare_exchange_weak(state, state + 1));
    }
    ~SignalsHeld() {
        if (g_signal_state.fetch_sub(1) != 1) return;  // another publish_all() is still renaming
        if (const int sig = g_deferred_signal.exchange(0)) unlink_temps_and_die(sig);
    }
    SignalsHeld(const SignalsHeld&) = delete;
    SignalsHeld& operator=(const SignalsHeld&) = delete;
};

[[noreturn]] void io_error(const std::string& file, const std::string& what) {
    throw FormatError(ErrorKind::Io, file, "", what + ": " + std::strerror(errno));
}

// `path` with every symlink in its last component followed (a dangling link gives its target).
std::string resolve_symlinks(const std::string& path) {
    namespace fs = std::filesystem;
    std::string p = path;
    for (int i = 0; i < kMaxSymlinks; ++i) {
        struct stat st {};
        if (::lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return p;
        std::vector<char> buf(PATH_MAX);
        const ssize_t n = ::readlink(p.c_str(), buf.data(), buf.size());
        if (n < 0) io_error(path, "cannot read symbolic link '" + p + "'");
        const std::string link(buf.data(), static_cast<size_t>(n));
        p = link.starts_with('/') ? link : (fs::path(p).parent_path() / link).string();
    }
    throw FormatError(ErrorKind::Io, path, "", "too many levels of symbolic links");
}

// OIW_ATOMIC_FAIL_RENAME=K in the environment (tests): the K-th rename (1-based) of every
// publish_all() fails with EIO; 0 when unset.
size_t injected_rename_failure() {
    const char* k = std::getenv("OIW_ATOMIC_FAIL_RENAME");
    return k ? std::strtoull(k, nullptr, 10) : 0;
}

bool use_tmpfile() {
    const char* off = std::getenv("OIW_ATOMIC_NO_TMPFILE");
    return !(off && std::strcmp(off, "1") == 0) && ::access("/proc/self/fd", X_OK) == 0;
}

}  // namespace

AtomicFile::AtomicFile(std::string path, const std::vector<std::string>& inputs, bool follow_symlinks)
    : path_(std::move(path)), inputs_(inputs) {
    namespace fs = std::filesystem;
    if (!follow_symlinks) {
        struct stat st {};
        if (::lstat(path_.c_str(), &st) == 0 && S_ISLNK(st.st_mode))
            throw FormatError(ErrorKind::Usage, path_, "", "is a symbolic link, not followed for this file");
    }
    target_ = follow_symlinks ? resolve_symlinks(path_) : path_;
    const fs::path t(target_);
    dir_ = t.has_parent_path() ? t.parent_path().string() : ".";
    check_target();
    if (use_tmpfile()) {
        fd_ = ::open(dir_.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);  // the umask applies
        if (fd_ < 0 && errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
            io_error(path_, "cannot create temp file in '" + dir_ + "'");
    }
    if (fd_ < 0) {
        name_temp(true);
        const mode_t um = ::umask(0);
        ::umask(um);
        if (!has_mode_ && ::fchmod(fd_, 0666 & ~um) != 0) io_error(path_, "cannot set the mode of the temp file");
    }
    if (has_mode_) {
        if (::fchown(fd_, uid_, gid_) != 0 && ::fchown(fd_, static_cast<uid_t>(-1), gid_) != 0) {
            // not permitted: the new file keeps this process's owner and group
        }
        if (::fchmod(fd_, mode_) != 0) io_error(path_, "cannot set the mode of the temp file");
    }
    buf_.reserve(kBufSize);
}

AtomicFile::~AtomicFile() {
    if (fd_ >= 0) ::close(fd_);
    if (held_) g_held_temps.fetch_sub(1);
    drop_temp();
}

size_t AtomicFile::held_temp_cap() {
    struct rlimit r {};
    if (::getrlimit(RLIMIT_NOFILE, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return kMaxLiveTemps;
    return static_cast<size_t>(r.rlim_cur / 2);
}

void AtomicFile::check_target() {
    struct stat st {};
    if (::stat(target_.c_str(), &st) != 0) {
        if (errno == ENOENT) return;
        io_error(path_, "cannot stat");
    }
    if (S_ISDIR(st.st_mode)) throw FormatError(ErrorKind::Usage, path_, "", "output path is a directory");
    if (!S_ISREG(st.st_mode))
        throw FormatError(ErrorKind::Usage, path_, "",
                          "not a regular file: refusing to replace a device, FIFO or socket");
    std::optional<std::string> input = registered_input(file_identity(target_, st));
    for (const auto& in : inputs_) {
        struct stat in_st {};
        if (!input && ::stat(in.c_str(), &in_st) == 0 && in_st.st_dev == st.st_dev && in_st.st_ino == st.st_ino)
            input = in;
    }
    if (input) throw FormatError(ErrorKind::Usage, path_, "", "refusing to overwrite the input file '" + *input + "'");
    has_mode_ = true;
    mode_ = st.st_mode & 07777;
    uid_ = st.st_uid;
    gid_ = st.st_gid;
}

// Gives the temp file a name ".BASE.tmp.XXXXXX" in dir_ (published to the signal handler):
// create = true makes a new file (mkstemp) and opens it as fd_; create = false links the unnamed
// fd_ under a fresh name.
void AtomicFile::name_temp(bool create) {
    namespace fs = std::filesystem;
    const std::string base = fs::path(target_).filename().string().substr(0, kMaxTempBase);
    const std::string tmpl = (fs::path(dir_) / ("." + base + std::string(kTempSuffix))).string();
    std::minstd_rand rng(std::random_device{}());
    for (int attempt = 0; attempt < 100; ++attempt) {
        tmp_path_ = tmpl;
        if (!create) {
            static constexpr char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
            for (size_t i = tmp_path_.size() - 6; i < tmp_path_.size(); ++i)
                tmp_path_[i] = kChars[rng() % (sizeof kChars - 1)];
        }
        slot_ = track_temp(path_, tmp_path_.c_str());  // before the name exists: a signal cannot miss it
        int rc;
        if (create)
            rc = fd_ = ::mkstemp(tmp_path_.data());
        else
            rc = ::linkat(AT_FDCWD, fmt::format("/proc/self/fd/{}", fd_).c_str(), AT_FDCWD, tmp_path_.c_str(),
                          AT_SYMLINK_FOLLOW);
        if (rc >= 0) return;
        const int e = errno;
        g_live_temps[slot_].store(nullptr);
        slot_ = -1;
        tmp_path_.clear();
        errno = e;
        if (create || e != EEXIST) break;
    }
    io_error(path_, "cannot create temp file in '" + dir_ + "'");
}

void AtomicFile::drop_temp() {
    if (slot_ < 0) return;
    ::unlink(tmp_path_.c_str());
    g_live_temps[slot_].store(nullptr);
    slot_ = -1;
}

void AtomicFile::write_all(const uint8_t* p, size_t n) {
    while (n) {
        const ssize_t w = ::write(fd_, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            io_error(path_, "write failed");
        }
        p += w;
        n -= static_cast<size_t>(w);
    }
}

void AtomicFile::flush() {
    write_all(buf_.data(), buf_.size());
    buf_.clear();
}

void AtomicFile::write(const void* p, size_t n) {
    if (completed_) throw FormatError(ErrorKind::Usage, path_, "", "written after it was completed");
    const auto* s = static_cast<const uint8_t*>(p);
    written_ += n;
    if (buf_.size() + n > kBufSize) flush();
    if (n >= kBufSize) return write_all(s, n);  // large pieces bypass the buffer: memory stays bounded
    buf_.insert(buf_.end(), s, s + n);
}

void AtomicFile::skip(uint64_t n) {
    if (n == 0) return;
    if (completed_) throw FormatError(ErrorKind::Usage, path_, "", "written after it was completed");
    flush();
    if (n > static_cast<uint64_t>(std::numeric_limits<off_t>::max()) - written_)
        throw FormatError(ErrorKind::TooLarge, path_, "", fmt::format("a file of {} + {} bytes", written_, n));
    written_ += n;
    if (::ftruncate(fd_, static_cast<off_t>(written_)) != 0) io_error(path_, "cannot extend the file");
    if (::lseek(fd_, static_cast<off_t>(written_), SEEK_SET) < 0) io_error(path_, "seek failed");
}

void AtomicFile::write_at(uint64_t offset, const void* p, size_t n) {
    if (offset > written_ || n > written_ - offset)
        throw FormatError(ErrorKind::Usage, path_, "",
                          fmt::format("write_at [{}, +{}) is past the {} bytes written", offset, n, written_));
    if (completed_) throw FormatError(ErrorKind::Usage, path_, "", "written after it was completed");
    flush();
    const auto* s = static_cast<const uint8_t*>(p);
    while (n) {
        const ssize_t w = ::pwrite(fd_, s, n, static_cast<off_t>(offset));
        if (w < 0) {
            if (errno == EINTR) continue;
            io_error(path_, "write failed");
        }
        s += w;
        n -= static_cast<size_t>(w);
        offset += static_cast<uint64_t>(w);
    }
}

void AtomicFile::close_fd() {
    if (fd_ < 0) return;
    const int fd = fd_;
    fd_ = -1;
    if (held_) g_held_temps.fetch_sub(1);
    held_ = false;
    if (::close(fd) != 0) io_error(path_, "close failed");
}

void AtomicFile::complete() {
    if (completed_) return;
    flush();
    if (::fsync(fd_) != 0) io_error(path_, "fsync failed");
    std::vector<uint8_t>().swap(buf_);
    completed_ = true;
    if (slot_ < 0 && g_held_temps.fetch_add(1) < held_temp_cap()) {
        held_ = true;
        return;
    }
    if (slot_ < 0) {
        g_held_temps.fetch_sub(1);
        name_temp(false);
    }
    close_fd();
}

void AtomicFile::stage() {
    if (!completed_) throw FormatError(ErrorKind::Usage, path_, "", "published before it was completed");
    if (slot_ < 0) name_temp(false);
    close_fd();
    check_target();  // the target may have changed since the temp file was made
}

void AtomicFile::commit() {
    if (committed_) return;
    complete();
    AtomicFile* self = this;
    size_t published = 0;
    publish_all({&self, 1}, published);
}

void AtomicFile::publish_all(std::span<AtomicFile* const> files, size_t& published) {
    published = 0;
    for (AtomicFile* f : files)
        if (!f->committed_) f->stage();
    const size_t fail_at = injected_rename_failure();
    {
        const SignalsHeld held(files.empty() ? "" : files.front()->path_);
        for (AtomicFile* f : files) {
            if (!f->committed_) {
                if (published + 1 == fail_at) errno = EIO;
                if (published + 1 == fail_at || ::rename(f->tmp_path_.c_str(), f->target_.c_str()) != 0)
                    io_error(f->path_, "rename failed");
                g_live_temps[f->slot_].store(nullptr);
                f->slot_ = -1;
                f->committed_ = true;
            }
            ++published;
        }
    }
    std::vector<std::string> dirs;
    for (AtomicFile* f : files)
        if (std::find(dirs.begin(), dirs.end(), f->dir_) == dirs.end()) dirs.push_back(f->dir_);
    for (const auto& d : dirs) {
        const int dfd = ::open(d.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) {
            ::fsync(dfd);
            ::close(dfd);
        }
    }
}

}  // namespace oiw
