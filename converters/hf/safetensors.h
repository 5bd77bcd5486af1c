// Hugging Face safetensors files, validated before any tensor is handed out.
//
//   file   := u64 N (little-endian) | N bytes of JSON header (UTF-8, may end in spaces) | data
//   header := { "__metadata__": { str: str, ... },                        (optional)
//               "<name>": { "dtype": "BF16", "shape": [d0, d1, ...],      (d0 outermost)
//                           "data_offsets": [begin, end] }, ... }         (relative to data)
//
// Valid when (as huggingface/safetensors' own validate): N fits in the file and is at most
// kMaxHeaderBytes; the header is one well-formed JSON object nested at most kMaxJsonDepth deep, no
// object repeats a key; every dtype is known; elements(shape) x dtype size == end - begin (checked
// arithmetic); in offset order the spans tile the data section exactly: no gap, no overlap, no
// byte outside, none left over.
#pragma once
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "libformat/io/mapped_file.h"

namespace oiw::hf {

// huggingface/safetensors' MAX_HEADER_SIZE: a larger header is refused before it is read.
inline constexpr uint64_t kMaxHeaderBytes = 100'000'000;
// Deepest JSON nesting accepted in a header or an index (a header needs 3: object, tensor, shape).
inline constexpr int kMaxJsonDepth = 8;
// Most dimensions a tensor may have (the converter writes at most 4 after merging).
inline constexpr size_t kMaxRank = 8;

enum class Dtype : uint8_t { Bool, U8, I8, I16, U16, I32, U32, I64, U64, F16, BF16, F32, F64, F8E4M3, F8E5M2 };

// "BF16", "F8_E4M3", ... as safetensors spells them.
const char* dtype_name(Dtype d);
// Bytes per element.
uint64_t dtype_size(Dtype d);

struct Tensor {
    std::string name;
    Dtype dtype = Dtype::F32;
    std::vector<uint64_t> shape;  // outermost first, as in the file (reversed from ggml's ne)
    uint64_t elements = 1;
    uint64_t offset = 0;  // of the first byte, from the start of the file
    uint64_t size = 0;    // bytes
};

struct Header {
    std::vector<Tensor> tensors;                  // sorted by name, as the Python converter and safetensors list them
    std::map<std::string, std::string> metadata;  // "__metadata__"
};

// Parses and validates the N header bytes of a file whose data section (after the header) is
// `data_size` bytes. Throws FormatError naming `file`, the tensor and what was wrong.
Header parse_header(std::string_view json, uint64_t data_size, const std::string& file);

struct TensorDecl {
    std::string name;
    Dtype dtype = Dtype::F32;
    std::vector<uint64_t> shape;  // outermost first
};

// The bytes before the data of a safetensors file holding `decls` back to back in that order: the
// u64 length, then the JSON header (__metadata__ first when given) padded with spaces to a multiple
// of 8 bytes, as the safetensors library pads it. Throws FormatError(TooLarge) past kMaxHeaderBytes.
std::vector<uint8_t> header_bytes(const std::vector<TensorDecl>& decls,
                                  const std::map<std::string, std::string>& metadata);

// Validates a whole safetensors image (length prefix, header, spans); offsets come back absolute.
// Throws FormatError naming `file`.
Header parse_image(std::span<const uint8_t> image, const std::string& file);

// One mapped, validated safetensors file.
class File {
public:
    // Maps `path` and validates it as parse_image does; throws FormatError.
    explicit File(const std::string& path);
    const std::string& path() const { return path_; }
    const std::vector<Tensor>& tensors() const { return header_.tensors; }
    const std::map<std::string, std::string>& metadata() const { return header_.metadata; }
    // The tensor called `name`, or null.
    const Tensor* find(std::string_view name) const;
    // The tensor's bytes (inside the mapping; valid while the File lives).
    std::span<const uint8_t> bytes(const Tensor& t) const { return map_.bytes().subspan(t.offset, t.size); }
    // Lets the kernel drop the tensor's pages from this process (memory stays flat while streaming).
    void release(const Tensor& t) const { map_.release(t.offset, t.size); }

private:
    std::string path_;
    MappedFile map_;
    Header header_;
};

}  // namespace oiw::hf
