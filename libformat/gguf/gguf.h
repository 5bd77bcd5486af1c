// GGUF v2/v3 reader (validated, zero-copy over a read-only mmap) and streaming writer.
//
//   file := magic "GGUF" | u32 version | u64 n_tensors | u64 n_kv      (v1 used u32 counts: refused)
//           | n_kv x (str key | u32 vtype | value)
//           | n_tensors x (str name | u32 n_dims | n_dims x i64 ne | u32 ggml_type | u64 offset)
//           | zero padding to `alignment` | data (offsets relative to here, each tensor aligned)
//   str  := u64 len | len bytes (no terminator)
//   array value := u32 elem_type | u64 count | count x elem   (elem_type ARRAY is refused, as ggml does)
#pragma once
#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "libformat/error.h"  // IWYU pragma: export (every parser here throws FormatError)
#include "libformat/gguf/metadata.h"
#include "libformat/types.h"

namespace oiw {

inline constexpr uint64_t kDefaultAlignment = 32;
// Largest general.alignment accepted (read or written). ggml checks only for a power of two, so a
// u32 allows 2^31 and a writer would pad every tensor to 2 GiB. 64 KiB covers the largest base
// page size of the Linux platforms ggml runs on (aarch64 and ppc64 with 64K pages) and keeps the
// padding below 64 KiB per tensor.
inline constexpr uint64_t kMaxAlignment = 64 * 1024;
inline constexpr uint32_t kMaxDims = 4;

struct GgufTensorInfo {
    std::string name;
    uint32_t n_dims = 1;
    std::array<int64_t, kMaxDims> ne = {1, 1, 1, 1};  // ne[0] is the row length
    GgmlType type = GgmlType::F32;
    uint64_t offset = 0;   // relative to the data section
    uint64_t n_bytes = 0;  // derived: row_size(type, ne0) * ne1 * ne2 * ne3

    int64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
    int64_t n_rows() const { return ne[1] * ne[2] * ne[3]; }
    std::vector<int64_t> shape() const { return {ne.begin(), ne.begin() + n_dims}; }
    // "[256, 32000]"
    std::string shape_string() const;
};

// A tensor info for `shape` (ne0 first), validated like a file's (n_dims <= 4, dims >= 1, checked
// sizes, known type, block multiple, name length); n_bytes derived, offset 0. Throws FormatError
// naming `file` (may be empty) and the tensor.
GgufTensorInfo make_tensor_info(const std::string& name, GgmlType type, std::span<const int64_t> shape,
                                const std::string& file = "");

class MappedFile;
class AtomicFile;

// A validated GGUF file. Everything handed out has passed validation; data views stay valid
// while the GgufFile (or a copy of it) lives. Tools read models through open_model
// (libformat/model.h), not through this single-file class.
class GgufFile {
public:
    // Maps and validates `path`. Throws FormatError naming the file and the offending key/tensor.
    static GgufFile open(const std::string& path);
    // Validates a copy of an in-memory image (OIW4's embedded metadata, imatrix files, tests, the
    // fuzzer); the caller's buffer is not referenced afterwards (Oiw4File::parse, by contrast,
    // borrows it). `name` appears in errors.
    static GgufFile parse_copy(std::span<const uint8_t> bytes, const std::string& name);

    const std::string& path() const { return path_; }
    uint32_t version() const { return version_; }
    uint64_t alignment() const { return alignment_; }
    uint64_t data_offset() const { return data_offset_; }  // absolute start of the data section
    uint64_t file_size() const { return bytes_.size(); }
    // End of the last tensor info (before padding).
    uint64_t header_size() const { return header_size_; }
    // True when re-writing this file with GgufWriter reproduces its layout (canonical offsets,
    // ggml padding, nothing trailing): then a copy is byte-identical.
    bool canonical_layout() const;

    const Metadata& metadata() const { return kvs_; }
    const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
    // Index of the tensor or -1.
    int64_t find_tensor(std::string_view name) const;
    // Zero-copy view of tensor i's bytes.
    std::span<const uint8_t> tensor_data(size_t i) const;
    // The whole file image.
    std::span<const uint8_t> bytes() const { return bytes_; }
    // Tells the kernel tensor i's pages are no longer needed (streaming converters).
    void release_tensor_pages(size_t i) const;

private:
    std::string path_;
    std::shared_ptr<const MappedFile> map_;
    std::span<const uint8_t> bytes_;
    std::shared_ptr<const std::vector<uint8_t>> owned_;  // parse_copy(): the copied image
    uint32_t version_ = 3;
    uint64_t alignment_ = kDefaultAlignment;
    uint64_t data_offset_ = 0, header_size_ = 0;
    Metadata kvs_;
    std::vector<GgufTensorInfo> tensors_;
    std::unordered_map<std::string, size_t> tensor_index_;
    void parse_image();
};

// Streams a GGUF file: metadata and tensor infos first, then tensor data one tensor at a time in
// info order. Output goes through an AtomicFile (libformat/io/atomic_file.h: refuses devices and
// the run's inputs, writes through symlinks, keeps the mode); finish() commits it into place.
// Destroying an unfinished writer leaves no temp file. Layout matches ggml's writer:
// offsets are cumulative with each tensor padded to the alignment (general.alignment if set).
// Adding keys and tensors costs O(1) each (hashed duplicate checks, offsets assigned as added).
class GgufWriter {
public:
    // `inputs`: files the caller reads from; writing over any of them is refused (same inode), as
    // over every file opened through InputFd (GgufFile::open, read_text_file).
    GgufWriter(std::string path, std::vector<std::string> inputs = {}, uint32_t version = 3);
    ~GgufWriter();
    GgufWriter(const GgufWriter&) = delete;
    GgufWriter& operator=(const GgufWriter&) = delete;

    // Appends a key; duplicates and a general.alignment that is not a u32 power of two
    // <= kMaxAlignment are refused.
    void add_kv(GgufKV kv);
    // Replaces all keys (each checked as add_kv does).
    void set_kvs(const Metadata& kvs);
    // Adds a tensor info; n_bytes and offset are derived (setting general.alignment later
    // re-derives the offsets once). Validates dims and block multiple.
    void add_tensor(const std::string& name, GgmlType type, std::span<const int64_t> shape);
    const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
    // Total output size once all data is written.
    uint64_t planned_size() const;

    // Writes the header (magic .. padding). Called implicitly by the first write_tensor_data.
    void write_header();
    // Appends the bytes of the next tensor (in add_tensor order); may be called in pieces:
    // a tensor is complete when its n_bytes have been written.
    void write_tensor_data(std::span<const uint8_t> bytes);
    // As write_tensor_data with n zero bytes, left as a hole in the file (AtomicFile::skip):
    // zeros are valid data for every type (sparse synthetic models).
    void write_tensor_zeros(uint64_t n);
    // Commits the output to `path` (AtomicFile::commit). Throws if tensors are incomplete.
    void finish();
    // As finish() without publishing: the file is complete and fsynced (AtomicFile::complete),
    // `path` untouched; the caller publishes file() (AtomicFile::publish_all) or drops it.
    void complete();
    // The output file (null before the header is written).
    AtomicFile* file() { return file_.get(); }
    // With no tensors, pad the header to the alignment (ggml does). Off by default, as gguf-py
    // writes such files: nothing follows the last key.
    void set_pad_empty(bool pad) { pad_empty_ = pad; }

private:
    std::string path_;
    std::vector<std::string> inputs_;
    uint32_t version_;
    Metadata kvs_;
    std::vector<GgufTensorInfo> tensors_;
    std::unordered_set<std::string> tensor_names_;
    uint64_t alignment_ = kDefaultAlignment;
    uint64_t data_size_ = 0;  // end of the last tensor, padded to the alignment
    std::unique_ptr<AtomicFile> file_;
    bool header_done_ = false, pad_empty_ = false;
    size_t cur_tensor_ = 0;
    uint64_t cur_written_ = 0;
    void assign_offsets();
    void out(const void* p, size_t n);
    void pad_zeros(uint64_t n);
    // Appends n bytes of tensor data from p, or a hole of n zeros when p is null.
    void put_tensor_data(const uint8_t* p, uint64_t n);
};

// x rounded up to a multiple of a (a > 0): GGUF's padding of the header and of each tensor.
inline uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

// Serializes just the header (magic .. last tensor info, no padding) the way GgufWriter does.
std::vector<uint8_t> serialize_gguf_header(uint32_t version, const Metadata& kvs,
                                           const std::vector<GgufTensorInfo>& tensors);

}  // namespace oiw
