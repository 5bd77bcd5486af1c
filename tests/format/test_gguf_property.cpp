// Property tests: random metadata (all 13 value types, empty arrays; arrays of arrays are refused, unicode) and random
// tensors of every live ggml type, written with GgufWriter and read back with GgufFile.
// Expected files are built independently (ggml layout) and compared byte for byte.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "libformat/gguf/gguf.h"
#include "libformat/types.h"
#include "tests/support/helpers.h"

namespace oiw {
namespace {

namespace fs = std::filesystem;

// splitmix64: fully deterministic across standard libraries (std distributions are not).
struct Rng {
    uint64_t s;
    explicit Rng(uint64_t seed) : s(seed) {}
    uint64_t next() {
        uint64_t z = (s += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    uint64_t below(uint64_t n) { return n ? next() % n : 0; }
    bool chance(uint64_t one_in) { return below(one_in) == 0; }
};

// Scratch directory for the many small files: on /dev/shm when it is a writable directory
// (the writer fsyncs every file; on a disk that costs ~10 ms each), else the test temp dir.
class ScratchDir {
public:
    ScratchDir() {
        std::error_code ec;
        if (fs::is_directory("/dev/shm", ec)) {
            std::string tmpl = "/dev/shm/oiw-property-XXXXXX";
            if (::mkdtemp(tmpl.data())) {
                path_ = tmpl;
                owned_ = true;
                return;
            }
        }
        path_ = test::temp_dir();
    }
    ~ScratchDir() {
        std::error_code ec;
        if (owned_) fs::remove_all(path_, ec);
    }
    const fs::path& path() const { return path_; }

private:
    fs::path path_;
    bool owned_ = false;
};

// Strings: empty, ASCII, multi-byte UTF-8 (2/3/4-byte sequences), control bytes, embedded NUL.
std::string rand_string(Rng& r, size_t max_pieces = 12) {
    static const char* const kPieces[] = {"a",  "Z", "0",    " ",  ".",  "_",  "é",  "ß",    "Ж",    "漢",
                                          "字", "😀", "🦙", "\n", "\t", "\"", "\\", "\x01", "<NUL>"};
    std::string s;
    if (r.chance(6)) return s;  // empty string
    size_t n = 1 + r.below(max_pieces);
    for (size_t i = 0; i < n; ++i) {
        size_t k = r.below(std::size(kPieces));
        if (k == std::size(kPieces) - 1)
            s.push_back('\0');  // embedded NUL
        else
            s += kPieces[k];
    }
    return s;
}

std::vector<uint8_t> rand_bytes(Rng& r, size_t n) {
    std::vector<uint8_t> b(n);
    for (auto& x : b) x = static_cast<uint8_t>(r.next());
    return b;
}

GgufValue rand_scalar(Rng& r, GgufType t) {
    if (t == GgufType::STRING) return GgufValue::make_string(rand_string(r));
    if (t == GgufType::BOOL) return GgufValue::make_bool(r.below(2));
    return GgufValue::from_bytes(t, rand_bytes(r, gguf_type_size(t)));  // NaN/inf floats included: compared as bytes
}

// An array value of `n` random elements, shaped exactly as the reader produces it.
GgufValue rand_array_of(Rng& r, GgufType et, uint64_t n) {
    if (et == GgufType::STRING) {
        std::vector<std::string> v;
        for (uint64_t i = 0; i < n; ++i) v.push_back(rand_string(r, 6));
        return GgufValue::make_string_array(std::move(v));
    }
    if (et == GgufType::BOOL) {
        std::vector<uint8_t> b;
        for (uint64_t i = 0; i < n; ++i) b.push_back(static_cast<uint8_t>(r.below(2)));
        return GgufValue::make_array(et, std::move(b), n);
    }
    return GgufValue::make_array(et, rand_bytes(r, n * gguf_type_size(et)), n);
}

// Arrays of arrays are refused (as ggml refuses them): element type ARRAY is drawn as STRING.
GgufValue rand_array(Rng& r) {
    uint32_t et = static_cast<uint32_t>(r.below(kGgufTypeCount));
    if (et == static_cast<uint32_t>(GgufType::ARRAY)) et = static_cast<uint32_t>(GgufType::STRING);
    const uint64_t n = r.chance(5) ? 0 : r.below(24);
    return rand_array_of(r, static_cast<GgufType>(et), n);
}

GgufValue rand_value(Rng& r) {
    auto t = static_cast<GgufType>(r.below(kGgufTypeCount));
    if (t == GgufType::ARRAY) return rand_array(r);
    return rand_scalar(r, t);
}

std::vector<GgufKV> rand_kvs(Rng& r, size_t n) {
    std::vector<GgufKV> kvs;
    for (size_t i = 0; i < n; ++i) {
        // Index prefix keeps keys unique; the suffix may be unicode.
        std::string key = "p" + std::to_string(i) + "." + rand_string(r, 4);
        kvs.push_back({std::move(key), rand_value(r)});
    }
    return kvs;
}

std::vector<uint32_t> live_types() {
    std::vector<uint32_t> v;
    for (uint32_t id = 0; id < kGgmlTypeCount; ++id)
        if (type_id_valid(id)) v.push_back(id);
    return v;
}

struct TensorSpec {
    std::string name;
    GgmlType type;
    std::vector<int64_t> shape;
    std::vector<uint8_t> data;
};

std::string rand_tensor_name(Rng& r, size_t i) {
    std::string name = "t" + std::to_string(i) + "." + rand_string(r, 5);
    if (r.chance(8)) name.resize(63, 'x');  // longest name ggml allows
    if (name.size() > 63) name.resize(63);  // may cut a UTF-8 sequence: names are bytes
    return name;
}

TensorSpec rand_tensor(Rng& r, size_t i, GgmlType type) {
    const TypeTraits& tt = traits(type);
    TensorSpec t;
    t.name = rand_tensor_name(r, i);
    t.type = type;
    const size_t n_dims = 1 + r.below(4);
    const uint64_t max_blocks = tt.block_size >= 256 ? 2 : (tt.block_size > 1 ? 4 : 40);
    t.shape.push_back(static_cast<int64_t>(tt.block_size * (1 + r.below(max_blocks))));
    for (size_t d = 1; d < n_dims; ++d) t.shape.push_back(static_cast<int64_t>(1 + r.below(3)));
    int64_t rows = 1;
    for (size_t d = 1; d < n_dims; ++d) rows *= t.shape[d];
    t.data = rand_bytes(r, row_size(type, t.shape[0]) * static_cast<uint64_t>(rows));
    return t;
}

// The file ggml's writer would produce, built without GgufWriter.
std::vector<uint8_t> expected_image(uint32_t version, const std::vector<GgufKV>& kvs, const std::vector<TensorSpec>& ts,
                                    uint64_t alignment, bool pad_empty, std::vector<GgufTensorInfo>* infos_out) {
    std::vector<GgufTensorInfo> infos;
    uint64_t off = 0;
    for (const auto& t : ts) {
        GgufTensorInfo ti = make_tensor_info(t.name, t.type, t.shape);
        ti.offset = off;
        off = align_up(off + ti.n_bytes, alignment);
        infos.push_back(ti);
    }
    std::vector<uint8_t> img = serialize_gguf_header(version, kvs, infos);
    if (!ts.empty() || pad_empty) img.resize(align_up(img.size(), alignment), 0);
    const size_t data_start = img.size();
    img.resize(data_start + off, 0);
    for (size_t i = 0; i < ts.size(); ++i)
        std::copy(ts[i].data.begin(), ts[i].data.end(),
                  img.begin() + static_cast<std::ptrdiff_t>(data_start + infos[i].offset));
    if (infos_out) *infos_out = std::move(infos);
    return img;
}

enum class Feed { PerTensor, AllAtOnce, RandomPieces };

void write_with(GgufWriter& w, const std::vector<TensorSpec>& ts, Feed feed, Rng& r) {
    if (feed == Feed::PerTensor) {
        for (const auto& t : ts) w.write_tensor_data(t.data);
        return;
    }
    std::vector<uint8_t> all;
    for (const auto& t : ts) all.insert(all.end(), t.data.begin(), t.data.end());
    if (feed == Feed::AllAtOnce) {
        w.write_tensor_data(all);
        return;
    }
    // Random pieces crossing tensor boundaries, including empty pieces.
    size_t pos = 0;
    while (pos < all.size()) {
        size_t k = r.chance(4) ? 0 : 1 + r.below(r.chance(3) ? 7 : 300);
        k = std::min(k, all.size() - pos);
        w.write_tensor_data(std::span<const uint8_t>(all).subspan(pos, k));
        pos += k;
    }
    w.write_tensor_data({});
}

void expect_file_matches(const GgufFile& f, uint32_t version, uint64_t alignment, const std::vector<GgufKV>& kvs,
                         const std::vector<GgufTensorInfo>& infos, const std::vector<TensorSpec>& ts) {
    EXPECT_EQ(f.version(), version);
    EXPECT_EQ(f.alignment(), alignment);
    ASSERT_EQ(f.metadata().size(), kvs.size());
    for (size_t i = 0; i < kvs.size(); ++i) {
        EXPECT_EQ(f.metadata()[i].key, kvs[i].key) << "kv #" << i;
        EXPECT_TRUE(f.metadata()[i].value == kvs[i].value)
            << "kv '" << kvs[i].key << "': read " << f.metadata()[i].value.to_string() << " wrote "
            << kvs[i].value.to_string();
    }
    ASSERT_EQ(f.tensors().size(), infos.size());
    for (size_t i = 0; i < infos.size(); ++i) {
        const auto& a = f.tensors()[i];
        const auto& b = infos[i];
        EXPECT_EQ(a.name, b.name);
        EXPECT_EQ(a.n_dims, b.n_dims);
        EXPECT_EQ(a.ne, b.ne);
        EXPECT_EQ(a.type, b.type);
        EXPECT_EQ(a.offset, b.offset);
        EXPECT_EQ(a.n_bytes, b.n_bytes);
        EXPECT_EQ(f.find_tensor(b.name), static_cast<int64_t>(i));
        auto d = f.tensor_data(i);
        ASSERT_EQ(d.size(), ts[i].data.size());
        EXPECT_TRUE(std::equal(d.begin(), d.end(), ts[i].data.begin())) << "tensor '" << b.name << "' data differs";
    }
    EXPECT_TRUE(f.canonical_layout());
}

// What the random cases covered (asserted at the end, so a generator change cannot silently
// stop exercising a value type).
struct Tally {
    std::set<uint32_t> scalar_types, elem_types, tensor_types, n_dims;
    size_t empty_arrays = 0, empty_strings = 0, non_ascii_strings = 0;
    void value(const GgufValue& v) {
        if (v.type() == GgufType::STRING) str(v.strings().at(0));
        if (!v.is_array()) {
            scalar_types.insert(static_cast<uint32_t>(v.type()));
            return;
        }
        elem_types.insert(static_cast<uint32_t>(v.elem_type()));
        if (v.count() == 0) ++empty_arrays;
        for (const auto& s : v.strings()) str(s);
    }
    void str(const std::string& s) {
        if (s.empty()) ++empty_strings;
        if (std::any_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x80; }))
            ++non_ascii_strings;
    }
};

struct CaseParams {
    uint32_t version;
    uint64_t alignment;  // 0: no general.alignment key (default 32)
    size_t n_kv, n_tensors;
    bool pad_empty;
    Feed feed;
};

// One full case: random content, write, compare against the independent image, read back.
void run_case(uint64_t seed, const CaseParams& p, const fs::path& dir, Tally& tally) {
    Rng r(seed);
    std::vector<GgufKV> kvs = rand_kvs(r, p.n_kv);
    uint64_t alignment = kDefaultAlignment;
    if (p.alignment) {
        alignment = p.alignment;
        kvs.insert(kvs.begin() + static_cast<std::ptrdiff_t>(r.below(kvs.size() + 1)),
                   GgufKV{"general.alignment",
                          GgufValue::make_scalar<uint32_t>(GgufType::U32, static_cast<uint32_t>(p.alignment))});
    }
    static const std::vector<uint32_t> types = live_types();
    std::vector<TensorSpec> ts;
    for (size_t i = 0; i < p.n_tensors; ++i)
        ts.push_back(rand_tensor(r, i, static_cast<GgmlType>(types[r.below(types.size())])));

    for (const auto& kv : kvs) tally.value(kv.value);
    for (const auto& t : ts) {
        tally.tensor_types.insert(static_cast<uint32_t>(t.type));
        tally.n_dims.insert(static_cast<uint32_t>(t.shape.size()));
    }
    std::vector<GgufTensorInfo> infos;
    const auto expect = expected_image(p.version, kvs, ts, alignment, p.pad_empty, &infos);

    const std::string path = (dir / ("case-" + std::to_string(seed) + ".gguf")).string();
    {
        GgufWriter w(path, {}, p.version);
        w.set_kvs(kvs);
        w.set_pad_empty(p.pad_empty);
        for (const auto& t : ts) w.add_tensor(t.name, t.type, t.shape);
        ASSERT_EQ(w.tensors().size(), infos.size());
        for (size_t i = 0; i < infos.size(); ++i) {
            EXPECT_EQ(w.tensors()[i].offset, infos[i].offset);
            EXPECT_EQ(w.tensors()[i].n_bytes, infos[i].n_bytes);
        }
        EXPECT_EQ(w.planned_size(), expect.size());
        write_with(w, ts, p.feed, r);
        w.finish();
    }
    const auto got = test::read_file(path);
    ASSERT_EQ(got.size(), expect.size());
    EXPECT_TRUE(got == expect) << "writer output differs from the ggml layout";

    GgufFile f = GgufFile::open(path);
    expect_file_matches(f, p.version, alignment, kvs, infos, ts);
    EXPECT_EQ(f.file_size(), expect.size());
    // Header re-serialization is byte-identical.
    auto h = serialize_gguf_header(f.version(), f.metadata(), f.tensors());
    ASSERT_EQ(h.size(), f.header_size());
    EXPECT_TRUE(std::equal(h.begin(), h.end(), got.begin()));
    // The in-memory parser agrees with the mmap reader.
    GgufFile g = GgufFile::parse_copy(got, "mem.gguf");
    expect_file_matches(g, p.version, alignment, kvs, infos, ts);
    fs::remove(path);
}

TEST(GgufProperty, RandomFilesRoundTrip) {
    ScratchDir scratch;
    const fs::path& dir = scratch.path();
    const uint64_t alignments[] = {0, 0, 1, 2, 8, 32, 64, 256, 4096};
    Tally tally;
    for (uint64_t seed = 1; seed <= 320; ++seed) {
        Rng r(seed * 7919);
        CaseParams p;
        p.version = r.chance(2) ? 2 : 3;
        p.alignment = alignments[r.below(std::size(alignments))];
        p.n_kv = r.below(14);
        p.n_tensors = r.chance(8) ? 0 : r.below(9);
        p.pad_empty = !r.chance(3);
        p.feed = static_cast<Feed>(r.below(3));
        SCOPED_TRACE(::testing::Message() << "seed " << seed << " v" << p.version << " align " << p.alignment << " kvs "
                                          << p.n_kv << " tensors " << p.n_tensors);
        run_case(seed, p, dir, tally);
        if (HasFatalFailure() || HasNonfatalFailure()) return;  // one failing seed is enough to debug
    }
    EXPECT_EQ(tally.scalar_types.size(), kGgufTypeCount - 1);  // every type but ARRAY as a scalar
    EXPECT_EQ(tally.elem_types.size(), kGgufTypeCount - 1);    // arrays of every type but ARRAY (refused, as by ggml)
    EXPECT_EQ(tally.tensor_types.size(), live_types().size());
    EXPECT_EQ(tally.n_dims, (std::set<uint32_t>{1, 2, 3, 4}));
    EXPECT_GT(tally.empty_arrays, 10u);
    EXPECT_GT(tally.empty_strings, 10u);
    EXPECT_GT(tally.non_ascii_strings, 10u);
}

// Every live type, in both versions, with several alignments: nothing left to chance.
TEST(GgufProperty, EveryLiveTypeEveryAlignment) {
    ScratchDir scratch;
    const fs::path& dir = scratch.path();
    const auto types = live_types();
    ASSERT_GE(types.size(), 34u);  // ggml 0.11.1's 34 live types, plus any added since
    uint64_t seed = 100000;
    for (uint32_t version : {2u, 3u}) {
        for (uint64_t alignment : {0ull, 1ull, 64ull, 4096ull}) {
            Rng r(++seed);
            std::vector<TensorSpec> ts;
            for (size_t i = 0; i < types.size(); ++i) ts.push_back(rand_tensor(r, i, static_cast<GgmlType>(types[i])));
            std::vector<GgufKV> kvs = rand_kvs(r, 13);
            const uint64_t a = alignment ? alignment : kDefaultAlignment;
            if (alignment)
                kvs.push_back({"general.alignment",
                               GgufValue::make_scalar<uint32_t>(GgufType::U32, static_cast<uint32_t>(alignment))});
            std::vector<GgufTensorInfo> infos;
            const auto expect = expected_image(version, kvs, ts, a, true, &infos);
            const std::string path = (dir / ("all-" + std::to_string(seed) + ".gguf")).string();
            {
                GgufWriter w(path, {}, version);
                w.set_kvs(kvs);
                for (const auto& t : ts) w.add_tensor(t.name, t.type, t.shape);
                write_with(w, ts, Feed::RandomPieces, r);
                w.finish();
            }
            SCOPED_TRACE(::testing::Message() << "v" << version << " alignment " << a);
            EXPECT_TRUE(test::read_file(path) == expect);
            GgufFile f = GgufFile::open(path);
            expect_file_matches(f, version, a, kvs, infos, ts);
            for (size_t i = 0; i < infos.size(); ++i) EXPECT_EQ(f.tensors()[i].offset % a, 0u);
        }
    }
}

// One KV of every value type, and arrays of every element type (including empty ones).
TEST(GgufProperty, EveryValueTypeAndArrayElementType) {
    Rng r(4242);
    std::vector<GgufKV> kvs;
    for (uint32_t t = 0; t < kGgufTypeCount; ++t) {
        auto gt = static_cast<GgufType>(t);
        if (gt == GgufType::ARRAY) continue;
        kvs.push_back({"scalar." + std::string(gguf_type_name(gt)), rand_scalar(r, gt)});
    }
    kvs.push_back({"scalar.empty-str", GgufValue::make_string("")});
    kvs.push_back({"scalar.unicode-str", GgufValue::make_string("naïve 漢字 🦙 \xF0\x9F\x98\x80")});
    for (uint32_t et = 0; et < kGgufTypeCount; ++et) {
        for (uint64_t n : {0ull, 1ull, 5ull}) {
            if (et == static_cast<uint32_t>(GgufType::ARRAY)) continue;  // arrays of arrays: refused, see below
            GgufValue v = rand_array_of(r, static_cast<GgufType>(et), n);
            kvs.push_back(
                {"arr." + std::string(gguf_type_name(static_cast<GgufType>(et))) + "." + std::to_string(n), v});
        }
    }
    for (uint32_t version : {2u, 3u}) {
        auto img = serialize_gguf_header(version, kvs, {});
        GgufFile f = GgufFile::parse_copy(img, "values.gguf");
        ASSERT_EQ(f.metadata().size(), kvs.size());
        for (size_t i = 0; i < kvs.size(); ++i) {
            EXPECT_EQ(f.metadata()[i].key, kvs[i].key);
            EXPECT_TRUE(f.metadata()[i].value == kvs[i].value) << kvs[i].key;
        }
        EXPECT_EQ(f.header_size(), img.size());
        EXPECT_TRUE(f.tensors().empty());
        // Through the writer and the file system too (no padding, as gguf-py vocab files).
        const std::string path = (test::temp_dir() / "values.gguf").string();
        GgufWriter w(path, {}, version);
        w.set_kvs(kvs);
        w.set_pad_empty(false);
        w.finish();
        EXPECT_TRUE(test::read_file(path) == img);
        GgufFile g = GgufFile::open(path);
        EXPECT_TRUE(g.metadata() == kvs);
        EXPECT_TRUE(g.canonical_layout());
    }
}

// Many in-memory header round trips (no file system): KV-heavy shapes.
TEST(GgufProperty, RandomHeadersParseBack) {
    for (uint64_t seed = 1; seed <= 400; ++seed) {
        Rng r(seed * 104729);
        auto kvs = rand_kvs(r, r.below(40));
        std::vector<GgufTensorInfo> infos;
        uint64_t off = 0;
        static const auto types = live_types();
        const size_t nt = r.below(12);
        for (size_t i = 0; i < nt; ++i) {
            TensorSpec t = rand_tensor(r, i, static_cast<GgmlType>(types[r.below(types.size())]));
            GgufTensorInfo ti = make_tensor_info(t.name, t.type, t.shape);
            ti.offset = off;
            off = align_up(off + ti.n_bytes, kDefaultAlignment);
            infos.push_back(ti);
        }
        const uint32_t version = r.chance(2) ? 2 : 3;
        auto img = serialize_gguf_header(version, kvs, infos);
        const size_t hs = img.size();
        img.resize(align_up(hs, kDefaultAlignment) + off, 0xAB);
        SCOPED_TRACE(::testing::Message() << "seed " << seed);
        GgufFile f = GgufFile::parse_copy(img, "hdr.gguf");
        EXPECT_EQ(f.header_size(), hs);
        EXPECT_TRUE(f.metadata() == kvs);
        ASSERT_EQ(f.tensors().size(), infos.size());
        for (size_t i = 0; i < infos.size(); ++i) {
            EXPECT_EQ(f.tensors()[i].name, infos[i].name);
            EXPECT_EQ(f.tensors()[i].ne, infos[i].ne);
            EXPECT_EQ(f.tensors()[i].n_bytes, infos[i].n_bytes);
            EXPECT_EQ(f.tensors()[i].offset, infos[i].offset);
        }
        if (HasFailure()) return;
    }
}

// Streaming: a tensor larger than the writer's 1 MiB buffer, fed in odd pieces, gives the same
// bytes as one call per tensor.
TEST(GgufProperty, StreamingInPiecesIsByteIdentical) {
    Rng r(77);
    std::vector<TensorSpec> ts;
    TensorSpec big{"big.weight", GgmlType::F32, {1024, 768}, rand_bytes(r, 1024 * 768 * 4)};  // 3 MiB
    ts.push_back(big);
    ts.push_back(rand_tensor(r, 1, GgmlType::Q4_K));
    ts.push_back(TensorSpec{"mid.weight", GgmlType::Q8_0, {4096, 300}, rand_bytes(r, 4096 / 32 * 34 * 300)});
    ts.push_back(rand_tensor(r, 3, GgmlType::F16));
    auto kvs = rand_kvs(r, 5);
    kvs.push_back({"general.alignment", GgufValue::make_scalar<uint32_t>(GgufType::U32, 64)});
    std::vector<GgufTensorInfo> infos;
    const auto expect = expected_image(3, kvs, ts, 64, true, &infos);
    ScratchDir scratch;
    const fs::path& dir = scratch.path();
    const size_t pieces[] = {1, 4097, (1 << 20) - 3, (1 << 20), (1 << 20) + 5, 3 << 20};
    for (size_t piece : pieces) {
        SCOPED_TRACE(::testing::Message() << "piece " << piece);
        const std::string path = (dir / ("s" + std::to_string(piece) + ".gguf")).string();
        GgufWriter w(path);
        w.set_kvs(kvs);
        for (const auto& t : ts) w.add_tensor(t.name, t.type, t.shape);
        std::vector<uint8_t> all;
        for (const auto& t : ts) all.insert(all.end(), t.data.begin(), t.data.end());
        if (piece == 1) {
            // Byte-at-a-time only for the small tensors (after the big one).
            w.write_tensor_data(std::span<const uint8_t>(all).first(big.data.size()));
            for (size_t i = big.data.size(); i < all.size(); ++i)
                w.write_tensor_data(std::span<const uint8_t>(all).subspan(i, 1));
        } else {
            for (size_t pos = 0; pos < all.size(); pos += piece)
                w.write_tensor_data(std::span<const uint8_t>(all).subspan(pos, std::min(piece, all.size() - pos)));
        }
        w.finish();
        const auto got = test::read_file(path);
        ASSERT_EQ(got.size(), expect.size());
        EXPECT_TRUE(got == expect);
        GgufFile f = GgufFile::open(path);
        expect_file_matches(f, 3, 64, kvs, infos, ts);
        fs::remove(path);
    }
}

}  // namespace
}  // namespace oiw
