// Digests of tensor bytes: SHA-256 (OpenSSL libcrypto, EVP) and XXH3-64 (libxxhash).
#pragma once
#include <cstdint>
#include <span>
#include <string>

namespace oiw {

// One-shot SHA-256 in 64 lower-case hex characters.
std::string sha256_hex(std::span<const uint8_t> data);
// One-shot XXH3-64 in 16 lower-case hex characters.
std::string xxh3_hex(std::span<const uint8_t> data);

}  // namespace oiw
