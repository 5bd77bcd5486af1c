// Per-tensor digests of data bytes, computed on all hardware threads.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "libformat/model.h"

namespace oiw::inspect {

enum class HashAlgo { Xxh3, Sha256 };
std::string_view hash_name(HashAlgo a);  // "xxh3" / "sha256"
std::optional<HashAlgo> hash_from_name(std::string_view name);

// Number of worker threads used for data passes: hardware threads (at least 1), capped by `jobs`.
unsigned worker_count(size_t jobs);

// Runs fn(i) for i in [0, n) on worker_count(n) threads, largest `weight(i)` first. The first
// exception thrown by any fn is rethrown after all workers stop.
void parallel_for(size_t n, const std::vector<uint64_t>& weight, const std::function<void(size_t)>& fn);

// Lower-case hex digest of each tensor's data bytes (xxh3: 16 hex chars; sha256: 64), in tensor order.
std::vector<std::string> tensor_digests(const Model& f, HashAlgo algo);

}  // namespace oiw::inspect
