#include "inspect/digest.h"

#include "libformat/io/hash.h"
#include "libformat/parallel.h"

namespace oiw::inspect {

std::string_view hash_name(HashAlgo a) { return a == HashAlgo::Sha256 ? "sha256" : "xxh3"; }

std::optional<HashAlgo> hash_from_name(std::string_view name) {
    if (name == "xxh3") return HashAlgo::Xxh3;
    if (name == "sha256") return HashAlgo::Sha256;
    return std::nullopt;
}

std::vector<std::string> tensor_digests(const Model& f, HashAlgo algo) {
    const auto& infos = f.tensors();
    std::vector<std::string> out(infos.size());
    std::vector<uint64_t> weight(infos.size());
    for (size_t i = 0; i < infos.size(); ++i) weight[i] = infos[i].n_bytes;
    parallel_for(infos.size(), weight, [&](size_t i) {
        const auto data = f.tensor_data(i);
        out[i] = algo == HashAlgo::Sha256 ? sha256_hex(data) : xxh3_hex(data);
    });
    return out;
}

}  // namespace oiw::inspect
