#include "converters/vocab/prune.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "converters/vocab/unicode.h"

namespace oiw::vocab {

namespace {

constexpr std::string_view kTokenizerPrefix = "tokenizer.ggml.";
const std::string kMerges = "tokenizer.ggml.merges";

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool ends_with(std::string_view s, std::string_view p) {
    return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

bool is_special_id_key(std::string_view key) {
    return starts_with(key, kTokenizerPrefix) && ends_with(key, "_token_id");
}

// Per-token arrays: every tokenizer.ggml.* array as long as the vocabulary except the merges
// and the (byte-blob) precompiled charsmap, whose lengths can coincide.
bool is_per_token(const GgufKV& kv, size_t n_vocab) {
    return starts_with(kv.key, kTokenizerPrefix) && kv.value.is_array() && kv.value.count() == n_vocab &&
           kv.key != kMerges && kv.key != "tokenizer.ggml.precompiled_charsmap";
}

// Elements `ids` of an array value, in that order; same element type.
GgufValue gather(const GgufValue& v, const std::vector<int32_t>& ids) {
    if (v.elem_type() == GgufType::STRING) {
        std::vector<std::string> out;
        out.reserve(ids.size());
        for (int32_t i : ids) out.push_back(v.strings()[static_cast<size_t>(i)]);
        return GgufValue::make_string_array(std::move(out));
    }
    const size_t sz = gguf_type_size(v.elem_type());
    std::vector<uint8_t> packed;
    for (int32_t i : ids) {
        const auto elem = v.raw().subspan(static_cast<size_t>(i) * sz, sz);
        packed.insert(packed.end(), elem.begin(), elem.end());
    }
    return GgufValue::make_array(v.elem_type(), std::move(packed), ids.size());
}

// An integer scalar of the same type as `like` holding `x` (little-endian low bytes).
GgufValue same_type_int(const GgufValue& like, uint64_t x) {
    std::vector<uint8_t> b(gguf_type_size(like.type()));
    for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>(x >> (8 * i));
    return GgufValue::from_bytes(like.type(), b);
}

// Tensors whose role is one row (or entry) per token, by name as llama.cpp's tensor map names
// them: the input embeddings, the lm_head and its bias, Gemma 3n's per-layer embeddings, and the
// NextN/MTP heads' embeddings and lm_head. No other tensor is gathered, whatever its shape.
bool is_vocab_tensor(std::string_view name) {
    for (std::string_view n : {"token_embd.weight", "output.weight", "output.bias", "per_layer_token_embd.weight"})
        if (name == n) return true;
    if (!starts_with(name, "blk.")) return false;
    return ends_with(name, ".nextn.embed_tokens.weight") || ends_with(name, ".nextn.shared_head_head.weight");
}

// Bytes of one index along dimension d (the unit gathered) and the number of such blocks of
// n_vocab units in the tensor.
std::pair<uint64_t, uint64_t> gather_geometry(const GgufTensorInfo& t, int d) {
    uint64_t unit = d == 0 ? traits(t.type).type_size : row_size(t.type, t.ne[0]);
    for (int k = 1; k < d; ++k) unit *= static_cast<uint64_t>(t.ne[k]);
    uint64_t outer = 1;
    for (int k = d + 1; k < static_cast<int>(kMaxDims); ++k) outer *= static_cast<uint64_t>(t.ne[k]);
    return {unit, outer};
}

}  // namespace

void check_consistent(const oiw::Model& in, size_t n_vocab) {
    const std::string& file = in.path();
    const auto refuse = [&](const std::string& subject, const std::string& what) {
        throw FormatError(
            ErrorKind::BadData, file, subject,
            what + fmt::format(", but the vocabulary has {} tokens: the model is inconsistent, refusing to prune",
                               n_vocab));
    };
    const Metadata& md = in.metadata();
    if (const auto arch = md.get_string("general.architecture")) {
        const std::string key = *arch + ".vocab_size";
        if (const GgufValue* v = md.find(key); v && v->is_integer()) {
            const auto size = md.get_uint(key, UINT64_MAX);
            if (size && *size != n_vocab) refuse("key '" + key + "'", fmt::format("it says {}", *size));
        }
    }
    for (const GgufTensorInfo& t : in.tensors()) {
        if (!is_vocab_tensor(t.name)) continue;
        const auto rows = static_cast<uint64_t>(t.ne[t.n_dims - 1]);
        if (rows != n_vocab)
            refuse("tensor '" + t.name + "'", fmt::format("it has {} entries along its last dimension", rows));
    }
}

void check_ids(const std::vector<int64_t>& ids, size_t n_vocab, const std::string& source) {
    for (int64_t id : ids)
        if (id < 0 || static_cast<uint64_t>(id) >= n_vocab)
            throw FormatError(ErrorKind::Usage, source, "id " + std::to_string(id),
                              "out of range (the vocabulary has " + std::to_string(n_vocab) + " tokens)");
}

namespace {

// Keeps `id`; counts it in `counter` when it was not kept yet. Returns whether it was new.
bool mark(std::vector<uint8_t>& keep, int32_t id, size_t& counter) {
    if (keep[static_cast<size_t>(id)]) return false;
    keep[static_cast<size_t>(id)] = 1;
    ++counter;
    return true;
}

// A special id key's value as a token id of an n-token vocabulary (anything else throws, naming
// the key).
int32_t special_id(const Metadata& md, const std::string& key, size_t n) {
    return static_cast<int32_t>(*md.get_int(key, 0, static_cast<int64_t>(n) - 1));
}

// Keeps what pruning never drops: special and byte tokens (a byte-level BPE's 256 byte symbols
// too), the ids the special-token keys name and llama.cpp's defaults for keys the file lacks.
void keep_always(const Vocab& vocab, const Metadata& md, std::vector<uint8_t>& keep, PrunePlan& plan) {
    const size_t n = vocab.size();
    for (size_t i = 0; i < n; ++i) {
        const auto id = static_cast<int32_t>(i);
        if (vocab.is_special(id) || vocab.is_byte_token(id)) mark(keep, id, plan.always_kept);
    }
    if (vocab.byte_level())
        for (int b = 0; b < 256; ++b)
            if (auto id = vocab.find(byte_to_unicode(static_cast<uint8_t>(b)))) mark(keep, *id, plan.always_kept);
    for (const GgufKV& kv : md)
        if (is_special_id_key(kv.key)) mark(keep, special_id(md, kv.key, n), plan.always_kept);
    for (const auto& [key, id] : vocab.default_special_ids())
        if (!md.contains(key) && static_cast<size_t>(id) < n) mark(keep, id, plan.always_kept);
}

// Keeps the symbols the merger builds each kept token from, until nothing new is kept.
void keep_merge_closure(const Vocab& vocab, std::vector<uint8_t>& keep, PrunePlan& plan) {
    std::vector<int32_t> work;
    for (size_t i = 0; i < vocab.size(); ++i) work.push_back(static_cast<int32_t>(i));
    while (!work.empty()) {
        const int32_t id = work.back();
        work.pop_back();
        if (!keep[static_cast<size_t>(id)]) continue;
        // Only a token the merger builds from its own text can come out of it (special and
        // byte tokens included: their texts can be merged too when not matched as specials).
        const auto trace = vocab.merge_trace(vocab.text(id));
        if (trace.empty() || trace.back().first + trace.back().second != vocab.text(id)) continue;
        for (const auto& [l, r] : trace)
            for (const std::string& s : {l, r, l + r})
                if (auto t = vocab.find(s); t && mark(keep, *t, plan.closure_added)) work.push_back(*t);
    }
}

// The output metadata: per-token arrays gathered, merges that name a dropped symbol removed,
// special ids and the vocabulary size renumbered, the original-ids map composed or added.
Metadata pruned_metadata(const Metadata& md, const Vocab& vocab, const std::vector<uint8_t>& keep,
                         const std::vector<int32_t>& old_to_new, PrunePlan& plan) {
    const size_t n = vocab.size();
    const GgufValue* arch = md.find("general.architecture");
    const std::string vocab_size_key = arch && arch->as_string() ? *arch->as_string() + ".vocab_size" : "";
    bool have_map = false;
    std::vector<GgufKV> kvs;
    for (const GgufKV& kv : md) {
        GgufKV o = kv;
        if (kv.key == kOriginalIdsKey && kv.value.is_array() && kv.value.elem_type() == GgufType::I32 &&
            kv.value.count() == n) {
            o.value = gather(kv.value, plan.original_ids);  // composes with an earlier pruning
            have_map = true;
        } else if (is_per_token(kv, n)) {
            o.value = gather(kv.value, plan.original_ids);
        } else if (kv.key == kMerges && kv.value.is_array() && kv.value.elem_type() == GgufType::STRING) {
            plan.merges_before = kv.value.count();
            std::vector<std::string> kept;
            for (const std::string& m : kv.value.strings()) {
                const auto [l, r] = split_merge(m);
                bool drop = false;
                for (const std::string& s : {l, r, l + r})
                    if (auto t = vocab.find(s); t && !keep[static_cast<size_t>(*t)]) drop = true;
                if (!drop) kept.push_back(m);
            }
            plan.merges_after = kept.size();
            o.value = GgufValue::make_string_array(std::move(kept));
        } else if (is_special_id_key(kv.key)) {
            o.value = same_type_int(kv.value,
                                    static_cast<uint64_t>(old_to_new[static_cast<size_t>(special_id(md, kv.key, n))]));
        } else if (kv.key == vocab_size_key && kv.value.is_integer()) {
            o.value = same_type_int(kv.value, plan.n_vocab_after);
        }
        kvs.push_back(std::move(o));
    }
    for (const auto& [key, id] : vocab.default_special_ids())
        if (!md.contains(key) && static_cast<size_t>(id) < n && old_to_new[static_cast<size_t>(id)] != id)
            kvs.push_back({key, GgufValue::make_scalar(GgufType::U32,
                                                       static_cast<uint32_t>(old_to_new[static_cast<size_t>(id)]))});
    if (!have_map) {
        std::vector<uint8_t> packed(plan.original_ids.size() * sizeof(int32_t));
        std::memcpy(packed.data(), plan.original_ids.data(), packed.size());
        kvs.push_back(
            {kOriginalIdsKey, GgufValue::make_array(GgufType::I32, std::move(packed), plan.original_ids.size())});
    }
    return Metadata(std::move(kvs), "(planned output)");
}

}  // namespace

PrunePlan plan_prune(const oiw::Model& in, const Vocab& vocab, const std::vector<int64_t>& requested,
                     const PruneOptions& opt) {
    const std::string& file = in.path();
    const size_t n = vocab.size();
    check_consistent(in, n);
    PrunePlan plan;
    plan.n_vocab_before = n;
    check_ids(requested, n, file);
    std::vector<uint8_t> keep(n, 0);
    for (int64_t id : requested) {
        plan.requested += !keep[static_cast<size_t>(id)];
        keep[static_cast<size_t>(id)] = 1;
    }
    keep_always(vocab, in.metadata(), keep, plan);
    if (!opt.closure)
        plan.closure_skipped = "disabled";
    else if (vocab.model() == Model::Other)
        plan.closure_skipped = "no merge rules for tokenizer model '" + vocab.model_name() + "'";
    else
        keep_merge_closure(vocab, keep, plan);

    std::vector<int32_t> old_to_new(n, -1);
    for (size_t i = 0; i < n; ++i)
        if (keep[i]) {
            old_to_new[i] = static_cast<int32_t>(plan.original_ids.size());
            plan.original_ids.push_back(static_cast<int32_t>(i));
        }
    plan.n_vocab_after = plan.original_ids.size();
    if (plan.n_vocab_after == 0)
        throw FormatError(ErrorKind::Usage, file, "", "nothing to keep: no ids requested and no special tokens");
    plan.kvs = pruned_metadata(in.metadata(), vocab, keep, old_to_new, plan);

    // Tensors: only vocabulary-role tensors are gathered, along their last dimension.
    for (const GgufTensorInfo& t : in.tensors()) {
        const int d = is_vocab_tensor(t.name) ? static_cast<int>(t.n_dims) - 1 : -1;
        std::vector<int64_t> shape = t.shape();
        if (d == 0 && traits(t.type).block_size != 1)
            throw FormatError(ErrorKind::Unsupported, file, "tensor '" + t.name + "'",
                              "its vocabulary dimension is ne0 of block type " + std::string(type_name(t.type)) +
                                  ": rows cannot be gathered");
        if (d >= 0) shape[static_cast<size_t>(d)] = static_cast<int64_t>(plan.n_vocab_after);
        plan.tensors.push_back(make_tensor_info(t.name, t.type, shape, file));
        plan.vocab_dim.push_back(d);
    }
    return plan;
}

std::vector<std::string> write_pruned(const oiw::Model& in, const PrunePlan& plan, const std::string& out_path,
                                      const SplitOptions& split) {
    GgufOutput w(out_path, split, in.files(), in.version());
    w.set_kvs(plan.kvs);
    for (const GgufTensorInfo& t : plan.tensors) w.add_tensor(t.name, t.type, t.shape());
    w.plan();
    for (size_t i = 0; i < plan.tensors.size(); ++i) {
        if (!w.writes(i)) continue;
        const std::span<const uint8_t> data = in.tensor_data(i);
        const int d = plan.vocab_dim[i];
        if (d < 0) {
            w.write_tensor_data(data);
        } else {
            const auto [unit, outer] = gather_geometry(in.tensors()[i], d);
            for (uint64_t o = 0; o < outer; ++o)
                for (int32_t old : plan.original_ids)
                    w.write_tensor_data(
                        data.subspan((o * plan.n_vocab_before + static_cast<uint64_t>(old)) * unit, unit));
        }
        in.release_tensor_pages(i);
    }
    w.finish();
    return w.written_paths();
}

}  // namespace oiw::vocab
