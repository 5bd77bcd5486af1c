// llama-perplexity's log-probability file (--kl-divergence-base): the base model's next-token
// distributions over a text, saved once and compared against by every quantization of it, so the
// base model is never in memory beside the one evaluated. Byte layout (little endian, as
// llama.cpp 1348f67 writes it):
//
//   "_logits_" | n_ctx i32 | n_vocab i32 | n_chunk i32 | tokens i32[n_chunk * n_ctx]
//   then for each chunk, for each scored position (ctx/2 .. ctx-2: n_ctx - 1 - n_ctx/2 rows),
//   one row of nv = 2 * ((n_vocab + 1) / 2) + 4 u16:
//
//   +-----------+------------------+-------------------+-------------------------+
//   | scale f32 | min_log_prob f32 | q u16 [n_vocab]   | 0 u16 (n_vocab odd)     |
//   +-----------+------------------+-------------------+-------------------------+
//   log p_i = scale * q_i + min_log_prob; q_i = round((logit_i - min) / scale) with
//   min = max(smallest logit, largest - 16), and q_i = 0 where logit_i <= min (or scale is 0).
//
// The tokens are the text's, before each chunk's first one is replaced by BOS.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace oiw {
class AtomicFile;
class MappedFile;
}  // namespace oiw

namespace oiw::eval {

// u16 entries per row for a vocabulary of n_vocab: 2 * ((n_vocab + 1) / 2) + 4.
int64_t log_prob_row_len(int64_t n_vocab);

// Scored positions per chunk of ctx tokens: ctx - 1 - ctx / 2.
int64_t scored_per_chunk(int64_t ctx);

// Encodes one row of logits as llama-perplexity's log_softmax does (float arithmetic, f64 sum of
// expf, the same rounding), bit for bit. `row` has log_prob_row_len(logits.size()) entries.
void encode_log_probs(std::span<const float> logits, std::span<uint16_t> row);

// What one scored position contributes, comparing a model's logits with a base row as
// llama-perplexity --kl-divergence does (base log-probs below -16 are not summed).
struct RowKld {
    double kld = 0;         // sum_i p_base_i * (log p_base_i - log p_i)
    float nll = 0;          // -log p(next) of the model
    float nll_base = 0;     // -log p(next) of the base row
    bool same_top = false;  // argmax of the model's logits == argmax of the base row
};
RowKld compare_log_probs(std::span<const float> logits, std::span<const uint16_t> row, int32_t next);

// A log-probability file opened for reading: the header and every size are checked against the
// file before anything is handed out.
class LogProbReader {
public:
    // Maps `path` and validates it: the magic, n_ctx >= 4, n_vocab >= 1, n_chunk >= 1, the length
    // exactly that of the header, the tokens and the rows, every token id below n_vocab. Throws
    // FormatError naming the path and the field.
    explicit LogProbReader(const std::string& path);
    // The same over bytes in memory (4-byte aligned; they must outlive the reader), `name`
    // standing for the path.
    LogProbReader(std::span<const uint8_t> bytes, const std::string& name);
    ~LogProbReader();
    LogProbReader(const LogProbReader&) = delete;
    LogProbReader& operator=(const LogProbReader&) = delete;

    // True when `path` is a regular file starting with "_logits_" (false for anything else, a
    // FIFO or device included, without blocking or registering it as an input).
    static bool is_log_prob_file(const std::string& path);

    const std::string& path() const { return path_; }
    int64_t n_ctx() const { return n_ctx_; }
    int64_t n_vocab() const { return n_vocab_; }
    int64_t n_chunk() const { return n_chunk_; }
    std::span<const int32_t> tokens() const { return tokens_; }
    // The rows of chunk c (scored_per_chunk(n_ctx) rows of log_prob_row_len(n_vocab) entries),
    // each row's scale checked within [0, 16/65535] and its min_log_prob within
    // [-17 - log(n_vocab), 0] first, as every row llama-perplexity writes is (throws
    // FormatError(BadData) naming the chunk and row; Usage for c outside [0, n_chunk)).
    std::span<const uint16_t> chunk(int64_t c) const;
    // Drops chunk c's pages from this process (read once, in order).
    void release(int64_t c) const;

private:
    std::string path_;
    std::unique_ptr<MappedFile> map_;  // null over bytes in memory
    std::span<const uint8_t> bytes_;
    int64_t n_ctx_ = 0, n_vocab_ = 0, n_chunk_ = 0;
    uint64_t rows_at_ = 0;  // offset of chunk 0's rows
    std::vector<int32_t> tokens_;
    void parse();
    uint64_t chunk_bytes() const;  // bytes of one chunk's rows
};

// Writes a log-probability file: the header and tokens at construction, then chunk rows in order,
// published by commit() (AtomicFile: the target appears complete or not at all, never an input).
class LogProbWriter {
public:
    // `tokens` holds n_chunk * n_ctx ids. Throws FormatError(Usage) for counts that do not fit the
    // format's i32 fields or disagree, and what AtomicFile throws for the path.
    LogProbWriter(const std::string& path, int64_t n_ctx, int64_t n_vocab, int64_t n_chunk,
                  std::span<const int32_t> tokens);
    ~LogProbWriter();
    LogProbWriter(const LogProbWriter&) = delete;
    LogProbWriter& operator=(const LogProbWriter&) = delete;

    // Appends the encoded row of one scored position's logits (n_vocab of them).
    void add_row(std::span<const float> logits);
    // Checks every row was written, then publishes the file.
    void commit();

private:
    std::unique_ptr<AtomicFile> out_;
    int64_t n_vocab_, rows_left_;
    std::vector<uint16_t> row_;
};

}  // namespace oiw::eval
