#include "libformat/io/hash.h"

#include <stdexcept>

#include <fmt/format.h>
#include <openssl/evp.h>
#include <xxhash.h>

namespace oiw {

std::string sha256_hex(std::span<const uint8_t> data) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    // EVP_Digest only fails on allocation failure or a missing provider: not a property of the input.
    if (!EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr))
        throw std::runtime_error("OpenSSL EVP_Digest(SHA-256) failed");
    std::string o;
    o.reserve(2 * len);
    for (unsigned i = 0; i < len; ++i) o += fmt::format("{:02x}", md[i]);
    return o;
}

std::string xxh3_hex(std::span<const uint8_t> data) { return fmt::format("{:016x}", XXH3_64bits(data.data(), data.size())); }

}  // namespace oiw
