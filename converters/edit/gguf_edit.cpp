#include "converters/edit/gguf_edit.h"

#include <algorithm>

namespace oiw {

Metadata edited_kvs(const Model& in, const EditPlan& plan, EditResult* res) {
    Metadata kvs = in.metadata();
    for (const auto& key : plan.remove) {
        if (!kvs.erase(key)) throw FormatError(ErrorKind::Usage, in.path(), "key '" + key + "'", "cannot remove: no such key");
        ++res->kv_removed;
    }
    for (const auto& kv : plan.set) ++(kvs.set(kv) ? res->kv_set : res->kv_added);
    return kvs;
}

EditResult write_edited(const Model& in, const EditPlan& plan, const std::string& out_path) {
    EditResult res;
    Metadata kvs = edited_kvs(in, plan, &res);
    std::vector<std::string> names;
    for (const auto& t : in.tensors()) names.push_back(t.name);
    for (const auto& [from, to] : plan.renames) {
        auto it = std::find(names.begin(), names.end(), from);
        if (it == names.end()) throw FormatError(ErrorKind::Usage, in.path(), "tensor '" + from + "'", "cannot rename: no such tensor");
        if (std::find(names.begin(), names.end(), to) != names.end())
            throw FormatError(ErrorKind::DuplicateTensor, in.path(), "tensor '" + to + "'", "cannot rename '" + from + "': name already exists");
        *it = to;
        ++res.tensors_renamed;
    }
    res.relaid_out = !in.canonical_layout();
    GgufWriter w(out_path, in.files(), in.version());
    w.set_kvs(kvs);
    for (size_t i = 0; i < names.size(); ++i) w.add_tensor(names[i], in.tensors()[i].type, in.tensors()[i].shape());
    // Files without tensors keep whatever padding they had (gguf-py writes none).
    w.set_pad_empty(in.file_size() != in.header_size());
    for (size_t i = 0; i < names.size(); ++i) w.write_tensor_data(in.tensor_data(i));
    w.finish();
    return res;
}

}  // namespace oiw
