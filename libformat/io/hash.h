// Digests of tensor bytes: SHA-256 (hand-written, FIPS 180-4) and XXH3-64 (libxxhash).
#pragma once
#include <cstdint>
#include <span>
#include <string>

namespace oiw {

// Incremental SHA-256.
class Sha256 {
public:
    Sha256();
    void update(std::span<const uint8_t> data);
    // Final digest as 64 lower-case hex characters; the object must not be reused after.
    std::string hex();

private:
    uint32_t h_[8];
    uint8_t block_[64];
    size_t used_ = 0;
    uint64_t total_ = 0;
    void compress(const uint8_t* p);
};

// One-shot SHA-256 in lower-case hex.
std::string sha256_hex(std::span<const uint8_t> data);
// One-shot XXH3-64 in 16 lower-case hex characters.
std::string xxh3_hex(std::span<const uint8_t> data);

}  // namespace oiw
