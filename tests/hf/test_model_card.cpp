// The model card (README.md front matter): gguf-convert's output against convert_hf_to_gguf.py's for
// every card of tests/data/hf/cards (scripts/make-card-goldens: the same bytes, or a refusal where
// the Python converter fails), the front-matter cut, and the constructs refused here that PyYAML
// would read.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "converters/hf/model_card.h"
#include "libformat/error.h"
#include "tests/support/helpers.h"
#include "tests/support/hf_fixtures.h"

namespace {

using namespace oiw;
using namespace oiw::test;
namespace fs = std::filesystem;

TEST(HfModelCard, MatchesConvertHfToGgufOnEveryCard) {
    const auto root = temp_dir();
    const fs::path dir = root / "card-model";  // the directory name scripts/make-card-goldens converts
    fs::rename(make_hf_case("tiny-llama", root), dir);
    std::ifstream g(data_path("hf/cards/goldens.txt"));
    std::string line;
    int same = 0, refused = 0;
    while (std::getline(g, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream f(line);
        std::string card, want;
        f >> card >> want;
        SCOPED_TRACE(card);
        // CARD+OPTION: the card with --model-name ("Custom Name", "" for nulls) or a --metadata file
        const std::string md = card.substr(0, card.find('+')), option = card.substr(md.size());
        std::string opts;
        if (option == "+model-name") opts = md == "nulls" ? "--model-name ''" : "--model-name 'Custom Name'";
        if (option == "+metadata") opts = "--metadata " + data_path("hf/cards/override.json");
        if (option == "+bad-metadata") opts = "--metadata " + data_path("hf/cards/override-bad.json");
        fs::copy_file(data_path("hf/cards/" + md + ".md"), dir / "README.md", fs::copy_options::overwrite_existing);
        const fs::path out = root / (card + ".gguf");
        std::string log;
        const int rc = run(
            fmt::format("{} -q {} {} --outtype f32 {}", tool_path("gguf-convert"), dir.string(), out.string(), opts),
            &log, true);
        if (want == "fails") {
            EXPECT_NE(rc, 0);
            EXPECT_NE(log.find(option == "+bad-metadata" ? "override-bad.json" : "README.md: model card: "),
                      std::string::npos)
                << log;
            EXPECT_FALSE(fs::exists(out));
            ++refused;
        } else {
            ASSERT_EQ(rc, 0) << log;
            EXPECT_EQ(sha256_hex(read_file(out.string())), want);
            ++same;
        }
    }
    // 12 cards Python reads (real Qwen3 / Llama 3.2 cards, a merge with every base-model form, falsy and
    // null values, CR/LF/U+2028 line breaks, BOM, unclosed, empty, none, a list, non-ASCII names), 2 of
    // them again with --model-name and one with a --metadata file; 9 cards and a --metadata file
    // Python fails on
    EXPECT_EQ(same, 15);
    EXPECT_EQ(refused, 10);
}

TEST(HfModelCard, FrontMatterIsCutAsGgufPyCutsIt) {
    EXPECT_EQ(hf::front_matter("---\na: 1\n---\nbody\n---\n"), "a: 1\n");
    EXPECT_EQ(hf::front_matter("---\r\na: 1\rb:\x0b- no\n\tc: 2\n"), "a: 1\nb:\n- \"no\"\n  c: 2\n");
    EXPECT_EQ(hf::front_matter("---\xe2\x80\xa9x: y\xc2\x85---\nz"), "x: y\n");
    EXPECT_EQ(hf::front_matter("---"), "\n");
    EXPECT_EQ(hf::front_matter("--- \na: 1\n"), std::nullopt);  // the first line is exactly "---"
    EXPECT_EQ(hf::front_matter("\xef\xbb\xbf---\na: 1\n"), std::nullopt);
    EXPECT_EQ(hf::front_matter(""), std::nullopt);
}

TEST(HfModelCard, ReadsTheFieldsGgufPyTakes) {
    const hf::CardMetadata m = hf::parse_model_card(
        "---\nlicense: [a, b]\nmodel_name: N\nname: ~\nbase_model: org/Model-7B-v1.5\ntags: t\npipeline_tag: p\n"
        "author: 0\n---\n",
        "README.md", 7'000'000'000);
    EXPECT_EQ(m.license, "a,b");
    EXPECT_EQ(m.name, "N");
    EXPECT_EQ(m.author, "");  // a falsy value: set (blocks the heuristics), written as nothing
    EXPECT_EQ(m.tags, (std::vector<std::string>{"t", "p"}));
    ASSERT_TRUE(m.base_models);
    ASSERT_EQ(m.base_models->size(), 1u);
    EXPECT_EQ((*m.base_models)[0], (hf::CardSource{{"name", "Model 7B v1.5"},
                                                   {"organization", "Org"},
                                                   {"version", "v1.5"},
                                                   {"repo_url", "https://huggingface.co/org/Model-7B-v1.5"}}));
    EXPECT_FALSE(m.datasets);
    EXPECT_FALSE(m.version);
}

// What PyYAML reads but this reader refuses, each in one line naming the file and the construct.
TEST(HfModelCard, RefusesWhatItDoesNotRead) {
    const std::pair<const char*, const char*> cases[] = {
        {"---\nbase: &b {license: mit}\nother:\n  <<: *b\n---\n", "merge keys (<<) are not read"},
        {"---\nlicense: !!python/str mit\n---\n", "the explicit tag tag:yaml.org,2002:python/str is not read"},
        {"---\nversion: !!int 3\n---\n", "the explicit tag tag:yaml.org,2002:int is not read"},
        {"---\na: &x [*x]\n---\n", "alias *x names no complete anchor"},
        {"---\n? [a]\n: b\n---\n", "a list as a mapping key"},
        {"---\na: \x01\n---\n", "YAML front matter line"},
        {"---\nlicense: mit\n\xff\n---\n", "not UTF-8 at byte 17"},
        {"---\nbase_model: org/Model-v\xd9\xa3\n---\n", "has Unicode digits"},  // v + ARABIC-INDIC THREE
        {"---\ndatasets: [a/\xe2\x84\xaa-7B]\n---\n", "case-folding letters"},  // KELVIN SIGN
    };
    for (const auto& [text, why] : cases) {
        SCOPED_TRACE(text);
        try {
            (void)hf::parse_model_card(text, "dir/README.md", 0);
            ADD_FAILURE() << "accepted";
        } catch (const FormatError& e) {
            const std::string msg = e.what();
            EXPECT_NE(msg.find("dir/README.md"), std::string::npos) << msg;
            EXPECT_NE(msg.find(why), std::string::npos) << msg;
            EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
        }
    }
    std::string deep = "---\na: ";
    for (int i = 0; i < 300; ++i) deep += "[";
    EXPECT_THROW((void)hf::parse_model_card(deep + "\n---\n", "README.md", 0), FormatError);
}

}  // namespace
