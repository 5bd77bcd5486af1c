// llama.cpp's tokenizer test cases (tests/data/vocab/*.inp/.out), read as its test-tokenizer-0
// reads them: texts separated by "\n__ggml_vocab_test__\n", one line of ids per text.
#pragma once
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/helpers.h"

namespace oiw::test {

struct TokenizerCase {
    std::string text;
    std::vector<int32_t> ids;
};

inline std::vector<TokenizerCase> read_tokenizer_cases(const std::string& vocab_file) {
    const auto inp = read_file(vocab_file + ".inp");
    const std::string raw(inp.begin(), inp.end());
    const std::string sep = "\n__ggml_vocab_test__\n";
    std::vector<std::string> texts;
    for (size_t pos = 0; pos < raw.size();) {
        const size_t next = raw.find(sep, pos);
        if (next == std::string::npos) {
            texts.push_back(raw.substr(pos));
            break;
        }
        texts.push_back(raw.substr(pos, next - pos));
        pos = next + sep.size();
    }
    const auto out = read_file(vocab_file + ".out");
    std::istringstream lines(std::string(out.begin(), out.end()));
    std::vector<TokenizerCase> cases;
    std::string line;
    for (size_t i = 0; std::getline(lines, line); ++i) {
        std::istringstream ids(line);
        TokenizerCase c{i < texts.size() ? texts[i] : "", {}};
        for (int32_t id; ids >> id;) c.ids.push_back(id);
        cases.push_back(std::move(c));
    }
    EXPECT_EQ(texts.size(), cases.size()) << vocab_file;
    return cases;
}

}  // namespace oiw::test
