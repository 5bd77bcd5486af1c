// gguf-inspect --html and diff --html: the page is well-formed XML (strict checker in
// tests/support/xml.h), self-contained, and its type-map cells, slow-path outlines, bytes/token
// bars and ceiling agree with the JSON report; hostile names are escaped.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <map>
#include <set>

#include <fmt/format.h>

#include "libformat/escape.h"
#include "libformat/gguf/gguf.h"
#include "tests/support/helpers.h"
#include "tests/support/xml.h"

namespace oiw {
namespace {

using Json = nlohmann::ordered_json;
using test::XmlElement;

std::string tool() { return test::tool_path("gguf-inspect"); }

std::string slurp(const std::string& path) {
    const auto b = test::read_file(path);
    return std::string(b.begin(), b.end());
}

// Runs `gguf-inspect ARGS --html OUT` (OUT in a temp dir); returns the page, expects `rc`.
std::string html_of(const std::string& args, int rc = 0) {
    const std::string out = (test::temp_dir() / "report.html").string();
    EXPECT_EQ(test::run(tool() + " " + args + " --html " + out + " 2>&1"), rc) << args;
    return slurp(out);
}

Json json_of(const std::string& args) {
    std::string out;
    EXPECT_EQ(test::run(tool() + " " + args + " --json", &out), 0) << args;
    return Json::parse(out);
}

bool has_class(const XmlElement& e, std::string_view cls) {
    const std::string* c = e.attr("class");
    if (!c) return false;
    const std::string padded = " " + *c + " ";
    return padded.find(" " + std::string(cls) + " ") != std::string::npos;
}

// The type-map column of a tensor as documented: "norms" for norms in blocks, else the stem.
std::string column(const Json& t) {
    const std::string name = t["name"];
    if (!t["layer"].is_null() && t["group"] == "norms") return "norms";
    size_t b = 0;
    if (!t["layer"].is_null()) b = name.find('.', 4) + 1;  // after "blk.N."
    return name.substr(b, name.find('.', b) - b);
}

// Checks a report page against the JSON report of the same arguments.
void check_report(const std::string& args) {
    SCOPED_TRACE(args);
    const std::string page = html_of(args);
    const Json j = json_of(args);
    XmlElement root;
    ASSERT_NO_THROW(root = test::parse_xml(page));
    EXPECT_EQ(root.name, "html");
    // Self-contained: no script, nothing fetched (xmlns values are names, not fetched).
    for (const char* fetch : {"<script", "<link", "<img", "<iframe", "src=", "href=", "url(", "@import"})
        EXPECT_EQ(page.find(fetch), std::string::npos) << fetch;

    // Cells: one per (layer, column); each tensor is named with its type in its cell's hover text,
    // and the cell's type is that of its largest matmul tensor.
    std::map<std::pair<std::string, std::string>, const XmlElement*> cells;
    for (const XmlElement* c :
         root.find_all([](const XmlElement& e) { return e.name == "g" && has_class(e, "cell"); })) {
        const std::string* layer = c->attr("data-layer");
        ASSERT_TRUE(c->attr("data-column") && c->attr("data-type") && c->child("title"));
        EXPECT_TRUE(cells.emplace(std::make_pair(layer ? *layer : "", *c->attr("data-column")), c).second)
            << "duplicate cell";
    }
    std::set<std::pair<std::string, std::string>> keys;
    std::map<std::pair<std::string, std::string>, std::pair<std::pair<bool, uint64_t>, std::string>> main;
    for (const auto& t : j["tensors"]) {
        const auto key = std::make_pair(t["layer"].is_null() ? "" : std::to_string(t["layer"].get<int>()), column(t));
        keys.insert(key);
        ASSERT_TRUE(cells.count(key)) << t["name"];
        const std::string title = cells[key]->child("title")->text;
        EXPECT_NE(title.find(escape_text(t["name"].get<std::string>()) + ": " + t["type"].get<std::string>() + " "),
                  std::string::npos)
            << title;
        EXPECT_NE(title.find(fmt::format(", {} B/token", t["bytes_per_token"].get<uint64_t>())), std::string::npos)
            << title;
        const auto rank = std::make_pair(t["matmul"].get<bool>(), t["n_bytes"].get<uint64_t>());
        if (!main.count(key) || main[key].first < rank) main[key] = {rank, t["type"]};
    }
    EXPECT_EQ(keys.size(), cells.size());
    for (const auto& [key, m] : main)
        EXPECT_EQ(*cells[key]->attr("data-type"), m.second) << key.first << " " << key.second;

    // Slow-path outlines: exactly the tensors of the audit's flags (lm-head-share is not a slow path).
    std::set<std::pair<std::string, std::string>> slow;
    std::map<std::string, const Json*> by_name;
    for (const auto& t : j["tensors"]) by_name[t["name"]] = &t;
    if (!j["audit"].is_null())
        for (const auto& f : j["audit"]["flags"]) {
            if (f["kind"] == "lm-head-share") continue;
            for (const auto& n : f["tensors"]) {
                const Json& t = *by_name[n];
                const auto key =
                    std::make_pair(t["layer"].is_null() ? "" : std::to_string(t["layer"].get<int>()), column(t));
                slow.insert(key);
                EXPECT_NE(cells[key]->child("title")->text.find("slow path [" + f["kind"].get<std::string>() + "]"),
                          std::string::npos);
            }
        }
    for (const auto& [key, c] : cells)
        EXPECT_EQ(has_class(*c, "slow"), slow.count(key) == 1) << key.first << " " << key.second;

    // Bytes/token: the per-group segments and the per-layer bars carry the JSON figures.
    std::map<std::string, uint64_t> groups;
    for (const XmlElement* g : root.find_all([](const XmlElement& e) { return has_class(e, "group-seg"); }))
        groups[*g->attr("data-group")] = std::stoull(*g->attr("data-bytes-per-token"));
    std::map<std::string, uint64_t> want_groups;
    for (const auto& [g, b] : j["traffic"]["by_group"].items())
        if (b.get<uint64_t>()) want_groups[g] = b;
    EXPECT_EQ(groups, want_groups);
    std::map<std::string, uint64_t> layers, want_layers;
    for (const XmlElement* g : root.find_all([](const XmlElement& e) { return has_class(e, "layer-bar"); }))
        layers[*g->attr("data-layer")] = std::stoull(*g->attr("data-bytes-per-token"));
    for (const auto& l : j["summary"]["by_layer"])
        if (!l["layer"].is_null()) want_layers[std::to_string(l["layer"].get<int>())] = l["bytes_per_token"];
    EXPECT_EQ(layers, want_layers);
    const auto ceiling = root.find_all([](const XmlElement& e) { return has_class(e, "ceiling"); });
    if (j["traffic"]["tokens_per_s_ceiling"].is_null()) {
        EXPECT_TRUE(ceiling.empty());
    } else {
        ASSERT_EQ(ceiling.size(), 1u);
        EXPECT_EQ(*ceiling[0]->attr("data-tokens-per-s"),
                  fmt::format("{:.2f}", j["traffic"]["tokens_per_s_ceiling"].get<double>()));
    }
    // The text report's sections are there, from the same document.
    for (const char* id : {"header", "audit", "by-type", "by-group", "by-layer", "traffic", "metadata", "tensors"}) {
        if (std::string(id) == "audit" && j["audit"].is_null()) continue;
        EXPECT_EQ(root.find_all([&](const XmlElement& e) {
                          return e.name == "section" && e.attr("id") && *e.attr("id") == id;
                      })
                      .size(),
                  1u)
            << id;
    }
    EXPECT_NE(page.find(fmt::format("<td>{} bytes (", j["file"]["size"].get<uint64_t>())), std::string::npos);
}

TEST(XmlChecker, AcceptsWellFormedAndRejectsTheRest) {
    const auto root =
        test::parse_xml("<!DOCTYPE html>\n<html a=\"1\" b='&lt;&#233;&#x41;'><!-- c --><p>x &amp; y<br/></p></html>\n");
    EXPECT_EQ(*root.attr("b"),
              "<\xc3\xa9"
              "A");
    EXPECT_EQ(root.child("p")->text, "x & y");
    for (const char* bad :
         {"<a><b></a></b>", "<a x=1/>", "<a>&nbsp;</a>", "<a>\xff</a>", "<a>\x01</a>", "<a x='1' x='2'/>", "<a x='<'/>",
          "<a/><b/>", "<a>]]></a>", "<a>&#0;</a>", "<a>\xed\xa0\x80</a>", "<a>", "<a>&amp</a>"})
        EXPECT_THROW(test::parse_xml(bad), std::runtime_error) << bad;
}

TEST(InspectHtml, EscapeXml) {
    EXPECT_EQ(escape_xml("a&b<c>\"'"), "a&amp;b&lt;c&gt;&quot;&#39;");
    EXPECT_EQ(escape_xml("\xc3\xa9\xe2\x96\x81 \xf0\x9f\x98\x80\tx\ny"), "\xc3\xa9\xe2\x96\x81 \xf0\x9f\x98\x80\tx\ny");
    EXPECT_EQ(escape_xml(std::string("\xff\x01\r\x7f\0z", 6)), "\\xff\\x01\\x0d\\x7f\\x00z");
    EXPECT_EQ(escape_xml("\xc0\x80|\xed\xa0\x80|\xef\xbf\xbe|\xc2\x85|\xe2\x82"),
              "\\xc0\\x80|\\xed\\xa0\\x80|\\xef\\xbf\\xbe|\\xc2\\x85|\\xe2\\x82");
}

TEST(InspectHtml, ReportAgreesWithJsonOnVendoredModels) {
    for (const char* m : {"models/mini-llama-f16.gguf", "models/mini-moe-f16.gguf"}) check_report(test::data_path(m));
    check_report(test::data_path("models/mini-moe-f16.gguf") + " --profile candle-x86 --bandwidth 25GiB/s");
    check_report(test::data_path("models/mini-llama-f16.gguf") + " --no-audit");
}

TEST(InspectHtml, ReportAgreesWithJsonOnSharedFixtures) {
    OIW_NEED_SHARED("fixtures/tiny-moe-Q4_K_M.gguf");
    check_report(test::shared_path("fixtures/tiny-moe-Q4_K_M.gguf") + " --bandwidth 20GB/s");
    check_report(test::shared_path("fixtures/tiny-llama-Q4_0.gguf") + " --profile candle-x86");
}

TEST(InspectHtml, HostileNamesAreEscaped) {
    const std::string path = (test::temp_dir() / "hostile.gguf").string();
    {
        GgufWriter w(path);
        w.add_kv({"general.architecture", GgufValue::make_string("llama")});
        w.add_kv({"general.name", GgufValue::make_string("<script>alert('x')</script> & ]]> \xff\x01")});
        w.add_kv({"key.<b>&\xfe", GgufValue::make_string("\"v\" \x1b[2J")});
        const int64_t shape[] = {32, 2};
        w.add_tensor(std::string("blk.0.<i>&\"'\xff\x1b.weight"), GgmlType::F32, shape);
        w.write_tensor_data(std::vector<uint8_t>(32 * 2 * 4));
        w.finish();
    }
    const std::string page = html_of(path);
    XmlElement root;
    ASSERT_NO_THROW(root = test::parse_xml(page)) << page;
    EXPECT_EQ(page.find("<script"), std::string::npos);
    EXPECT_NE(page.find("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; ]]&gt; \\xff\\x01"), std::string::npos);
    EXPECT_NE(page.find("data-column=\"&lt;i&gt;&amp;&quot;&#39;\\xff\\x1b\""), std::string::npos) << page;
    EXPECT_NE(page.find("key.&lt;b&gt;&amp;\\xfe"), std::string::npos);
}

TEST(InspectHtml, DiffMarksChangedCellsAndLayerTraffic) {
    const std::string a = test::data_path("models/mini-moe-f16.gguf");
    const std::string b = (test::temp_dir() / "q8.gguf").string();
    ASSERT_EQ(test::run(test::tool_path("gguf-requant") + " " + a + " " + b + " --preset Q8_0 > /dev/null 2>&1"), 0);
    const std::string page = html_of("diff " + a + " " + b, 1);
    std::string out;
    ASSERT_EQ(test::run(tool() + " diff " + a + " " + b + " --json", &out), 1);
    const Json j = Json::parse(out);
    XmlElement root;
    ASSERT_NO_THROW(root = test::parse_xml(page));
    // Two maps; in each, the changed cells are those of the changed tensors.
    const auto maps = root.find_all([](const XmlElement& e) { return e.name == "figure"; });
    ASSERT_EQ(maps.size(), 2u);
    const Json ja = json_of(a), jb = json_of(b);
    std::set<std::pair<std::string, std::string>> changed;
    for (const auto& c : j["tensors"]["changed"]) {
        for (const auto& t : ja["tensors"])
            if (t["name"] == c["name"])
                changed.insert({t["layer"].is_null() ? "" : std::to_string(t["layer"].get<int>()), column(t)});
    }
    ASSERT_FALSE(changed.empty());
    for (size_t side = 0; side < 2; ++side) {
        size_t n = 0, marked = 0;
        for (const XmlElement* c : maps[side]->find_all([](const XmlElement& e) { return has_class(e, "cell"); })) {
            const auto key =
                std::make_pair(c->attr("data-layer") ? *c->attr("data-layer") : "", *c->attr("data-column"));
            ++n;
            marked += has_class(*c, "changed");
            EXPECT_EQ(has_class(*c, "changed"), changed.count(key) == 1) << key.first << " " << key.second;
            if (side == 1 && changed.count(key)) {
                EXPECT_NE(c->child("title")->text.find("changed: F16 "), std::string::npos);
            }
        }
        EXPECT_GT(n, marked);
    }
    // Per-layer bytes/token, A and B, as in the two JSON reports.
    std::map<std::string, std::pair<uint64_t, uint64_t>> got, want;
    for (const XmlElement* g : root.find_all([](const XmlElement& e) { return has_class(e, "layer-diff"); }))
        got[*g->attr("data-layer")] = {std::stoull(*g->attr("data-a")), std::stoull(*g->attr("data-b"))};
    for (const auto& l : ja["summary"]["by_layer"])
        if (!l["layer"].is_null()) want[std::to_string(l["layer"].get<int>())].first = l["bytes_per_token"];
    for (const auto& l : jb["summary"]["by_layer"])
        if (!l["layer"].is_null()) want[std::to_string(l["layer"].get<int>())].second = l["bytes_per_token"];
    EXPECT_EQ(got, want);
    EXPECT_FALSE(
        root.find_all([](const XmlElement& e) { return e.name == "section" && *e.attr("id") == "totals"; }).empty());
}

TEST(InspectHtml, StdoutOptionAndRefusals) {
    const std::string m = test::data_path("models/mini-llama-f16.gguf");
    std::string out;
    ASSERT_EQ(test::run(tool() + " " + m + " --html -", &out), 0);
    EXPECT_EQ(out.rfind("<!DOCTYPE html>", 0), 0u);
    EXPECT_NO_THROW(test::parse_xml(out));
    EXPECT_EQ(test::run(tool() + " " + m + " --html - --json 2>&1", &out), 2);
    EXPECT_NE(out.find("excludes"), std::string::npos) << out;
    const std::string copy = (test::temp_dir() / "m.gguf").string();
    test::write_file(copy, test::read_file(m));
    EXPECT_EQ(test::run(tool() + " " + copy + " --html " + copy + " 2>&1", &out), 2);
    EXPECT_NE(out.find("refusing to overwrite the input file"), std::string::npos) << out;
    EXPECT_EQ(test::read_file(copy), test::read_file(m));
}

}  // namespace
}  // namespace oiw
