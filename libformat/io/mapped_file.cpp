#include "libformat/io/mapped_file.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

#include <fmt/format.h>

#include "libformat/error.h"
#include "libformat/io/input_file.h"

namespace oiw {
namespace {

// The kernel's per-process mapping limit (vm.max_map_count), or "unknown".
std::string max_map_count() {
    std::ifstream f("/proc/sys/vm/max_map_count");
    std::string v;
    return f >> v ? v : "unknown";
}

}  // namespace

MappedFile::MappedFile(const std::string& path) {
    InputFd in(path);
    size_ = static_cast<size_t>(in.stat().st_size);
    if (size_ > 0) {
        void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, in.fd(), 0);
        if (p == MAP_FAILED) {
            const int e = errno;
            std::string why = std::string("cannot mmap: ") + std::strerror(e);
            // ENOMEM with memory to spare: the process ran out of mappings (one per shard of a split set).
            if (e == ENOMEM)
                why += fmt::format(" (the process may be at vm.max_map_count, {} mappings: /proc/sys/vm/max_map_count)",
                                   max_map_count());
            throw FormatError(ErrorKind::Io, path, "", why);
        }
        data_ = static_cast<const uint8_t*>(p);
    }
}

MappedFile::~MappedFile() {
    if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

void MappedFile::release(uint64_t offset, uint64_t len) const {
    if (!data_ || offset >= size_) return;
    const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    uint64_t begin = (offset + page - 1) / page * page;  // only whole pages inside the range
    uint64_t end = std::min<uint64_t>(offset + len, size_) / page * page;
    if (end > begin) ::madvise(const_cast<uint8_t*>(data_) + begin, end - begin, MADV_DONTNEED);
}

}  // namespace oiw
