#include "converters/edit/gguf_edit.h"

#include <algorithm>

namespace oiw {

Metadata edited_kvs(const Model& in, const EditPlan& plan, EditResult* res) {
    Metadata kvs = in.is_split() ? merged_kvs(in.shards().front().metadata()) : in.metadata();
    for (const auto& key : plan.remove) {
        if (!kvs.erase(key))
            throw FormatError(ErrorKind::Usage, in.path(), "key '" + key + "'", "cannot remove: no such key");
        ++res->kv_removed;
    }
    for (const auto& kv : plan.set) ++(kvs.set(kv) ? res->kv_set : res->kv_added);
    return kvs;
}

EditResult write_edited(const Model& in, const EditPlan& plan, const std::string& out_path, const SplitOptions& split,
                        bool dry_run) {
    EditResult res;
    Metadata kvs = edited_kvs(in, plan, &res);
    std::vector<std::string> names;
    for (const auto& t : in.tensors()) names.push_back(t.name);
    for (const auto& [from, to] : plan.renames) {
        auto it = std::find(names.begin(), names.end(), from);
        if (it == names.end())
            throw FormatError(ErrorKind::Usage, in.path(), "tensor '" + from + "'", "cannot rename: no such tensor");
        if (std::find(names.begin(), names.end(), to) != names.end())
            throw FormatError(ErrorKind::DuplicateTensor, in.path(), "tensor '" + to + "'",
                              "cannot rename '" + from + "': name already exists");
        *it = to;
        ++res.tensors_renamed;
    }
    res.relaid_out = !in.canonical_layout();
    GgufOutput w(out_path, split, in.files(), in.is_split() ? 3 : in.version());  // llama-gguf-split writes v3
    w.set_kvs(kvs);
    for (size_t i = 0; i < names.size(); ++i) w.add_tensor(names[i], in.tensors()[i].type, in.tensors()[i].shape());
    // Files without tensors keep whatever padding they had (gguf-py writes none; ggml's writer pads).
    w.set_pad_empty(in.is_split() || in.file_size() != in.header_size());
    w.plan();
    res.paths = w.paths();
    res.sizes = w.sizes();
    if (dry_run) return res;
    for (size_t i = 0; i < names.size(); ++i)
        if (w.writes(i)) w.write_tensor_data(in.tensor_data(i));
    w.finish();
    res.written = w.written_paths();
    return res;
}

}  // namespace oiw
