#include "converters/synth/synth_imatrix.h"

#include <algorithm>
#include <cstring>
#include <span>
#include <vector>

#include "libformat/gguf/gguf.h"

namespace oiw {

size_t write_synth_imatrix(const std::string& path, const Model& model, uint64_t seed) {
    constexpr float kCount = 512.0f;  // chunk_count x chunk_size tokens seen by every matrix
    struct Entry {
        std::string name;
        int64_t ne0, n_mat;
    };
    std::vector<Entry> entries;
    for (const auto& t : model.tensors()) {
        if (t.name.rfind("blk.", 0) != 0 || t.n_dims < 2) continue;
        entries.push_back({t.name, t.ne[0], t.ne[2] * t.ne[3]});
    }
    if (entries.empty())
        throw FormatError(ErrorKind::Usage, model.path(), "", "no blk.* matrices to write an importance matrix for");
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.name < b.name; });

    GgufWriter w(path, model.files());
    w.add_kv({"general.type", GgufValue::make_string("imatrix")});
    w.add_kv({"imatrix.datasets", GgufValue::make_string_array({"synthetic"})});
    w.add_kv({"imatrix.chunk_count", GgufValue::make_scalar<uint32_t>(GgufType::U32, 1)});
    w.add_kv({"imatrix.chunk_size", GgufValue::make_scalar<uint32_t>(GgufType::U32, 512)});
    for (const auto& e : entries) {
        // ggml_n_dims: trailing dimensions of 1 are not stored (as llama-imatrix writes them).
        const int64_t sum_shape[] = {e.ne0, e.n_mat}, count_shape[] = {1, e.n_mat};
        w.add_tensor(e.name + ".in_sum2", GgmlType::F32, std::span(sum_shape, e.n_mat > 1 ? 2 : 1));
        w.add_tensor(e.name + ".counts", GgmlType::F32, std::span(count_shape, e.n_mat > 1 ? 2 : 1));
    }
    // xorshift64*: values in [0.05, 4.05), mean squared activations of a plausible spread.
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 0x5EEDull;
    auto uniform = [&s] {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        return static_cast<float>((s * 0x2545F4914F6CDD1Dull) >> 40) * (1.0f / 16777216.0f);
    };
    auto put = [&w](const std::vector<float>& v) {
        std::vector<uint8_t> bytes(v.size() * sizeof(float));
        std::memcpy(bytes.data(), v.data(), bytes.size());
        w.write_tensor_data(bytes);
    };
    for (const auto& e : entries) {
        std::vector<float> sum(static_cast<size_t>(e.ne0 * e.n_mat));
        for (auto& x : sum) {
            const float u = uniform();
            x = kCount * (0.05f + 4.0f * u * u);
        }
        put(sum);
        put(std::vector<float>(static_cast<size_t>(e.n_mat), kCount));
    }
    w.finish();
    return entries.size();
}

}  // namespace oiw
