#include "converters/hf/sentencepiece.h"

#include <cstring>
#include <string_view>

#include <fmt/format.h>

#include "libformat/error.h"

namespace oiw::hf {
namespace {

// Bounded reader of protobuf wire data; errors name the file and `what` is being read.
class Wire {
public:
    Wire(std::span<const uint8_t> b, const std::string& file, std::string subject)
        : b_(b), file_(file), subject_(std::move(subject)) {}
    bool done() const { return pos_ == b_.size(); }
    uint64_t varint() {
        uint64_t v = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (pos_ == b_.size()) fail(ErrorKind::Truncated, "varint runs past the end");
            const uint8_t c = b_[pos_++];
            v |= static_cast<uint64_t>(c & 0x7f) << shift;
            if (!(c & 0x80)) return v;
        }
        fail(ErrorKind::BadData, "varint longer than 10 bytes");
    }
    std::span<const uint8_t> bytes() {
        const uint64_t n = varint();
        if (n > b_.size() - pos_) fail(ErrorKind::Truncated, fmt::format("length {} runs past the end", n));
        const auto s = b_.subspan(pos_, n);
        pos_ += n;
        return s;
    }
    uint32_t fixed32() {
        if (b_.size() - pos_ < 4) fail(ErrorKind::Truncated, "fixed32 runs past the end");
        uint32_t v;
        std::memcpy(&v, b_.data() + pos_, 4);
        pos_ += 4;
        return v;
    }
    // Skips a field of wire type `wt`.
    void skip(uint64_t wt) {
        if (wt == 0)
            (void)varint();
        else if (wt == 2)
            (void)bytes();
        else if (wt == 5)
            (void)fixed32();
        else if (wt == 1) {
            if (b_.size() - pos_ < 8) fail(ErrorKind::Truncated, "fixed64 runs past the end");
            pos_ += 8;
        } else
            fail(ErrorKind::BadData, fmt::format("wire type {} (a group or unknown)", wt));
    }
    [[noreturn]] void fail(ErrorKind k, const std::string& what) const {
        throw FormatError(k, file_, subject_, what + fmt::format(" (offset {})", pos_));
    }

private:
    std::span<const uint8_t> b_;
    const std::string& file_;
    std::string subject_;
    size_t pos_ = 0;
};

// Strict UTF-8 (as Python's decoder): no overlong forms, no surrogates, nothing above U+10FFFF.
bool valid_utf8(std::string_view s) {
    for (size_t i = 0; i < s.size();) {
        const auto c = static_cast<uint8_t>(s[i]);
        const size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (n == 0 || i + n > s.size()) return false;
        uint32_t cp = n == 1 ? c : c & (0x7f >> n);
        for (size_t k = 1; k < n; ++k) {
            const auto d = static_cast<uint8_t>(s[i + k]);
            if ((d >> 6) != 2) return false;
            cp = cp << 6 | (d & 0x3f);
        }
        constexpr uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
        i += n;
    }
    return true;
}

SpmPiece read_piece(std::span<const uint8_t> msg, const std::string& file, size_t id) {
    Wire w(msg, file, fmt::format("piece {}", id));
    SpmPiece p;
    while (!w.done()) {
        const uint64_t tag = w.varint(), field = tag >> 3, wt = tag & 7;
        if (field == 1 && wt == 2) {
            const auto s = w.bytes();
            p.piece.assign(reinterpret_cast<const char*>(s.data()), s.size());
        } else if (field == 2 && wt == 5) {
            const uint32_t u = w.fixed32();
            std::memcpy(&p.score, &u, 4);
        } else if (field == 3 && wt == 0) {
            const uint64_t t = w.varint();
            if (t < 1 || t > 6) w.fail(ErrorKind::BadData, fmt::format("type {} is not a SentencePiece type", t));
            p.type = static_cast<SpmType>(t);
        } else {
            w.skip(wt);
        }
    }
    if (p.piece.empty()) w.fail(ErrorKind::BadData, "empty piece");
    return p;
}

}  // namespace

std::vector<SpmPiece> read_spm_pieces(std::span<const uint8_t> bytes, const std::string& file) {
    Wire w(bytes, file, "");
    std::vector<SpmPiece> pieces;
    while (!w.done()) {
        const uint64_t tag = w.varint(), field = tag >> 3, wt = tag & 7;
        if (field == 1 && wt == 2)
            pieces.push_back(read_piece(w.bytes(), file, pieces.size()));
        else
            w.skip(wt);
    }
    if (pieces.empty()) throw FormatError(ErrorKind::BadData, file, "", "no pieces: not a SentencePiece model");
    for (size_t i = 0; i < pieces.size(); ++i)
        if (!valid_utf8(pieces[i].piece))
            throw FormatError(ErrorKind::BadData, file, fmt::format("piece {}", i), "not valid UTF-8");
    return pieces;
}

}  // namespace oiw::hf
