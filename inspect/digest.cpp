#include "inspect/digest.h"

#include <algorithm>
#include <numeric>

#include "converters/repack/oiw4_convert.h"
#include "libformat/io/hash.h"
#include "libformat/oiw4/oiw4.h"
#include "libformat/parallel.h"
#include "libformat/types.h"

namespace oiw::inspect {

std::string_view hash_name(HashAlgo a) { return a == HashAlgo::Sha256 ? "sha256" : "xxh3"; }

std::optional<HashAlgo> hash_from_name(std::string_view name) {
    if (name == "xxh3") return HashAlgo::Xxh3;
    if (name == "sha256") return HashAlgo::Sha256;
    return std::nullopt;
}

std::vector<std::string> tensor_digests(const Model& f, HashAlgo algo, unsigned threads) {
    const auto& infos = f.tensors();
    std::vector<std::string> out(infos.size());
    std::vector<uint64_t> weight(infos.size());
    for (size_t i = 0; i < infos.size(); ++i) weight[i] = infos[i].n_bytes;
    parallel_for(
        infos.size(), weight,
        [&](size_t i) {
            const auto data = f.tensor_data(i);
            out[i] = algo == HashAlgo::Sha256 ? sha256_hex(data) : xxh3_hex(data);
        },
        threads);
    return out;
}

TensorBytes tensor_bytes(const Model& m) {
    TensorBytes t;
    for (const auto& info : m.tensors()) {
        t.names.push_back(info.name);
        t.sizes.push_back(info.n_bytes);
    }
    t.read = [&m](size_t i, const ByteSink& sink) { sink(m.tensor_data(i)); };
    return t;
}

TensorBytes tensor_bytes(const Oiw4File& f) {
    if (f.compressed())
        throw FormatError(ErrorKind::Unsupported, f.path(), "",
                          "file has zstd-compressed planes: run oiw4-convert --decompress first");
    TensorBytes t;
    for (const auto& ot : f.tensors()) {
        t.names.push_back(ot.info.name);
        // oiw4 planes stand for Q4_0 (also when requantized from another type): its size.
        t.sizes.push_back(ot.encoding == Oiw4Encoding::Oiw4
                              ? row_size(GgmlType::Q4_0, ot.info.ne[0]) * static_cast<uint64_t>(ot.info.n_rows())
                              : ot.info.n_bytes);
    }
    t.read = [&f](size_t i, const ByteSink& sink) { oiw4_tensor_gguf_bytes(f, i, sink); };
    return t;
}

namespace {

// The UUIDv5 namespace of llama-gguf-hash: uuid5(NAMESPACE_URL, 'en.wikipedia.org/wiki/Llama.cpp').
constexpr uint8_t kLlamaCppNamespace[16] = {0xef, 0x00, 0x12, 0x06, 0xda, 0xdc, 0x5f, 0x6d,
                                            0xa1, 0x5f, 0x33, 0x59, 0xe5, 0x77, 0xd4, 0xe5};

// A digest fed the bytes of tensors as llama-gguf-hash feeds its algorithm: SHA-1 with a 32-bit
// length per call, so only the first (size mod 2^32) bytes of a tensor count.
class TensorFeed {
public:
    explicit TensorFeed(DigestAlgo a) : algo_(a), d_(a) {}
    void feed(const TensorBytes& src, size_t i) {
        uint64_t left = algo_ == DigestAlgo::Sha1 ? src.sizes[i] & 0xffffffffu : src.sizes[i];
        src.read(i, [&](std::span<const uint8_t> b) {
            const auto n = static_cast<size_t>(std::min<uint64_t>(left, b.size()));
            d_.update(b.first(n));
            left -= n;
        });
    }
    Digest& digest() { return d_; }

private:
    DigestAlgo algo_;
    Digest d_;
};

constexpr DigestAlgo kAlgos[3] = {DigestAlgo::Xxh64, DigestAlgo::Sha1, DigestAlgo::Sha256};

}  // namespace

GgufHashes gguf_hashes(const TensorBytes& src, const GgufHashSelection& sel, unsigned threads) {
    const size_t n = src.sizes.size();
    const bool on[3] = {sel.xxh64, sel.sha1, sel.sha256};
    GgufHashes out;
    if (sel.per_tensor) out.tensors.resize(n);
    std::string* model[4] = {&out.xxh64, &out.sha1, &out.sha256, &out.uuid};

    // Tasks: the whole-model streams first (the longest; slowest algorithm first), then the
    // tensors, largest first. Stream k < 3 is kAlgos[k]; k == 3 is the UUID's SHA-1.
    std::vector<int> streams;
    for (int k : {2, 1, 3, 0})
        if (k == 3 ? sel.uuid : on[k]) streams.push_back(k);
    std::vector<size_t> order;
    if (sel.per_tensor && (on[0] || on[1] || on[2])) {
        order.resize(n);
        std::iota(order.begin(), order.end(), size_t{0});
        std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return src.sizes[a] > src.sizes[b]; });
    }
    const auto run_stream = [&](int k) {
        TensorFeed f(k == 3 ? DigestAlgo::Sha1 : kAlgos[k]);
        if (k == 3) f.digest().update(kLlamaCppNamespace);
        for (size_t i = 0; i < n; ++i) f.feed(src, i);
        const auto md = f.digest().finish();
        *model[k] = k == 3 ? uuid_v5_text(md) : to_hex(md);
    };
    const auto run_tensor = [&](size_t i) {
        for (int k = 0; k < 3; ++k) {
            if (!on[k]) continue;
            TensorFeed f(kAlgos[k]);
            f.feed(src, i);
            out.tensors[i][static_cast<size_t>(k)] = to_hex(f.digest().finish());
        }
    };
    const size_t n_tasks = streams.size() + order.size();
    ThreadPool pool(thread_count(threads, n_tasks));
    pool.for_each(n_tasks, [&](size_t t) {
        if (t < streams.size())
            run_stream(streams[t]);
        else
            run_tensor(order[t - streams.size()]);
    });
    return out;
}

}  // namespace oiw::inspect
