#include "converters/hf/model_card.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string_view>
#include <utility>

#include <fmt/format.h>
#include <re2/re2.h>
#include <yaml.h>

#include "converters/hf/model_name.h"
#include "libformat/error.h"
#include "libformat/escape.h"
#include "libformat/io/text_file.h"

namespace oiw::hf {
namespace {

constexpr size_t kMaxCardBytes = 64u << 20;
constexpr size_t kMaxDepth = 256;  // PyYAML's recursive composer fails on far less

// Throws FormatError naming `path` at the first byte of `text` that is not UTF-8.
void check_utf8(const std::string& text, const std::string& path) {
    char32_t cp = 0;
    for (size_t i = 0, n = 0; i < text.size(); i += n)
        if ((n = utf8_sequence(text, i, cp)) == 0)
            throw FormatError(ErrorKind::BadData, path, "",
                              fmt::format("not UTF-8 at byte {} (the Python converter stops on it)", i));
}

// ------------------------------------------------------------------ the YAML value, as PyYAML builds it

struct Node;
using NodePtr = std::shared_ptr<const Node>;

// A constructed value, reduced to what the heuristics look at: its Python type, a string's text,
// and Python's truthiness (a falsy value is set but not written; a truthy non-string fails).
struct Node {
    enum class Kind { Null, Str, Bool, Int, Float, Time, Seq, Map };
    Kind kind = Kind::Null;
    std::string text;  // Str: the string; other scalars: the scalar as written
    bool truthy = false;
    std::vector<NodePtr> items;  // Seq: the items; Map: key, value, key, value, ...
};

const char* kind_name(Node::Kind k) {
    switch (k) {
        case Node::Kind::Null: return "null";
        case Node::Kind::Str: return "string";
        case Node::Kind::Bool: return "bool";
        case Node::Kind::Int: return "int";
        case Node::Kind::Float: return "float";
        case Node::Kind::Time: return "date";
        case Node::Kind::Seq: return "list";
        case Node::Kind::Map: return "mapping";
    }
    return "?";
}

// PyYAML's implicit resolvers (resolver.py), the verbose patterns with their spaces taken out.
struct Resolvers {
    RE2 boolean{"yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF"};
    RE2 floating{R"([-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?)"
                 R"(|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))"};
    RE2 integer{R"([-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+)"
                R"(|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)"};
    RE2 null{"~|null|Null|NULL|"};
    // The resolver's timestamp, with the constructor's groups: year, month, day, then the time
    // (hour, minute, second, fraction) and zone (sign, hour, minute) when there.
    RE2 timestamp{R"(([0-9]{4})-([0-9]{2})-([0-9]{2}))"
                  R"(|([0-9]{4})-([0-9][0-9]?)-([0-9][0-9]?)(?:[Tt]|[ \t]+)([0-9][0-9]?):([0-9]{2}):([0-9]{2}))"
                  R"((?:\.[0-9]*)?(?:[ \t]*(?:Z|([-+])([0-9][0-9]?)(?::([0-9]{2}))?))?)"};
};

const Resolvers& resolvers() {
    static const Resolvers r;
    return r;
}

[[noreturn]] void fail(const std::string& file, const std::string& what) {
    throw FormatError(ErrorKind::BadData, file, "", "model card: " + what);
}

bool any_nonzero_digit(std::string_view s) {
    return s.find_first_of("123456789abcdefABCDEF") != std::string_view::npos;
}

// construct_yaml_int's outcome: truthiness, or the ValueError of a base prefix without digits.
void construct_int(Node& n, const std::string& file) {
    std::string v;
    for (char c : n.text)
        if (c != '_') v += c;
    if (!v.empty() && (v[0] == '-' || v[0] == '+')) v.erase(0, 1);
    if ((v.starts_with("0b") || v.starts_with("0x")) && v.size() == 2)
        fail(file, fmt::format("'{}' is not an integer (PyYAML fails on it)", n.text));
    n.truthy = any_nonzero_digit(v.starts_with("0b") || v.starts_with("0x") ? std::string_view(v).substr(2) : v);
}

void construct_float(Node& n) {
    std::string v;
    for (char c : n.text)
        if (c != '_') v += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (v[0] == '-' || v[0] == '+') v.erase(0, 1);
    if (v == ".inf" || v == ".nan") {
        n.truthy = true;
    } else if (v.find(':') != std::string::npos) {
        n.truthy = any_nonzero_digit(v);  // base 60: a sum of non-negative parts
    } else {
        n.truthy = std::strtod(v.c_str(), nullptr) != 0.0;  // float(value): 1e-400 is 0.0 there too
    }
}

bool leap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

// construct_yaml_timestamp builds a datetime.date / datetime.datetime, which refuse what is not a
// date or time (month 13, February 30, hour 24, a zone of 24 hours or more).
void construct_time(Node& n, const std::string& file) {
    std::array<std::string, 13> g;
    const RE2& re = resolvers().timestamp;
    std::array<RE2::Arg, 13> args;
    std::array<const RE2::Arg*, 13> ptrs{};
    for (size_t i = 0; i < g.size(); ++i) {
        args[i] = RE2::Arg(&g[i]);
        ptrs[i] = &args[i];
    }
    if (!RE2::FullMatchN(n.text, re, ptrs.data(), re.NumberOfCapturingGroups()))
        fail(file, "internal: timestamp " + n.text);
    const bool date_only = !g[0].empty();
    auto num = [](const std::string& s) { return s.empty() ? 0 : std::atoi(s.c_str()); };
    const int year = num(date_only ? g[0] : g[3]), month = num(date_only ? g[1] : g[4]),
              day = num(date_only ? g[2] : g[5]);
    static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool ok = year >= 1 && month >= 1 && month <= 12 && day >= 1 &&
              day <= kDays[std::max(0, std::min(11, month - 1))] + (month == 2 && leap(year) ? 1 : 0);
    if (!date_only)
        ok = ok && num(g[6]) < 24 && num(g[7]) < 60 && num(g[8]) < 60 && num(g[10]) * 60 + num(g[11]) < 24 * 60;
    if (!ok) fail(file, fmt::format("'{}' is not a valid date or time (PyYAML fails on it)", n.text));
    n.truthy = true;
}

// Resolver.resolve for a plain scalar (or one tagged "!"), then the safe constructor's checks.
void resolve_implicit(Node& n, const std::string& file) {
    const Resolvers& r = resolvers();
    const std::string& v = n.text;
    if (RE2::FullMatch(v, r.boolean)) {
        n.kind = Node::Kind::Bool;
        n.truthy = v[0] == 'y' || v[0] == 'Y' || v[0] == 't' || v[0] == 'T' || v == "on" || v == "On" || v == "ON";
    } else if (RE2::FullMatch(v, r.floating)) {
        n.kind = Node::Kind::Float;
        construct_float(n);
    } else if (RE2::FullMatch(v, r.integer)) {
        n.kind = Node::Kind::Int;
        construct_int(n, file);
    } else if (v == "<<") {
        fail(file, "merge keys (<<) are not read");
    } else if (RE2::FullMatch(v, r.null)) {
        n.kind = Node::Kind::Null;
    } else if (RE2::FullMatch(v, r.timestamp)) {
        n.kind = Node::Kind::Time;
        construct_time(n, file);
    } else if (v == "=") {
        fail(file, "a plain '=' (YAML's value tag, which PyYAML's safe loader fails on)");
    } else {
        n.kind = Node::Kind::Str;
        n.truthy = !v.empty();
    }
}

// ------------------------------------------------------------------ libyaml events to nodes

class Parser {
public:
    explicit Parser(const std::string& text) {
        yaml_parser_initialize(&p_);
        yaml_parser_set_input_string(&p_, reinterpret_cast<const unsigned char*>(text.data()), text.size());
        yaml_parser_set_encoding(&p_, YAML_UTF8_ENCODING);
    }
    ~Parser() { yaml_parser_delete(&p_); }
    Parser(const Parser&) = delete;
    Parser& operator=(const Parser&) = delete;
    yaml_parser_t* get() { return &p_; }

private:
    yaml_parser_t p_{};
};

class Event {
public:
    ~Event() {
        if (live) yaml_event_delete(&e);
    }
    Event() = default;
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    yaml_event_t e{};
    bool live = false;
};

std::string str_of(const yaml_char_t* s) { return s ? reinterpret_cast<const char*>(s) : std::string(); }

bool default_tag(const std::string& tag, const char* own) {
    return tag.empty() || tag == "!" || tag == std::string("tag:yaml.org,2002:") + own;
}

// yaml.safe_load of one document: the root node (nullptr for an empty stream).
NodePtr compose(const std::string& text, const std::string& file) {
    Parser parser(text);
    struct Frame {
        std::shared_ptr<Node> node;
        std::string anchor;
    };
    std::vector<Frame> stack;
    std::map<std::string, NodePtr> anchors;
    NodePtr root;
    int documents = 0;
    auto add = [&](const NodePtr& n) {
        if (stack.empty()) {
            root = n;
            return;
        }
        Node& parent = *stack.back().node;
        if (parent.kind == Node::Kind::Map && parent.items.size() % 2 == 0 &&
            (n->kind == Node::Kind::Seq || n->kind == Node::Kind::Map))
            fail(file, fmt::format("a {} as a mapping key (PyYAML fails: unhashable)", kind_name(n->kind)));
        parent.items.push_back(n);
        parent.truthy = true;
    };
    auto name = [&](const std::string& anchor, const NodePtr& n) {
        if (!anchor.empty()) anchors[anchor] = n;
    };
    for (;;) {
        Event ev;
        if (!yaml_parser_parse(parser.get(), &ev.e)) {
            const yaml_parser_t& p = *parser.get();
            fail(file, fmt::format("YAML front matter line {} column {}: {}{}", p.problem_mark.line + 2,
                                   p.problem_mark.column + 1, p.problem ? p.problem : "parse error",
                                   p.context ? fmt::format(" ({})", p.context) : ""));
        }
        ev.live = true;
        const yaml_event_t& e = ev.e;
        switch (e.type) {
            case YAML_STREAM_END_EVENT: return root;
            case YAML_DOCUMENT_START_EVENT:
                if (++documents > 1) fail(file, "more than one YAML document (PyYAML's safe_load fails)");
                break;
            case YAML_ALIAS_EVENT: {
                const auto it = anchors.find(str_of(e.data.alias.anchor));
                if (it == anchors.end())
                    fail(file, fmt::format("alias *{} names no complete anchor before it (recursive aliases are "
                                           "not read)",
                                           str_of(e.data.alias.anchor)));
                add(it->second);
                break;
            }
            case YAML_SCALAR_EVENT: {
                auto n = std::make_shared<Node>();
                n->text.assign(reinterpret_cast<const char*>(e.data.scalar.value), e.data.scalar.length);
                const std::string tag = str_of(e.data.scalar.tag);
                if (e.data.scalar.plain_implicit) {
                    resolve_implicit(*n, file);
                } else if (default_tag(tag, "str")) {
                    n->kind = Node::Kind::Str;
                    n->truthy = !n->text.empty();
                } else if (tag == "tag:yaml.org,2002:null") {
                    n->kind = Node::Kind::Null;
                } else {
                    fail(file, fmt::format("the explicit tag {} is not read", tag));
                }
                name(str_of(e.data.scalar.anchor), n);
                add(n);
                break;
            }
            case YAML_SEQUENCE_START_EVENT:
            case YAML_MAPPING_START_EVENT: {
                const bool seq = e.type == YAML_SEQUENCE_START_EVENT;
                const std::string tag = str_of(seq ? e.data.sequence_start.tag : e.data.mapping_start.tag);
                if (!default_tag(tag, seq ? "seq" : "map"))
                    fail(file, fmt::format("the explicit tag {} is not read", tag));
                if (stack.size() >= kMaxDepth) fail(file, fmt::format("nested deeper than {} levels", kMaxDepth));
                auto n = std::make_shared<Node>();
                n->kind = seq ? Node::Kind::Seq : Node::Kind::Map;
                stack.push_back({n, str_of(seq ? e.data.sequence_start.anchor : e.data.mapping_start.anchor)});
                break;
            }
            case YAML_SEQUENCE_END_EVENT:
            case YAML_MAPPING_END_EVENT: {
                Frame f = std::move(stack.back());
                stack.pop_back();
                name(f.anchor, f.node);
                add(f.node);
                break;
            }
            default: break;
        }
    }
}

// ------------------------------------------------------------------ the model-card heuristics

// A mapping's value for a string key (the last one: a Python dict keeps the last duplicate).
const Node* get(const Node& map, std::string_view key) {
    const Node* found = nullptr;
    for (size_t i = 0; i + 1 < map.items.size(); i += 2)
        if (map.items[i]->kind == Node::Kind::Str && map.items[i]->text == key) found = map.items[i + 1].get();
    return found;
}

bool has(const Node& map, std::string_view key) {
    for (size_t i = 0; i + 1 < map.items.size(); i += 2)
        if (map.items[i]->kind == Node::Kind::Str && map.items[i]->text == key) return true;
    return false;
}

class CardReader {
public:
    CardReader(const Node& card, std::string file, int64_t total_params)
        : card_(card), file_(std::move(file)), total_(total_params) {}

    // use_model_card_metadata: a missing field takes the card's value.
    void use(std::optional<std::string>& field, const char* key) {
        if (!field && has(card_, key)) field = as_string(get(card_, key), key);
    }

    // use_array_model_card_metadata: a string or the items of a list appended.
    void use_array(std::optional<std::vector<std::string>>& field, const char* key) {
        const Node* v = get(card_, key);
        if (!v || v->kind == Node::Kind::Null) return;
        std::vector<std::string> cur = field.value_or(std::vector<std::string>{});
        if (v->kind == Node::Kind::Str) cur.push_back(v->text);
        if (v->kind == Node::Kind::Seq)
            for (const NodePtr& item : v->items) {
                if (item->kind != Node::Kind::Str)
                    fail(
                        fmt::format("'{}' lists {}: convert_hf_to_gguf.py writes an array of strings only when "
                                    "every item is a string",
                                    key, shown(*item)));
                cur.push_back(item->text);
            }
        field = std::move(cur);
    }

    // license: a string, or a list of strings joined with ",".
    void use_license(std::optional<std::string>& field) {
        if (field || !has(card_, "license")) return;
        const Node* v = get(card_, "license");
        if (v->kind != Node::Kind::Seq) {
            field = as_string(v, "license");
            return;
        }
        std::string joined;
        const char* sep = "";
        for (const NodePtr& item : v->items) {
            if (item->kind != Node::Kind::Str)
                fail(fmt::format("'license' lists {}: Python's \",\".join fails on it", shown(*item)));
            joined += sep + item->text;
            sep = ",";
        }
        field = joined;
    }

    // The base_model / dataset heuristics: ids, URLs or mappings of fields, one entry each.
    void use_sources(std::optional<std::vector<CardSource>>& field, const std::array<const char*, 3>& keys) {
        size_t index = field ? field->size() : 0;
        if (!has(card_, keys[0]) && !has(card_, keys[1]) && !has(card_, keys[2])) return;
        const Node* v = has(card_, keys[0])   ? get(card_, keys[0])
                        : has(card_, keys[1]) ? get(card_, keys[1])
                                              : get(card_, keys[2]);
        std::vector<const Node*> entries;
        if (v->kind == Node::Kind::Str) entries.push_back(v);
        if (v->kind == Node::Kind::Seq)
            for (const NodePtr& item : v->items) entries.push_back(item.get());
        if (!field) field.emplace();
        for (const Node* e : entries) {
            CardSource s;
            if (e->kind == Node::Kind::Str) {
                s = source_from_id(e->text);
            } else if (e->kind == Node::Kind::Map) {
                for (const char* f : kCardSourceFields)
                    if (const Node* fv = get(*e, f); fv && fv->kind != Node::Kind::Null) {
                        const std::string what = fmt::format("{}[{}].{}", keys[0], index, f);
                        if (std::optional<std::string> text = as_string(fv, what); text && !text->empty()) s[f] = *text;
                    }
            }  // anything else: an empty entry, as gguf-py appends after logging an error
            field->push_back(std::move(s));
            ++index;
        }
    }

private:
    const Node& card_;
    std::string file_;
    int64_t total_;

    [[noreturn]] void fail(const std::string& what) const { ::oiw::hf::fail(file_, what); }

    // "1.5 (float)", "a list": how a value the writer fails on is named in the error.
    static std::string shown(const Node& n) {
        if (n.kind == Node::Kind::Seq || n.kind == Node::Kind::Map) return std::string("a ") + kind_name(n.kind);
        return fmt::format("{} ({})", n.text.size() > 40 ? n.text.substr(0, 40) + "..." : n.text, kind_name(n.kind));
    }

    // A card value where gguf-py writes a string: None leaves the field unset; a string is the
    // value; any other falsy value is set but writes nothing; anything else makes the writer fail.
    std::optional<std::string> as_string(const Node* v, const std::string& key) const {
        if (!v || v->kind == Node::Kind::Null) return std::nullopt;
        if (v->kind == Node::Kind::Str) return v->text;
        if (!v->truthy) return std::string();
        fail(fmt::format("'{}' is {} where convert_hf_to_gguf.py writes a string (it fails on it)", key, shown(*v)));
    }

    // A base model or dataset given as a URL or a Hugging Face id.
    CardSource source_from_id(const std::string& id) const {
        CardSource s;
        auto put = [&](const char* f, const std::optional<std::string>& v) {
            if (v && !v->empty()) s[f] = *v;
        };
        std::optional<std::string> hf_id;
        const bool url = id.starts_with("http://") || id.starts_with("https://") || id.starts_with("ssh://");
        if (url) {
            s["repo_url"] = id;
            // re.match(r"https?://huggingface.co/([^/]+/[^/]+)$", id), its '.' any character but '\n'
            const size_t at = id.starts_with("http://") ? 7 : 8;
            std::string_view rest = std::string_view(id).substr(id.starts_with("ssh://") ? id.size() : at);
            if (id.find("huggingface.co") != std::string::npos && rest.size() > 15 &&
                rest.substr(0, 11) == "huggingface" && rest[11] != '\n' && rest.substr(12, 3) == "co/") {
                rest.remove_prefix(15);
                const size_t slash = rest.find('/');
                if (slash != std::string_view::npos && slash > 0 && slash + 1 < rest.size() &&
                    rest.find('/', slash + 1) == std::string_view::npos)
                    hf_id = std::string(rest);
            }
            if (!hf_id) return s;
        }
        const ModelIdParts p = [&] {
            try {
                return model_id_parts(hf_id.value_or(id), total_);
            } catch (const FormatError& e) {  // named with the card
                throw FormatError(e.kind(), file_, "", std::string("model card: ") + e.what());
            }
        }();
        put("name", p.full_name ? std::optional(id_to_title(*p.full_name)) : std::nullopt);
        put("organization", p.organization ? std::optional(id_to_title(*p.organization)) : std::nullopt);
        put("version", p.version);
        if (!url && p.organization && p.full_name)
            s["repo_url"] = fmt::format("https://huggingface.co/{}/{}", *p.organization, *p.full_name);
        return s;
    }
};

}  // namespace

std::optional<std::string> front_matter(const std::string& text) {
    // str.splitlines after universal newlines: \r\n, \r, \n, \v, \f, \x1c-\x1e, U+0085, U+2028, U+2029
    std::vector<std::string> lines;
    std::string line;
    for (size_t i = 0; i < text.size();) {
        const char c = text[i];
        size_t brk = 0;
        if (c == '\r') {
            brk = i + 1 < text.size() && text[i + 1] == '\n' ? 2 : 1;
        } else if (c == '\n' || c == '\v' || c == '\f' || c == '\x1c' || c == '\x1d' || c == '\x1e') {
            brk = 1;
        } else if (text.compare(i, 2, "\xc2\x85") == 0) {
            brk = 2;
        } else if (text.compare(i, 3, "\xe2\x80\xa8") == 0 || text.compare(i, 3, "\xe2\x80\xa9") == 0) {
            brk = 3;
        }
        if (brk == 0) {
            line += c;
            ++i;
            continue;
        }
        lines.push_back(std::move(line));
        line.clear();
        i += brk;
    }
    if (!line.empty()) lines.push_back(std::move(line));
    if (lines.empty() || lines[0] != "---") return std::nullopt;
    std::string yaml;
    for (size_t i = 1; i < lines.size() && lines[i] != "---"; ++i) {
        if (i > 1) yaml += '\n';
        yaml += lines[i];
    }
    yaml += '\n';
    std::string out;  // the Norway hack, then tabs as two spaces
    for (size_t i = 0; i < yaml.size();) {
        if (yaml.compare(i, 5, "- no\n") == 0) {
            out += "- \"no\"\n";
            i += 5;
        } else {
            out += yaml[i++];
        }
    }
    std::string spaced;
    for (char c : out) spaced += c == '\t' ? std::string("  ") : std::string(1, c);
    return spaced;
}

CardFile::CardFile(const std::string& dir) : path_((std::filesystem::path(dir) / "README.md").string()) {}

const std::string* CardFile::text() {
    if (!read_) {
        read_ = true;
        if (std::error_code ec; std::filesystem::is_regular_file(path_, ec)) {
            text_ = read_text_file(path_, kMaxCardBytes);
            check_utf8(*text_, path_);
        }
    }
    return text_ ? &*text_ : nullptr;
}

namespace {

// parse_model_card on text already checked to be UTF-8.
CardMetadata parse_utf8_card(const std::string& text, const std::string& path, int64_t total_params) {
    CardMetadata m;
    const std::optional<std::string> yaml = front_matter(text);
    if (!yaml) return m;
    const NodePtr root = compose(*yaml, path);
    if (!root || root->kind != Node::Kind::Map) return m;  // gguf-py logs an error and reads no card

    CardReader r(*root, path, total_params);
    // llama.cpp's own keys, then its model_-prefixed ones, then those some model creators use.
    for (const auto& prefix : {"", "model_"}) {
        const std::pair<std::optional<std::string>*, const char*> keys[] = {{&m.name, "name"},
                                                                            {&m.author, "author"},
                                                                            {&m.version, "version"},
                                                                            {&m.organization, "organization"},
                                                                            {&m.description, "description"},
                                                                            {&m.finetune, "finetune"},
                                                                            {&m.basename, "basename"},
                                                                            {&m.size_label, "size_label"},
                                                                            {&m.source_url, "url"},
                                                                            {&m.source_doi, "doi"},
                                                                            {&m.source_uuid, "uuid"},
                                                                            {&m.source_repo_url, "repo_url"}};
        for (const auto& [field, key] : keys) r.use(*field, (std::string(prefix) + key).c_str());
    }
    r.use(m.name, "model_name");
    r.use(m.author, "model_creator");
    r.use(m.basename, "model_type");
    r.use_sources(m.base_models, {"base_model", "base_models", "base_model_sources"});
    r.use_sources(m.datasets, {"datasets", "dataset", "dataset_sources"});
    r.use_license(m.license);
    r.use(m.license_name, "license_name");
    r.use(m.license_link, "license_link");
    r.use_array(m.tags, "tags");
    r.use_array(m.tags, "pipeline_tag");
    r.use_array(m.languages, "languages");
    r.use_array(m.languages, "language");
    return m;
}

}  // namespace

CardMetadata read_model_card(CardFile& card, int64_t total_params) {
    const std::string* text = card.text();  // checked to be UTF-8 there
    return text ? parse_utf8_card(*text, card.path(), total_params) : CardMetadata{};
}

CardMetadata parse_model_card(const std::string& text, const std::string& path, int64_t total_params) {
    check_utf8(text, path);
    return parse_utf8_card(text, path, total_params);
}

namespace {

// A --metadata value where gguf-py writes a string, under the rules of CardReader::as_string.
std::optional<std::string> override_string(const Json& v, const std::string& file, const std::string& key) {
    if (v.is_null()) return std::nullopt;
    if (v.is_string()) return v.get<std::string>();
    const bool falsy = (v.is_boolean() && !v.get<bool>()) || (v.is_number() && v.get<double>() == 0.0) ||
                       ((v.is_array() || v.is_object()) && v.empty());
    if (falsy) return std::string();
    throw FormatError(
        ErrorKind::BadJson, file, "key '" + key + "'",
        fmt::format("{} where convert_hf_to_gguf.py writes a string (it fails on it)", v.dump().substr(0, 60)));
}

}  // namespace

void apply_metadata_override(const std::string& json_text, const std::string& file, CardMetadata& m, Json& sampling) {
    const Json o = parse_json(json_text, file, 64);
    if (!o.is_object()) throw FormatError(ErrorKind::BadJson, file, "", "not a JSON object of GGUF keys");
    for (auto it = o.begin(); it != o.end(); ++it)
        if (it.key().starts_with("general.sampling.")) {
            if (it->is_null())
                sampling.erase(it.key());
            else
                sampling[it.key()] = *it;
        }
    const std::pair<std::optional<std::string>*, const char*> keys[] = {{&m.name, "name"},
                                                                        {&m.author, "author"},
                                                                        {&m.version, "version"},
                                                                        {&m.organization, "organization"},
                                                                        {&m.finetune, "finetune"},
                                                                        {&m.basename, "basename"},
                                                                        {&m.description, "description"},
                                                                        {&m.quantized_by, "quantized_by"},
                                                                        {&m.size_label, "size_label"},
                                                                        {&m.license_name, "license.name"},
                                                                        {&m.license_link, "license.link"},
                                                                        {&m.url, "url"},
                                                                        {&m.doi, "doi"},
                                                                        {&m.uuid, "uuid"},
                                                                        {&m.repo_url, "repo_url"},
                                                                        {&m.source_url, "source.url"},
                                                                        {&m.source_doi, "source.doi"},
                                                                        {&m.source_uuid, "source.uuid"},
                                                                        {&m.source_repo_url, "source.repo_url"}};
    for (const auto& [field, name] : keys) {
        const std::string key = std::string("general.") + name;
        if (const Json* v = member(o, key)) *field = override_string(*v, file, key);
    }
    for (const auto& [list, key] :
         {std::pair{&m.base_models, "general.base_models"}, {&m.datasets, "general.datasets"}}) {
        const Json* v = member(o, key);
        if (!v) continue;
        if (v->is_null()) {
            list->reset();
            continue;
        }
        if (!v->is_array())
            throw FormatError(ErrorKind::BadJson, file, std::string("key '") + key + "'", "not a list of objects");
        list->emplace();
        for (size_t i = 0; i < v->size(); ++i) {
            const Json& e = (*v)[i];
            if (!e.is_object())
                throw FormatError(ErrorKind::BadJson, file, fmt::format("key '{}'[{}]", key, i),
                                  "not an object (convert_hf_to_gguf.py fails on it or misreads it)");
            CardSource s;
            for (const char* f : kCardSourceFields)
                if (const Json* fv = member(e, f); fv && !fv->is_null())
                    if (auto text = override_string(*fv, file, fmt::format("{}[{}].{}", key, i, f));
                        text && !text->empty())
                        s[f] = *text;
            (*list)->push_back(std::move(s));
        }
    }
    for (const auto& [list, key] : {std::pair{&m.tags, "general.tags"}, {&m.languages, "general.languages"}}) {
        const Json* v = member(o, key);
        if (!v) continue;
        if (v->is_null()) {
            list->reset();
            continue;
        }
        if (!v->is_array() || std::any_of(v->begin(), v->end(), [](const Json& x) { return !x.is_string(); }))
            throw FormatError(ErrorKind::BadJson, file, std::string("key '") + key + "'",
                              "not a list of strings (convert_hf_to_gguf.py writes other arrays typed, or fails)");
        *list = v->get<std::vector<std::string>>();
    }
}

}  // namespace oiw::hf
