#include "libformat/io/hash.h"

#include <new>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>
#include <openssl/evp.h>
#include <xxhash.h>

namespace oiw {

std::string sha256_hex(std::span<const uint8_t> data) { return digest_hex(DigestAlgo::Sha256, data); }

std::string xxh3_hex(std::span<const uint8_t> data) {
    return fmt::format("{:016x}", XXH3_64bits(data.data(), data.size()));
}

namespace {

const EVP_MD* evp_md(DigestAlgo algo) { return algo == DigestAlgo::Sha1 ? EVP_sha1() : EVP_sha256(); }

// OpenSSL fails only on allocation failure or a missing provider: not a property of the input.
[[noreturn]] void openssl_failed(const char* what) {
    throw std::runtime_error(std::string("OpenSSL ") + what + " failed");
}

}  // namespace

Digest::Digest(DigestAlgo algo) : algo_(algo) {
    if (algo == DigestAlgo::Xxh64) {
        auto* s = XXH64_createState();
        if (!s || XXH64_reset(s, 0) == XXH_ERROR) throw std::bad_alloc();
        state_ = s;
        return;
    }
    auto* ctx = EVP_MD_CTX_new();
    if (!ctx) throw std::bad_alloc();
    state_ = ctx;
    if (!EVP_DigestInit_ex(ctx, evp_md(algo), nullptr)) openssl_failed("EVP_DigestInit_ex");
}

Digest::~Digest() {
    if (!state_) return;
    if (algo_ == DigestAlgo::Xxh64)
        XXH64_freeState(static_cast<XXH64_state_t*>(state_));
    else
        EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(state_));
}

Digest::Digest(Digest&& o) noexcept : algo_(o.algo_), state_(o.state_) { o.state_ = nullptr; }

Digest& Digest::operator=(Digest&& o) noexcept {
    std::swap(algo_, o.algo_);
    std::swap(state_, o.state_);
    return *this;
}

void Digest::update(std::span<const uint8_t> data) {
    if (algo_ == DigestAlgo::Xxh64) {
        XXH64_update(static_cast<XXH64_state_t*>(state_), data.data(), data.size());
    } else if (!EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(state_), data.data(), data.size())) {
        openssl_failed("EVP_DigestUpdate");
    }
}

std::vector<uint8_t> Digest::finish() {
    if (algo_ == DigestAlgo::Xxh64) {
        XXH64_canonical_t c;
        XXH64_canonicalFromHash(&c, XXH64_digest(static_cast<XXH64_state_t*>(state_)));
        return {c.digest, c.digest + sizeof c.digest};
    }
    std::vector<uint8_t> md(EVP_MAX_MD_SIZE);
    unsigned int len = 0;
    if (!EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(state_), md.data(), &len)) openssl_failed("EVP_DigestFinal_ex");
    md.resize(len);
    return md;
}

std::string to_hex(std::span<const uint8_t> bytes) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string o(2 * bytes.size(), '0');
    for (size_t i = 0; i < bytes.size(); ++i) {
        o[2 * i] = kHex[bytes[i] >> 4];
        o[2 * i + 1] = kHex[bytes[i] & 15];
    }
    return o;
}

std::string digest_hex(DigestAlgo algo, std::span<const uint8_t> data) {
    if (algo == DigestAlgo::Xxh64) return fmt::format("{:016x}", XXH64(data.data(), data.size(), 0));
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (!EVP_Digest(data.data(), data.size(), md, &len, evp_md(algo), nullptr)) openssl_failed("EVP_Digest");
    return to_hex({md, len});
}

std::string uuid_v5_text(std::span<const uint8_t> sha1) {
    if (sha1.size() < 16) throw std::invalid_argument("uuid_v5_text: digest shorter than 16 bytes");
    uint8_t u[16];
    for (int i = 0; i < 16; ++i) u[i] = sha1[i];
    u[6] = static_cast<uint8_t>((u[6] & 0x0f) | 0x50);  // version 5
    u[8] = static_cast<uint8_t>((u[8] & 0x3f) | 0x80);  // variant 0b10
    const std::string h = to_hex(u);
    return h.substr(0, 8) + "-" + h.substr(8, 4) + "-" + h.substr(12, 4) + "-" + h.substr(16, 4) + "-" + h.substr(20);
}

}  // namespace oiw
