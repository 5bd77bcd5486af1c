#include "inspect/digest.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <numeric>
#include <thread>

#include "libformat/io/hash.h"

namespace oiw::inspect {

std::string_view hash_name(HashAlgo a) { return a == HashAlgo::Sha256 ? "sha256" : "xxh3"; }

std::optional<HashAlgo> hash_from_name(std::string_view name) {
    if (name == "xxh3") return HashAlgo::Xxh3;
    if (name == "sha256") return HashAlgo::Sha256;
    return std::nullopt;
}

unsigned worker_count(size_t jobs) {
    const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
    return static_cast<unsigned>(std::max<size_t>(1, std::min<size_t>(hw, jobs)));
}

void parallel_for(size_t n, const std::vector<uint64_t>& weight, const std::function<void(size_t)>& fn) {
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return weight[a] > weight[b]; });
    std::atomic<size_t> next{0};
    std::exception_ptr error;
    std::mutex error_mu;
    auto work = [&] {
        for (;;) {
            const size_t k = next.fetch_add(1);
            if (k >= n) return;
            try {
                fn(order[k]);
            } catch (...) {
                std::lock_guard<std::mutex> lock(error_mu);
                if (!error) error = std::current_exception();
                next.store(n);
                return;
            }
        }
    };
    const unsigned threads = worker_count(n);
    std::vector<std::thread> pool;
    for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work);
    work();
    for (auto& t : pool) t.join();
    if (error) std::rethrow_exception(error);
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
