#include "tests/support/xml.h"

#include <set>
#include <stdexcept>

namespace oiw::test {

const std::string* XmlElement::attr(std::string_view key) const {
    for (const auto& [k, v] : attrs)
        if (k == key) return &v;
    return nullptr;
}

std::vector<const XmlElement*> XmlElement::find_all(const std::function<bool(const XmlElement&)>& pred) const {
    std::vector<const XmlElement*> out;
    std::function<void(const XmlElement&)> walk = [&](const XmlElement& e) {
        if (pred(e)) out.push_back(&e);
        for (const auto& c : e.children) walk(c);
    };
    walk(*this);
    return out;
}

const XmlElement* XmlElement::child(std::string_view n) const {
    for (const auto& c : children)
        if (c.name == n) return &c;
    return nullptr;
}

namespace {

bool allowed(char32_t c) {
    return c == 0x9 || c == 0xA || c == 0xD || (c >= 0x20 && c <= 0xD7FF) || (c >= 0xE000 && c <= 0xFFFD) ||
           (c >= 0x10000 && c <= 0x10FFFF);
}

void utf8_append(std::string& o, char32_t c) {
    if (c < 0x80) {
        o += static_cast<char>(c);
    } else if (c < 0x800) {
        o += static_cast<char>(0xC0 | (c >> 6));
        o += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
        o += static_cast<char>(0xE0 | (c >> 12));
        o += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
        o += static_cast<char>(0x80 | (c & 0x3F));
    } else {
        o += static_cast<char>(0xF0 | (c >> 18));
        o += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
        o += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
        o += static_cast<char>(0x80 | (c & 0x3F));
    }
}

struct Parser {
    std::string_view s;
    size_t p = 0;

    [[noreturn]] void fail(const std::string& what) const {
        throw std::runtime_error("XML: " + what + " at byte " + std::to_string(p));
    }
    bool at(std::string_view t) const { return s.substr(p, t.size()) == t; }
    void expect(std::string_view t) {
        if (!at(t)) fail("expected '" + std::string(t) + "'");
        p += t.size();
    }
    void spaces() {
        while (p < s.size() && (s[p] == ' ' || s[p] == '\t' || s[p] == '\n' || s[p] == '\r')) ++p;
    }
    static bool name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':'; }
    static bool name_char(char c) {
        return name_start(c) || std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '.';
    }
    std::string name() {
        if (p >= s.size() || !name_start(s[p])) fail("expected a name");
        const size_t b = p;
        while (p < s.size() && name_char(s[p])) ++p;
        return std::string(s.substr(b, p - b));
    }
    // One character (UTF-8 decoded and checked) appended to `o`.
    void character(std::string& o) {
        const auto c0 = static_cast<unsigned char>(s[p]);
        size_t n = c0 < 0x80                  ? 1
                   : c0 >= 0xC2 && c0 <= 0xDF ? 2
                   : c0 >= 0xE0 && c0 <= 0xEF ? 3
                   : c0 >= 0xF0 && c0 <= 0xF4 ? 4
                                              : 0;
        if (n == 0 || p + n > s.size()) fail("invalid UTF-8");
        char32_t c = n == 1 ? c0 : n == 2 ? (c0 & 0x1F) : n == 3 ? (c0 & 0x0F) : (c0 & 0x07);
        for (size_t k = 1; k < n; ++k) {
            const auto b = static_cast<unsigned char>(s[p + k]);
            if ((b & 0xC0) != 0x80) fail("invalid UTF-8");
            c = (c << 6) | (b & 0x3F);
        }
        static constexpr char32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
        if (c < kMin[n] || (c >= 0xD800 && c <= 0xDFFF) || !allowed(c)) fail("invalid or forbidden character");
        o.append(s.substr(p, n));
        p += n;
    }
    void reference(std::string& o) {
        expect("&");
        const size_t semi = s.find(';', p);
        if (semi == std::string_view::npos || semi - p > 10) fail("unterminated reference");
        const std::string_view r = s.substr(p, semi - p);
        static const std::pair<std::string_view, char> kNamed[] = {
            {"amp", '&'}, {"lt", '<'}, {"gt", '>'}, {"quot", '"'}, {"apos", '\''}};
        bool done = false;
        for (const auto& [n, c] : kNamed)
            if (r == n) o += c, done = true;
        if (!done) {
            if (r.size() < 2 || r[0] != '#') fail("unknown entity '" + std::string(r) + "'");
            const bool hex = r[1] == 'x';
            const std::string digits(r.substr(hex ? 2 : 1));
            if (digits.empty() ||
                digits.find_first_not_of(hex ? "0123456789abcdefABCDEF" : "0123456789") != std::string::npos)
                fail("bad character reference");
            const unsigned long c = std::stoul(digits, nullptr, hex ? 16 : 10);
            if (c > 0x10FFFF || !allowed(static_cast<char32_t>(c))) fail("reference to a forbidden character");
            utf8_append(o, static_cast<char32_t>(c));
        }
        p = semi + 1;
    }
    void comment() {
        expect("<!--");
        const size_t e = s.find("--", p);
        if (e == std::string_view::npos || s.substr(e, 3) != "-->") fail("bad comment");
        std::string junk;
        while (p < e) character(junk);
        p = e + 3;
    }
    void misc() {
        for (;;) {
            spaces();
            if (at("<!--"))
                comment();
            else
                return;
        }
    }
    XmlElement element() {
        expect("<");
        XmlElement e;
        e.name = name();
        std::set<std::string> seen;
        for (;;) {
            const size_t before = p;
            spaces();
            if (at("/>")) {
                p += 2;
                return e;
            }
            if (at(">")) {
                ++p;
                break;
            }
            if (p == before) fail("expected whitespace before an attribute");
            std::string k = name();
            if (!seen.insert(k).second) fail("duplicate attribute '" + k + "'");
            spaces();
            expect("=");
            spaces();
            if (p >= s.size() || (s[p] != '"' && s[p] != '\'')) fail("unquoted attribute value");
            const char q = s[p++];
            std::string v;
            while (p < s.size() && s[p] != q) {
                if (s[p] == '<') fail("'<' in an attribute value");
                if (s[p] == '&')
                    reference(v);
                else
                    character(v);
            }
            expect(std::string_view(&q, 1));
            e.attrs.emplace_back(std::move(k), std::move(v));
        }
        for (;;) {
            if (p >= s.size()) fail("unclosed element <" + e.name + ">");
            if (at("</")) {
                p += 2;
                if (name() != e.name) fail("mismatched end tag for <" + e.name + ">");
                spaces();
                expect(">");
                return e;
            }
            if (at("<!--"))
                comment();
            else if (at("<![CDATA[") || at("<?") || at("<!"))
                fail("unexpected markup declaration");
            else if (at("<"))
                e.children.push_back(element());
            else if (at("&"))
                reference(e.text);
            else if (at("]]>"))
                fail("']]>' in text");
            else
                character(e.text);
        }
    }
    XmlElement document() {
        if (at("\xEF\xBB\xBF")) p += 3;
        if (at("<?xml")) {
            const size_t e = s.find("?>", p);
            if (e == std::string_view::npos) fail("unterminated XML declaration");
            p = e + 2;
        }
        misc();
        if (at("<!DOCTYPE")) {
            p += 9;
            spaces();
            name();
            spaces();
            expect(">");
        }
        misc();
        XmlElement root = element();
        misc();
        if (p != s.size()) fail("content after the root element");
        return root;
    }
};

}  // namespace

XmlElement parse_xml(std::string_view doc) { return Parser{doc}.document(); }

}  // namespace oiw::test
