#include "inspect/diff.h"

#include <cstring>
#include <unordered_map>

#include <fmt/format.h>

#include "libformat/parallel.h"

namespace oiw::inspect {

Diff diff(const Model& a, const traffic::Analysis& aa, const Model& b, const traffic::Analysis& ab, bool compare_data) {
    Diff d;
    if (a.version() != b.version()) d.header.push_back(fmt::format("version {} -> {}", a.version(), b.version()));
    if (a.alignment() != b.alignment())
        d.header.push_back(fmt::format("alignment {} -> {}", a.alignment(), b.alignment()));

    std::unordered_map<std::string_view, size_t> kb;
    for (size_t i = 0; i < b.metadata().size(); ++i) kb.emplace(b.metadata()[i].key, i);
    std::vector<bool> b_kv_seen(b.metadata().size());
    for (size_t i = 0; i < a.metadata().size(); ++i) {
        auto it = kb.find(a.metadata()[i].key);
        if (it == kb.end()) {
            d.kv_removed.push_back(i);
            continue;
        }
        b_kv_seen[it->second] = true;
        if (!(a.metadata()[i].value == b.metadata()[it->second].value)) d.kv_changed.emplace_back(i, it->second);
    }
    for (size_t j = 0; j < b.metadata().size(); ++j)
        if (!b_kv_seen[j]) d.kv_added.push_back(j);

    std::unordered_map<std::string_view, size_t> tb;
    for (size_t i = 0; i < b.tensors().size(); ++i) tb.emplace(b.tensors()[i].name, i);
    std::vector<bool> b_t_seen(b.tensors().size());
    std::vector<std::pair<size_t, size_t>> common;
    for (size_t i = 0; i < a.tensors().size(); ++i) {
        auto it = tb.find(a.tensors()[i].name);
        if (it == tb.end()) {
            d.tensors_removed.push_back(i);
            continue;
        }
        const size_t j = it->second;
        b_t_seen[j] = true;
        common.emplace_back(i, j);
        const auto& x = a.tensors()[i];
        const auto& y = b.tensors()[j];
        TensorDelta td;
        td.a = i;
        td.b = j;
        td.type = x.type != y.type;
        td.shape = x.shape() != y.shape();
        td.bytes = x.n_bytes != y.n_bytes;
        td.bytes_per_token = aa.tensors[i].bytes_per_token != ab.tensors[j].bytes_per_token;
        if (td.any()) d.tensors_changed.push_back(td);
    }
    for (size_t j = 0; j < b.tensors().size(); ++j)
        if (!b_t_seen[j]) d.tensors_added.push_back(j);
    d.tensors_common = common.size();

    if (compare_data) {
        d.data_compared = true;
        std::vector<char> same(common.size(), 0);
        std::vector<uint64_t> weight(common.size());
        for (size_t k = 0; k < common.size(); ++k) weight[k] = a.tensors()[common[k].first].n_bytes;
        parallel_for(common.size(), weight, [&](size_t k) {
            const auto x = a.tensor_data(common[k].first);
            const auto y = b.tensor_data(common[k].second);
            same[k] = x.size() == y.size() && (x.empty() || std::memcmp(x.data(), y.data(), x.size()) == 0);
        });
        for (size_t k = 0; k < common.size(); ++k) (same[k] ? d.data_identical : d.data_different).push_back(common[k]);
    }
    return d;
}

}  // namespace oiw::inspect
