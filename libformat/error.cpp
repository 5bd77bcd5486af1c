#include "libformat/error.h"

#include "libformat/escape.h"

namespace oiw {

const char* error_kind_name(ErrorKind k) {
    switch (k) {
        case ErrorKind::Io: return "io";
        case ErrorKind::Truncated: return "truncated";
        case ErrorKind::BadMagic: return "bad-magic";
        case ErrorKind::BigEndian: return "big-endian";
        case ErrorKind::BadVersion: return "bad-version";
        case ErrorKind::TooLarge: return "too-large";
        case ErrorKind::BadValueType: return "bad-value-type";
        case ErrorKind::BadKey: return "bad-key";
        case ErrorKind::DuplicateKey: return "duplicate-key";
        case ErrorKind::DuplicateTensor: return "duplicate-tensor";
        case ErrorKind::BadDims: return "bad-dims";
        case ErrorKind::BadType: return "bad-type";
        case ErrorKind::RemovedType: return "removed-type";
        case ErrorKind::BadBlock: return "bad-block";
        case ErrorKind::BadAlignment: return "bad-alignment";
        case ErrorKind::Misaligned: return "misaligned";
        case ErrorKind::OutOfBounds: return "out-of-bounds";
        case ErrorKind::Overlap: return "overlap";
        case ErrorKind::Usage: return "usage";
        case ErrorKind::Unsupported: return "unsupported";
        case ErrorKind::BadData: return "bad-data";
        case ErrorKind::BadChecksum: return "bad-checksum";
        case ErrorKind::BadEncoding: return "bad-encoding";
        case ErrorKind::BadSplit: return "bad-split";
        case ErrorKind::BadJson: return "bad-json";
    }
    return "unknown";
}

static std::string compose(const std::string& file, const std::string& subject, const std::string& what) {
    std::string m = file.empty() ? std::string() : file + ": ";
    if (!subject.empty()) m += subject + ": ";
    return escape_text(m + what, '\0', false);
}

FormatError::FormatError(ErrorKind kind, const std::string& file, const std::string& subject, const std::string& what)
    : std::runtime_error(compose(file, subject, what)), kind_(kind), file_(file), subject_(subject) {}

}  // namespace oiw
