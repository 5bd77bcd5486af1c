// Sparse outputs (AtomicFile::skip, GgufWriter/GgufOutput::write_tensor_zeros, gguf-synth --sparse):
// holes that read back as zeros, files byte-identical to the same model written with zero data,
// split sparse models that open as one, and gguf-synth --shard K/N writing the bytes of the full run.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>

#include "converters/synth/synth.h"
#include "libformat/gguf/split.h"
#include "libformat/io/atomic_file.h"
#include "libformat/model.h"
#include "tests/support/helpers.h"

namespace oiw {
namespace {

// Bytes the filesystem allocated for `path`.
uint64_t allocated(const std::string& path) {
    struct stat st {};
    EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
    return static_cast<uint64_t>(st.st_blocks) * 512;
}

bool all_zero(std::span<const uint8_t> b) {
    return std::all_of(b.begin(), b.end(), [](uint8_t x) { return x == 0; });
}

// 2 layers, 4096-token vocabulary: 8.9 M parameters, 17 MiB of tensor data.
SynthOptions small_model(bool sparse) {
    SynthOptions o;
    o.n_embd = 512;
    o.n_ff = 1024;
    o.n_vocab = 4096;
    o.sparse = sparse;
    return o;
}

TEST(SparseOutput, SkipLeavesAHoleOfZerosAndCommitKeepsTheSize) {
    const std::string path = (test::temp_dir() / "holes.bin").string();
    constexpr uint64_t kHole = 8u << 20;
    AtomicFile f(path);
    f.write("ab", 2);
    f.skip(kHole);
    f.write("c", 1);
    f.skip(kHole);  // a hole at the end: only ftruncate gives the file its size
    EXPECT_EQ(f.size(), 3 + 2 * kHole);
    f.commit();
    const auto b = test::read_file(path);
    ASSERT_EQ(b.size(), 3 + 2 * kHole);
    EXPECT_EQ(b[0], 'a');
    EXPECT_EQ(b[1], 'b');
    EXPECT_EQ(b[2 + kHole], 'c');
    EXPECT_TRUE(all_zero(std::span(b).subspan(2, kHole)));
    EXPECT_TRUE(all_zero(std::span(b).subspan(3 + kHole)));
    EXPECT_LT(allocated(path), kHole / 4) << "the skipped bytes were written, not left as holes";
}

TEST(SparseOutput, SparseModelIsByteIdenticalToTheModelWrittenWithZeros) {
    const auto dir = test::temp_dir();
    const std::string sparse = (dir / "sparse.gguf").string(), dense = (dir / "dense.gguf").string();
    const uint64_t params = write_synth_model(sparse, small_model(true));
    EXPECT_EQ(params, 8915456u);
    // The same keys and tensors written with real zero bytes through GgufWriter.
    const Model m = open_model(sparse);
    GgufWriter w(dense);
    w.set_kvs(m.metadata());
    for (const auto& t : m.tensors()) w.add_tensor(t.name, t.type, t.shape());
    for (size_t i = 0; i < m.tensors().size(); ++i) {
        ASSERT_TRUE(all_zero(m.tensor_data(i))) << m.tensors()[i].name;
        w.write_tensor_data(std::vector<uint8_t>(m.tensor_data(i).size(), 0));
    }
    w.finish();
    const auto a = test::read_file(sparse), b = test::read_file(dense);
    EXPECT_EQ(a.size(), m.data_offset() + 2 * (2 * 512 * 4096 + 2 * (2 * 512 * 512 + 2 * 512 * 256 + 3 * 512 * 1024)) +
                            4 * 5 * 512);
    EXPECT_TRUE(a == b) << "sparse and zero-filled files differ";
    EXPECT_LT(allocated(sparse), 1u << 20) << "tensor data was written, not left as holes";
    // The same options without --sparse give the generated values: only the data differs.
    write_synth_model(dense, small_model(false));
    const auto c = test::read_file(dense);
    ASSERT_EQ(c.size(), a.size());
    EXPECT_TRUE(std::equal(a.begin(), a.begin() + static_cast<ptrdiff_t>(m.data_offset()), c.begin()));
    EXPECT_FALSE(all_zero(std::span(c).subspan(m.data_offset())));
}

TEST(SparseOutput, SparseSplitModelFromTheToolOpensAsOneModel) {
    const auto dir = test::temp_dir();
    const std::string out = (dir / "big.gguf").string();
    // 4 layers of a 4096-wide model: 2.1 GB of F16 tensor data described, ~40 KB on disk.
    std::string log;
    ASSERT_EQ(
        test::run(test::tool_path("gguf-synth") + " " + out +
                      " --n-embd 4096 --n-ff 11008 --n-layer 4 --n-vocab 32000 --n-head 32 --n-head-kv 32 --sparse"
                      " --split-max-tensors 10",
                  &log, true),
        0)
        << log;
    const std::string first = (dir / "big-00001-of-00004.gguf").string();
    const Model m = open_model(first);
    ASSERT_EQ(m.shards().size(), 4u);
    EXPECT_EQ(m.tensors().size(), 39u);
    uint64_t data = 0, disk = 0;
    for (size_t i = 0; i < m.tensors().size(); ++i) data += m.tensors()[i].n_bytes;
    for (const auto& f : m.files()) disk += allocated(f);
    EXPECT_EQ(data, 2ull * (2 * 4096 * 32000 + 4 * (4 * 4096 * 4096 + 3 * 4096 * 11008)) + 4 * 4096 * 9);
    EXPECT_LT(disk, 4u << 20) << "tensor data was written, not left as holes";
    const size_t last = m.tensors().size() - 1;
    EXPECT_EQ(m.tensors()[last].name, "output.weight");
    EXPECT_TRUE(all_zero(m.tensor_data(last)));
}

TEST(SparseOutput, SynthShardWritesTheBytesOfTheFullRun) {
    const auto dir = test::temp_dir();
    SplitOptions split;
    split.max_tensors = 5;
    write_synth_model((dir / "all.gguf").string(), small_model(false), split);
    split.shard = 2;
    split.shards = 5;
    write_synth_model((dir / "one.gguf").string(), small_model(false), split);
    EXPECT_FALSE(std::filesystem::exists(dir / "one-00001-of-00005.gguf"));
    EXPECT_FALSE(std::filesystem::exists(dir / "one-00003-of-00005.gguf"));
    EXPECT_TRUE(test::read_file((dir / "one-00002-of-00005.gguf").string()) ==
                test::read_file((dir / "all-00002-of-00005.gguf").string()));
}

}  // namespace
}  // namespace oiw
