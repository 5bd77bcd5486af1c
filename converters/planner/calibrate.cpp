#include "converters/planner/calibrate.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <sstream>

#include <fmt/format.h>

#include "converters/eval/forward.h"
#include "converters/eval/perplexity.h"
#include "converters/matmul/matvec.h"
#include "converters/quant/quants.h"
#include "converters/vocab/vocab.h"
#include "libformat/escape.h"
#include "libformat/io/hash.h"
#include "libformat/parallel.h"

namespace oiw {

namespace {

// A model's tensors with one of them replaced by the same values quantized to another type.
class ProbeSource final : public matmul::TensorSource {
public:
    ProbeSource(std::shared_ptr<const matmul::TensorSource> base, std::string name, GgmlType type,
                std::vector<uint8_t> bytes)
        : base_(std::move(base)),
          name_(std::move(name)),
          type_(type),
          bytes_(std::move(bytes)),
          entries_(base_->entries()) {
        for (auto& e : entries_)
            if (e.info.name == name_) {
                e.info.type = e.holds = type_;
                e.info.n_bytes = bytes_.size();
                e.kind = std::string(type_name(type_));
                info_ = e.info;
            }
    }
    const std::string& path() const override { return base_->path(); }
    const std::vector<matmul::TensorEntry>& entries() const override { return entries_; }
    std::unique_ptr<matmul::MatVec> tensor(const std::string& name) const override {
        if (name != name_) return base_->tensor(name);
        return matmul::ggml_matvec(type_, bytes_.data(), info_.ne[1] * info_.ne[2] * info_.ne[3], info_.ne[0]);
    }
    std::span<const uint8_t> ggml_bytes(const std::string& name) const override {
        return name == name_ ? std::span<const uint8_t>(bytes_) : base_->ggml_bytes(name);
    }

private:
    std::shared_ptr<const matmul::TensorSource> base_;
    std::string name_;
    GgmlType type_;
    std::vector<uint8_t> bytes_;
    std::vector<matmul::TensorEntry> entries_;
    GgufTensorInfo info_;
};

// Tensor `index` of `in` quantized to `type` as gguf-requant quantizes it (imatrix per matrix).
std::vector<uint8_t> quantize_tensor(const Model& in, size_t index, GgmlType type, const std::vector<float>* imatrix) {
    const GgufTensorInfo& t = in.tensors().at(index);
    const int64_t ne0 = t.ne[0], per_mat = t.ne[1], rows = t.n_rows();
    const uint64_t src_row = row_size(t.type, ne0), dst_row = row_size(type, ne0);
    std::vector<uint8_t> out(dst_row * static_cast<uint64_t>(rows));
    const auto data = in.tensor_data(index);
    constexpr int64_t kRowsPerJob = 64;
    shared_for_each(static_cast<size_t>((rows + kRowsPerJob - 1) / kRowsPerJob), [&](size_t j) {
        const int64_t r0 = static_cast<int64_t>(j) * kRowsPerJob, r1 = std::min(rows, r0 + kRowsPerJob);
        std::vector<float> x(static_cast<size_t>(ne0));
        for (int64_t r = r0; r < r1; ++r) {
            const uint8_t* src = data.data() + static_cast<uint64_t>(r) * src_row;
            dequantize_row(t.type, src, x.data(), ne0);  // F32 rows: a copy
            const float* w = imatrix ? imatrix->data() + (r / per_mat) * ne0 : nullptr;
            quantize_chunk(type, x.data(), out.data() + static_cast<uint64_t>(r) * dst_row, 1, ne0, w);
        }
    });
    return out;
}

// The unquantized model's side of every probe, per chunk: the input of each layer (and of the
// head) and the log-probabilities at the scored positions.
struct BaseChunk {
    std::vector<int32_t> tokens;
    std::vector<std::vector<float>> hidden;  // n_layer + 1 entries
    std::vector<std::vector<double>> logp;   // per scored position
};

}  // namespace

Calibration calibrate(const Model& in, const PlanTable& table, const std::string& text,
                      const std::map<std::string, std::vector<float>>& imatrix, const CalibrateOptions& o,
                      const CalibrateProgress& progress) {
    if (o.ctx < 4) throw FormatError(ErrorKind::Usage, "", "--calibrate-ctx", fmt::format("{} is below 4", o.ctx));
    if (o.chunks < 1)
        throw FormatError(ErrorKind::Usage, "", "--calibrate-chunks",
                          fmt::format("{} is not a positive count", o.chunks));
    const std::shared_ptr<const matmul::TensorSource> src = matmul::open_tensor_source(in.path());
    const Metadata& md = in.metadata();
    const eval::Forward base(src, md, eval::Semantics::Exact, o.threads);
    const vocab::Vocab vocab = vocab::Vocab::load(md);
    const std::vector<int32_t> tokens = vocab.tokenize(text, true, false);
    const auto n = static_cast<int64_t>(tokens.size());
    if (n < o.ctx)
        throw FormatError(ErrorKind::Usage, "", "--calibrate",
                          fmt::format("the text tokenizes to {} tokens, fewer than one chunk of {}", n, o.ctx));
    const eval::Hparams& h = base.hparams();
    const int64_t first = o.ctx / 2;

    Calibration cal;
    cal.chunks = std::min(n / o.ctx, o.chunks);
    std::vector<BaseChunk> chunks(static_cast<size_t>(cal.chunks));
    for (int64_t c = 0; c < cal.chunks; ++c) {
        BaseChunk& b = chunks[static_cast<size_t>(c)];
        b.tokens.assign(tokens.begin() + c * o.ctx, tokens.begin() + (c + 1) * o.ctx);
        if (vocab.add_bos() && vocab.bos_id() >= 0) b.tokens[0] = vocab.bos_id();
        std::vector<float> x = base.embeddings(b.tokens);
        for (int64_t il = 0; il < h.n_layer; ++il) {
            b.hidden.push_back(x);
            base.layers(x, il, il + 1);
        }
        b.hidden.push_back(x);
        const std::vector<float> l = base.head(x);
        for (int64_t j = first; j < o.ctx - 1; ++j)
            b.logp.push_back(eval::log_softmax(
                std::span(l).subspan(static_cast<size_t>(j * h.n_vocab), static_cast<size_t>(h.n_vocab))));
        cal.scored += o.ctx - 1 - first;
    }

    const size_t nt = table.tensors.size();
    cal.gain.resize(nt);
    cal.kld.resize(nt);
    cal.probe.resize(nt);
    for (size_t i = 0; i < nt; ++i) {
        const PlanCandidate& pc = table.tensors[i];
        const auto k = static_cast<size_t>(std::max_element(pc.err.begin(), pc.err.end()) - pc.err.begin());
        cal.probe[i] = pc.types[k];
        const auto im = imatrix.find(pc.name);
        auto probe_src = std::make_shared<const ProbeSource>(
            src, pc.name, pc.types[k],
            quantize_tensor(in, pc.input_index, pc.types[k], im == imatrix.end() ? nullptr : &im->second));
        const eval::Forward probe(probe_src, md, eval::Semantics::Exact, o.threads);
        // Where the probe's pass departs from the stored one: the embeddings, a layer, or the head.
        const bool embd = pc.name == "token_embd.weight";
        const int64_t from = embd ? 0 : pc.layer >= 0 ? pc.layer : h.n_layer;
        double sum = 0;
        for (const BaseChunk& b : chunks) {
            std::vector<float> x = embd ? probe.embeddings(b.tokens) : b.hidden[static_cast<size_t>(from)];
            probe.layers(x, from, h.n_layer);
            const std::vector<float> l = probe.head(x);
            for (int64_t j = first; j < o.ctx - 1; ++j) {
                const std::span<const float> row(l.data() + j * h.n_vocab, static_cast<size_t>(h.n_vocab));
                if (std::any_of(row.begin(), row.end(), [](float v) { return !std::isfinite(v); }))
                    throw FormatError(
                        ErrorKind::BadData, in.path(), "tensor '" + pc.name + "'",
                        fmt::format("non-finite logit at {} with the tensor as {}", j, type_name(pc.types[k])));
                const std::vector<double> pm = eval::log_softmax(row);
                const std::vector<double>& pb = b.logp[static_cast<size_t>(j - first)];
                sum += eval::kl_divergence(pb, pm);
            }
        }
        cal.kld[i] = sum / static_cast<double>(cal.scored);
        cal.gain[i] = pc.err[k] > 0 ? std::max(cal.kld[i], 0.0) / pc.err[k] : 0;
        if (progress) progress(i + 1, nt, pc.name);
    }
    return cal;
}

std::string calibration_key(const std::string& errtable_key, const std::string& text, const CalibrateOptions& o) {
    const std::string s = fmt::format("{}\nctx {} chunks {}\n{}", errtable_key, o.ctx, o.chunks, text);
    return xxh3_hex({reinterpret_cast<const uint8_t*>(s.data()), s.size()});
}

std::string format_calibration(const Calibration& c, const PlanTable& table, const std::string& key) {
    std::string s = fmt::format("oiw-errtable calibration 1 {}\n{} {} {}\n", key, c.chunks, c.scored, c.gain.size());
    for (size_t i = 0; i < c.gain.size(); ++i)
        s += fmt::format("{:a} {:a} {} {}\n", c.gain[i], c.kld[i], static_cast<int>(c.probe[i]),
                         escape_text(table.tensors[i].name));
    return s;
}

std::optional<Calibration> parse_calibration(const std::string& text, const PlanTable& table, const std::string& key) {
    std::istringstream in(text);
    std::string magic, kind, version, k;
    size_t n = 0;
    Calibration c;
    if (!(in >> magic >> kind >> version >> k >> c.chunks >> c.scored >> n) || magic != "oiw-errtable" ||
        kind != "calibration" || version != "1" || k != key || n != table.tensors.size())
        return std::nullopt;
    for (size_t i = 0; i < n; ++i) {
        std::string g, d, name;
        int type = 0;
        if (!(in >> g >> d >> type) || type < 0 || type >= static_cast<int>(kGgmlTypeCount)) return std::nullopt;
        in.get();
        std::getline(in, name);
        const auto unescaped = unescape_text(name);
        if (!unescaped || *unescaped != table.tensors[i].name) return std::nullopt;
        char* end = nullptr;
        c.gain.push_back(std::strtod(g.c_str(), &end));
        if (*end) return std::nullopt;
        c.kld.push_back(std::strtod(d.c_str(), &end));
        if (*end || !std::isfinite(c.gain.back()) || c.gain.back() < 0) return std::nullopt;
        c.probe.push_back(static_cast<GgmlType>(type));
    }
    return c;
}

}  // namespace oiw
