// JSON renderers for gguf-inspect (schema: docs/gguf-inspect.md; pinned by tests).
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "inspect/ftype.h"
#include "inspect/json.h"
#include "inspect/render.h"

namespace oiw::inspect {
namespace {

// One scalar element of a fixed-size value type at `p`.
void scalar(json::Writer& w, GgufType t, const uint8_t* p) {
    auto rd = [p]<typename T>(T) { T v; std::memcpy(&v, p, sizeof(T)); return v; };
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
    const uint64_t shown = std::min<uint64_t>(v.count, limit);
    for (uint64_t i = 0; i < shown; ++i) {
        if (v.elem_type == GgufType::STRING) w.value(v.strings[i]);
        else if (v.elem_type == GgufType::ARRAY) array_items(w, v.arrays[i], limit);
        else scalar(w, v.elem_type, v.raw.data() + i * gguf_type_size(v.elem_type));
    }
    w.end_array();
}

// {"type": "u32", "value": 2048} or {"type": "arr", "elem_type": "str", "count": 32000,
//  "value": [...], "truncated": true}
void kv_value(json::Writer& w, const GgufValue& v, size_t limit) {
    w.begin_object();
    w.key("type");
    w.value(gguf_type_name(v.type));
    if (v.is_array()) {
        w.key("elem_type");
        w.value(gguf_type_name(v.elem_type));
        w.key("count");
        w.value(v.count);
        w.key("value");
        array_items(w, v, limit);
        w.key("truncated");
        w.value(v.count > limit);
    } else {
        w.key("value");
        if (v.type == GgufType::STRING) w.value(v.strings.at(0));
        else scalar(w, v.type, v.raw.data());
    }
    w.end_object();
}

void totals(json::Writer& w, const Totals& t) {
    w.key("count");
    w.value(t.count);
    w.key("n_elements");
    w.value(t.n_elements);
    w.key("n_bytes");
    w.value(t.n_bytes);
    w.key("bytes_per_token");
    w.value(t.bytes_per_token);
}

void shape(json::Writer& w, const GgufTensorInfo& t) {
    w.begin_array(true);
    for (uint32_t d = 0; d < t.n_dims; ++d) w.value(t.ne[d]);
    w.end_array();
}

void optional_uint(json::Writer& w, const std::optional<uint64_t>& v) {
    if (v) w.value(*v);
    else w.null();
}

}  // namespace

std::string render_json(const Report& r, const RenderOptions& o) {
    const GgufFile& f = r.file;
    const Analysis& a = r.analysis;
    const ModelFacts& m = a.model;
    const size_t limit = o.full ? std::numeric_limits<size_t>::max() : kArrayPreview;
    json::Writer w;
    w.begin_object();
    w.key("schema");
    w.value(kReportSchema);

    w.key("file");
    w.begin_object();
    w.key("path");
    w.value(f.path());
    w.key("size");
    w.value(f.file_size());
    w.key("version");
    w.value(f.version());
    w.key("alignment");
    w.value(f.alignment());
    w.key("header_size");
    w.value(f.header_size());
    w.key("data_offset");
    w.value(f.data_offset());
    w.end_object();

    w.key("model");
    w.begin_object();
    w.key("architecture");
    w.value(m.architecture);
    w.key("name");
    w.value(m.name);
    w.key("file_type");
    if (m.file_type) {
        w.begin_object();
        w.key("id");
        w.value(*m.file_type);
        w.key("name");
        const auto n = ftype_name(*m.file_type);
        if (n.empty()) w.null();
        else w.value(n);
        w.end_object();
    } else {
        w.null();
    }
    w.key("kv_count");
    w.value(f.kvs().size());
    w.key("tensor_count");
    w.value(f.tensors().size());
    w.key("n_elements");
    w.value(m.n_elements);
    w.key("n_bytes");
    w.value(m.n_bytes);
    w.key("bpw");
    w.value(m.bpw());
    w.key("expert_count");
    optional_uint(w, m.expert_count);
    w.key("expert_used_count");
    optional_uint(w, m.expert_used_count);
    w.key("tied_embeddings");
    w.value(m.tied_embeddings);
    w.end_object();

    w.key("kv");
    w.begin_object();
    for (const auto& kv : f.kvs()) {
        w.key(kv.key);
        kv_value(w, kv.value, limit);
    }
    w.end_object();

    if (r.hash) {
        w.key("hash_algorithm");
        w.value(hash_name(*r.hash));
    }
    w.key("tensors");
    w.begin_array();
    for (size_t i = 0; i < f.tensors().size(); ++i) {
        const auto& t = f.tensors()[i];
        const auto& tf = a.tensors[i];
        w.begin_object();
        w.key("name");
        w.value(t.name);
        w.key("type");
        w.value(type_name(t.type));
        w.key("shape");
        shape(w, t);
        w.key("n_elements");
        w.value(static_cast<uint64_t>(t.n_elements()));
        w.key("n_bytes");
        w.value(t.n_bytes);
        w.key("offset");
        w.value(t.offset);
        w.key("bytes_per_token");
        w.value(tf.bytes_per_token);
        w.key("group");
        w.value(group_id(tf.group));
        w.key("layer");
        if (tf.layer >= 0) w.value(tf.layer);
        else w.null();
        w.key("matmul");
        w.value(tf.matmul);
        if (r.digests && i < r.digests->size()) {
            w.key("hash");
            w.value((*r.digests)[i]);
        }
        w.end_object();
    }
    w.end_array();

    w.key("summary");
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
    for (Group g : kAllGroups) {
        w.key(group_id(g));
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
        if (lt.layer >= 0) w.value(lt.layer);
        else w.null();
        totals(w, lt);
        w.end_object();
    }
    w.end_array();
    w.end_object();

    w.key("traffic");
    w.begin_object();
    w.key("bytes_per_token");
    w.value(a.traffic.bytes_per_token);
    w.key("by_group");
    w.begin_object();
    for (Group g : kAllGroups) {
        w.key(group_id(g));
        w.value(a.traffic.by_group[static_cast<size_t>(g)]);
    }
    w.end_object();
    w.key("lm_head_share");
    w.value(a.traffic.lm_head_share);
    w.key("expert_fraction");
    if (a.traffic.expert_fraction) w.value(*a.traffic.expert_fraction);
    else w.null();
    w.key("bandwidth_bytes_per_s");
    if (r.bandwidth) w.value(*r.bandwidth);
    else w.null();
    w.key("tokens_per_s_ceiling");
    if (r.bandwidth && a.traffic.bytes_per_token) w.value(*r.bandwidth / static_cast<double>(a.traffic.bytes_per_token));
    else w.null();
    w.end_object();

    w.key("audit");
    if (r.profile && r.flags) {
        const Profile& p = *r.profile;
        w.begin_object();
        w.key("profile");
        w.begin_object();
        w.key("name");
        w.value(p.name);
        w.key("runtime");
        w.value(p.runtime);
        w.key("version");
        w.value(p.version);
        w.key("source");
        w.value(p.source);
        w.end_object();
        w.key("flags");
        w.begin_array();
        for (const auto& fl : *r.flags) {
            w.begin_object();
            w.key("kind");
            w.value(flag_id(fl.kind));
            w.key("subject");
            w.value(fl.subject);
            w.key("message");
            w.value(fl.message);
            w.key("suggestion");
            w.value(fl.suggestion);
            w.key("source");
            w.value(fl.cite);
            w.key("bytes_per_token");
            w.value(fl.bytes_per_token);
            w.key("share");
            w.value(fl.share);
            w.key("tensors");
            w.begin_array();
            for (size_t i : fl.tensors) w.value(f.tensors()[i].name);
            w.end_array();
            w.end_object();
        }
        w.end_array();
        w.end_object();
    } else {
        w.null();
    }
    w.end_object();
    std::string out = w.take();
    out += '\n';
    return out;
}

std::string render_diff_json(const DiffReport& r, const RenderOptions& o) {
    const Diff& d = r.diff;
    const size_t limit = o.full ? std::numeric_limits<size_t>::max() : kArrayPreview;
    json::Writer w;
    auto file = [&](const GgufFile& f, const Analysis& a) {
        w.begin_object();
        w.key("path");
        w.value(f.path());
        w.key("size");
        w.value(f.file_size());
        w.key("kv_count");
        w.value(f.kvs().size());
        w.key("tensor_count");
        w.value(f.tensors().size());
        w.key("n_elements");
        w.value(a.model.n_elements);
        w.key("n_bytes");
        w.value(a.model.n_bytes);
        w.key("bytes_per_token");
        w.value(a.traffic.bytes_per_token);
        w.end_object();
    };
    auto tinfo = [&](const GgufTensorInfo& t, uint64_t bpt) {
        w.begin_object();
        w.key("type");
        w.value(type_name(t.type));
        w.key("shape");
        shape(w, t);
        w.key("n_bytes");
        w.value(t.n_bytes);
        w.key("bytes_per_token");
        w.value(bpt);
        w.end_object();
    };
    w.begin_object();
    w.key("schema");
    w.value(kDiffSchema);
    w.key("identical");
    w.value(d.identical());
    w.key("a");
    file(r.a, r.aa);
    w.key("b");
    file(r.b, r.ab);
    w.key("header");
    w.begin_array();
    for (const auto& h : d.header) w.value(h);
    w.end_array();

    w.key("kv");
    w.begin_object();
    w.key("added");
    w.begin_object();
    for (size_t j : d.kv_added) {
        w.key(r.b.kvs()[j].key);
        kv_value(w, r.b.kvs()[j].value, limit);
    }
    w.end_object();
    w.key("removed");
    w.begin_object();
    for (size_t i : d.kv_removed) {
        w.key(r.a.kvs()[i].key);
        kv_value(w, r.a.kvs()[i].value, limit);
    }
    w.end_object();
    w.key("changed");
    w.begin_object();
    for (const auto& [i, j] : d.kv_changed) {
        w.key(r.a.kvs()[i].key);
        w.begin_object();
        w.key("a");
        kv_value(w, r.a.kvs()[i].value, limit);
        w.key("b");
        kv_value(w, r.b.kvs()[j].value, limit);
        w.end_object();
    }
    w.end_object();
    w.end_object();

    w.key("tensors");
    w.begin_object();
    w.key("added");
    w.begin_array();
    for (size_t j : d.tensors_added) w.value(r.b.tensors()[j].name);
    w.end_array();
    w.key("removed");
    w.begin_array();
    for (size_t i : d.tensors_removed) w.value(r.a.tensors()[i].name);
    w.end_array();
    w.key("changed");
    w.begin_array();
    for (const auto& td : d.tensors_changed) {
        w.begin_object();
        w.key("name");
        w.value(r.a.tensors()[td.a].name);
        w.key("a");
        tinfo(r.a.tensors()[td.a], r.aa.tensors[td.a].bytes_per_token);
        w.key("b");
        tinfo(r.b.tensors()[td.b], r.ab.tensors[td.b].bytes_per_token);
        w.end_object();
    }
    w.end_array();
    w.key("common");
    w.value(d.tensors_common);
    w.end_object();

    w.key("data");
    if (d.data_compared) {
        w.begin_object();
        w.key("identical");
        w.begin_array();
        for (const auto& [i, j] : d.data_identical) w.value(r.a.tensors()[i].name);
        w.end_array();
        w.key("different");
        w.begin_array();
        for (const auto& [i, j] : d.data_different) w.value(r.a.tensors()[i].name);
        w.end_array();
        w.end_object();
    } else {
        w.null();
    }
    w.end_object();
    std::string out = w.take();
    out += '\n';
    return out;
}

}  // namespace oiw::inspect
