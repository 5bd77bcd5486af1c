// Reading text inputs: small ones (tensor-type files, @FILE arrays, runtime profiles) whole, large
// ones (gguf-prune-vocab --keep-text) in blocks.
#pragma once
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace oiw {

// Largest text input read by default: 64 MiB (a 256k-token vocabulary list is a few MB).
inline constexpr size_t kMaxTextFileBytes = size_t{64} << 20;

// The bytes of the text input `path`: a regular file, or a pipe, FIFO or character device read to
// its end (opened as an input: see InputFd with streams). Throws FormatError naming the path: Io
// when it cannot be opened/read or is a directory, TooLarge when it holds more than `cap` bytes
// (checked while reading, so a growing file or an endless device cannot exceed it).
std::string read_text_file(const std::string& path, size_t cap = kMaxTextFileBytes);
// The same checks and errors, the bytes handed to `block` as they are read (64 KiB at a time), so
// memory does not grow with the file.
void read_text_blocks(const std::string& path, size_t cap, const std::function<void(std::string_view)>& block);

// The lines of `text` as std::getline splits them: on '\n', a final line without '\n' kept, no
// empty element after a trailing '\n'.
std::vector<std::string> split_lines(std::string_view text);

}  // namespace oiw
