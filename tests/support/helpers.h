// Shared test helpers: locating tests/data and ../shared, temp dirs, hashing, running tools, golden tensors.
#pragma once
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "libformat/error.h"
#include "libformat/gguf/gguf.h"

// Skips the current test with a one-line reason when ../shared/<rel> is absent (a bare clone).
#define OIW_NEED_SHARED(rel)                                                                      \
    do {                                                                                          \
        if (!::oiw::test::shared_available(rel))                                                  \
            GTEST_SKIP() << "needs ../shared/" << (rel) << " (absent: not a CI or dev checkout)"; \
    } while (0)

// OIW_UNDER_SANITIZER: defined in ASan/TSan/MSan builds, where RLIMIT_AS cannot bound memory.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define OIW_UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define OIW_UNDER_SANITIZER 1
#endif
#endif

namespace oiw::test {

// Absolute path of a file under ../shared (e.g. "fixtures/tiny-llama-f16.gguf"). ../shared exists
// in CI and on developer machines, not in a user's clone: tests that need it use OIW_NEED_SHARED.
std::string shared_path(const std::string& rel);
// True when ../shared/<rel> exists.
bool shared_available(const std::string& rel = "fixtures");
// Absolute path of a vendored file under tests/data (the small fixture pack, always present).
std::string data_path(const std::string& rel);
// Command running a built tool (e.g. "gguf-inspect"): its absolute path, prefixed with
// $OIW_TOOL_WRAPPER when set (scripts/test runs a cross build's tools through qemu-aarch64).
std::string tool_path(const std::string& name);
// A fresh empty directory, unique per call, removed at process exit.
std::filesystem::path temp_dir();
// Whole file as bytes.
std::vector<uint8_t> read_file(const std::string& path);
// Whole file as text.
std::string read_text(const std::string& path);
// The names of the entries of `dir`, sorted.
std::vector<std::string> listing(const std::filesystem::path& dir);
// Every entry of `dir` (hidden ones included) by name: its inode number and its bytes. Equal
// snapshots mean no file was added, removed, replaced (a rename gives a new inode) or changed.
struct FileState {
    uint64_t inode = 0;
    std::vector<uint8_t> bytes;
    bool operator==(const FileState&) const = default;
};
std::map<std::string, FileState> dir_snapshot(const std::filesystem::path& dir);
void write_file(const std::string& path, std::span<const uint8_t> bytes);
// Lower-case hex SHA-256.
std::string sha256_hex(std::span<const uint8_t> bytes);
// Runs a shell command; returns exit status, captures stdout (and stderr if merge_stderr).
int run(const std::string& cmd, std::string* out = nullptr, bool merge_stderr = false);
// Every *.gguf of the vendored pack (tests/data) and, when present, under ../shared/fixtures
// (recursively), sorted.
std::vector<std::string> fixture_files();

// F32 tensor `name` of `f` copied out as floats (the mapping need not be float-aligned); throws
// if it is missing or not F32.
std::vector<float> read_f32(const GgufFile& f, const std::string& name);

// The quantizer golden files (tests/data/golden, same as ../shared/golden): ggml's input (16 rows x 1024) with its
// importance weights, and ggml's expected outputs (tensors "<type>.plain" / "<type>.imatrix").
struct Golden {
    GgufFile input;
    GgufFile expected;
    std::vector<float> x;           // tensor "input", nrows x n_per_row
    std::vector<float> importance;  // tensor "importance", n_per_row weights
    int64_t n_per_row = 0;
    int64_t nrows = 0;
};
// Opened and read once per process.
const Golden& golden();

// Recomputes an OIW4 image's header checksum (XXH3 of the header's first 56 bytes and the
// directory) after a test edited the header or directory.
void reseal_oiw4(std::vector<uint8_t>& image);

// Starts `args` (argv[0] a path) with `env` ("K=V") added to the environment; the pid (a test
// failure when posix_spawn fails).
pid_t spawn(std::vector<std::string> args, const std::vector<std::string>& env = {});
// How many descriptors of process `pid` are open on files in `dir` (its temp files there).
size_t open_into(pid_t pid, const std::filesystem::path& dir);
// Polls (every 200 us, up to 20 s) until `ready` holds; false on timeout.
template <typename F>
bool wait_for(F ready) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!ready()) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    return true;
}

// The message of the exception fn() throws, or "(no error)".
std::string error_of(const std::function<void()>& fn);

// The FormatError f() throws; a test failure (and an empty Usage error) when it throws none.
template <typename F>
FormatError format_error_of(F&& f) {
    try {
        f();
    } catch (const FormatError& e) {
        return e;
    }
    ADD_FAILURE() << "no error";
    return FormatError(ErrorKind::Usage, "", "", "");
}

}  // namespace oiw::test
