// Shared plumbing for the command-line tools: error reporting, exit codes, TTY progress,
// KEY=TYPE:VALUE parsing.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "libformat/gguf/metadata.h"

namespace oiw {

inline constexpr int kExitOk = 0, kExitDiffers = 1, kExitError = 2;

// Runs `body`; any FormatError or other exception is printed as one line
// "<tool>: error: <message>" on stderr and turned into exit status 2. Then flushes stdout: when
// anything written there failed (disk full, closed pipe), that is one such line and status 2 too.
int run_tool(std::string_view tool, const std::function<int()>& body);

// True when the stream (1 = stdout, 2 = stderr) is a terminal.
bool is_tty(int fd);

// Writes `text` to stdout and flushes; a failed write (full disk, closed pipe) throws
// FormatError(Io) "cannot write to standard output: <reason>" (run_tool's words for the same).
void write_stdout(std::string_view text);

// The files an output went to, for a message: "out.gguf", or "out-00001-of-00003.gguf ..
// out-00003-of-00003.gguf (3 files)" (escaped).
std::string written_text(const std::vector<std::string>& files);

// The last line a tool prints on stdout for what it wrote, also when stdout is not a terminal
// (-q silences it): "<tool>: wrote <written_text(files)> (<bytes> bytes) in <seconds> s\n", the
// bytes being the files' sizes now.
std::string summary_line(std::string_view tool, const std::vector<std::string>& files, double seconds);

// Parses "KEY=TYPE:VALUE" (TYPE one of u8 i8 u16 i16 u32 i32 f32 bool str u64 i64 f64, as
// llama-quantize's --override-kv also accepts int/float/bool/str). Values are read as llama.cpp
// reads them (integers in base 10, decimal reals, bool exactly true/false) but strictly: trailing
// text, out-of-range integers and reals that overflow or underflow the type are refused.
// Throws FormatError(Usage) naming the key.
GgufKV parse_kv_assignment(std::string_view spec);
// Parses "KEY=str:@FILE": a string array, one element per line of FILE (split_lines; FILE read
// with read_text_file: a regular file of at most kMaxTextFileBytes). Throws FormatError.
GgufKV parse_string_array_assignment(std::string_view spec);

// One-line progress meter on stderr, drawn only when stderr is a TTY (quiet when piped).
class Progress {
public:
    Progress(std::string label, uint64_t total_items, uint64_t total_bytes);
    ~Progress();
    // Reports item `i` (0-based) named `what` done, with `bytes` processed so far.
    void update(uint64_t i, uint64_t bytes, std::string_view what);
    void done();

private:
    std::string label_;
    uint64_t total_items_, total_bytes_;
    bool enabled_, finished_ = false;
    std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace oiw
