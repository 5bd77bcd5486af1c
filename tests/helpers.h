// Shared test helpers: locating ../shared, temp dirs, hashing, running tools.
#pragma once
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace oiw::test {

// Absolute path of a file under ../shared (e.g. "fixtures/tiny-llama-f16.gguf").
std::string shared_path(const std::string& rel);
// Absolute path of a built tool (e.g. "gguf-inspect").
std::string tool_path(const std::string& name);
// A fresh empty directory, unique per call, removed at process exit.
std::filesystem::path temp_dir();
// Whole file as bytes.
std::vector<uint8_t> read_file(const std::string& path);
void write_file(const std::string& path, std::span<const uint8_t> bytes);
// Lower-case hex SHA-256.
std::string sha256_hex(std::span<const uint8_t> bytes);
// Runs a shell command; returns exit status, captures stdout (and stderr if merge_stderr).
int run(const std::string& cmd, std::string* out = nullptr, bool merge_stderr = false);
// Every *.gguf under ../shared/fixtures (recursively), sorted.
std::vector<std::string> fixture_files();

}  // namespace oiw::test
