// Digests of tensor bytes: SHA-1 and SHA-256 (OpenSSL libcrypto, EVP), XXH3-64 and XXH64 (libxxhash).
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace oiw {

// One-shot SHA-256 in 64 lower-case hex characters.
std::string sha256_hex(std::span<const uint8_t> data);
// One-shot XXH3-64 in 16 lower-case hex characters.
std::string xxh3_hex(std::span<const uint8_t> data);

enum class DigestAlgo { Xxh64, Sha1, Sha256 };

// An incremental digest (XXH64 with seed 0, SHA-1 or SHA-256) fed in pieces of any size.
class Digest {
public:
    explicit Digest(DigestAlgo algo);
    ~Digest();
    Digest(Digest&&) noexcept;
    Digest& operator=(Digest&&) noexcept;
    // Adds `data` to the digest.
    void update(std::span<const uint8_t> data);
    // The digest bytes (XXH64: its 8 bytes big-endian, as XXH64_canonicalFromHash). Once only.
    std::vector<uint8_t> finish();

private:
    DigestAlgo algo_;
    void* state_ = nullptr;  // XXH64_state_t* or EVP_MD_CTX*
};

// Lower-case hex of `bytes`.
std::string to_hex(std::span<const uint8_t> bytes);
// One-shot digest of `data` in lower-case hex (XXH64: 16 characters, SHA-1: 40, SHA-256: 64).
std::string digest_hex(DigestAlgo algo, std::span<const uint8_t> data);
// RFC 9562 UUIDv5 text (8-4-4-4-12 lower-case hex) from the SHA-1 of namespace + name: its first
// 16 bytes with the version (5) and variant (0b10) bits set.
std::string uuid_v5_text(std::span<const uint8_t> sha1);

}  // namespace oiw
