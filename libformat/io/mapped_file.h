// Read-only memory map of a whole file (empty files map to an empty span).
#pragma once
#include <cstdint>
#include <span>
#include <string>

namespace oiw {

class MappedFile {
public:
    // Maps the regular file `path` read-only, opened as an input (InputFd: registered, never a
    // FIFO or device). Throws FormatError(Io) naming the path on failure.
    explicit MappedFile(const std::string& path);
    ~MappedFile();
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;
    std::span<const uint8_t> bytes() const { return {data_, size_}; }
    // Drops the page-cache mapping of [offset, offset+len) from this process (MADV_DONTNEED).
    void release(uint64_t offset, uint64_t len) const;

private:
    const uint8_t* data_ = nullptr;
    size_t size_ = 0;
};

}  // namespace oiw
