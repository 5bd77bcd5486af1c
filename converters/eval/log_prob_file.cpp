#include "converters/eval/log_prob_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "libformat/error.h"
#include "libformat/io/atomic_file.h"
#include "libformat/io/cursor.h"
#include "libformat/io/mapped_file.h"

namespace oiw::eval {
namespace {

constexpr std::array<char, 8> kMagic = {'_', 'l', 'o', 'g', 'i', 't', 's', '_'};
constexpr uint64_t kHeaderBytes = 8 + 3 * 4;

// llama-perplexity's nearest_int: round to nearest, ties to even, for |v| < 2^22.
int nearest_int(float v) {
    const auto i = std::bit_cast<int32_t>(v + 12582912.f);
    return (i & 0x007fffff) - 0x00400000;
}

// log(sum_i exp(logits_i - max)) as llama-perplexity forms it: expf of each difference, summed in
// f64, the log rounded to f32.
float log_sum_exp(std::span<const float> logits, float max) {
    double sum_exp = 0.0;
    for (const float l : logits) sum_exp += std::exp(l - max);
    return static_cast<float>(std::log(sum_exp));
}

float row_float(std::span<const uint16_t> row, size_t i) {
    float f;
    std::memcpy(&f, row.data() + 2 * i, sizeof f);
    return f;
}

}  // namespace

int64_t log_prob_row_len(int64_t n_vocab) { return 2 * ((n_vocab + 1) / 2) + 4; }

int64_t scored_per_chunk(int64_t ctx) { return ctx - 1 - ctx / 2; }

void encode_log_probs(std::span<const float> logits, std::span<uint16_t> row) {
    float max_logit = logits[0], min_logit = logits[0];
    for (size_t i = 1; i < logits.size(); ++i) {
        max_logit = std::max(max_logit, logits[i]);
        min_logit = std::min(min_logit, logits[i]);
    }
    min_logit = std::max(min_logit, max_logit - 16);
    const float min_log_prob = min_logit - max_logit - log_sum_exp(logits, max_logit);
    const float scale = (max_logit - min_logit) / 65535.f;
    std::memcpy(row.data(), &scale, sizeof scale);
    std::memcpy(row.data() + 2, &min_log_prob, sizeof min_log_prob);
    const std::span<uint16_t> q = row.subspan(4);
    std::fill(q.begin(), q.end(), uint16_t{0});
    if (scale == 0) return;
    const float inv_scale = 1 / scale;
    for (size_t i = 0; i < logits.size(); ++i)
        if (logits[i] > min_logit) q[i] = static_cast<uint16_t>(nearest_int(inv_scale * (logits[i] - min_logit)));
}

RowKld compare_log_probs(std::span<const float> logits, std::span<const uint16_t> row, int32_t next) {
    const auto n = logits.size();
    float max_logit = logits[0];
    size_t imax = 0;
    for (size_t i = 1; i < n; ++i)
        if (logits[i] > max_logit) {
            max_logit = logits[i];
            imax = i;
        }
    const float log_norm = max_logit + log_sum_exp(logits, max_logit);
    const float scale = row_float(row, 0), min_log_prob = row_float(row, 1);
    const std::span<const uint16_t> q = row.subspan(4);
    const auto tok = static_cast<size_t>(next);
    RowKld r;
    r.nll = log_norm - logits[tok];
    r.nll_base = -(scale * q[tok] + min_log_prob);
    size_t imax_base = 0;
    float best = 0;
    for (size_t i = 0; i < n; ++i) {
        const float lp_base = scale * q[i] + min_log_prob;
        if (i == 0 || lp_base > best) {
            best = lp_base;
            imax_base = i;
        }
        if (lp_base > -16.f) r.kld += std::exp(lp_base) * (lp_base - logits[i] + log_norm);
    }
    r.same_top = imax == imax_base;
    return r;
}

LogProbReader::LogProbReader(const std::string& path)
    : path_(path), map_(std::make_unique<MappedFile>(path)), bytes_(map_->bytes()) {
    parse();
}

LogProbReader::LogProbReader(std::span<const uint8_t> bytes, const std::string& name) : path_(name), bytes_(bytes) {
    if (reinterpret_cast<uintptr_t>(bytes.data()) % alignof(int32_t) != 0)
        throw FormatError(ErrorKind::Usage, path_, "bytes", "not 4-byte aligned");
    parse();
}

void LogProbReader::parse() {
    const std::span<const uint8_t> b = bytes_;
    ByteCursor c(b, path_);
    const std::span<const uint8_t> magic = c.take(kMagic.size(), "header", "magic");
    if (!std::equal(magic.begin(), magic.end(), kMagic.begin()))
        throw FormatError(ErrorKind::BadMagic, path_, "header",
                          "does not start with \"_logits_\": not a llama-perplexity log-probability file");
    n_ctx_ = c.get<int32_t>("n_ctx", "value");
    n_vocab_ = c.get<int32_t>("n_vocab", "value");
    n_chunk_ = c.get<int32_t>("n_chunk", "value");
    if (n_ctx_ < 4) throw FormatError(ErrorKind::BadData, path_, "n_ctx", fmt::format("{} is below 4", n_ctx_));
    if (n_vocab_ < 1) throw FormatError(ErrorKind::BadData, path_, "n_vocab", fmt::format("{} is below 1", n_vocab_));
    if (n_chunk_ < 1) throw FormatError(ErrorKind::BadData, path_, "n_chunk", fmt::format("{} is below 1", n_chunk_));
    // Each factor is below 2^32, so the token bytes stay below 2^64; the rows are checked.
    const uint64_t token_bytes = static_cast<uint64_t>(n_chunk_) * static_cast<uint64_t>(n_ctx_) * 4;
    uint64_t row_bytes = 0, all_rows = 0, total = 0;
    const bool overflow = __builtin_mul_overflow(static_cast<uint64_t>(scored_per_chunk(n_ctx_)),
                                                 static_cast<uint64_t>(log_prob_row_len(n_vocab_)) * 2, &row_bytes) ||
                          __builtin_mul_overflow(row_bytes, static_cast<uint64_t>(n_chunk_), &all_rows) ||
                          __builtin_add_overflow(kHeaderBytes + token_bytes, all_rows, &total);
    if (overflow || total != b.size())
        throw FormatError(
            ErrorKind::Truncated, path_, "rows",
            fmt::format("{} chunks of n_ctx {} over a vocabulary of {} need {} bytes; the file has {}", n_chunk_,
                        n_ctx_, n_vocab_, overflow ? "more than 2^64" : fmt::to_string(total), b.size()));
    tokens_.resize(static_cast<size_t>(n_chunk_ * n_ctx_));
    std::memcpy(tokens_.data(), c.take(token_bytes, "tokens", "ids").data(), token_bytes);
    for (size_t i = 0; i < tokens_.size(); ++i)
        if (tokens_[i] < 0 || tokens_[i] >= n_vocab_)
            throw FormatError(ErrorKind::BadData, path_, "tokens",
                              fmt::format("token {} is id {}, outside the vocabulary of {}", i, tokens_[i], n_vocab_));
    rows_at_ = c.pos();
}

LogProbReader::~LogProbReader() = default;

uint64_t LogProbReader::chunk_bytes() const {
    return static_cast<uint64_t>(scored_per_chunk(n_ctx_) * log_prob_row_len(n_vocab_)) * 2;
}

bool LogProbReader::is_log_prob_file(const std::string& path) {
    // Non-blocking and regular files only: a FIFO must not hang the probe. Not an InputFd: the
    // probed file is not registered as an input (it may be the file --save-all-logits replaces).
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return false;
    struct stat st {};
    std::array<char, 8> head{};
    const bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
                    ::pread(fd, head.data(), head.size(), 0) == static_cast<ssize_t>(head.size()) && head == kMagic;
    ::close(fd);
    return ok;
}

std::span<const uint16_t> LogProbReader::chunk(int64_t c) const {
    if (c < 0 || c >= n_chunk_)
        throw FormatError(ErrorKind::Usage, path_, "chunk", fmt::format("{} of {} chunks", c + 1, n_chunk_));
    const int64_t rows = scored_per_chunk(n_ctx_), nv = log_prob_row_len(n_vocab_);
    // A row's logits span at most 16 (the minimum is clamped there), so its scale is at most
    // 16 / 65535, and its smallest log-prob at least -16 - log(n_vocab): every entry is then
    // within [min_log_prob, min_log_prob + 16] (the bounds allow for f32 rounding).
    const float max_scale = 16.f / 65535.f * 1.0001f;
    const auto lowest = static_cast<float>(-16.0 - std::log(static_cast<double>(n_vocab_)) - 1.0);
    const auto* p = bytes_.data() + rows_at_ + static_cast<uint64_t>(c) * chunk_bytes();
    const std::span<const uint16_t> all(reinterpret_cast<const uint16_t*>(p), static_cast<size_t>(rows * nv));
    for (int64_t r = 0; r < rows; ++r) {
        const std::span<const uint16_t> row = all.subspan(static_cast<size_t>(r * nv), static_cast<size_t>(nv));
        const float scale = row_float(row, 0), min_log_prob = row_float(row, 1);
        if (!(scale >= 0 && scale <= max_scale && min_log_prob >= lowest && min_log_prob <= 0))
            throw FormatError(ErrorKind::BadData, path_, fmt::format("chunk {} row {}", c + 1, r),
                              fmt::format("scale {} and min_log_prob {}: not a row of log-probabilities (a scale "
                                          "in [0, 16/65535], a minimum in [{}, 0])",
                                          scale, min_log_prob, lowest));
    }
    return all;
}

void LogProbReader::release(int64_t c) const {
    if (map_) map_->release(rows_at_ + static_cast<uint64_t>(c) * chunk_bytes(), chunk_bytes());
}

LogProbWriter::LogProbWriter(const std::string& path, int64_t n_ctx, int64_t n_vocab, int64_t n_chunk,
                             std::span<const int32_t> tokens)
    : n_vocab_(n_vocab), row_(static_cast<size_t>(log_prob_row_len(n_vocab))) {
    constexpr int64_t kMax = INT32_MAX;
    if (n_ctx < 4 || n_ctx > kMax || n_vocab < 1 || n_vocab > kMax || n_chunk < 1 || n_chunk > kMax ||
        static_cast<int64_t>(tokens.size()) != n_chunk * n_ctx)
        throw FormatError(ErrorKind::Usage, path, "header",
                          fmt::format("n_ctx {}, n_vocab {}, n_chunk {} with {} tokens: not a log-probability file's",
                                      n_ctx, n_vocab, n_chunk, tokens.size()));
    rows_left_ = n_chunk * scored_per_chunk(n_ctx);
    out_ = std::make_unique<AtomicFile>(path);
    const std::array<int32_t, 3> head = {static_cast<int32_t>(n_ctx), static_cast<int32_t>(n_vocab),
                                         static_cast<int32_t>(n_chunk)};
    out_->write(kMagic.data(), kMagic.size());
    out_->write(head.data(), sizeof head);
    out_->write(tokens.data(), tokens.size_bytes());
}

LogProbWriter::~LogProbWriter() = default;

void LogProbWriter::add_row(std::span<const float> logits) {
    if (static_cast<int64_t>(logits.size()) != n_vocab_ || rows_left_ == 0)
        throw FormatError(ErrorKind::Usage, out_->path(), "rows",
                          fmt::format("a row of {} logits {}", logits.size(),
                                      rows_left_ == 0 ? "after the last one" : "for another vocabulary"));
    encode_log_probs(logits, row_);
    out_->write(row_.data(), row_.size() * sizeof(uint16_t));
    --rows_left_;
}

void LogProbWriter::commit() {
    if (rows_left_ != 0)
        throw FormatError(ErrorKind::Usage, out_->path(), "rows", fmt::format("{} rows not written", rows_left_));
    out_->commit();
}

}  // namespace oiw::eval
