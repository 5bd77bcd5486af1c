// The one error type of libformat: every message names the file, the key or tensor, and the value.
#pragma once
#include <stdexcept>
#include <string>

namespace oiw {

enum class ErrorKind {
    Io,               // open/read/write/rename failed
    Truncated,        // a field runs past the end of the file
    BadMagic,         // wrong magic: not a GGUF (or OIW4) file
    BigEndian,        // byte-swapped GGUF (refused)
    BadVersion,       // unsupported version (GGUF: not 2 or 3; OIW4: not 1)
    TooLarge,         // count or length exceeds what the file can hold
    BadValueType,     // unknown metadata value type / array element type
    BadKey,           // empty key, or a reserved key with the wrong type/value
    DuplicateKey,     // key repeated
    DuplicateTensor,  // tensor name repeated
    BadDims,          // n_dims > 4, dim < 1, or element count overflows
    BadType,          // unknown tensor type id
    RemovedType,      // type id retired from ggml
    BadBlock,         // ne0 not a multiple of the block size
    BadAlignment,     // general.alignment zero or not a power of two
    Misaligned,       // tensor offset not a multiple of the alignment
    OutOfBounds,      // tensor bytes outside the file
    Overlap,          // two tensors share bytes
    Usage,            // caller error: bad argument, refusing to overwrite input, ...
    Unsupported,      // valid but not handled (e.g. a type without a kernel)
    BadData,          // tensor data or importance values that are NaN, infinite or out of range
    BadChecksum,      // stored checksum does not match the bytes (OIW4 header or plane)
    BadEncoding,      // unknown OIW4 encoding/codec, or one the tensor's type or shape cannot take
    BadSplit,         // split model: missing shard, shard of another split, split keys that disagree
    BadJson,          // JSON document (safetensors header, index, config): malformed, or a field missing or mistyped
};

// Short stable name of a kind ("truncated", "duplicate-key", ...).
const char* error_kind_name(ErrorKind k);

class FormatError : public std::runtime_error {
public:
    // Message: "<file>: <subject>: <what>" (subject omitted when empty), passed through
    // escape_text (backslashes kept) so that it is one line free of control bytes whatever names
    // it carries.
    FormatError(ErrorKind kind, const std::string& file, const std::string& subject, const std::string& what);
    ErrorKind kind() const { return kind_; }
    const std::string& file() const { return file_; }
    const std::string& subject() const { return subject_; }

private:
    ErrorKind kind_;
    std::string file_, subject_;
};

}  // namespace oiw
