#include "converters/repack/oiw4_convert.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>

#include <fmt/format.h>
#include <xxhash.h>

#include "converters/quant/quants.h"
#include "converters/repack/repack.h"

namespace oiw {

namespace {

constexpr uint64_t kChunkBytes = 4 << 20;  // source bytes converted per step: bounds memory
constexpr std::string_view kTensorXxh3Key = "oiw4.source.tensor_xxh3";
constexpr std::string_view kToolName = "oiw4-convert (oiw, OIW4 v1)";
constexpr std::string_view kDefaultRule =
    "default: Q4_0=oiw4, Q4_K with rows%8==0 off the embedding lookups=q4kx8, else raw";

std::string subject(const GgufTensorInfo& t) { return "tensor '" + t.name + "'"; }

bool is_embedding_lookup(std::string_view name) {
    for (std::string_view p : {"token_embd.", "position_embd.", "token_types."})
        if (name.starts_with(p)) return true;
    return false;
}

std::string hex16(uint64_t h) { return fmt::format("{:016x}", h); }

// XXH3-64 of a whole file in 16 hex digits, read in pieces (not through a mapping, so hashing a
// large model does not make it resident).
std::string file_xxh3_hex(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw FormatError(ErrorKind::Io, path, "", "cannot read");
    XXH3_state_t* st = XXH3_createState();
    XXH3_64bits_reset(st);
    std::vector<char> buf(1 << 20);
    while (in.read(buf.data(), static_cast<std::streamsize>(buf.size())) || in.gcount() > 0)
        XXH3_64bits_update(st, buf.data(), static_cast<size_t>(in.gcount()));
    const uint64_t h = XXH3_64bits_digest(st);
    XXH3_freeState(st);
    return hex16(h);
}

struct SourceDigest {
    std::string file;               // XXH3 of the whole file, 16 hex digits
    std::vector<uint64_t> tensors;  // XXH3 of each tensor's bytes, in tensor order
};

// One pass over a single-file model in pieces (not through the mapping): the XXH3 of the file
// and of every tensor's data bytes (tensors do not overlap, so one running state serves).
SourceDigest source_digest(const Model& m) {
    std::ifstream in(m.path(), std::ios::binary);
    if (!in) throw FormatError(ErrorKind::Io, m.path(), "", "cannot read");
    std::vector<size_t> order(m.tensors().size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return m.tensors()[a].offset < m.tensors()[b].offset; });
    SourceDigest d;
    d.tensors.resize(order.size());
    XXH3_state_t* file = XXH3_createState();
    XXH3_state_t* tensor = XXH3_createState();
    XXH3_64bits_reset(file);
    std::vector<char> buf(1 << 20);
    uint64_t pos = 0;
    size_t k = 0;
    while (in.read(buf.data(), static_cast<std::streamsize>(buf.size())) || in.gcount() > 0) {
        const auto n = static_cast<uint64_t>(in.gcount());
        XXH3_64bits_update(file, buf.data(), n);
        for (; k < order.size(); ++k) {  // the tensors this piece [pos, pos + n) touches
            const auto& t = m.tensors()[order[k]];
            const uint64_t b = m.data_offset() + t.offset, e = b + t.n_bytes;
            if (b >= pos + n) break;
            if (b >= pos) XXH3_64bits_reset(tensor);
            const uint64_t lo = std::max(b, pos), hi = std::min(e, pos + n);
            XXH3_64bits_update(tensor, buf.data() + (lo - pos), hi - lo);
            if (hi != e) break;
            d.tensors[order[k]] = XXH3_64bits_digest(tensor);
        }
        pos += n;
    }
    d.file = hex16(XXH3_64bits_digest(file));
    XXH3_freeState(file);
    XXH3_freeState(tensor);
    if (k != order.size())
        throw FormatError(ErrorKind::Truncated, m.path(), "",
                          "file shorter than its tensors while hashing (changed while read?)");
    return d;
}

// The per-tensor source checksums of the provenance (`oiw4.source.tensor_xxh3`), or empty when
// not recorded (files written before it existed, split sources). Throws FormatError(BadKey) when
// it is present but not a u64 array of one entry per tensor.
std::vector<uint64_t> recorded_tensor_xxh3(const Oiw4File& in) {
    for (const auto& kv : in.provenance()) {
        if (kv.key != kTensorXxh3Key) continue;
        const GgufValue& v = kv.value;
        if (!v.is_array() || v.elem_type() != GgufType::U64 || v.count() != in.tensors().size())
            throw FormatError(ErrorKind::BadKey, in.path(), std::string(kTensorXxh3Key),
                              fmt::format("must be a u64 array of {} entries (one per tensor)", in.tensors().size()));
        std::vector<uint64_t> out(in.tensors().size());
        if (!out.empty())
            std::memcpy(out.data(), v.raw().data(), out.size() * sizeof(uint64_t));  // a tensorless file: no data
        return out;
    }
    return {};
}

const uint8_t* as_bytes(const void* p) { return static_cast<const uint8_t*>(p); }
template <typename T>
std::span<const uint8_t> byte_span(const std::vector<T>& v, size_t n) {
    return {as_bytes(v.data()), n * sizeof(T)};
}

// Rows per conversion step for rows of `row_bytes` source bytes (a multiple of `multiple`).
int64_t chunk_rows(uint64_t row_bytes, int64_t multiple) {
    const auto r = static_cast<int64_t>(std::max<uint64_t>(1, kChunkBytes / std::max<uint64_t>(row_bytes, 1)));
    return std::max(multiple, r / multiple * multiple);
}

// Streams an oiw4 tensor: qs in chunks as rows are produced, d (1/4 of qs) kept and written last.
// `fill(row0, nrows, qs, d)` produces the planes of rows [row0, row0 + nrows).
void write_oiw4_tensor(Oiw4Writer& w, const GgufTensorInfo& t, uint64_t src_row_bytes,
                       const std::function<void(int64_t, int64_t, uint8_t*, float*)>& fill) {
    const int64_t rows = t.n_rows(), bpr = t.ne[0] / 32;
    const int64_t step = chunk_rows(src_row_bytes, 1);
    std::vector<float> d(static_cast<size_t>(rows * bpr));
    std::vector<uint8_t> qs(static_cast<size_t>(std::min(step, rows) * bpr * 16));
    w.begin_plane();
    for (int64_t r = 0; r < rows; r += step) {
        const int64_t n = std::min(step, rows - r);
        fill(r, n, qs.data(), d.data() + r * bpr);
        w.append(byte_span(qs, static_cast<size_t>(n * bpr * 16)));
    }
    w.end_plane();
    w.write_plane(byte_span(d, d.size()));
}

}  // namespace

EncodeRule parse_encode_rule(std::string_view spec, bool requant) {
    const std::string opt = requant ? "--requant" : "--encode";
    const auto fail = [&](const std::string& why) -> EncodeRule {
        throw FormatError(ErrorKind::Usage, "", opt + " '" + std::string(spec) + "'", why);
    };
    const auto eq = spec.rfind('=');
    if (eq == std::string_view::npos || eq == 0 || eq + 1 == spec.size()) return fail("expected REGEX=ENCODING");
    const auto enc = encoding_from_name(spec.substr(eq + 1));
    if (!enc)
        return fail("unknown encoding '" + std::string(spec.substr(eq + 1)) + "' (valid: raw oiw4 q4kx8 q4kx8-il4)");
    if (requant && *enc != Oiw4Encoding::Oiw4) return fail("--requant only produces oiw4");
    return EncodeRule{std::string(spec), Pattern(spec.substr(0, eq), opt), *enc, requant};
}

Oiw4Encoding default_encoding(const GgufTensorInfo& t) {
    if (t.type == GgmlType::Q4_0) return Oiw4Encoding::Oiw4;
    if (t.type == GgmlType::Q4_K && t.n_dims >= 2 && t.n_rows() % 8 == 0 && !is_embedding_lookup(t.name))
        return Oiw4Encoding::Q4Kx8;
    return Oiw4Encoding::Raw;
}

Oiw4Plan plan_oiw4(const Model& in, const std::vector<EncodeRule>& rules) {
    Oiw4Plan plan;
    std::vector<const EncodeRule*> ordered;
    for (bool rq : {true, false})
        for (const auto& r : rules)
            if (r.requant == rq) ordered.push_back(&r);
    Oiw4Writer sizer("", {});
    for (size_t i = 0; i < in.tensors().size(); ++i) {
        const auto& t = in.tensors()[i];
        Oiw4TensorPlan tp;
        tp.index = i;
        tp.encoding = default_encoding(t);
        for (const auto* r : ordered)
            if (r->pattern.search(t.name)) {
                tp.encoding = r->encoding;
                tp.requant = r->requant;
                break;
            }
        if (tp.requant && !can_dequantize(t.type))
            throw FormatError(ErrorKind::Unsupported, in.path(), subject(t),
                              fmt::format("cannot requantize {}: no dequantizer", type_name(t.type)));
        if (tp.encoding == Oiw4Encoding::Oiw4 && !tp.requant && t.type != GgmlType::Q4_0)
            throw FormatError(
                ErrorKind::BadEncoding, in.path(), subject(t),
                fmt::format("oiw4 holds Q4_0 losslessly, this is {}: use --requant REGEX=oiw4", type_name(t.type)));
        tp.planes = encoding_planes(tp.encoding, t, in.path());
        sizer.add_tensor(t, tp.encoding);
        plan.tensors.push_back(std::move(tp));
    }
    std::vector<std::string> used;
    used.reserve(ordered.size() + 1);
    for (const auto* r : ordered) used.push_back((r->requant ? "requant:" : "encode:") + r->spec);
    used.emplace_back(kDefaultRule);
    std::vector<GgufKV> prov{
        {"oiw4.source.name", GgufValue::make_string(std::filesystem::path(in.path()).filename().string())}};
    if (!in.is_split()) {  // a split source has no single file for --to-gguf to reproduce
        prov.push_back({"oiw4.source.size", GgufValue::make_scalar<uint64_t>(GgufType::U64, in.file_size())});
        SourceDigest d = source_digest(in);
        prov.push_back({"oiw4.source.xxh3", GgufValue::make_string(d.file)});
        std::vector<uint8_t> packed(d.tensors.size() * sizeof(uint64_t));
        if (!packed.empty()) std::memcpy(packed.data(), d.tensors.data(), packed.size());
        prov.push_back(
            {std::string(kTensorXxh3Key), GgufValue::make_array(GgufType::U64, std::move(packed), d.tensors.size())});
    }
    prov.push_back({"oiw4.tool", GgufValue::make_string(std::string(kToolName))});
    prov.push_back({"oiw4.rules", GgufValue::make_string_array(std::move(used))});
    plan.provenance = Metadata(std::move(prov));
    sizer.set_metadata(in.version(), in.metadata(), plan.provenance);
    plan.out_size = sizer.planned_size();
    return plan;
}

void write_oiw4(const Model& in, const Oiw4Plan& plan, const std::string& out_path,
                const std::function<void(size_t, std::string_view)>& progress) {
    Oiw4Writer w(out_path, in.files());
    w.set_metadata(in.version(), in.metadata(), plan.provenance);
    for (const auto& tp : plan.tensors) w.add_tensor(in.tensors()[tp.index], tp.encoding);
    for (size_t k = 0; k < plan.tensors.size(); ++k) {
        const auto& tp = plan.tensors[k];
        const auto& t = in.tensors()[tp.index];
        const auto src = in.tensor_data(tp.index);
        const uint64_t row_bytes = row_size(t.type, t.ne[0]);
        const int64_t bpr = t.ne[0] / 32;
        switch (tp.encoding) {
            case Oiw4Encoding::Raw: w.write_plane(src); break;
            case Oiw4Encoding::Oiw4:
                if (tp.requant) {
                    std::vector<float> x;
                    write_oiw4_tensor(w, t, row_bytes, [&](int64_t r0, int64_t n, uint8_t* qs, float* d) {
                        x.resize(static_cast<size_t>(n * t.ne[0]));
                        for (int64_t r = 0; r < n; ++r)
                            dequantize_row(t.type, src.data() + (r0 + r) * row_bytes, x.data() + r * t.ne[0], t.ne[0]);
                        quantize_oiw4(x.data(), qs, d, n * bpr);
                    });
                } else {
                    const auto* blocks = reinterpret_cast<const block_q4_0*>(src.data());  // byte-aligned packed struct
                    write_oiw4_tensor(w, t, row_bytes, [&](int64_t r0, int64_t n, uint8_t* qs, float* d) {
                        q4_0_to_oiw4(blocks + r0 * bpr, qs, d, n * bpr);
                    });
                }
                break;
            case Oiw4Encoding::Q4Kx8:
            case Oiw4Encoding::Q4Kx8Il4: {
                const int il = tp.encoding == Oiw4Encoding::Q4Kx8 ? 8 : 4;
                const int64_t nb = t.ne[0] / 256, rows = t.n_rows(), step = chunk_rows(row_bytes, 8);
                const auto* blocks = reinterpret_cast<const block_q4_K*>(src.data());
                std::vector<block_q4_Kx8> out(static_cast<size_t>(std::min(step, rows) / 8 * nb));
                w.begin_plane();
                for (int64_t r = 0; r < rows; r += step) {
                    const int64_t n = std::min(step, rows - r);
                    repack_q4_k_to_q4_kx8(blocks + r * nb, out.data(), n, nb, il);
                    w.append(byte_span(out, static_cast<size_t>(n / 8 * nb)));
                }
                w.end_plane();
                break;
            }
        }
        in.release_tensor_pages(tp.index);
        if (progress) progress(k, t.name);
    }
    w.finish();
}

float oiw4_tensor_gguf_bytes(const Oiw4File& in, size_t i, const std::function<void(std::span<const uint8_t>)>& sink) {
    in.require_decoded(i);
    const auto& t = in.tensors()[i];
    const int64_t rows = t.info.n_rows();
    float max_err = 0;
    switch (t.encoding) {
        case Oiw4Encoding::Raw: sink(in.plane_data(i, 0)); break;
        case Oiw4Encoding::Oiw4: {
            const Oiw4View v = in.oiw4_view(i);
            const int64_t bpr = v.cols / 32, step = chunk_rows(static_cast<uint64_t>(bpr) * 20, 1);
            std::vector<block_q4_0> out(static_cast<size_t>(std::min(step, rows) * bpr));
            for (int64_t r = 0; r < rows; r += step) {
                const int64_t n = std::min(step, rows - r);
                max_err = std::max(max_err, oiw4_to_q4_0(v.qs + r * bpr * 16, v.d + r * bpr, out.data(), n * bpr));
                sink(byte_span(out, static_cast<size_t>(n * bpr)));
            }
            break;
        }
        case Oiw4Encoding::Q4Kx8:
        case Oiw4Encoding::Q4Kx8Il4: {
            const int il = t.encoding == Oiw4Encoding::Q4Kx8 ? 8 : 4;
            const int64_t nb = t.info.ne[0] / 256, step = chunk_rows(static_cast<uint64_t>(nb) * sizeof(block_q4_K), 8);
            const auto* blocks = reinterpret_cast<const block_q4_Kx8*>(in.plane_data(i, 0).data());
            std::vector<block_q4_K> out(static_cast<size_t>(std::min(step, rows) * nb));
            for (int64_t r = 0; r < rows; r += step) {
                const int64_t n = std::min(step, rows - r);
                unpack_q4_kx8_to_q4_k(blocks + r / 8 * nb, out.data(), n, nb, il);
                sink(byte_span(out, static_cast<size_t>(n * nb)));
            }
            break;
        }
    }
    return max_err;
}

ToGgufResult write_gguf_from_oiw4(const Oiw4File& in, const std::string& out_path, const SplitOptions& split) {
    if (in.compressed())
        throw FormatError(ErrorKind::Unsupported, in.path(), "",
                          "file has zstd-compressed planes: run oiw4-convert --decompress first");
    ToGgufResult res;
    const GgufValue* size = nullptr;
    const GgufValue* sum = nullptr;
    for (const auto& kv : in.provenance()) {
        if (kv.key == "oiw4.source.size") size = &kv.value;
        if (kv.key == "oiw4.source.xxh3") sum = &kv.value;
    }
    const int64_t source_size = size ? size->as_int().value_or(-1) : -1;  // -1: not recorded
    const std::vector<uint64_t> recorded = recorded_tensor_xxh3(in);      // empty: not recorded
    GgufOutput w(out_path, split, {in.path()}, in.gguf_version());
    w.set_kvs(in.metadata());
    // A tensorless source (vocabulary files) may or may not pad its header: keep what it did.
    if (in.tensors().empty() && source_size >= 0 &&
        static_cast<uint64_t>(source_size) == serialize_gguf_header(in.gguf_version(), in.metadata(), {}).size())
        w.set_pad_empty(false);
    for (const auto& t : in.tensors()) {
        const GgmlType type = t.encoding == Oiw4Encoding::Oiw4 ? GgmlType::Q4_0 : t.info.type;
        if (type != t.info.type) res.lossless = false;  // requantized: the source type is gone
        w.add_tensor(t.info.name, type, t.info.shape());
    }
    w.plan();
    XXH3_state_t* xxh = XXH3_createState();
    const std::unique_ptr<XXH3_state_t, XXH_errorcode (*)(XXH3_state_t*)> xxh_owner(xxh, XXH3_freeState);
    const auto emit = [&](std::span<const uint8_t> b) {
        XXH3_64bits_update(xxh, b.data(), b.size());
        w.write_tensor_data(b);
    };
    res.tensors_checked = !recorded.empty();
    for (size_t i = 0; i < in.tensors().size(); ++i) {
        if (!w.writes(i)) continue;
        const auto& t = in.tensors()[i];
        XXH3_64bits_reset(xxh);
        const float max_err = oiw4_tensor_gguf_bytes(in, i, emit);
        if (max_err > 0) {
            res.lossless = false;
            res.warnings.push_back(fmt::format(
                "tensor '{}': oiw4 scales are not exact in fp16, written as Q4_0 with max scale error {:.3g}",
                t.info.name, max_err));
        }
        const bool same_type = t.encoding != Oiw4Encoding::Oiw4 || t.info.type == GgmlType::Q4_0;
        if (!recorded.empty() && same_type && XXH3_64bits_digest(xxh) != recorded[i]) {
            res.mismatch = fmt::format(
                "tensor '{}': rebuilt bytes hash to {}, the source's recorded xxh3 is {}: not identical to the source, "
                "nothing written",
                t.info.name, hex16(XXH3_64bits_digest(xxh)), hex16(recorded[i]));
            return res;  // w is not finished: no output file
        }
        in.release_tensor_pages(i);
    }
    w.finish();
    // Byte identity with the recorded source: same size and XXH3-64 of the whole file.
    res.written = w.written_paths();
    if (!split.active() && sum && sum->as_string() && source_size >= 0) {
        const uint64_t out_size = w.planned_size();
        const std::string out_sum = static_cast<uint64_t>(source_size) == out_size ? file_xxh3_hex(out_path) : "";
        res.identical_to_source = out_sum == *sum->as_string();
        if (!res.identical_to_source && res.lossless && recorded.empty())
            res.mismatch = fmt::format(
                "differs from the source recorded in the provenance (size {}, xxh3 {}; rebuilt: size {}{}); the file "
                "records no per-tensor checksums to name the tensor",
                source_size, *sum->as_string(), out_size, out_sum.empty() ? "" : ", xxh3 " + out_sum);
    }
    return res;
}

}  // namespace oiw
