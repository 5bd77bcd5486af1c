#include "converters/edit/gguf_edit.h"

#include <algorithm>

namespace oiw {

std::vector<GgufKV> edited_kvs(const GgufFile& in, const EditPlan& plan, EditResult* res) {
    std::vector<GgufKV> kvs = in.kvs();
    for (const auto& key : plan.remove) {
        auto it = std::find_if(kvs.begin(), kvs.end(), [&](const GgufKV& kv) { return kv.key == key; });
        if (it == kvs.end()) throw FormatError(ErrorKind::Usage, in.path(), "key '" + key + "'", "cannot remove: no such key");
        kvs.erase(it);
        ++res->kv_removed;
    }
    for (const auto& kv : plan.set) {
        auto it = std::find_if(kvs.begin(), kvs.end(), [&](const GgufKV& k) { return k.key == kv.key; });
        if (it != kvs.end()) {
            it->value = kv.value;
            ++res->kv_set;
        } else {
            kvs.push_back(kv);
            ++res->kv_added;
        }
    }
    return kvs;
}

EditResult write_edited(const GgufFile& in, const EditPlan& plan, const std::string& out_path) {
    EditResult res;
    std::vector<GgufKV> kvs = edited_kvs(in, plan, &res);
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
    GgufWriter w(out_path, {in.path()}, in.version());
    w.set_kvs(std::move(kvs));
    for (size_t i = 0; i < names.size(); ++i) w.add_tensor(names[i], in.tensors()[i].type, in.tensors()[i].shape());
    // Files without tensors keep whatever padding they had (gguf-py writes none).
    w.set_pad_empty(in.file_size() != in.header_size());
    for (size_t i = 0; i < names.size(); ++i) w.write_tensor_data(in.tensor_data(i));
    w.finish();
    return res;
}

}  // namespace oiw
