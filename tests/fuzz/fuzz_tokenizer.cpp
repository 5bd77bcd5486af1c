// libFuzzer target for the streaming tokenizer (converters/vocab/vocab.h): the input's first byte b
// picks the vocabulary (b % 10: llama SPM, GPT-2 BPE, GPT-2's vocabulary with the Llama 3, Qwen2,
// tekken, GPT-4o, DeepSeek-V3 or SmolLM pre-tokenizer, tests/data/vocab, and the SentencePiece-style
// BPE of tests/vocab/gemma4_style.h as Gemma 4's and as Sarvam-MoE's), special handling ((b / 10) % 2)
// and the chunk sizes (b / 20 seeds them); the rest is the text. TokenStream fed in those chunks must
// give exactly Vocab::tokenize of the whole text, or both must throw.
//
// With OIW_FUZZ_EMIT_SEEDS=<dir> the binary writes a few texts to <dir> and exits.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "converters/vocab/vocab.h"
#include "libformat/error.h"
#include "libformat/model.h"
#include "tests/vocab/gemma4_style.h"

namespace {

using oiw::vocab::TokenStream;
using oiw::vocab::Vocab;

constexpr int kVocabs = 10;
std::unique_ptr<Vocab> g_vocab[kVocabs];

[[noreturn]] void fail(const char* what) {
    std::fprintf(stderr, "fuzz_tokenizer: invariant violated: %s\n", what);
    std::abort();
}

std::vector<int32_t> streamed(const Vocab& v, std::string_view text, bool special, uint32_t seed) {
    TokenStream ts(v, special, special, "fuzz.txt", 64);  // a small limit: the buffers stay short
    std::vector<int32_t> out;
    for (size_t pos = 0; pos < text.size();) {
        seed = seed * 1103515245u + 12345u;
        const size_t n = std::min<size_t>(1 + (seed >> 16) % 9, text.size() - pos);
        ts.feed(text.substr(pos, n), &out);
        pos += n;
    }
    ts.finish(&out);
    return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const Vocab& v = *g_vocab[data[0] % kVocabs];
    const bool special = (data[0] / kVocabs) % 2 != 0;
    const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
    std::vector<int32_t> want;
    try {
        want = v.tokenize(text, special, special);
    } catch (const oiw::FormatError&) {
        fail("tokenize threw on a supported vocabulary");
    }
    try {
        if (streamed(v, text, special, data[0] / (2 * kVocabs)) != want)
            fail("streamed ids differ from whole-text ids");
    } catch (const oiw::FormatError& e) {
        // Only a stretch longer than the limit may fail (SPM and the SentencePiece-style BPE count a
        // space as its 3-byte U+2581, SPM adds the dummy prefix), and then one line naming the text.
        if (e.kind() != oiw::ErrorKind::TooLarge || 3 * text.size() + 3 <= 64)
            fail("stream threw where tokenize did not");
        if (std::string_view(e.what()).find("fuzz.txt") == std::string_view::npos) fail("error does not name the text");
    }
    return 0;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    const std::string dir = std::string(OIW_SOURCE_DIR) + "/tests/data/vocab/";
    const oiw::Metadata spm = oiw::open_model(dir + "ggml-vocab-llama-spm.gguf").metadata();
    g_vocab[0] = std::make_unique<Vocab>(Vocab::load(spm));
    oiw::Metadata gpt2 = oiw::open_model(dir + "ggml-vocab-gpt-2.gguf").metadata();
    g_vocab[1] = std::make_unique<Vocab>(Vocab::load(gpt2));
    for (const auto& [i, pre] :
         {std::pair{2, "llama-bpe"}, {3, "qwen2"}, {4, "tekken"}, {5, "gpt-4o"}, {6, "deepseek-v3"}, {7, "smollm"}}) {
        gpt2.set({"tokenizer.ggml.pre", oiw::GgufValue::make_string(pre)});
        g_vocab[i] = std::make_unique<Vocab>(Vocab::load(gpt2));
    }
    g_vocab[8] = std::make_unique<Vocab>(Vocab::load(oiw::test::gemma4_style_metadata(spm, "gemma4", "default")));
    g_vocab[9] = std::make_unique<Vocab>(Vocab::load(oiw::test::gemma4_style_metadata(spm, "gpt2", "sarvam-moe")));
    if (const char* out = std::getenv("OIW_FUZZ_EMIT_SEEDS")) {
        // First byte: vocabulary + 10 * special + 20 * chunk seed (one literal of its own: a hex
        // escape would run on into the text).
        const char* seeds[] = {
            "\x0a"
            "Hello world</s> <s>  the\n\nend",
            "\x0b"
            "don't  stop<|endoftext|>\xe3\x80\x80x \xf0\xa0\x80\x80",
            "\x00"
            "\xe2\x96\x81\xe2\x96\x81"
            "a  b\t\n c",
            "\x01"
            "12.5 numbers 'll 've\xc3\xa9\xe2",
            "\x1e"
            "</s></s></",
            "\x0c"
            " 12345 'LL\r\n \r\n\n  x!!\r",
            "\x03"
            "a1234567 \xd9\xa3\xd9\xa3 'Ve  \n\t",
            "\x04"
            "aBc\xc3\x91x \xe1\x9e\x80\xe1\x9e\xb6/\r\n12",
            "\x05"
            "It'S \xc5\xbf'll 123456 \xe4\xb8\xad'd",
            "\x06"
            "~\xc3\xa9 1234567\xe4\xb8\xad\xe3\x81\x82\xe3\x83\xbb!!x \x01\xcd\xb8  \n",
            "\x07"
            "a 12 x1y  \xd9\xa3\xd9\xa3's\t\n",
            "\x12"
            "Hello  world\n\n\n\n\n\n\n\n\xe2\x96\x81x</s> \xe1\xbd\x80\xff\n",
            "\x09"
            "a\n\n b\xc3\xa9  \n\t 12 \xe2"};
        int k = 0;
        for (const char* s : seeds) {
            const std::string seed(s, std::char_traits<char>::length(s + 1) + 1);  // the first byte may be 0
            std::ofstream(std::string(out) + "/seed-" + std::to_string(k++), std::ios::binary) << seed;
        }
        std::exit(0);
    }
    return 0;
}
