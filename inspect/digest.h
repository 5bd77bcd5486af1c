// Per-tensor digests of data bytes, computed on a ThreadPool (libformat/parallel.h).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "libformat/model.h"

namespace oiw::inspect {

enum class HashAlgo { Xxh3, Sha256 };
std::string_view hash_name(HashAlgo a);  // "xxh3" / "sha256"
std::optional<HashAlgo> hash_from_name(std::string_view name);

// Lower-case hex digest of each tensor's data bytes (xxh3: 16 hex chars; sha256: 64), in tensor order.
std::vector<std::string> tensor_digests(const Model& f, HashAlgo algo);

}  // namespace oiw::inspect
