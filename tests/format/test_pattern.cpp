// oiw::Pattern (RE2) answers exactly as std::regex_search (ECMAScript, llama-quantize's matcher) on
// the patterns people give, and refuses what RE2 cannot match in linear time, with one line.
#include <gtest/gtest.h>

#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "libformat/error.h"
#include "libformat/pattern.h"

namespace oiw {
namespace {

using namespace std::string_literals;

// Patterns from llama-quantize's documentation, gguf-plan's plans, our docs, and ECMAScript corners
// (dot and line ends, \s with \v, [] and [^], escapes libstdc++ reads its own way).
const std::vector<std::string> kPatterns = {
    "attn_v",
    "ffn_down",
    "token_embd",
    "output",
    "exps",
    "\\.weight$",
    "^output\\.weight$",
    ".*",
    "",
    "blk\\.[0-9]+\\.ffn_(up|gate)",
    "blk\\.(0|1|2)\\.",
    "blk\\.\\d+\\.attn_(q|k)\\.weight",
    "ffn_.*_exps",
    "(?:attn|ffn)_(?:k|v)",
    "[0-9]{2}",
    "blk\\.[12]?[0-9]\\.",
    "\\bffn\\b",
    "\\Bn_",
    "^blk\\.10\\.ffn_up_exps\\.weight$",
    "attn_(q|k|v)\\.weight",
    "ffn_(down|up)_exps",
    "^$",
    "x|",
    "|x",
    "\\\\",
    "[.]",
    "[-a]",
    "[a-]",
    "\\d+\\.\\d",
    "\\w+",
    "\\W",
    "\\D",
    "(a)(b)",
    "a{2,3}",
    "a{2,}",
    "a*?b",
    "a+?",
    "a.b",
    ".",
    "^.$",
    "\\s",
    "\\S",
    "[\\s]",
    "[\\S]",
    "[^\\s]",
    "[^a]",
    "[]",
    "[^]",
    "a[]",
    "a[^]b",
    "\\x41",
    "\\x0b",
    "\\u0041",
    "\\0",
    "[\\b]",
    "\\cA",
    "\\q",
    "\\A",
    "\\z",
    "\\p",
    "[[:digit:]]+",
    "[[:alpha:]_]+$",
    "[[:space:]]",
    "\\t",
    "\\n",
    "\\r",
    "\\v",
    "\\f",
    "[\\n\\r]",
    "[^\\n]",
    "\\.",
    "\\-",
    "\\/",
    "\\$",
    "[\\]]",
    "[a\\-z]",
    "[\\d.]",
    "[\\w]",
    "[\\W]",
    "[a[]",
    "blk\\.(1[0-9]|2[0-3])\\.",
    "(?:x)*",
    "(a|b)*c",
    "A",
    "[A-Z]",
    "\xff",
    "[\x80-\xff]",
    "\\.weight$|^output",
};

const std::vector<std::string> kNames = {
    "token_embd.weight",
    "output.weight",
    "output_norm.weight",
    "blk.0.attn_v.weight",
    "blk.10.ffn_up_exps.weight",
    "blk.2.ffn_down.weight",
    "blk.23.attn_q.weight",
    "blk.1.ffn_gate.weight",
    "blk.7.ffn_gate_inp.weight",
    "",
    "a",
    "ab",
    "aab",
    "aaab",
    "a\nb",
    "a\rb",
    "a\vb",
    "a\fb",
    "a\tb",
    "a b",
    "axb",
    "c",
    "x",
    "A",
    "AQZ",
    "q",
    "z",
    "p",
    "\x01",
    "\x0b",
    "\xff",
    "\x80x",
    "a\0b"s,
    "\0"s,
    "-",
    "]",
    "a[",
    "/",
    "$",
    "\\",
    "x.y",
    "1.5",
    "blk.15.attn_k.weight",
    "blk.x.ffn",
    "n_",
    "\b",
    "ffn",
    "ffn_",
    "a\xa0"
    "b",
};

TEST(Pattern, MatchesStdRegexSearchOnEveryPatternAndName) {
    size_t checked = 0, matched = 0;
    for (const auto& p : kPatterns) {
        const std::regex std_re(p);  // every table pattern is valid for both
        const Pattern ours(p, "--test");
        for (const auto& n : kNames) {
            const bool want = std::regex_search(n, std_re);
            EXPECT_EQ(ours.search(n), want) << "pattern '" << p << "' name '" << n << "'";
            matched += want;
            ++checked;
        }
    }
    EXPECT_EQ(checked, kPatterns.size() * kNames.size());
    EXPECT_GT(matched, checked / 20);  // the table exercises matches, not only misses
    EXPECT_LT(matched, checked / 2);
}

TEST(Pattern, ExactNameOfAnchoredLiteralsAgreesWithSearch) {
    const std::vector<std::pair<std::string, std::optional<std::string>>> cases = {
        {"^blk\\.0\\.ffn_up\\.weight$", "blk.0.ffn_up.weight"},
        {"^blk\\.0\\.a\\x0a\\^x\\$=\\x4632\\x0d\\.weight$", "blk.0.a\n^x$=F32\r.weight"},
        {"^a\\(b\\)\\[c\\]\\\\$", "a(b)[c]\\"},
        {"^a.b$", std::nullopt},
        {"^a\\d$", std::nullopt},
        {"^a\\$", std::nullopt},
        {"a$", std::nullopt},
        {"^a", std::nullopt},
        {"^a|b$", std::nullopt},
        {"^a\\u0041$", std::nullopt},
        {"^$", ""},
    };
    for (const auto& [p, name] : cases) {
        const Pattern pat(p, "--plan");
        EXPECT_EQ(pat.exact_name(), name) << p;
        if (!name) continue;
        EXPECT_TRUE(pat.search(*name)) << p;
        for (const auto& other : kNames) {
            if (other != *name) {
                EXPECT_FALSE(pat.search(other)) << p << " / " << other;
            }
        }
    }
}

std::string refusal(const std::string& pattern) {
    try {
        Pattern(pattern, "--tensor-type");
    } catch (const FormatError& e) {
        EXPECT_EQ(e.kind(), ErrorKind::Usage);
        return e.what();
    }
    return "";
}

TEST(Pattern, RefusesWhatRe2CannotExpressWithOneLine) {
    EXPECT_NE(refusal("(a)\\1").find("backreferences (\\1 ... \\9) are not supported"), std::string::npos);
    EXPECT_NE(refusal("(?=a)b").find("lookahead"), std::string::npos);
    EXPECT_NE(refusal("(?!a)b").find("lookahead"), std::string::npos);
    EXPECT_NE(refusal("(?<=a)b").find("lookbehind"), std::string::npos);
    EXPECT_NE(refusal("(?<n>a)\\k<n>").find("named groups"), std::string::npos);
    EXPECT_NE(refusal("(?i)attn").find("'(?' must start (?:"), std::string::npos);
    EXPECT_NE(refusal("attn_(v").find("invalid regular expression: missing ): attn_(v"), std::string::npos);
    EXPECT_NE(refusal("[a").find("missing ]"), std::string::npos);
    EXPECT_NE(refusal("a\\").find("trailing backslash"), std::string::npos);
    EXPECT_NE(refusal("\\x4").find("\\x needs 2 hex digits"), std::string::npos);
    EXPECT_NE(refusal("\\u0100").find("above \\u00ff"), std::string::npos);
    EXPECT_EQ(refusal("a**").rfind("--tensor-type 'a**': invalid regular expression: bad repetition operator", 0), 0u);
    for (const auto& p : {"(a)\\1"s, "(?=a)b"s, "attn_(v"s, std::string(70000, 'a')})
        EXPECT_EQ(refusal(p).find('\n'), std::string::npos);
}

// The inputs that crashed std::regex (stack overflow) or never finished (exponential backtracking).
TEST(Pattern, HostilePatternsAreRefusedOrMatchedInLinearTime) {
    const std::string long_literal = "^" + std::string(200000, 'a') + "$";
    const std::string why = refusal(long_literal);
    EXPECT_NE(why.find("pattern of 200002 bytes; at most 65536 are accepted"), std::string::npos) << why;
    EXPECT_NE(why.find("(200002 bytes)"), std::string::npos) << why;  // the pattern is cut, its size given
    EXPECT_LT(why.size(), 300u);

    const std::string at_cap = "^" + std::string(Pattern::kMaxBytes - 2, 'a') + "$";
    const Pattern big(at_cap, "--plan");
    EXPECT_FALSE(big.search(std::string(63, 'a')));

    const auto nested = [](int depth) { return std::string(depth, '(') + "a" + std::string(depth, ')'); };
    EXPECT_NE(refusal(nested(20000)).find("groups nested deeper than 1000"), std::string::npos);
    EXPECT_NE(refusal(nested(Pattern::kMaxNesting + 1)).find("groups nested deeper than 1000"), std::string::npos);
    EXPECT_TRUE(Pattern(nested(Pattern::kMaxNesting), "--keep").search("blk.a"));

    // Exponential for a backtracking matcher; one linear pass here.
    const Pattern star("^(.*)*x$", "--plan");
    EXPECT_FALSE(star.search(std::string(63, 'a')));
    EXPECT_TRUE(star.search(std::string(62, 'a') + "x"));
    const Pattern alt("(a|aa)*b", "--tensor-type");
    EXPECT_FALSE(alt.search(std::string(63, 'a')));
}

}  // namespace
}  // namespace oiw
