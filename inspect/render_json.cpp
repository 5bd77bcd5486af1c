// JSON renderers for gguf-inspect (schema: docs/gguf-inspect.md; pinned by tests).
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "inspect/render.h"
#include "libformat/ftype.h"
#include "libformat/json.h"

namespace oiw::inspect {
namespace {

// *v, or null when empty.
template <typename T>
void value_or_null(json::Writer& w, const std::optional<T>& v) {
    if (v)
        w.value(*v);
    else
        w.null();
}

// Closes the top-level object; the document with a final newline.
std::string finish(json::Writer& w) {
    w.end_object();
    std::string out = w.take();
    out += '\n';
    return out;
}

// A layer index, or null for tensors outside the layers (-1).
void layer_or_null(json::Writer& w, int layer) {
    if (layer >= 0)
        w.value(layer);
    else
        w.null();
}

// One scalar element of a fixed-size value type at `p`.
void scalar(json::Writer& w, GgufType t, const uint8_t* p) {
    auto rd = [p]<typename T>(T) {
        T v;
        std::memcpy(&v, p, sizeof(T));
        return v;
    };
    switch (t) {
        case GgufType::U8: w.value(static_cast<uint64_t>(rd(uint8_t{}))); break;
        case GgufType::I8: w.value(static_cast<int64_t>(rd(int8_t{}))); break;
        case GgufType::U16: w.value(static_cast<uint64_t>(rd(uint16_t{}))); break;
        case GgufType::I16: w.value(static_cast<int64_t>(rd(int16_t{}))); break;
        case GgufType::U32: w.value(static_cast<uint64_t>(rd(uint32_t{}))); break;
        case GgufType::I32: w.value(static_cast<int64_t>(rd(int32_t{}))); break;
        case GgufType::U64: w.value(rd(uint64_t{})); break;
        case GgufType::I64: w.value(rd(int64_t{})); break;
        case GgufType::F32: w.value(static_cast<double>(rd(float{}))); break;
        case GgufType::F64: w.value(rd(double{})); break;
        case GgufType::BOOL: w.value(rd(uint8_t{}) != 0); break;
        default: w.null();
    }
}

// The elements of an array value (at most `limit`), as a JSON array.
void array_items(json::Writer& w, const GgufValue& v, size_t limit) {
    w.begin_array(true);
    const uint64_t shown = std::min<uint64_t>(v.count(), limit);
    for (uint64_t i = 0; i < shown; ++i) {
        if (v.elem_type() == GgufType::STRING)
            w.value(v.strings()[i]);
        else
            scalar(w, v.elem_type(), v.raw().data() + i * gguf_type_size(v.elem_type()));
    }
    w.end_array();
}

// {"type": "u32", "value": 2048} or {"type": "arr", "elem_type": "str", "count": 32000,
//  "value": [...], "truncated": true}
void kv_value(json::Writer& w, const GgufValue& v, size_t limit) {
    w.begin_object();
    w.field("type", gguf_type_name(v.type()));
    if (v.is_array()) {
        w.field("elem_type", gguf_type_name(v.elem_type()));
        w.field("count", v.count());
        w.key("value");
        array_items(w, v, limit);
        w.field("truncated", v.count() > limit);
    } else {
        w.key("value");
        if (v.type() == GgufType::STRING)
            w.value(v.strings().at(0));
        else
            scalar(w, v.type(), v.raw().data());
    }
    w.end_object();
}

void totals(json::Writer& w, const traffic::Totals& t) {
    w.field("count", t.count);
    w.field("n_elements", t.n_elements);
    w.field("n_bytes", t.n_bytes);
    w.field("bytes_per_token", t.bytes_per_token);
}

void shape(json::Writer& w, const GgufTensorInfo& t) {
    w.begin_array(true);
    for (uint32_t d = 0; d < t.n_dims; ++d) w.value(t.ne[d]);
    w.end_array();
}

// The "file" object: path, size, layout and, for a split model, its shards ("path" is then the
// first shard's, "size" the sum over all).
void file_object(json::Writer& w, const Model& f) {
    w.begin_object();
    w.field("path", f.path());
    w.field("size", f.file_size());
    w.field("version", f.version());
    w.field("alignment", f.alignment());
    w.field("header_size", f.header_size());
    w.field("data_offset", f.data_offset());
    if (f.is_split()) {
        w.key("shards");
        w.begin_array();
        for (const GgufFile& s : f.shards()) {
            w.begin_object();
            w.field("path", s.path());
            w.field("size", s.file_size());
            w.field("tensors", static_cast<uint64_t>(s.tensors().size()));
            w.field("data_offset", s.data_offset());
            w.end_object();
        }
        w.end_array();
    }
    w.end_object();
}

// {"id": 15, "name": "MOSTLY_Q4_K_M"} (name null when unknown), or null when the file type is not set.
void file_type(json::Writer& w, const std::optional<uint32_t>& id) {
    if (!id) return w.null();
    w.begin_object();
    w.field("id", *id);
    w.key("name");
    const auto n = ftype_name(*id);
    if (n.empty())
        w.null();
    else
        w.value(n);
    w.end_object();
}

// The "model" object: architecture, name, file type, counts, sizes and experts.
void model_object(json::Writer& w, const Model& f, const traffic::ModelFacts& m) {
    w.begin_object();
    w.field("architecture", m.architecture);
    w.field("name", m.name);
    w.key("file_type");
    file_type(w, m.file_type);
    w.field("kv_count", f.metadata().size());
    w.field("tensor_count", f.tensors().size());
    w.field("n_elements", m.n_elements);
    w.field("n_bytes", m.n_bytes);
    w.field("bpw", m.bpw());
    w.key("expert_count");
    value_or_null(w, m.expert_count);
    w.key("expert_used_count");
    value_or_null(w, m.expert_used_count);
    w.field("tied_embeddings", m.tied_embeddings);
    w.end_object();
}

// The "kv" object: every key with its value (arrays cut at `limit`).
void kv_object(json::Writer& w, const Model& f, size_t limit) {
    w.begin_object();
    for (const auto& kv : f.metadata()) {
        w.key(kv.key);
        kv_value(w, kv.value, limit);
    }
    w.end_object();
}

// The "tensors" array: each tensor info with its shard, traffic, layer and digest (when hashed).
void tensor_array(json::Writer& w, const Report& r) {
    const Model& f = r.file;
    w.begin_array();
    for (size_t i = 0; i < f.tensors().size(); ++i) {
        const auto& t = f.tensors()[i];
        const auto& tf = r.analysis.tensors[i];
        w.begin_object();
        w.field("name", t.name);
        w.field("type", type_name(t.type));
        w.key("shape");
        shape(w, t);
        w.field("n_elements", static_cast<uint64_t>(t.n_elements()));
        w.field("n_bytes", t.n_bytes);
        w.field("offset", t.offset);
        if (f.is_split()) w.field("shard", static_cast<uint64_t>(f.shard_of(i) + 1));
        w.field("bytes_per_token", tf.bytes_per_token);
        w.field("group", traffic::group_id(tf.group));
        w.key("layer");
        layer_or_null(w, tf.layer);
        w.field("matmul", tf.matmul);
        if (r.digests && i < r.digests->size()) {
            w.field("hash", (*r.digests)[i]);
        }
        w.end_object();
    }
    w.end_array();
}

// The "summary" object: totals by type, by group (every group) and by layer.
void summary_object(json::Writer& w, const traffic::Analysis& a) {
    w.begin_object();
    w.key("by_type");
    w.begin_object();
    for (const auto& tt : a.by_type) {
        w.key(type_name(tt.type));
        w.begin_object();
        totals(w, tt);
        w.end_object();
    }
    w.end_object();
    w.key("by_group");
    w.begin_object();
    for (traffic::Group g : traffic::kAllGroups) {
        w.key(traffic::group_id(g));
        w.begin_object();
        totals(w, a.by_group[static_cast<size_t>(g)]);
        w.end_object();
    }
    w.end_object();
    w.key("by_layer");
    w.begin_array();
    for (const auto& lt : a.by_layer) {
        w.begin_object();
        w.key("layer");
        layer_or_null(w, lt.layer);
        totals(w, lt);
        w.end_object();
    }
    w.end_array();
    w.end_object();
}

// The "traffic" object: bytes per token in all and by group, lm_head share, expert fraction,
// bandwidth and the tokens/s ceiling (null without a bandwidth).
void traffic_object(json::Writer& w, const Report& r) {
    const traffic::Analysis& a = r.analysis;
    w.begin_object();
    w.field("bytes_per_token", a.traffic.bytes_per_token);
    w.key("by_group");
    w.begin_object();
    for (traffic::Group g : traffic::kAllGroups) {
        w.field(traffic::group_id(g), a.traffic.by_group[static_cast<size_t>(g)]);
    }
    w.end_object();
    w.field("lm_head_share", a.traffic.lm_head_share);
    w.key("expert_fraction");
    value_or_null(w, a.traffic.expert_fraction);
    w.key("bandwidth_bytes_per_s");
    value_or_null(w, r.bandwidth);
    w.key("tokens_per_s_ceiling");
    if (r.bandwidth && a.traffic.bytes_per_token)
        w.value(*r.bandwidth / static_cast<double>(a.traffic.bytes_per_token));
    else
        w.null();
    w.end_object();
}

// The "audit" object: the profile and its flags, or null when the report has no audit.
void audit_object(json::Writer& w, const Report& r) {
    if (!r.profile || !r.flags) return w.null();
    const Profile& p = *r.profile;
    w.begin_object();
    w.key("profile");
    w.begin_object();
    w.field("name", p.name);
    w.field("runtime", p.runtime);
    w.field("version", p.version);
    w.field("source", p.source);
    w.end_object();
    w.key("flags");
    w.begin_array();
    for (const auto& fl : *r.flags) {
        w.begin_object();
        w.field("kind", flag_id(fl.kind));
        w.field("subject", fl.subject);
        w.field("message", fl.message);
        w.field("suggestion", fl.suggestion);
        w.field("source", fl.cite);
        w.field("bytes_per_token", fl.bytes_per_token);
        w.field("share", fl.share);
        w.key("tensors");
        w.begin_array();
        for (size_t i : fl.tensors) w.value(r.file.tensors()[i].name);
        w.end_array();
        w.end_object();
    }
    w.end_array();
    w.end_object();
}

}  // namespace

std::string render_json(const Report& r, const RenderOptions& o) {
    const size_t limit = o.full ? std::numeric_limits<size_t>::max() : kArrayPreview;
    json::Writer w;
    w.begin_object();
    w.field("schema", kReportSchema);
    w.key("file");
    file_object(w, r.file);
    w.key("model");
    model_object(w, r.file, r.analysis.model);
    w.key("kv");
    kv_object(w, r.file, limit);
    if (r.hash) {
        w.field("hash_algorithm", hash_name(*r.hash));
    }
    w.key("tensors");
    tensor_array(w, r);
    w.key("summary");
    summary_object(w, r.analysis);
    w.key("traffic");
    traffic_object(w, r);
    w.key("audit");
    audit_object(w, r);
    return finish(w);
}

namespace {

// One side of a diff: path (its display name when set), size, counts, sizes and bytes per token.
void diff_file(json::Writer& w, const DiffReport& r, const Model& f, const traffic::Analysis& a) {
    w.begin_object();
    w.field("path", &f == &r.b ? r.b_path() : r.a_path());
    w.field("size", f.file_size());
    w.field("kv_count", f.metadata().size());
    w.field("tensor_count", f.tensors().size());
    w.field("n_elements", a.model.n_elements);
    w.field("n_bytes", a.model.n_bytes);
    w.field("bytes_per_token", a.traffic.bytes_per_token);
    w.end_object();
}

// One side of a changed tensor: type, shape, bytes and bytes per token.
void tensor_side(json::Writer& w, const GgufTensorInfo& t, uint64_t bpt) {
    w.begin_object();
    w.field("type", type_name(t.type));
    w.key("shape");
    shape(w, t);
    w.field("n_bytes", t.n_bytes);
    w.field("bytes_per_token", bpt);
    w.end_object();
}

// "key": {kv key: value, ...} for the kvs of f at indices idx.
void kvs(json::Writer& w, std::string_view key, const Model& f, const std::vector<size_t>& idx, size_t limit) {
    w.key(key);
    w.begin_object();
    for (size_t i : idx) {
        w.key(f.metadata()[i].key);
        kv_value(w, f.metadata()[i].value, limit);
    }
    w.end_object();
}

// "key": [name(e) for each e of list]
template <typename List, typename Name>
void names(json::Writer& w, std::string_view key, const List& list, Name name) {
    w.key(key);
    w.begin_array();
    for (const auto& e : list) w.value(name(e));
    w.end_array();
}

// The diff's "kv" object: keys added (B's values), removed (A's) and changed (both).
void kv_changes(json::Writer& w, const DiffReport& r, size_t limit) {
    const Diff& d = r.diff;
    w.begin_object();
    kvs(w, "added", r.b, d.kv_added, limit);
    kvs(w, "removed", r.a, d.kv_removed, limit);
    w.key("changed");
    w.begin_object();
    for (const auto& [i, j] : d.kv_changed) {
        w.key(r.a.metadata()[i].key);
        w.begin_object();
        w.key("a");
        kv_value(w, r.a.metadata()[i].value, limit);
        w.key("b");
        kv_value(w, r.b.metadata()[j].value, limit);
        w.end_object();
    }
    w.end_object();
    w.end_object();
}

// The diff's "tensors" object: names added and removed, the changed tensors (both sides) and the
// number in both.
void tensor_changes(json::Writer& w, const DiffReport& r) {
    const Diff& d = r.diff;
    w.begin_object();
    names(w, "added", d.tensors_added, [&](size_t j) -> const std::string& { return r.b.tensors()[j].name; });
    names(w, "removed", d.tensors_removed, [&](size_t i) -> const std::string& { return r.a.tensors()[i].name; });
    w.key("changed");
    w.begin_array();
    for (const auto& td : d.tensors_changed) {
        w.begin_object();
        w.field("name", r.a.tensors()[td.a].name);
        w.key("a");
        tensor_side(w, r.a.tensors()[td.a], r.aa.tensors[td.a].bytes_per_token);
        w.key("b");
        tensor_side(w, r.b.tensors()[td.b], r.ab.tensors[td.b].bytes_per_token);
        w.end_object();
    }
    w.end_array();
    w.field("common", d.tensors_common);
    w.end_object();
}

// The diff's "data" object: the common tensors with identical and with different data, or null
// when data was not compared.
void data_object(json::Writer& w, const DiffReport& r) {
    const Diff& d = r.diff;
    if (!d.data_compared) return w.null();
    w.begin_object();
    auto name_in_a = [&](const std::pair<size_t, size_t>& ij) -> const std::string& {
        return r.a.tensors()[ij.first].name;
    };
    names(w, "identical", d.data_identical, name_in_a);
    names(w, "different", d.data_different, name_in_a);
    w.end_object();
}

}  // namespace

std::string render_diff_json(const DiffReport& r, const RenderOptions& o) {
    const Diff& d = r.diff;
    const size_t limit = o.full ? std::numeric_limits<size_t>::max() : kArrayPreview;
    json::Writer w;
    w.begin_object();
    w.field("schema", kDiffSchema);
    w.field("identical", d.identical());
    w.key("a");
    diff_file(w, r, r.a, r.aa);
    w.key("b");
    diff_file(w, r, r.b, r.ab);
    w.key("header");
    w.begin_array();
    for (const auto& h : d.header) w.value(h);
    w.end_array();
    w.key("kv");
    kv_changes(w, r, limit);
    w.key("tensors");
    tensor_changes(w, r);
    w.key("data");
    data_object(w, r);
    return finish(w);
}

}  // namespace oiw::inspect
