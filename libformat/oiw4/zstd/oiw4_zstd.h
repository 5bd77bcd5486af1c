// zstd shipping form of OIW4 files (its own library, the only one linking libzstd): every plane
// becomes one independently decodable zstd frame with its content size and content checksum; the
// header's compressed flag and each plane's codec mark it (docs/OIW4.md).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "libformat/oiw4/oiw4.h"

namespace oiw {

// Planes and bytes per encoding name ("oiw4", "q4kx8", "raw", ...): `decoded` = plain bytes,
// `stored` = bytes in the compressed form (the output of a compression, the input of a
// decompression; a plane left uncompressed counts its plain bytes).
struct CodecTotals {
    uint64_t planes = 0, decoded = 0, stored = 0;
};
using CodecReport = std::map<std::string, CodecTotals>;

inline constexpr uint64_t kDefaultCodecWindow = uint64_t{256} << 20;

struct CodecOptions {
    int level = 3;                                // zstd level, 1..ZSTD_maxCLevel() (compression only)
    unsigned threads = 0;                         // worker threads (0: thread_count(0, planes))
    uint64_t window_bytes = kDefaultCodecWindow;  // output bytes of planes held in memory at once; a
                                                  // plane larger than this is streamed by the writer
    // Called on the writing thread after each plane of tensor `tensor` (`name`) with the input
    // bytes processed so far.
    std::function<void(size_t tensor, uint64_t bytes, std::string_view name)> progress;
};

// Writes `in` to `out_path` with every uncompressed plane compressed at `o.level` (planes already
// compressed are kept). Planes are compressed in parallel, written in order: the output bytes do
// not depend on the thread count or window. Metadata and directory stay as they are.
CodecReport compress_oiw4(const Oiw4File& in, const std::string& out_path, const CodecOptions& o);
// Writes `in` to `out_path` with every plane decoded (in parallel, written in order); a frame
// that is corrupt, truncated, fails its content checksum, lacks the content size or checksum
// flag, declares another content size than the plane's or has trailing bytes is a FormatError
// naming the file, tensor and plane.
CodecReport decompress_oiw4(const Oiw4File& in, const std::string& out_path, const CodecOptions& o);
// Plane `p` of tensor `i` decoded into memory (an uncompressed plane is copied), with the checks
// of decompress_oiw4.
std::vector<uint8_t> decode_plane(const Oiw4File& in, size_t i, size_t p);

}  // namespace oiw
