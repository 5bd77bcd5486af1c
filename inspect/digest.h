// Per-tensor digests of data bytes, computed on a ThreadPool (libformat/parallel.h), and the
// per-tensor + whole-model digests llama.cpp's llama-gguf-hash prints (inspect/gguf_hash.h).
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "libformat/model.h"

namespace oiw {
class Oiw4File;
}

namespace oiw::inspect {

enum class HashAlgo { Xxh3, Sha256 };
std::string_view hash_name(HashAlgo a);  // "xxh3" / "sha256"
std::optional<HashAlgo> hash_from_name(std::string_view name);

// Lower-case hex digest of each tensor's data bytes (xxh3: 16 hex chars; sha256: 64), in tensor order,
// on `threads` threads (0: all cores).
std::vector<std::string> tensor_digests(const Model& f, HashAlgo algo, unsigned threads = 0);

using ByteSink = std::function<void(std::span<const uint8_t>)>;

// The GGUF tensor bytes of a model, tensor by tensor in model order. read(i, sink) passes tensor
// i's bytes (sizes[i] of them) to sink in order, in one or more pieces; safe to call concurrently.
struct TensorBytes {
    std::vector<std::string> names;
    std::vector<uint64_t> sizes;
    std::function<void(size_t, const ByteSink&)> read;
};
// The tensors of a GGUF model (one file or a split model's shards), zero-copy.
TensorBytes tensor_bytes(const Model& m);
// The GGUF bytes an OIW4 file's tensors stand for (what oiw4-convert --to-gguf writes). Throws
// FormatError(Unsupported) naming the file for zstd-compressed planes.
TensorBytes tensor_bytes(const Oiw4File& f);

// Which of llama-gguf-hash's digests to compute.
struct GgufHashSelection {
    bool xxh64 = false, sha1 = false, sha256 = false, uuid = false;
    bool per_tensor = true;  // false: --no-layer (whole-model digests only)
};

// llama-gguf-hash's digests, lower-case hex ("" where not selected). Per tensor: XXH64 (seed 0),
// SHA-1, SHA-256 of its bytes. Whole model: the same over all tensors' bytes concatenated in model
// order, and the UUIDv5 of that stream in llama.cpp's namespace. SHA-1 (also under the UUID) sees
// only the first (size mod 2^32) bytes of each tensor, as llama-gguf-hash's 32-bit SHA-1 length does.
struct GgufHashes {
    std::vector<std::array<std::string, 3>> tensors;  // per tensor: xxh64, sha1, sha256
    std::string xxh64, sha1, sha256, uuid;            // whole model
};
// Computes `sel` over `src`: per-tensor digests in parallel across tensors, each whole-model
// digest as one sequential stream, all on thread_count(threads, tasks) workers.
GgufHashes gguf_hashes(const TensorBytes& src, const GgufHashSelection& sel, unsigned threads);

}  // namespace oiw::inspect
