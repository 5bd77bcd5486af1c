// OIW4 container (docs/OIW4.md): GGUF metadata kept exactly, a tensor directory, and per-tensor
// data planes aligned to 4096 bytes in the layout a CPU kernel reads. Validated reader over a
// read-only mmap handing out plane views, and a streaming writer (temp file + fsync + rename).
//
//   file := header (64 bytes) | directory | zero padding to 4096 | planes (each 4096-aligned)
//   header := "OIW4" | u32 version=1 | u32 flags | u32 plane_alignment=4096 | u64 dir_offset=64
//             | u64 dir_size | u64 data_offset | u64 file_size | u64 n_tensors | u64 header_xxh3
//   directory := u64 len | GGUF image of the source KVs | u64 len | GGUF image of oiw4.* keys
//                | n_tensors x (str name | u32 n_dims | n_dims x i64 ne | u32 ggml_type
//                             | u32 encoding | u32 n_planes | n_planes x plane)
//   plane := u32 codec | u32 reserved=0 | u64 offset (absolute) | u64 size (stored) | u64 xxh3 (stored bytes)
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "libformat/gguf/gguf.h"

namespace oiw {

inline constexpr uint32_t kOiw4Version = 1;
inline constexpr uint64_t kOiw4HeaderSize = 64;
inline constexpr uint64_t kOiw4PlaneAlign = 4096;
inline constexpr uint32_t kOiw4FlagCompressed = 1;  // some plane is zstd-compressed

enum class Oiw4Encoding : uint32_t { Raw = 0, Oiw4 = 1, Q4Kx8 = 2, Q4Kx8Il4 = 3 };
inline constexpr uint32_t kOiw4EncodingCount = 4;
enum class Oiw4Codec : uint32_t { None = 0, Zstd = 1 };

// "raw", "oiw4", "q4kx8", "q4kx8-il4".
std::string_view encoding_name(Oiw4Encoding e);
// Parses an encoding name (exact, lower case); nullopt when unknown.
std::optional<Oiw4Encoding> encoding_from_name(std::string_view name);
// "none", "zstd".
std::string_view codec_name(Oiw4Codec c);

// Name and decoded byte size of one plane of an encoding.
struct PlaneSpec {
    std::string_view name;
    uint64_t size = 0;
};
// The planes of `t` (shape and source type) under `enc`: raw -> "data" (the GGUF bytes); oiw4 ->
// "qs" (rows x cols/32 x 16) and "d" (rows x cols/32 fp32); q4kx8(-il4) -> "blocks" (Q4_K only,
// rows a multiple of 8). Throws FormatError(BadEncoding) naming `file` and the tensor when the
// tensor cannot take `enc`.
std::vector<PlaneSpec> encoding_planes(Oiw4Encoding enc, const GgufTensorInfo& t, const std::string& file);

struct Oiw4Plane {
    std::string_view name;
    Oiw4Codec codec = Oiw4Codec::None;
    uint64_t offset = 0;        // absolute file offset, multiple of 4096
    uint64_t size = 0;          // stored bytes
    uint64_t decoded_size = 0;  // bytes once decoded (== size when codec is None)
    uint64_t xxh3 = 0;          // XXH3-64 of the stored bytes
};

struct Oiw4Tensor {
    GgufTensorInfo info;  // name, shape, source ggml type, n_bytes of the GGUF tensor (offset unused)
    Oiw4Encoding encoding = Oiw4Encoding::Raw;
    std::vector<Oiw4Plane> planes;
};

// An oiw4-encoded tensor as the W4A8 kernels read it: `qs` = rows x (cols/32) x 16 bytes (byte j of
// a block: weight j in the low nibble, weight j+16 in the high nibble, w = d * (q - 8)), `d` =
// rows x (cols/32) fp32 scales; rows contiguous, row-major.
struct Oiw4View {
    const uint8_t* qs = nullptr;
    const float* d = nullptr;
    int64_t rows = 0, cols = 0;
};

class MappedFile;

// A validated OIW4 file: header checksum, directory bounds, encodings, plane bounds, alignment,
// overlap, zero padding and the end of the file are checked on open; a plane's contents (its XXH3)
// are checked once, at the first access through plane_data() / oiw4_view(), by every thread alike.
class Oiw4File {
public:
    // Maps and validates `path`. Throws FormatError naming the file and the offending tensor/plane.
    static Oiw4File open(const std::string& path);
    // Validates an in-memory image (tests, fuzzer); the caller keeps `bytes` alive.
    static Oiw4File parse(std::span<const uint8_t> bytes, const std::string& name);

    const std::string& path() const { return path_; }
    uint32_t flags() const { return flags_; }
    bool compressed() const { return (flags_ & kOiw4FlagCompressed) != 0; }
    uint64_t file_size() const { return bytes_.size(); }
    uint64_t data_offset() const { return data_offset_; }
    uint64_t header_xxh3() const { return header_xxh3_; }
    uint32_t gguf_version() const { return gguf_version_; }     // version of the source GGUF
    const Metadata& metadata() const { return kvs_; }           // the source's metadata, in order
    const Metadata& provenance() const { return provenance_; }  // oiw4.* keys
    const std::vector<Oiw4Tensor>& tensors() const { return tensors_; }
    // Index of the tensor or -1.
    int64_t find_tensor(std::string_view name) const;
    // Zero-copy view of plane `p` of tensor `i` (stored bytes), verified: throws
    // FormatError(BadChecksum) naming the file, tensor and plane when its XXH3 does not match.
    std::span<const uint8_t> plane_data(size_t i, size_t p) const;
    // The stored bytes of plane `p` of tensor `i` without the checksum check (verify_planes, tests).
    std::span<const uint8_t> unverified_plane_data(size_t i, size_t p) const;
    // True when plane `p` of tensor `i` matches its XXH3; hashed once (a match is remembered,
    // thread-safe), so later accesses cost nothing.
    bool plane_intact(size_t i, size_t p) const;
    // Throws FormatError(BadChecksum) naming the file, tensor and plane unless plane_intact(i, p).
    void verify_plane(size_t i, size_t p) const;
    // The oiw4 planes of tensor `i`, verified as plane_data. Throws FormatError(BadEncoding) unless
    // it is an uncompressed oiw4 tensor (Misaligned if a parse() buffer leaves the d plane
    // unaligned for float).
    Oiw4View oiw4_view(size_t i) const;
    // Throws FormatError(Unsupported) naming tensor `i` and the plane when one of its planes is compressed.
    void require_decoded(size_t i) const;
    // Tells the kernel tensor i's pages are no longer needed (streaming converters).
    void release_tensor_pages(size_t i) const;

private:
    std::string path_;
    std::shared_ptr<const MappedFile> map_;
    std::span<const uint8_t> bytes_;
    uint32_t flags_ = 0, gguf_version_ = 3;
    uint64_t data_offset_ = 0, header_xxh3_ = 0, dir_end_ = 0;
    Metadata kvs_, provenance_;
    std::vector<Oiw4Tensor> tensors_;
    std::unordered_map<std::string, size_t> tensor_index_;  // name -> index in tensors_
    std::vector<size_t> first_plane_;                       // per tensor: index of its plane 0 in verified_
    std::shared_ptr<std::atomic<bool>[]> verified_;         // per plane: its XXH3 matched (shared by copies)
    void parse_image();
    void check_layout() const;
};

struct PlaneMismatch {
    std::string tensor;
    std::string plane;
};
// Recomputes the XXH3-64 of every plane not yet verified; returns the planes whose bytes do not
// match (empty: all good).
std::vector<PlaneMismatch> verify_planes(const Oiw4File& f);

// Streams an OIW4 file: metadata and tensors first, then every tensor's planes in directory order.
// The directory and header are written last (their size is known up front). Output goes to a temp
// file beside `path`; finish() fsyncs and renames it; an unfinished writer removes it.
class Oiw4Writer {
public:
    // `inputs`: files the caller reads from; writing over any of them is refused.
    Oiw4Writer(std::string path, std::vector<std::string> inputs);
    ~Oiw4Writer();
    Oiw4Writer(const Oiw4Writer&) = delete;
    Oiw4Writer& operator=(const Oiw4Writer&) = delete;

    // The source GGUF's version and metadata (kept byte-exact) and the oiw4.* provenance keys.
    void set_metadata(uint32_t gguf_version, Metadata kvs, Metadata provenance);
    // Adds a tensor (shape and source type from `info`) under `enc`. Throws BadEncoding if impossible.
    void add_tensor(const GgufTensorInfo& info, Oiw4Encoding enc);
    const std::vector<Oiw4Tensor>& tensors() const { return tensors_; }
    // Output size when every plane is stored uncompressed.
    uint64_t planned_size() const;

    // Starts the next plane (directory order); its stored bytes follow through append().
    void begin_plane(Oiw4Codec codec = Oiw4Codec::None);
    void append(std::span<const uint8_t> bytes);
    // Ends the plane; an uncompressed plane must have exactly its decoded size.
    void end_plane();
    // begin_plane + append + end_plane.
    void write_plane(std::span<const uint8_t> bytes, Oiw4Codec codec = Oiw4Codec::None);
    // Writes directory and header, fsyncs, renames into place. Throws if planes are missing.
    void finish();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
    std::string path_;
    std::vector<std::string> inputs_;
    uint32_t gguf_version_ = 3;
    Metadata kvs_, provenance_;
    std::vector<Oiw4Tensor> tensors_;
    std::unordered_set<std::string> names_;  // of tensors_: the duplicate check is O(1), not a scan
    size_t cur_tensor_ = 0, cur_plane_ = 0;
    bool in_plane_ = false;
    std::vector<uint8_t> directory() const;
};

// True when `bytes` starts with the OIW4 magic.
bool is_oiw4_image(std::span<const uint8_t> bytes);

// The header_xxh3 field's value: XXH3-64 of the header's first 56 bytes followed by the directory.
uint64_t oiw4_header_checksum(std::span<const uint8_t> head56, std::span<const uint8_t> dir);
// True when the regular file at `path` starts with the OIW4 magic; throws FormatError(Io) naming
// `path` when it cannot be opened or is not a regular file (a FIFO or device never blocks).
bool is_oiw4_file(const std::string& path);

}  // namespace oiw
