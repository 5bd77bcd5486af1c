// zstd shipping form of OIW4 files (its own library, the only one linking libzstd): every plane
// becomes one independently decodable zstd frame with its content size and content checksum; the
// header's compressed flag and each plane's codec mark it (docs/OIW4.md).
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "libformat/oiw4/oiw4.h"

namespace oiw {

// Bytes before and after, summed per encoding name ("oiw4", "q4kx8", "raw", ...).
struct CodecTotals {
    uint64_t decoded = 0, stored = 0;
};
using CodecReport = std::map<std::string, CodecTotals>;

// Writes `in` to `out_path` with every uncompressed plane compressed at `level` (1..19) using
// `threads` zstd workers (0: one per hardware thread). Metadata and directory stay as they are.
CodecReport compress_oiw4(const Oiw4File& in, const std::string& out_path, int level, unsigned threads);
// Writes `in` to `out_path` with every plane decoded; a frame that is corrupt, fails its content
// checksum or does not decode to the plane's size is a FormatError naming the tensor and plane.
CodecReport decompress_oiw4(const Oiw4File& in, const std::string& out_path);

}  // namespace oiw
