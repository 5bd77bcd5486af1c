// TokenStream against tokenize(): the same ids for texts fed in pieces of many sizes.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "converters/vocab/vocab.h"
#include "tests/vocab/fixture_cases.h"

namespace oiw::test {

// The text fed in chunks of the sizes `chunk` gives (cycled), through TokenStream.
inline std::vector<int32_t> streamed(const vocab::Vocab& v, std::string_view text, bool add_special, bool parse_special,
                                     const std::vector<size_t>& chunk,
                                     size_t max_run = vocab::TokenStream::kDefaultMaxRun) {
    vocab::TokenStream ts(v, add_special, parse_special, "text.txt", max_run);
    std::vector<int32_t> out;
    for (size_t pos = 0, k = 0; pos < text.size(); ++k) {
        const size_t n = std::min(chunk[k % chunk.size()], text.size() - pos);
        ts.feed(text.substr(pos, n), &out);
        pos += n;
    }
    ts.finish(&out);
    return out;
}

// Random texts made of pieces that stress every cut rule: special tokens (also split across
// chunks), runs of spaces and newlines, contractions, digits, U+2581 itself, malformed UTF-8,
// multi-byte letters, spaces and digits (a chunk that ends inside one must not decide a word).
inline std::string random_text(std::mt19937& rng, size_t n_pieces) {
    static const char* const kPieces[] = {"a",
                                          "b",
                                          "ab",
                                          "Hello",
                                          " world",
                                          " ",
                                          "  ",
                                          "   ",
                                          "\n",
                                          "\n\n",
                                          "\r",
                                          "\r\n",
                                          "\t",
                                          "'s",
                                          "'re",
                                          "'LL",
                                          "'Ve",
                                          "'",
                                          "1",
                                          "23",
                                          " 456",
                                          "\xc3\xa9",
                                          "\xe2\x80\x94",
                                          "\xe2\x96\x81",
                                          "\xe2",
                                          "\xf0\x9f",
                                          "\x80",
                                          "\xf0\x9f\x98\x80",
                                          "</s>",
                                          "<s>",
                                          "<|endoftext|>",
                                          "<|im_start|>",
                                          "<unk>",
                                          ".",
                                          "!!",
                                          " the",
                                          "ing",
                                          "\xe4\xb8\xad\xe6\x96\x87",
                                          "\xf0\xa0\x80\x80" /* U+20000, a letter */,
                                          "\xe3\x80\x80" /* U+3000, a space */,
                                          "\xd9\xa3" /* U+0663, a digit */,
                                          "/",
                                          "ABc",
                                          "\xc3\x91" /* U+00D1, an uppercase letter */,
                                          "\xe1\x9e\x80\xe1\x9e\xb6" /* Khmer letter and vowel sign (a mark) */};
    std::uniform_int_distribution<size_t> pick(0, std::size(kPieces) - 1);
    std::string t;
    for (size_t i = 0; i < n_pieces; ++i) t += kPieces[pick(rng)];
    return t;
}

// Every text of llama.cpp's test cases at `cases_path` (.inp/.out) joined, and 300 random texts, in chunks of 1, 2, 3,
// 5, 64 bytes and random sizes, with and without special handling: the same ids as tokenize() on the whole text.
inline void check_stream_equals_tokenize(const vocab::Vocab& v, const std::string& cases_path) {
    const std::string name = cases_path.substr(cases_path.rfind('/') + 1);
    std::vector<std::string> texts;
    std::string joined;
    for (const auto& c : read_tokenizer_cases(cases_path)) joined += c.text + "\n";
    texts.push_back(joined);
    std::mt19937 rng(7);
    for (int i = 0; i < 300; ++i) texts.push_back(random_text(rng, 1 + rng() % 120));
    const std::vector<std::vector<size_t>> chunkings = {{1}, {2}, {3}, {5}, {64}, {7, 1, 13, 2, 40}};
    size_t compared = 0;
    for (const std::string& t : texts) {
        for (const bool special : {false, true}) {
            const auto want = v.tokenize(t, special, special);
            for (const auto& chunk : chunkings) {
                ASSERT_EQ(streamed(v, t, special, special, chunk), want)
                    << name << " chunk " << chunk[0] << ": '" << t << "'";
                ++compared;
            }
        }
    }
    EXPECT_EQ(compared, texts.size() * 2 * chunkings.size());
}

}  // namespace oiw::test
