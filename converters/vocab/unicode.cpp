#include "converters/vocab/unicode.h"

#include <algorithm>
#include <array>
#include <stdexcept>

namespace oiw::vocab {

extern const CodepointRange kLetterRanges[];
extern const size_t kLetterRanges_count;
extern const CodepointRange kNumberRanges[];
extern const size_t kNumberRanges_count;

namespace {

constexpr uint32_t kReplacement = 0xFFFD;
constexpr uint32_t kMaxCodepoint = 0x10FFFF;

bool in_ranges(const CodepointRange* r, size_t n, uint32_t cpt) {
    const CodepointRange* end = r + n;
    const CodepointRange* it =
        std::upper_bound(r, end, cpt, [](uint32_t c, const CodepointRange& x) { return c < x.first; });
    return it != r && cpt <= (it - 1)->last;
}

bool continuation(std::string_view s, size_t i) { return (static_cast<uint8_t>(s[i]) & 0xC0) == 0x80; }

// One code point at `off` (advanced), or nullopt-like failure signalled by returning false.
bool decode_one(std::string_view s, size_t& off, uint32_t& cpt) {
    const auto b = [&](size_t k) { return static_cast<uint32_t>(static_cast<uint8_t>(s[off + k])); };
    const uint32_t c0 = b(0);
    if (!(c0 & 0x80)) {
        cpt = c0;
        off += 1;
        return true;
    }
    if (!(c0 & 0x40)) return false;
    if (!(c0 & 0x20)) {
        if (off + 1 >= s.size() || !continuation(s, off + 1)) return false;
        cpt = ((c0 & 0x1F) << 6) | (b(1) & 0x3F);
        off += 2;
        return true;
    }
    if (!(c0 & 0x10)) {
        if (off + 2 >= s.size() || !continuation(s, off + 1) || !continuation(s, off + 2)) return false;
        cpt = ((c0 & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F);
        off += 3;
        return true;
    }
    if (!(c0 & 0x08)) {
        if (off + 3 >= s.size() || !continuation(s, off + 1) || !continuation(s, off + 2) || !continuation(s, off + 3))
            return false;
        cpt = ((c0 & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F);
        if (cpt > kMaxCodepoint) return false;  // llama.cpp throws later (unicode_cpt_to_utf8); we substitute
        off += 4;
        return true;
    }
    return false;
}

std::array<std::string, 256> make_byte_map() {
    std::array<std::string, 256> map;
    std::array<bool, 256> printable{};
    for (int ch = 0x21; ch <= 0x7E; ++ch) printable[ch] = true;
    for (int ch = 0xA1; ch <= 0xAC; ++ch) printable[ch] = true;
    for (int ch = 0xAE; ch <= 0xFF; ++ch) printable[ch] = true;
    uint32_t n = 0;
    for (int ch = 0; ch < 256; ++ch) map[ch] = encode_utf8(printable[ch] ? static_cast<uint32_t>(ch) : 256 + n++);
    return map;
}

// decode_utf8, also giving each code point's byte offset when `offsets` is set.
std::vector<uint32_t> decode_utf8(std::string_view text, std::vector<size_t>* offsets) {
    std::vector<uint32_t> out;
    out.reserve(text.size());
    for (size_t off = 0; off < text.size();) {
        if (offsets) offsets->push_back(off);
        uint32_t cpt = 0;
        if (!decode_one(text, off, cpt)) {
            ++off;
            cpt = kReplacement;
        }
        out.push_back(cpt);
    }
    return out;
}

}  // namespace

size_t utf8_len(char lead) {
    static constexpr size_t lookup[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return lookup[static_cast<uint8_t>(lead) >> 4];
}

std::vector<uint32_t> decode_utf8(std::string_view text) { return decode_utf8(text, nullptr); }

std::string encode_utf8(uint32_t cpt) {
    std::string r;
    if (cpt <= 0x7F) {
        r += static_cast<char>(cpt);
    } else if (cpt <= 0x7FF) {
        r += static_cast<char>(0xC0 | (cpt >> 6));
        r += static_cast<char>(0x80 | (cpt & 0x3F));
    } else if (cpt <= 0xFFFF) {
        r += static_cast<char>(0xE0 | (cpt >> 12));
        r += static_cast<char>(0x80 | ((cpt >> 6) & 0x3F));
        r += static_cast<char>(0x80 | (cpt & 0x3F));
    } else if (cpt <= kMaxCodepoint) {
        r += static_cast<char>(0xF0 | (cpt >> 18));
        r += static_cast<char>(0x80 | ((cpt >> 12) & 0x3F));
        r += static_cast<char>(0x80 | ((cpt >> 6) & 0x3F));
        r += static_cast<char>(0x80 | (cpt & 0x3F));
    } else {
        throw std::invalid_argument("invalid codepoint");
    }
    return r;
}

bool is_letter(uint32_t cpt) { return in_ranges(kLetterRanges, kLetterRanges_count, cpt); }
bool is_number(uint32_t cpt) { return in_ranges(kNumberRanges, kNumberRanges_count, cpt); }

bool is_whitespace(uint32_t cpt) {
    return (cpt >= 0x09 && cpt <= 0x0D) || cpt == 0x20 || cpt == 0x85 || cpt == 0xA0 || cpt == 0x1680 ||
           (cpt >= 0x2000 && cpt <= 0x200A) || cpt == 0x2028 || cpt == 0x2029 || cpt == 0x202F || cpt == 0x205F ||
           cpt == 0x3000;
}

const std::string& byte_to_unicode(uint8_t b) {
    static const std::array<std::string, 256> map = make_byte_map();
    return map[b];
}

std::vector<std::string> gpt2_pretokenize(std::string_view text, size_t* consumed) {
    std::vector<size_t> offsets;  // byte offset of each code point (kept only with `consumed`)
    const std::vector<uint32_t> cpts = decode_utf8(text, consumed ? &offsets : nullptr);
    const size_t end = cpts.size();
    // Code points [0, settled) decode the same whatever follows: decode_one reads at most 4 bytes.
    size_t settled = end;
    if (consumed) {
        settled = 0;
        while (settled < end && offsets[settled] + 4 <= text.size()) ++settled;
    }
    // Outside the text a position has no class at all (llama.cpp's empty flags): it is neither
    // whitespace, letter, number nor "other".
    enum : uint8_t { kNone = 0, kLetter = 1, kNumber = 2, kSpace = 4, kOther = 8 };
    const auto cls = [&](size_t p) -> uint8_t {
        if (p >= end) return kNone;
        const uint32_t c = cpts[p];
        if (is_whitespace(c)) return kSpace;  // llama.cpp tests whitespace alongside the category
        if (is_letter(c)) return kLetter;
        if (is_number(c)) return kNumber;
        return kOther;
    };
    const auto cpt_at = [&](size_t p) -> uint32_t { return p < end ? cpts[p] : 0xFFFFFFFFu; };

    std::vector<std::pair<size_t, size_t>> pieces;  // [begin, end) in code points
    size_t prev = 0;
    const auto add = [&](size_t e) {
        if (e > prev) pieces.emplace_back(prev, e);
        prev = e;
    };
    for (size_t pos = 0; pos < end;) {
        const uint32_t c = cpts[pos];
        if (c == '\'' && pos + 1 < end) {  // 's|'t|'re|'ve|'m|'ll|'d
            const uint32_t n1 = cpt_at(pos + 1);
            if (n1 == 's' || n1 == 't' || n1 == 'm' || n1 == 'd') {
                add(pos + 2);
                pos += 2;
                continue;
            }
            if (pos + 2 < end) {
                const uint32_t n2 = cpt_at(pos + 2);
                if ((n1 == 'r' && n2 == 'e') || (n1 == 'v' && n2 == 'e') || (n1 == 'l' && n2 == 'l')) {
                    add(pos + 3);
                    pos += 3;
                    continue;
                }
            }
        }
        const uint8_t k = c == ' ' ? cls(pos + 1) : cls(pos);
        if (k == kLetter || k == kNumber || k == kOther) {  // ' ?\p{L}+', ' ?\p{N}+', ' ?[^\s\p{L}\p{N}]+'
            pos += (c == ' ');
            while (cls(pos) == k) ++pos;
            add(pos);
            continue;
        }
        size_t n_ws = 0;
        while (cls(pos + n_ws) == kSpace) ++n_ws;
        if (n_ws > 1 && pos + n_ws < end) {  // \s+(?!\S): leave the last space to the next piece
            pos += n_ws - 1;
            add(pos);
            continue;
        }
        if (n_ws > 0) {  // \s+
            pos += n_ws;
            add(pos);
            continue;
        }
        add(++pos);  // no match: one code point
    }

    if (consumed) {
        // The match of a piece [b, e) reads code points up to max(e + 1, b + 2) at most (the
        // contractions look 2 ahead, \s+(?!\S) one past its end): final when those are settled.
        size_t n = 0;
        while (n < pieces.size() && std::max(pieces[n].second + 1, pieces[n].first + 2) < settled) ++n;
        pieces.resize(n);
        *consumed = n ? offsets[pieces.back().second] : 0;
    }
    std::vector<std::string> words;
    words.reserve(pieces.size());
    for (const auto& [b, e] : pieces) {
        std::string w;
        for (size_t i = b; i < e; ++i)
            for (char ch : encode_utf8(cpts[i])) w += byte_to_unicode(static_cast<uint8_t>(ch));
        words.push_back(std::move(w));
    }
    return words;
}

}  // namespace oiw::vocab
