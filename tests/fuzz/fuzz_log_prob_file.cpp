// libFuzzer target for llama-perplexity's log-probability file (gguf-eval --kl-divergence-base):
// LogProbReader must either throw FormatError naming the file or hand out a header whose counts
// describe the input's length exactly, token ids inside the vocabulary, and chunks inside the input
// whose rows it either refuses (naming the chunk and row) or hands out such that comparing them
// with finite logits gives a finite KL divergence and finite NLLs.
//
// With OIW_FUZZ_EMIT_SEEDS=<dir> the binary writes a few small valid files to <dir> and exits.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "converters/eval/log_prob_file.h"
#include "libformat/error.h"

namespace {

using namespace oiw;

[[noreturn]] void fail(const char* what) {
    std::fprintf(stderr, "fuzz_log_prob_file: invariant violated: %s\n", what);
    std::abort();
}
#define CHECK(c)            \
    do {                    \
        if (!(c)) fail(#c); \
    } while (0)

void check_name(const FormatError& e) { CHECK(std::strncmp(e.what(), "fuzz.kld: ", 10) == 0); }

// Logits a position might have: a spread of about 20 so that the -16 cut matters.
std::vector<float> logits_for(int64_t n_vocab, uint32_t seed) {
    std::vector<float> l(static_cast<size_t>(n_vocab));
    for (auto& v : l) {
        seed = seed * 1664525u + 1013904223u;
        v = static_cast<float>(seed >> 8) / static_cast<float>(1u << 24) * 20.f - 10.f;
    }
    return l;
}

void emit_seeds(const std::string& dir) {
    const struct { int64_t ctx, vocab, chunks; } shapes[] = {{4, 3, 1}, {8, 5, 2}, {9, 16, 3}, {16, 64, 2}};
    for (const auto& s : shapes) {
        std::vector<int32_t> tokens(static_cast<size_t>(s.ctx * s.chunks));
        for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>(i % static_cast<size_t>(s.vocab));
        const std::string path = dir + "/ctx" + std::to_string(s.ctx) + "-vocab" + std::to_string(s.vocab) + ".kld";
        eval::LogProbWriter w(path, s.ctx, s.vocab, s.chunks, tokens);
        for (int64_t r = 0; r < s.chunks * eval::scored_per_chunk(s.ctx); ++r)
            w.add_row(logits_for(s.vocab, static_cast<uint32_t>(r)));
        w.commit();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const bool emitted = [] {
        if (const char* dir = std::getenv("OIW_FUZZ_EMIT_SEEDS")) {
            emit_seeds(dir);
            std::exit(0);
        }
        return true;
    }();
    (void)emitted;
    // The reader needs 4-byte aligned bytes (a mapping's): copy the input into words.
    std::vector<uint32_t> words((size + 3) / 4);
    if (size) std::memcpy(words.data(), data, size);
    const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(words.data()), size);
    try {
        const eval::LogProbReader r(bytes, "fuzz.kld");
        CHECK(r.n_ctx() >= 4 && r.n_vocab() >= 1 && r.n_chunk() >= 1);
        const auto rows = eval::scored_per_chunk(r.n_ctx()), nv = eval::log_prob_row_len(r.n_vocab());
        CHECK(20 + 4 * r.n_ctx() * r.n_chunk() + 2 * rows * nv * r.n_chunk() == static_cast<int64_t>(size));
        CHECK(static_cast<int64_t>(r.tokens().size()) == r.n_ctx() * r.n_chunk());
        for (const int32_t t : r.tokens()) CHECK(t >= 0 && t < r.n_vocab());
        const std::vector<float> logits = logits_for(r.n_vocab(), 7);
        for (int64_t c = 0; c < r.n_chunk(); ++c) {
            std::span<const uint16_t> chunk;
            try {
                chunk = r.chunk(c);
            } catch (const FormatError& e) {
                check_name(e);
                continue;
            }
            const auto* lo = reinterpret_cast<const uint8_t*>(chunk.data());
            CHECK(lo >= bytes.data() && lo + chunk.size_bytes() <= bytes.data() + bytes.size());
            CHECK(static_cast<int64_t>(chunk.size()) == rows * nv);
            for (int64_t j = 0; j < rows; ++j) {
                const int32_t next = r.tokens()[static_cast<size_t>(c * r.n_ctx() + r.n_ctx() / 2 + j + 1)];
                const eval::RowKld k = eval::compare_log_probs(
                    logits, chunk.subspan(static_cast<size_t>(j * nv), static_cast<size_t>(nv)), next);
                CHECK(std::isfinite(k.kld) && std::isfinite(k.nll) && std::isfinite(k.nll_base));
            }
        }
        bool threw = false;
        try {
            (void)r.chunk(r.n_chunk());
        } catch (const FormatError& e) {
            check_name(e);
            threw = true;
        }
        CHECK(threw);
    } catch (const FormatError& e) {
        check_name(e);
    }
    return 0;
}
