// A strict XML well-formedness checker with a tiny element tree, for the tools' HTML/SVG reports
// (test-only; shares no code with the writer).
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace oiw::test {

struct XmlElement {
    std::string name;
    std::vector<std::pair<std::string, std::string>> attrs;  // entity references resolved
    std::vector<XmlElement> children;
    std::string text;  // character data directly inside, entities resolved
    // The attribute's value, or nullptr.
    const std::string* attr(std::string_view key) const;
    // Every descendant (and this element) for which `pred` holds, in document order.
    std::vector<const XmlElement*> find_all(const std::function<bool(const XmlElement&)>& pred) const;
    // The first child named `child`, or nullptr.
    const XmlElement* child(std::string_view child) const;
};

// Parses a whole document, checking XML 1.0 well-formedness: optional XML declaration, comments
// and <!DOCTYPE NAME>, then exactly one root element; names; properly nested tags; quoted,
// unique attributes without '<'; only the five predefined entities and character references
// (to allowed characters); valid UTF-8 throughout and no character XML forbids; no "]]>" in
// text. Throws std::runtime_error naming the byte offset and the problem.
XmlElement parse_xml(std::string_view doc);

}  // namespace oiw::test
