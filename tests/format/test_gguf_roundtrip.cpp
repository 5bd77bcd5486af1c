// Byte-exact round trip of every fixture through GgufFile + GgufWriter.
#include <gtest/gtest.h>

#include "libformat/gguf/gguf.h"
#include "libformat/io/hash.h"
#include "tests/support/helpers.h"

namespace oiw {
namespace {

// Re-writes `in` unchanged to `out_path` through the streaming writer.
void copy_file(const GgufFile& in, const std::string& out_path) {
    GgufWriter w(out_path, {in.path()}, in.version());
    w.set_kvs(in.metadata());
    for (const auto& t : in.tensors()) w.add_tensor(t.name, t.type, t.shape());
    w.set_pad_empty(in.file_size() != in.header_size());
    for (size_t i = 0; i < in.tensors().size(); ++i) w.write_tensor_data(in.tensor_data(i));
    w.finish();
}

TEST(GgufRoundTrip, EveryFixtureIsByteIdentical) {
    auto files = test::fixture_files();
    ASSERT_GE(files.size(), 8u);  // the vendored pack, plus ../shared/fixtures when present
    for (const auto& f : files) {
        SCOPED_TRACE(f);
        GgufFile in = GgufFile::open(f);
        EXPECT_TRUE(in.canonical_layout());
        std::string out = (test::temp_dir() / "copy.gguf").string();
        copy_file(in, out);
        auto a = test::read_file(f), b = test::read_file(out);
        ASSERT_EQ(a.size(), b.size());
        EXPECT_TRUE(a == b);
    }
}

TEST(Sha256, KnownVectors) {
    std::string abc = "abc";
    EXPECT_EQ(sha256_hex({reinterpret_cast<const uint8_t*>(abc.data()), abc.size()}),
              "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_EQ(sha256_hex({}), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    std::string m(1000, 'a');
    EXPECT_EQ(sha256_hex({reinterpret_cast<const uint8_t*>(m.data()), m.size()}),
              "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3");
}

}  // namespace
}  // namespace oiw
