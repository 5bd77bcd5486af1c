#include "converters/vocab/unicode.h"

#include <algorithm>
#include <array>
#include <span>
#include <stdexcept>

namespace oiw::vocab {

extern const CodepointRange kLetterRanges[];
extern const size_t kLetterRanges_count;
extern const CodepointRange kNumberRanges[];
extern const size_t kNumberRanges_count;
extern const CodepointRange kUpperTitleRanges[];  // Lu, Lt
extern const size_t kUpperTitleRanges_count;
extern const CodepointRange kLowerRanges[];  // Ll
extern const size_t kLowerRanges_count;
extern const CodepointRange kModifierOtherMarkRanges[];  // Lm, Lo, M*
extern const size_t kModifierOtherMarkRanges_count;
extern const CodepointRange kMarkRanges[];  // M*
extern const size_t kMarkRanges_count;
extern const CodepointRange kPunctuationRanges[];  // P*
extern const size_t kPunctuationRanges_count;
extern const CodepointRange kSymbolRanges[];  // S*
extern const size_t kSymbolRanges_count;

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
bool is_mark(uint32_t cpt) { return in_ranges(kMarkRanges, kMarkRanges_count, cpt); }
bool is_punctuation(uint32_t cpt) { return in_ranges(kPunctuationRanges, kPunctuationRanges_count, cpt); }
bool is_symbol(uint32_t cpt) { return in_ranges(kSymbolRanges, kSymbolRanges_count, cpt); }
bool is_tekken_upper(uint32_t cpt) {
    return in_ranges(kUpperTitleRanges, kUpperTitleRanges_count, cpt) ||
           in_ranges(kModifierOtherMarkRanges, kModifierOtherMarkRanges_count, cpt);
}
bool is_tekken_lower(uint32_t cpt) {
    return in_ranges(kLowerRanges, kLowerRanges_count, cpt) ||
           in_ranges(kModifierOtherMarkRanges, kModifierOtherMarkRanges_count, cpt);
}

bool is_whitespace(uint32_t cpt) {
    return (cpt >= 0x09 && cpt <= 0x0D) || cpt == 0x20 || cpt == 0x85 || cpt == 0xA0 || cpt == 0x1680 ||
           (cpt >= 0x2000 && cpt <= 0x200A) || cpt == 0x2028 || cpt == 0x2029 || cpt == 0x202F || cpt == 0x205F ||
           cpt == 0x3000;
}

const std::string& byte_to_unicode(uint8_t b) {
    static const std::array<std::string, 256> map = make_byte_map();
    return map[b];
}

namespace {

// A position's class as llama.cpp's splitters test it: whitespace first (tested beside the
// category), then letter, number, anything else; a position outside the text has no class at all
// (llama.cpp's empty flags): it is neither whitespace, letter, number nor "other".
enum : uint8_t { kNone = 0, kLetter = 1, kNumber = 2, kSpace = 4, kOther = 8 };
constexpr uint32_t kOutOfRange = 0xFFFFFFFFu;

// The code points being split, recording how far a rule looked: `reach` is one past the furthest
// position read (inside the text or not) since the last reset, so a piece whose reach lies within
// the settled code points cannot change when more text arrives. A rule sees the code points before
// `end` (its segment's end, the text's end when nothing cut it); reading at or past `end` counts as
// reading up to `end_reach`, the positions that decided that end.
class Cursor {
public:
    Cursor(const std::vector<uint32_t>& cpts, size_t end, size_t end_reach)
        : cpts_(cpts), end_(end), end_reach_(end_reach) {}
    bool has(size_t p) {
        reach = std::max(reach, p < end_ ? p + 1 : end_reach_);
        return p < end_;
    }
    uint32_t cpt(size_t p) { return has(p) ? cpts_[p] : kOutOfRange; }
    size_t begin = 0;  // where the piece being split begins (split_in_sequence's spans)
    // The run of spaces space_piece scanned last, [ws_from, ws_end), and one past its last newline
    // (0: none): Jais-2 cuts one run into many pieces, and a rescan for each would be quadratic.
    size_t ws_from = 0, ws_end = 0, ws_newline = 0;
    bool mark(size_t p) { return has(p) && is_mark(cpts_[p]); }  // \p{M} (a kOther class)
    uint8_t cls(size_t p) {
        if (!has(p)) return kNone;
        const uint32_t c = cpts_[p];
        return is_whitespace(c) ? kSpace : is_letter(c) ? kLetter : is_number(c) ? kNumber : kOther;
    }
    size_t reach = 0;

private:
    const std::vector<uint32_t>& cpts_;
    size_t end_, end_reach_;
};

uint32_t ascii_lower(uint32_t c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

// 's|'t|'re|'ve|'m|'ll|'d at `pos`, case-insensitive when `fold` (ASCII folding is unicode_tolower
// here: no other code point lower-cases to s, t, m, d, r, e, v or l; `long_s` adds Unicode's case
// folding of U+017F to s, as a regex engine's (?i:) does): the end of the match, or 0.
size_t contraction(Cursor& c, size_t pos, bool fold, bool long_s = false) {
    if (c.cpt(pos) != '\'' || !c.has(pos + 1)) return 0;
    const auto low = [&](size_t p) {
        const uint32_t cp = c.cpt(p);
        return !fold ? cp : long_s && cp == 0x17F ? uint32_t{'s'} : ascii_lower(cp);
    };
    const uint32_t n1 = low(pos + 1);
    if (n1 == 's' || n1 == 't' || n1 == 'm' || n1 == 'd') return pos + 2;
    if (!c.has(pos + 2)) return 0;
    const uint32_t n2 = low(pos + 2);
    return (n1 == 'r' && n2 == 'e') || (n1 == 'v' && n2 == 'e') || (n1 == 'l' && n2 == 'l') ? pos + 3 : 0;
}

// \s*[\r\n]+|\s+(?!\S)|\s+ at `pos` (or one code point matching nothing): the end of the piece.
// `cascade`: Jais-2's \s{512}(?!\S)|\s{256}(?!\S)|...|\s{4}(?!\S)|\s{1,2}(?!\S)|\s{1} in place of
// the last two (a run of spaces cut in powers of two, the longest first).
size_t space_piece(Cursor& c, size_t pos, bool cascade = false) {
    if (pos >= c.ws_from && pos < c.ws_end) {
        c.has(c.ws_end);  // what the scan read
    } else {
        c.ws_from = pos, c.ws_newline = 0;
        for (c.ws_end = pos; c.cls(c.ws_end) == kSpace; ++c.ws_end)
            if (c.cpt(c.ws_end) == '\r' || c.cpt(c.ws_end) == '\n') c.ws_newline = c.ws_end + 1;
    }
    const size_t n_ws = c.ws_end - pos;
    const size_t after_newline = c.ws_newline > pos ? c.ws_newline : 0;
    if (after_newline) return after_newline;  // \s*[\r\n]+
    if (cascade) {
        // \s{n}(?!\S): n spaces, then a space or the end of the text.
        for (size_t n = 512; n >= 2; n = n == 4 ? 2 : n / 2)
            if (n_ws > n || (n_ws == n && !c.has(pos + n))) return pos + n;
        return pos + 1;  // \s{1}(?!\S) or \s{1}
    }
    if (n_ws > 1 && c.has(pos + n_ws)) return pos + n_ws - 1;  // \s+(?!\S)
    return pos + std::max<size_t>(n_ws, 1);                    // \s+, or one code point matching nothing
}

// unicode_regex_split_custom_gpt2: the end of the piece starting at `pos`.
size_t gpt2_piece(Cursor& c, size_t pos) {
    if (const size_t e = contraction(c, pos, false)) return e;
    const uint32_t cp = c.cpt(pos);
    const uint8_t k = cp == ' ' ? c.cls(pos + 1) : c.cls(pos);
    if (k == kLetter || k == kNumber || k == kOther) {  // ' ?\p{L}+', ' ?\p{N}+', ' ?[^\s\p{L}\p{N}]+'
        size_t e = pos + (cp == ' ');
        while (c.cls(e) == k) ++e;
        return e;
    }
    size_t n_ws = 0;
    while (c.cls(pos + n_ws) == kSpace) ++n_ws;
    if (n_ws > 1 && c.has(pos + n_ws)) return pos + n_ws - 1;  // \s+(?!\S): the last space starts the next piece
    return pos + std::max<size_t>(n_ws, 1);                    // \s+, or one code point matching nothing
}

// The Llama 3 family (unicode.h) at `pos`: unicode_regex_split_custom_llama3 (max_digits 3) and
// _qwen2 (max_digits 1), and the regexes llama.cpp runs through std::regex that differ from them in one
// alternative: Seed-Coder's (no [\r\n]* after a run of other characters: `tail` false) and Jais-2's
// (`cascade`, see space_piece).
size_t llama3_piece(Cursor& c, size_t pos, size_t max_digits, bool tail = true, bool cascade = false) {
    if (const size_t e = contraction(c, pos, true)) return e;
    const uint32_t cp = c.cpt(pos);
    const uint8_t k = c.cls(pos);
    if (cp != '\r' && cp != '\n' && k != kNumber && (k == kLetter || c.cls(pos + 1) == kLetter)) {
        size_t e = pos + 1;  // [^\r\n\p{L}\p{N}]?\p{L}+
        while (c.cls(e) == kLetter) ++e;
        return e;
    }
    if (k == kNumber) {  // \p{N}{1,max_digits}
        size_t e = pos;
        while (e - pos < max_digits && c.cls(e) == kNumber) ++e;
        return e;
    }
    // ' ?[^\s\p{L}\p{N}]+[\r\n]*' (a space at the very end matches here too, as the space alone)
    const uint8_t k2 = cp == ' ' ? c.cls(pos + 1) : k;
    if (k2 == kOther || k2 == kNone) {
        size_t e = pos + (cp == ' ');
        while (c.cls(e) == kOther) ++e;
        while (tail && (c.cpt(e) == '\r' || c.cpt(e) == '\n')) ++e;
        return e;
    }
    return space_piece(c, pos, cascade);
}

// unicode_regex_split_custom_qwen35: Qwen2's with marks among letters, [\p{L}\p{M}]+, and out of the
// run of other characters, ' ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*'.
size_t qwen35_piece(Cursor& c, size_t pos) {
    if (const size_t e = contraction(c, pos, true)) return e;
    const uint32_t cp = c.cpt(pos);
    const uint8_t k = c.cls(pos);
    const auto word = [&](size_t p) { return c.cls(p) == kLetter || c.mark(p); };
    const auto other = [&](size_t p) { return c.cls(p) == kOther && !c.mark(p); };
    if (cp != '\r' && cp != '\n' && k != kNumber && (word(pos) || word(pos + 1))) {
        size_t e = pos + 1;  // [^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+
        while (word(e)) ++e;
        return e;
    }
    if (k == kNumber) return pos + 1;
    const size_t b = cp == ' ' ? pos + 1 : pos;
    if (other(b) || !c.has(b)) {
        size_t e = b;
        while (other(e)) ++e;
        while (c.cpt(e) == '\r' || c.cpt(e) == '\n') ++e;
        return e;
    }
    return space_piece(c, pos);
}

// EXAONE-MoE's regex (unicode.h), through std::regex in llama.cpp: a word is letters, each with its
// marks, and single spaces between letters ("a b c" is one piece); one \r, \n or / after a run
// of other characters; the spaces as Llama 3's.
size_t exaone_moe_piece(Cursor& c, size_t pos) {
    if (const size_t e = contraction(c, pos, true)) return e;
    const uint32_t cp = c.cpt(pos);
    const uint8_t k = c.cls(pos);
    // [^\r\n\p{L}\p{N}]?(?:\p{L}\p{M}*(?: \p{L}\p{M}*)*)+ : greedy, nothing after it in the alternative
    const bool prefix = k != kLetter && cp != '\r' && cp != '\n' && k != kNumber && c.cls(pos + 1) == kLetter;
    size_t e = pos + prefix;
    if (k == kLetter || prefix) {
        while (c.cls(e) == kLetter || (c.cpt(e) == ' ' && c.cls(e + 1) == kLetter))
            for (e += c.cpt(e) == ' ' ? 2 : 1; c.mark(e);) ++e;
        return e;
    }
    if (k == kNumber) return pos + 1;
    const uint8_t k2 = cp == ' ' ? c.cls(pos + 1) : k;
    if (k2 == kOther || k2 == kNone) {  // ' ?[^\s\p{L}\p{N}]+[\r\n/]?'
        e = pos + (cp == ' ');
        while (c.cls(e) == kOther) ++e;
        const uint32_t t = c.cpt(e);
        return e + (t == '\r' || t == '\n');  // a '/' there was taken by the run
    }
    return space_piece(c, pos);  // \s*[\r\n]|\s+(?!\S)|\s+ (\s*[\r\n] ends where \s*[\r\n]+ does)
}

// unicode_cpt_is_han: the CJK ideograph blocks (unified, extensions A to F, compatibility), assigned or not.
bool is_han(uint32_t x) {
    static constexpr CodepointRange kRanges[] = {{0x3400, 0x4DBF},   {0x4E00, 0x9FFF},   {0xF900, 0xFAFF},
                                                 {0x20000, 0x2A6DF}, {0x2A700, 0x2EBEF}, {0x2F800, 0x2FA1F}};
    return in_ranges(kRanges, std::size(kRanges), x);
}

// Kimi K2's regex (unicode.h) as unicode_regex_split_custom_kimi_k2 runs it: a run of Han first; a
// word is letters but Han (a mark is not in one: it is an "other" character), with one character
// before it that is not \r, \n, a letter or a number, and a contraction after it; \p{N}{1,3}; the
// rest as Llama 3's.
size_t kimi_k2_piece(Cursor& c, size_t pos) {
    const auto han = [&](size_t p) { return c.has(p) && is_han(c.cpt(p)); };
    const auto word = [&](size_t p) { return c.cls(p) == kLetter && !han(p); };
    size_t e = pos;
    if (han(pos)) {  // [\p{Han}]+
        while (han(e)) ++e;
        return e;
    }
    const uint32_t cp = c.cpt(pos);
    const uint8_t k = c.cls(pos);
    if (word(pos) || (cp != '\r' && cp != '\n' && k != kLetter && k != kNumber && word(pos + 1))) {
        for (e = pos + 1; word(e);) ++e;
        const size_t ce = contraction(c, e, true);
        return ce ? ce : e;
    }
    if (k == kNumber) {
        while (e - pos < 3 && c.cls(e) == kNumber) ++e;
        return e;
    }
    if ((cp == ' ' ? c.cls(pos + 1) : k) == kOther) {  // ' ?[^\s\p{L}\p{N}]+[\r\n]*'
        for (e = pos + (cp == ' '); c.cls(e) == kOther;) ++e;
        while (c.cpt(e) == '\r' || c.cpt(e) == '\n') ++e;
        return e;
    }
    return space_piece(c, pos);
}

// BLOOM's regex (unicode.h) at `pos`: the end of the match, or 0 when none starts there.
size_t bloom_piece(Cursor& c, size_t pos) {
    const auto word = [&](size_t p) {
        if (!c.has(p)) return false;
        const uint32_t x = c.cpt(p);
        constexpr std::u32string_view kStops = U"(|).,!?\u2026\u3002\uFF0C\u3001\u0964\u06D4\u060C";
        return !is_whitespace(x) && kStops.find(static_cast<char32_t>(x)) == std::u32string_view::npos;
    };
    size_t e = c.cpt(pos) == ' ' && word(pos + 1) ? pos + 1 : pos;
    if (!word(e)) return 0;
    while (word(e)) ++e;
    return e;
}

// Mistral's tekken regex and GPT-4o's (unicode.h), their alternatives tried in order with a
// backtracking engine's choices (std::regex's ECMAScript, Hugging Face's Oniguruma: greedy, the first
// match found wins). `cases`: how the two letter classes are read (below). `contractions`: a
// contraction may end the letters (GPT-4o's); numbers go up to `max_digits` digits.
enum class Cases : uint8_t {
    Collapsed,        // llama.cpp's collapsed classes: \p{Lu}... as \p{L} minus a-z, \p{Ll}... minus A-Z, no marks
    Unicode,          // the real categories
    LettersAndMarks,  // both \p{L} or \p{M}: how llama.cpp collapses them written out (Tiny Aya's)
};
size_t tekken_piece(Cursor& c, size_t pos, Cases cases, bool contractions, size_t max_digits) {
    const bool unicode = cases == Cases::Unicode;
    const auto upper = [&](size_t p) {
        if (unicode) return c.has(p) && is_tekken_upper(c.cpt(p));
        if (cases == Cases::LettersAndMarks) return c.cls(p) == kLetter || c.mark(p);
        return c.cls(p) == kLetter && !(c.cpt(p) >= 'a' && c.cpt(p) <= 'z');
    };
    const auto lower = [&](size_t p) {
        if (unicode) return c.has(p) && is_tekken_lower(c.cpt(p));
        if (cases == Cases::LettersAndMarks) return c.cls(p) == kLetter || c.mark(p);
        return c.cls(p) == kLetter && !(c.cpt(p) >= 'A' && c.cpt(p) <= 'Z');
    };
    // U*L+ (need_upper false) or U+L* from `i`: U* longest first, then shorter, until L+ can follow.
    const auto letters = [&](size_t i, bool need_upper) -> size_t {
        size_t k = i;
        while (upper(k)) ++k;
        for (size_t j = k + 1; j-- > i;) {
            if (need_upper ? j == i : !lower(j)) continue;
            size_t e = j;
            while (lower(e)) ++e;
            if (contractions)  // (?i:'s|'t|'re|'ve|'m|'ll|'d)?
                if (const size_t ce = contraction(c, e, true, unicode)) return ce;
            return e;
        }
        return 0;
    };
    const uint8_t k = c.cls(pos);
    const bool prefix = k != kLetter && k != kNumber && c.cpt(pos) != '\r' && c.cpt(pos) != '\n';
    for (bool need_upper : {false, true}) {  // [^\r\n\p{L}\p{N}]?U*L+ then [^\r\n\p{L}\p{N}]?U+L*
        if (prefix)
            if (const size_t e = letters(pos + 1, need_upper)) return e;
        if (const size_t e = letters(pos, need_upper)) return e;
    }
    if (k == kNumber) {  // \p{N}, GPT-4o's \p{N}{1,3}
        size_t e = pos + 1;
        while (e - pos < max_digits && c.cls(e) == kNumber) ++e;
        return e;
    }
    // ' ?[^\s\p{L}\p{N}]+[\r\n/]*'
    size_t e = c.cpt(pos) == ' ' && c.cls(pos + 1) == kOther ? pos + 1 : pos;
    if (c.cls(e) == kOther) {
        while (c.cls(e) == kOther) ++e;
        while (c.cpt(e) == '\r' || c.cpt(e) == '\n' || c.cpt(e) == '/') ++e;
        return e;
    }
    return space_piece(c, pos);
}

// DeepSeek-V3's third regex (unicode.h) at `pos`: the end of the match, or 0 when none starts there
// (ASCII controls, '~' outside a word in llama.cpp, unassigned code points ...). `tilde_symbol`: '~'
// is \p{S} as written; llama.cpp's collapsed classes put it in neither \p{P} nor \p{S}. Otherwise the
// two agree on ASCII, and beyond ASCII both take the code point's one category.
size_t deepseek_v3_piece(Cursor& c, size_t pos, bool tilde_symbol) {
    enum : uint8_t { kW = 1, kL = 2, kM = 4, kPS = 8, kO = 16 };
    const auto cat = [&](size_t p) -> uint8_t {
        if (!c.has(p)) return 0;
        const uint32_t cp = c.cpt(p);
        if (is_whitespace(cp)) return kW;
        if (is_letter(cp)) return kL;
        if (is_mark(cp)) return kM;
        if (cp == '~' ? tilde_symbol : is_punctuation(cp) || is_symbol(cp)) return kPS;
        return kO;
    };
    const auto ascii_letter = [&](size_t p) {
        const uint32_t x = c.cpt(p) | 0x20;
        return x >= 'a' && x <= 'z';
    };
    const auto run_end = [&](size_t e, uint8_t mask) {
        while (cat(e) & mask) ++e;
        return e;
    };
    const uint32_t c0 = c.cpt(pos);
    // [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+
    const bool ascii_punct = (c0 >= 0x21 && c0 <= 0x2F) || (c0 >= 0x3A && c0 <= 0x40) || (c0 >= 0x5B && c0 <= 0x60) ||
                             (c0 >= 0x7B && c0 <= 0x7E);
    if (ascii_punct && ascii_letter(pos + 1)) {
        size_t e = pos + 2;
        while (ascii_letter(e)) ++e;
        return e;
    }
    // [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+ (the prefix tried first)
    const uint8_t k0 = cat(pos);
    if (c0 != '\r' && c0 != '\n' && (k0 & (kW | kM | kO)) && (cat(pos + 1) & (kL | kM)))
        return run_end(pos + 2, kL | kM);
    if (k0 & (kL | kM)) return run_end(pos + 1, kL | kM);
    // ' ?[\p{P}\p{S}]+[\r\n]*'
    const size_t b = c0 == ' ' && cat(pos + 1) == kPS ? pos + 1 : pos;
    if (cat(b) == kPS) {
        size_t e = run_end(b + 1, kPS);
        while (c.cpt(e) == '\r' || c.cpt(e) == '\n') ++e;
        return e;
    }
    return k0 == kW ? space_piece(c, pos) : 0;  // \s*[\r\n]+|\s+(?!\S)|\s+
}

// DeepSeek LLM's letters: the class of its second regex (llama-vocab.cpp), as ranges.
constexpr CodepointRange kDeepseekLlmLetters[] = {
    {0x41, 0x5A},       {0x61, 0x7A},       {0xB5, 0xB5},       {0xC0, 0xD6},       {0xD8, 0xF6},
    {0xF8, 0x1BA},      {0x1BC, 0x1BF},     {0x1C4, 0x293},     {0x295, 0x2AF},     {0x370, 0x373},
    {0x376, 0x376},     {0x377, 0x377},     {0x37B, 0x37D},     {0x37F, 0x37F},     {0x386, 0x386},
    {0x388, 0x38A},     {0x38C, 0x38C},     {0x38E, 0x3A1},     {0x3A3, 0x3F5},     {0x3F7, 0x481},
    {0x48A, 0x52F},     {0x531, 0x556},     {0x10A0, 0x10C5},   {0x13A0, 0x13F5},   {0x13F8, 0x13FD},
    {0x1C90, 0x1CBA},   {0x1CBD, 0x1CBF},   {0x1D00, 0x1D2B},   {0x1D6B, 0x1D77},   {0x1D79, 0x1D9A},
    {0x1E00, 0x1F15},   {0x1F18, 0x1F1D},   {0x1F20, 0x1F45},   {0x1F48, 0x1F4D},   {0x1F50, 0x1F57},
    {0x1F59, 0x1F59},   {0x1F5B, 0x1F5B},   {0x1F5D, 0x1F5D},   {0x1F5F, 0x1F7D},   {0x1F80, 0x1FB4},
    {0x1FB6, 0x1FBC},   {0x1FBE, 0x1FBE},   {0x1FC2, 0x1FC4},   {0x1FC6, 0x1FCC},   {0x1FD0, 0x1FD3},
    {0x1FD6, 0x1FDB},   {0x1FE0, 0x1FEC},   {0x1FF2, 0x1FF4},   {0x1FF6, 0x1FFC},   {0x2102, 0x2102},
    {0x2107, 0x2107},   {0x210A, 0x2113},   {0x2115, 0x2115},   {0x2119, 0x211D},   {0x2124, 0x2124},
    {0x2126, 0x2126},   {0x2128, 0x2128},   {0x212A, 0x212D},   {0x212F, 0x2134},   {0x2139, 0x2139},
    {0x213C, 0x213F},   {0x2145, 0x2149},   {0x214E, 0x214E},   {0x2183, 0x2183},   {0x2184, 0x2184},
    {0x2C00, 0x2C7B},   {0x2C7E, 0x2CE4},   {0x2CEB, 0x2CEE},   {0x2CF2, 0x2CF2},   {0x2CF3, 0x2CF3},
    {0xA640, 0xA66D},   {0xA680, 0xA69B},   {0xA722, 0xA76F},   {0xA771, 0xA787},   {0xA78B, 0xA78E},
    {0xAB70, 0xABBF},   {0xFB00, 0xFB06},   {0xFB13, 0xFB17},   {0xFF21, 0xFF3A},   {0xFF41, 0xFF5A},
    {0x10400, 0x1044F}, {0x104B0, 0x104D3}, {0x104D8, 0x104FB}, {0x10C80, 0x10CB2}, {0x10CC0, 0x10CF2},
    {0x118A0, 0x118DF}, {0x1E900, 0x1E943}};

// The regexes of the sequences (Viking's, Falcon's, DeepSeek Coder's, DeepSeek LLM's, AFMoE's and Tiny
// Aya's: unicode.h) at `pos`: the end of the match, or 0. Whitespace: is_whitespace (llama.cpp's std::regex sees
// non-ASCII whitespace as U+000B), so U+3000 is in neither CJK range nor DeepSeek LLM's punctuation.
template <bool (*In)(uint32_t)>
size_t one_piece(Cursor& c, size_t pos) {  // [In]
    return c.has(pos) && In(c.cpt(pos)) ? pos + 1 : 0;
}
template <bool (*In)(uint32_t)>
size_t run_piece(Cursor& c, size_t pos) {  // [In]+
    size_t e = pos;
    while (c.has(e) && In(c.cpt(e))) ++e;
    return e == pos ? 0 : e;
}
template <bool (*In)(uint32_t)>
size_t space_run_piece(Cursor& c, size_t pos) {  // \s?[In]+
    return run_piece<In>(c, c.cls(pos) == kSpace && c.has(pos + 1) && In(c.cpt(pos + 1)) ? pos + 1 : pos);
}
bool newline(uint32_t x) { return x == '\r' || x == '\n'; }
bool cjk_or_hangul(uint32_t x) {
    return ((x >= 0x800 && x <= 0x9FA5) || (x >= 0xAC00 && x <= 0xD7FF)) && !is_whitespace(x);
}
bool deepseek_llm_letter(uint32_t x) { return in_ranges(kDeepseekLlmLetters, std::size(kDeepseekLlmLetters), x); }
bool deepseek_llm_punct(uint32_t x) {  // !-/:-~！-／：-～‘-‟　-。
    return (x >= 0x21 && x <= 0x2F) || (x >= 0x3A && x <= 0x7E) || (x >= 0xFF01 && x <= 0xFF0F) ||
           (x >= 0xFF1A && x <= 0xFF5E) || (x >= 0x2018 && x <= 0x201F) || (x >= 0x3001 && x <= 0x3002);
}
bool falcon_punct(uint32_t x) {  // [\p{P}\$\+<=>\^~\|`] over llama.cpp's collapsed classes
    return is_punctuation(x) ||
           (x < 0x80 && std::string_view("$+<=>^~|`").find(static_cast<char>(x)) != std::string_view::npos);
}
bool default_punct(uint32_t x) { return x != '`' && falcon_punct(x); }  // [\p{P}\$\+<=>\^~\|]
bool ascii_digit(uint32_t x) { return x >= '0' && x <= '9'; }
size_t trailing_space_piece(Cursor& c, size_t pos) {  // \s+$
    // Inside a run of spaces the answer is the one already given at its first position, which failed
    // (or this position would not be tried): saying so at once keeps a long run linear.
    if (pos > c.begin && c.cls(pos - 1) == kSpace) return 0;
    size_t e = pos;
    while (c.cls(e) == kSpace) ++e;
    return e > pos && !c.has(e) ? e : 0;
}
size_t digits3_piece(Cursor& c, size_t pos) {  // [0-9][0-9][0-9]
    for (size_t i = pos; i < pos + 3; ++i)
        if (!one_piece<ascii_digit>(c, i)) return 0;
    return pos + 3;
}

// \p{AFMoE_digits} (unicode.h) at `pos`, which a piece starts at: never 0.
size_t afmoe_digits_piece(Cursor& c, size_t pos) {
    const auto num = [&](size_t p) { return c.cls(p) == kNumber; };
    // Inside a run a piece starts after a group, so three digits are left at least: no rescan.
    if (num(pos) && pos > c.begin && num(pos - 1)) return pos + 3;
    size_t run = pos;
    while (c.has(run) && !num(run)) ++run;
    if (!c.has(run)) return run;  // no digit after: the rest of the text
    size_t end = run;
    while (num(end)) ++end;
    const size_t first = (end - run) % 3;
    return run + (first ? first : 3);
}
bool afmoe_script(uint32_t x) {
    static constexpr CodepointRange kRanges[] = {{0xE40, 0xEFF},   {0x1000, 0x109F}, {0x1100, 0x11FF},
                                                 {0x1780, 0x17FF}, {0x2F00, 0x2FDF}, {0x3040, 0x30FF},
                                                 {0x3400, 0x4DBF}, {0x4E00, 0xFAFF}, {0xFF65, 0xFF9F}};
    return in_ranges(kRanges, std::size(kRanges), x);
}
size_t deepseek_v3_collapsed_piece(Cursor& c, size_t pos) { return deepseek_v3_piece(c, pos, false); }

// Tiny Aya's second regex (unicode.h) at `pos`: GPT-4o's with one letter class.
size_t tiny_aya_piece(Cursor& c, size_t pos) { return tekken_piece(c, pos, Cases::LettersAndMarks, true, 3); }

// Youtu's first regex (unicode.h): the class of a code point among its four disjoint classes (0: in
// none), and a run of one class.
int youtu_class(uint32_t x) {
    if ((x >= 0xAC00 && x <= 0xD7A3) || (x >= 0x3131 && x <= 0x318E)) return 1;  // Hangul
    if ((x >= 0x3001 && x <= 0x303F) || (x >= 0xFE30 && x <= 0xFE4F) || x == 0xFF01 || x == 0x2026 || x == 0x201C ||
        x == 0x201D || x == 0x2018 || x == 0x2019 || x == 0x2014 || x == 0xFF1A || x == 0xFF1B || x == 0xFF0C)
        return 2;                                                                // CJK punctuation
    if (x >= 0x3105 && x <= 0x312F) return 3;                                    // Bopomofo
    if ((x >= 0x4E00 && x <= 0x9FA5) || (x >= 0x3040 && x <= 0x30FF)) return 4;  // ideographs, kana
    return 0;
}
size_t youtu_script_piece(Cursor& c, size_t pos) {
    const int k = youtu_class(c.cpt(pos));
    if (k == 0) return 0;
    size_t e = pos + 1;
    while (youtu_class(c.cpt(e)) == k) ++e;
    return e;
}
// Youtu's second regex: Tiny Aya's with \p{N} for \p{N}{1,3}.
size_t youtu_piece(Cursor& c, size_t pos) { return tekken_piece(c, pos, Cases::LettersAndMarks, true, 1); }

// SuperBPE's second regex, (?=(\d{3})+(?!\d)), which llama.cpp runs through std::wregex: an empty match
// before every ASCII digit from which the run of ASCII digits to its end is a multiple of three long
// (within a piece of \p{N}+; \d is 0-9 only). An empty match cuts the piece there, so a piece runs from
// `pos` (the piece's start or such a cut) to the next cut or its end: never 0.
size_t superbpe_piece(Cursor& c, size_t pos) {
    const auto digit = [&](size_t p) { return ascii_digit(c.cpt(p)); };
    size_t s = pos;
    // At a cut inside a run what is left of it is a multiple of three long: no rescan of the run.
    if (pos > c.begin && digit(pos - 1) && digit(pos)) {
        if (digit(pos + 3)) return pos + 3;
        s = pos + 3;
    }
    while (c.has(s)) {
        if (!digit(s)) {
            ++s;
            continue;
        }
        size_t t = s;
        while (digit(t)) ++t;
        size_t cut = s + (t - s) % 3;  // the first cut in [s, t), then one every three digits
        if (cut <= pos) cut += 3;
        if (cut < t) return cut;
        s = t;
    }
    return s;
}

// Chameleon's first three regexes (unicode.h), over code points as std::wregex sees them.
size_t literal_end(Cursor& c, size_t pos, std::u32string_view s) {  // `s` at `pos`: its end, or 0
    for (size_t i = 0; i < s.size(); ++i)
        if (c.cpt(pos + i) != s[i]) return 0;
    return pos + s.size();
}
size_t sentinel_piece(Cursor& c, size_t pos) {  // <sentinel:[0-9]+>
    const size_t d = literal_end(c, pos, U"<sentinel:");
    size_t e = d;
    while (d && ascii_digit(c.cpt(e))) ++e;
    return e > d && c.cpt(e) == '>' ? e + 1 : 0;
}
size_t image_piece(Cursor& c, size_t pos) {  // (IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z
    const size_t d = literal_end(c, pos, U"IMGIMG");
    size_t e = d;
    while (d && e - d < 4 && c.cpt(e) >= 'A' && c.cpt(e) <= 'I') ++e;
    return e > d && c.cpt(e) == 'Z' ? e + 1 : 0;  // a shorter {1,4} is followed by A-I, not Z
}
size_t indent_piece(Cursor& c, size_t pos) {  // ([\t\n]|    |  )
    if (c.cpt(pos) == '\t' || c.cpt(pos) == '\n') return pos + 1;
    if (!literal_end(c, pos, U"  ")) return 0;
    return literal_end(c, pos, U"    ") ? pos + 4 : pos + 2;
}
bool chameleon_punct(uint32_t x) {  // [\p{P}!-/:-@\[-`{-~]: \p{P} and ASCII's punctuation and symbols
    return is_punctuation(x) || (x >= 0x21 && x <= 0x2F) || (x >= 0x3A && x <= 0x40) || (x >= 0x5B && x <= 0x60) ||
           (x >= 0x7B && x <= 0x7E);
}

size_t line_piece(Cursor& c, size_t pos) {  // [^\n]+|[\n]+
    const bool nl = c.cpt(pos) == '\n';
    size_t e = pos + 1;
    while (c.has(e) && (c.cpt(e) == '\n') == nl) ++e;
    return e;
}
using Rule = size_t (*)(Cursor&, size_t);
constexpr Rule kViking[] = {bloom_piece, one_piece<is_number>};
constexpr Rule kAfmoe[] = {afmoe_digits_piece, run_piece<afmoe_script>, deepseek_v3_collapsed_piece};
constexpr Rule kTinyAya[] = {afmoe_digits_piece, tiny_aya_piece};
constexpr Rule kYoutu[] = {youtu_script_piece, youtu_piece};
constexpr Rule kSuperbpe[] = {run_piece<is_number>, superbpe_piece};
constexpr Rule kChameleon[] = {
    sentinel_piece, image_piece, indent_piece, one_piece<is_number>, one_piece<chameleon_punct>, gpt2_piece};
constexpr Rule kFalcon[] = {run_piece<falcon_punct>, gpt2_piece, digits3_piece};
constexpr Rule kDefault[] = {run_piece<default_punct>, gpt2_piece, run_piece<is_number>, digits3_piece};
constexpr Rule kDeepseekCoder[] = {one_piece<newline>, space_run_piece<is_letter>, space_run_piece<is_punctuation>,
                                   run_piece<cjk_or_hangul>, one_piece<is_number>};
constexpr Rule kDeepseekLlm[] = {one_piece<newline>,
                                 space_run_piece<deepseek_llm_letter>,
                                 space_run_piece<deepseek_llm_punct>,
                                 trailing_space_piece,
                                 run_piece<cjk_or_hangul>,
                                 run_piece<is_number>};

// The rules of a pre-tokenizer that is a sequence of regexes (unicode.h); empty for the others.
std::span<const Rule> sequence_of(PreTokenizer p) {
    switch (p) {
        case PreTokenizer::Viking: return kViking;
        case PreTokenizer::Falcon: return kFalcon;
        case PreTokenizer::Default: return kDefault;
        case PreTokenizer::DeepseekCoder: return kDeepseekCoder;
        case PreTokenizer::DeepseekLlm: return kDeepseekLlm;
        case PreTokenizer::Afmoe: return kAfmoe;
        case PreTokenizer::TinyAya: return kTinyAya;
        case PreTokenizer::Youtu: return kYoutu;
        case PreTokenizer::Superbpe: return kSuperbpe;
        case PreTokenizer::Chameleon: return kChameleon;
        default: return {};
    }
}

// Pieces [begin, end) of `cpts` after each rule of a sequence has split the pieces the one before
// left, with how far the splits that made each piece read (its own and its ancestors'): a piece is
// final once that reach lies within the settled code points. (Its parent's reach counts whole: more
// text may move a parent's end either way, as a digit run's length regroups AFMoE's digits, and a
// child that stops short of that end by its own rule would not know.)
struct Span {
    size_t b, e, reach;
};
std::vector<Span> split_in_sequence(const std::vector<uint32_t>& cpts, std::span<const Rule> rules) {
    const size_t n = cpts.size();
    std::vector<Span> spans{{0, n, 0}};
    for (Rule rule : rules) {
        std::vector<Span> next;
        for (const Span& s : spans) {
            Cursor cur(cpts, s.e, s.e == n ? n + 1 : s.reach);  // reading past the text: more may come
            cur.begin = s.b;
            for (size_t pos = s.b; pos < s.e;) {
                cur.reach = 0;
                size_t e = rule(cur, pos);
                if (e == 0)  // no match starts here: the text up to the next match is a piece
                    for (e = pos + 1; cur.has(e) && rule(cur, e) == 0;) ++e;
                next.push_back({pos, e, std::max(cur.reach, s.reach)});
                pos = e;
            }
        }
        spans = std::move(next);
    }
    return spans;
}

// Where the first regexes of a sequence cut the code points (each cut final once `end_reach`'s
// positions are known): \p{N}{1,max_digits} and, with `cjk`, DeepSeek-V3's [一-龥぀-ゟ゠-ヿ]+, the
// text between their matches included. They nest without interfering (no number is in those ranges),
// so one pass over the classes number / CJK / other gives the pieces the last regex then splits.
struct Segment {
    size_t end, end_reach;
};
std::vector<Segment> segments(const std::vector<uint32_t>& cpts, size_t max_digits, bool cjk) {
    const auto cls = [&](size_t i) {
        const uint32_t c = cpts[i];
        return is_number(c) ? 0 : cjk && ((c >= 0x4E00 && c <= 0x9FA5) || (c >= 0x3040 && c <= 0x30FF)) ? 1 : 2;
    };
    const size_t n = cpts.size();
    std::vector<Segment> out;
    for (size_t b = 0; b < n;) {
        const int k = cls(b);
        size_t e = b + 1;
        while (e < n && cls(e) == k && !(k == 0 && e - b == max_digits)) ++e;
        const bool full = k == 0 && e - b == max_digits;  // the count alone ends it
        out.push_back({e, full ? e : e + 1});             // e + 1 == n + 1 at the end: more text may extend it
        b = e;
    }
    return out;
}

}  // namespace

std::vector<std::string> pretokenize(PreTokenizer p, std::string_view text, size_t* consumed) {
    std::vector<size_t> offsets;  // byte offset of each code point (kept only with `consumed`)
    const std::vector<uint32_t> cpts = decode_utf8(text, consumed ? &offsets : nullptr);
    const size_t end = cpts.size();
    // Code points [0, settled) decode the same whatever follows: decode_one reads at most 4 bytes.
    size_t settled = end;
    if (consumed) {
        settled = 0;
        while (settled < end && offsets[settled] + 4 <= text.size()) ++settled;
    }
    const auto rule = [p](Cursor& cur, size_t pos) -> size_t {
        switch (p) {
            case PreTokenizer::Gpt2:
            case PreTokenizer::Smollm: return gpt2_piece(cur, pos);
            case PreTokenizer::Llama3: return llama3_piece(cur, pos, 3);
            case PreTokenizer::Qwen2: return llama3_piece(cur, pos, 1);
            case PreTokenizer::Qwen35: return qwen35_piece(cur, pos);
            case PreTokenizer::SeedCoder: return llama3_piece(cur, pos, 1, false);
            case PreTokenizer::Jais2: return llama3_piece(cur, pos, 3, true, true);
            case PreTokenizer::ExaoneMoe: return exaone_moe_piece(cur, pos);
            case PreTokenizer::KimiK2: return kimi_k2_piece(cur, pos);
            case PreTokenizer::Bloom: return bloom_piece(cur, pos);
            case PreTokenizer::Viking:
            case PreTokenizer::Falcon:
            case PreTokenizer::Default:
            case PreTokenizer::DeepseekCoder:
            case PreTokenizer::DeepseekLlm:
            case PreTokenizer::Afmoe:
            case PreTokenizer::TinyAya:
            case PreTokenizer::Youtu:
            case PreTokenizer::Superbpe:
            case PreTokenizer::Chameleon: break;  // sequences, split_in_sequence
            case PreTokenizer::Tekken: return tekken_piece(cur, pos, Cases::Collapsed, false, 1);
            case PreTokenizer::TekkenUnicode: return tekken_piece(cur, pos, Cases::Unicode, false, 1);
            case PreTokenizer::Gpt4o: return tekken_piece(cur, pos, Cases::Collapsed, true, 3);
            case PreTokenizer::Gpt4oUnicode: return tekken_piece(cur, pos, Cases::Unicode, true, 3);
            case PreTokenizer::DeepseekV3: return deepseek_v3_piece(cur, pos, false);
            case PreTokenizer::DeepseekV3Unicode: return deepseek_v3_piece(cur, pos, true);
            case PreTokenizer::Lines: return line_piece(cur, pos);
        }
        return 0;
    };
    const std::vector<Segment> segs = p == PreTokenizer::Smollm ? segments(cpts, 1, false)
                                      : p == PreTokenizer::DeepseekV3 || p == PreTokenizer::DeepseekV3Unicode
                                          ? segments(cpts, 3, true)
                                          : std::vector<Segment>{{end, end + 1}};
    std::vector<std::pair<size_t, size_t>> pieces;  // [begin, end) in code points
    if (const std::span<const Rule> rules = sequence_of(p); !rules.empty()) {
        for (const Span& s : split_in_sequence(cpts, rules)) {
            if (consumed && s.reach > settled) break;  // final once its splits read only settled code points
            pieces.emplace_back(s.b, s.e);
        }
    } else {
        size_t pos = 0;
        for (const Segment& seg : segs) {
            Cursor cur(cpts, seg.end, seg.end_reach);
            for (; pos < seg.end; pos = pieces.back().second) {
                cur.reach = 0;
                size_t e = rule(cur, pos);
                if (e == 0)  // no match starts here: the text up to the next match is a piece
                    for (e = pos + 1; cur.has(e) && rule(cur, e) == 0;) ++e;
                // A piece is final when every position its rule read was settled (earlier pieces are).
                if (consumed && cur.reach > settled) break;
                pieces.emplace_back(pos, e);
            }
            if (pos < seg.end) break;
        }
    }
    if (consumed) {
        const size_t e = pieces.empty() ? 0 : pieces.back().second;
        *consumed = e < end ? offsets[e] : text.size();
    }
    std::vector<std::string> words;
    words.reserve(pieces.size());
    const bool bytes = byte_level(p);
    for (const auto& [b, e] : pieces) {
        std::string w;
        for (size_t i = b; i < e; ++i) {
            if (!bytes) {
                w += encode_utf8(cpts[i]);
                continue;
            }
            for (char ch : encode_utf8(cpts[i])) w += byte_to_unicode(static_cast<uint8_t>(ch));
        }
        words.push_back(std::move(w));
    }
    return words;
}

bool byte_level(PreTokenizer p) { return p != PreTokenizer::Lines; }

}  // namespace oiw::vocab
