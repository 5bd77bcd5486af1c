// Digest primitives (libformat/io/hash.h) against published vectors and Python's uuid module, and
// llama-gguf-hash's rules that the vendored goldens cannot reach: its 32-bit SHA-1 length on a
// tensor of 4 GiB or more, and its manifest parsing.
#include <gtest/gtest.h>

#include <cstring>

#include "inspect/digest.h"
#include "inspect/gguf_hash.h"
#include "libformat/io/hash.h"

namespace oiw {
namespace {

std::span<const uint8_t> bytes(std::string_view s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

TEST(Digest, PublishedVectors) {
    EXPECT_EQ(digest_hex(DigestAlgo::Sha1, bytes("abc")), "a9993e364706816aba3e25717850c26c9cd0d89d");
    EXPECT_EQ(digest_hex(DigestAlgo::Sha256, bytes("abc")),
              "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_EQ(digest_hex(DigestAlgo::Xxh64, bytes("")), "ef46db3751d8e999");
    EXPECT_EQ(digest_hex(DigestAlgo::Xxh64, bytes("abc")), "44bc2cf5ad770999");
}

TEST(Digest, PiecesEqualOneShot) {
    const std::string text(100000, 'x');
    for (auto a : {DigestAlgo::Xxh64, DigestAlgo::Sha1, DigestAlgo::Sha256}) {
        Digest d(a);
        for (size_t i = 0; i < text.size(); i += 777) d.update(bytes(std::string_view(text).substr(i, 777)));
        EXPECT_EQ(to_hex(d.finish()), digest_hex(a, bytes(text)));
    }
}

// uuid.uuid5(uuid.NAMESPACE_URL, 'en.wikipedia.org/wiki/Llama.cpp') is llama.cpp's namespace.
TEST(Digest, UuidV5AsPythonMakesIt) {
    const uint8_t url_ns[16] = {0x6b, 0xa7, 0xb8, 0x11, 0x9d, 0xad, 0x11, 0xd1,
                                0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8};
    Digest d(DigestAlgo::Sha1);
    d.update(url_ns);
    d.update(bytes("en.wikipedia.org/wiki/Llama.cpp"));
    EXPECT_EQ(uuid_v5_text(d.finish()), "ef001206-dadc-5f6d-a15f-3359e577d4e5");
    // uuid.uuid5(uuid.UUID('ef001206-...'), 'abc'): what gguf_hashes gives a model whose data is "abc".
    inspect::TensorBytes src{{"t"}, {3}, [](size_t, const inspect::ByteSink& sink) { sink(bytes("abc")); }};
    inspect::GgufHashSelection sel;
    sel.uuid = true;
    EXPECT_EQ(inspect::gguf_hashes(src, sel, 1).uuid, "9f2200fc-45e8-5a39-9535-c3ea5c0e0cef");
}

// A tensor of 4 GiB + 3 zero bytes: llama-gguf-hash's SHA-1 (uint32_t length) sees 3 bytes; the
// bytes are produced but not hashed, so this costs no hashing time.
TEST(GgufHash, Sha1SeesSizeModulo4GiB) {
    static const std::vector<uint8_t> zeros(1 << 20);
    const uint64_t size = (uint64_t{1} << 32) + 3;
    inspect::TensorBytes src{
        {"big"}, {size}, [&](size_t, const inspect::ByteSink& sink) {
            for (uint64_t off = 0; off < size; off += zeros.size())
                sink(std::span(zeros).first(static_cast<size_t>(std::min<uint64_t>(zeros.size(), size - off))));
        }};
    inspect::GgufHashSelection sel;
    sel.sha1 = true;
    const auto h = inspect::gguf_hashes(src, sel, 2);
    EXPECT_EQ(h.tensors.at(0)[1], "29e2dcfbb16f63bb0254df7585a15bb6fb5e927d");  // sha1 of 3 zero bytes
    EXPECT_EQ(h.sha1, "29e2dcfbb16f63bb0254df7585a15bb6fb5e927d");
}

TEST(GgufHash, ManifestFieldsAndFirstEntryWins) {
    const auto m =
        inspect::parse_hash_manifest("sha1\r\n  xxh64\tAA\tf:t  extra\nxxh64 BB f:t\nsha256 onlytwo\nuuid\v1\fx\n");
    EXPECT_TRUE(m.sha1 && m.xxh64 && m.sha256 && m.uuid);
    EXPECT_EQ(m.entries.size(), 2u);
    EXPECT_EQ(m.entries.at({"xxh64", "f:t"}), "AA");
    EXPECT_EQ(m.entries.at({"uuid", "x"}), "1");
    EXPECT_FALSE(inspect::parse_hash_manifest("md5 a b\n\nxxh64x 1 2").any_known());
}

}  // namespace
}  // namespace oiw
