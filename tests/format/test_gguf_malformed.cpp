// Malformed GGUF corpus: every file is derived from a small valid image built here, mutated in one
// field. Each case asserts the specific ErrorKind and that the message names the file and the
// offending key / tensor / value. Plus: truncation at every byte, deterministic random mutations.
//
// Set OIW_MALFORMED_CORPUS_DIR=<dir> to also write every case to <dir>/<case>.gguf (fuzz seeds).
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "libformat/gguf/gguf.h"
#include "libformat/types.h"
#include "tests/support/helpers.h"

namespace oiw {
namespace {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------------
// A raw GGUF image builder: writes any field value, valid or not.

struct Img {
    std::vector<uint8_t> b;
    Img& u8(uint8_t v) {
        b.push_back(v);
        return *this;
    }
    Img& u32(uint32_t v) { return raw(&v, 4); }
    Img& u64(uint64_t v) { return raw(&v, 8); }
    Img& i64(int64_t v) { return raw(&v, 8); }
    Img& str(std::string_view s) {
        u64(s.size());
        return raw(s.data(), s.size());
    }
    Img& raw(const void* p, size_t n) {
        auto* c = static_cast<const uint8_t*>(p);
        b.insert(b.end(), c, c + n);
        return *this;
    }
};

using Enc = std::function<void(Img&)>;  // writes one value: u32 type + payload

Enc v_u32(uint32_t v) {
    return [=](Img& i) { i.u32(4).u32(v); };
}
Enc v_u64(uint64_t v) {
    return [=](Img& i) { i.u32(10).u64(v); };
}
Enc v_i32(int32_t v) {
    return [=](Img& i) { i.u32(5).u32(static_cast<uint32_t>(v)); };
}
Enc v_str(std::string s) {
    return [=](Img& i) { i.u32(8).str(s); };
}
Enc v_arr_u32(std::vector<uint32_t> xs) {
    return [=](Img& i) {
        i.u32(9).u32(4).u64(xs.size());
        for (auto x : xs) i.u32(x);
    };
}
Enc v_arr_str(std::vector<std::string> xs) {
    return [=](Img& i) {
        i.u32(9).u32(8).u64(xs.size());
        for (const auto& x : xs) i.str(x);
    };
}
// `levels` arrays nested in each other, the innermost holding one u8.
Enc v_nested(int levels) {
    return [=](Img& i) {
        i.u32(9);
        for (int l = 1; l < levels; ++l) i.u32(9).u64(1);
        i.u32(0).u64(1).u8(7);
    };
}

struct KSpec {
    std::string key;
    Enc value;
};

struct TSpec {
    std::string name;
    std::vector<int64_t> ne;
    uint32_t type;
    uint64_t offset;
    std::optional<uint32_t> n_dims;  // override (ne.size() when unset)
};

struct Spec {
    uint32_t version = 3;
    std::optional<uint64_t> n_tensors, n_kv;  // overrides
    std::vector<KSpec> kvs;
    std::vector<TSpec> tensors;
    uint64_t pad_to = 32;       // header padding
    uint64_t data_bytes = 160;  // size of the data section
};

constexpr uint32_t kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ4_K = 12;

// The valid base: 4 KVs, 3 tensors (F32 [8,2] @0, Q4_0 [32,2] @64, F16 [4] @128), 160 data bytes.
Spec base_spec() {
    Spec s;
    s.kvs = {{"general.architecture", v_str("llama")},
             {"general.alignment", v_u32(32)},
             {"test.ints", v_arr_u32({1, 2, 3})},
             {"test.words", v_arr_str({"α", "beta", ""})}};
    s.tensors = {
        {"tok.weight", {8, 2}, kF32, 0, {}}, {"q.weight", {32, 2}, kQ4_0, 64, {}}, {"norm", {4}, kF16, 128, {}}};
    return s;
}

std::vector<uint8_t> build(const Spec& s, size_t* header_size = nullptr) {
    Img i;
    i.raw("GGUF", 4).u32(s.version).u64(s.n_tensors.value_or(s.tensors.size())).u64(s.n_kv.value_or(s.kvs.size()));
    for (const auto& kv : s.kvs) {
        i.str(kv.key);
        kv.value(i);
    }
    for (const auto& t : s.tensors) {
        i.str(t.name).u32(t.n_dims.value_or(static_cast<uint32_t>(t.ne.size())));
        for (auto d : t.ne) i.i64(d);
        i.u32(t.type).u64(t.offset);
    }
    if (header_size) *header_size = i.b.size();
    if (s.pad_to > 1) i.b.resize((i.b.size() + s.pad_to - 1) / s.pad_to * s.pad_to, 0);
    for (uint64_t k = 0; k < s.data_bytes; ++k) i.u8(static_cast<uint8_t>(k * 37 + 11));
    return i.b;
}

std::vector<uint8_t> with(const std::function<void(Spec&)>& mutate) {
    Spec s = base_spec();
    mutate(s);
    return build(s);
}

TSpec& tensor(Spec& s, const std::string& name) {
    for (auto& t : s.tensors)
        if (t.name == name) return t;
    throw std::logic_error("no tensor " + name);
}
KSpec& kv(Spec& s, const std::string& key) {
    for (auto& k : s.kvs)
        if (k.key == key) return k;
    throw std::logic_error("no key " + key);
}

void put_u32_at(std::vector<uint8_t>& b, size_t off, uint32_t v) { std::memcpy(b.data() + off, &v, 4); }
void put_u64_at(std::vector<uint8_t>& b, size_t off, uint64_t v) { std::memcpy(b.data() + off, &v, 8); }

// ---------------------------------------------------------------------------------------------
// The corpus.

struct Case {
    std::string name;
    std::vector<uint8_t> bytes;
    ErrorKind kind;
    std::vector<std::string> needles;  // must all appear in the message (besides the file name)
};

std::vector<Case> corpus() {
    std::vector<Case> c;
    auto add = [&](std::string name, std::vector<uint8_t> bytes, ErrorKind k, std::vector<std::string> needles) {
        c.push_back({std::move(name), std::move(bytes), k, std::move(needles)});
    };
    const auto base = build(base_spec());
    const uint64_t u64max = std::numeric_limits<uint64_t>::max();
    const int64_t i64min = std::numeric_limits<int64_t>::min();

    // Header.
    add("empty", {}, ErrorKind::Truncated, {"header", "0 bytes"});
    add("three-bytes", {'G', 'G', 'U'}, ErrorKind::Truncated, {"header", "3 bytes"});
    add("magic-only", {'G', 'G', 'U', 'F'}, ErrorKind::Truncated, {"header", "version"});
    {
        auto b = base;
        std::memcpy(b.data(), "GGUZ", 4);
        add("bad-magic-text", b, ErrorKind::BadMagic, {"header", "'GGUZ'"});
        std::memcpy(b.data(), "\x00\x01\xfeZ", 4);
        add("bad-magic-binary", b, ErrorKind::BadMagic, {"header", "\\x00\\x01\\xfeZ"});
        std::memcpy(b.data(), "GGML", 4);
        add("bad-magic-ggml", b, ErrorKind::BadMagic, {"'GGML'"});
    }
    for (uint32_t v : {0u, 1u, 4u, 0xFFFFFFFFu})
        add("version-" + std::to_string(v), with([&](Spec& s) { s.version = v; }), ErrorKind::BadVersion,
            {"header", "version " + std::to_string(v)});
    for (uint32_t v : {2u, 3u}) {
        // A byte-swapped (big-endian) file: version and counts reversed.
        auto b = with([&](Spec& s) { s.version = __builtin_bswap32(v); });
        put_u64_at(b, 8, __builtin_bswap64(3));
        put_u64_at(b, 16, __builtin_bswap64(4));
        add("big-endian-v" + std::to_string(v), b, ErrorKind::BigEndian,
            {"header", "big-endian", "reads as " + std::to_string(v)});
    }
    add("huge-tensor-count", with([](Spec& s) { s.n_tensors = 1ull << 63; }), ErrorKind::TooLarge,
        {"header", "tensor count 9223372036854775808"});
    add("huge-kv-count", with([&](Spec& s) { s.n_kv = u64max; }), ErrorKind::TooLarge,
        {"header", "key/value count 18446744073709551615"});
    add("tensor-count-plus-one", with([](Spec& s) {
            s.n_tensors = 4;
            s.pad_to = 1;
            s.data_bytes = 0;
        }),
        ErrorKind::Truncated, {"tensor #3", "tensor name"});

    // Keys and values.
    {
        auto b = base;
        put_u64_at(b, 24, 1ull << 62);  // length of the first key
        add("huge-key-length", b, ErrorKind::TooLarge, {"key #0", "4611686018427387904"});
    }
    add("huge-string-length", with([&](Spec& s) {
            kv(s, "general.architecture").value = [=](Img& i) { i.u32(8).u64(u64max).raw("llama", 5); };
        }),
        ErrorKind::TooLarge, {"key 'general.architecture'", "18446744073709551615"});
    add("huge-array-length",
        with([](Spec& s) { kv(s, "test.ints").value = [](Img& i) { i.u32(9).u32(4).u64(1ull << 61).u32(1); }; }),
        ErrorKind::TooLarge, {"key 'test.ints'", "2305843009213693952"});
    add("huge-string-array-length",
        with([](Spec& s) { kv(s, "test.words").value = [](Img& i) { i.u32(9).u32(8).u64(1ull << 40).str("a"); }; }),
        ErrorKind::TooLarge, {"key 'test.words'", "1099511627776"});
    add("huge-string-in-array", with([](Spec& s) {
            kv(s, "test.words").value = [](Img& i) { i.u32(9).u32(8).u64(2).str("a").u64(1ull << 50); };
        }),
        ErrorKind::TooLarge, {"key 'test.words'", "1125899906842624"});
    add("bad-value-type-13", with([](Spec& s) {
            s.kvs.push_back({"test.bad", [](Img& i) { i.u32(13).u32(0); }});
        }),
        ErrorKind::BadValueType, {"key 'test.bad'", "value type 13"});
    add("bad-value-type-max",
        with([](Spec& s) { kv(s, "general.architecture").value = [](Img& i) { i.u32(0xFFFFFFFF); }; }),
        ErrorKind::BadValueType, {"key 'general.architecture'", "4294967295"});
    add("bad-array-elem-type-13",
        with([](Spec& s) { kv(s, "test.ints").value = [](Img& i) { i.u32(9).u32(13).u64(0); }; }),
        ErrorKind::BadValueType, {"key 'test.ints'", "element type 13"});
    add("bad-array-elem-type-1000",
        with([](Spec& s) { kv(s, "test.ints").value = [](Img& i) { i.u32(9).u32(1000).u64(1).u32(0); }; }),
        ErrorKind::BadValueType, {"key 'test.ints'", "1000"});
    // Arrays of arrays are refused at any depth, as ggml refuses them.
    add("nested-arrays-2-deep", with([](Spec& s) {
            s.kvs.push_back({"test.deep", v_nested(2)});
        }),
        ErrorKind::BadValueType, {"key 'test.deep'", "arrays of arrays"});
    add("nested-arrays-9-deep", with([](Spec& s) {
            s.kvs.push_back({"test.deep", v_nested(9)});
        }),
        ErrorKind::BadValueType, {"key 'test.deep'", "arrays of arrays"});
    add("nested-arrays-5000-deep", with([](Spec& s) {
            s.kvs.push_back({"test.abyss", v_nested(5000)});
        }),
        ErrorKind::BadValueType, {"key 'test.abyss'", "arrays of arrays"});
    add("empty-key", with([](Spec& s) {
            s.kvs.insert(s.kvs.begin() + 1, {"", v_u32(1)});
        }),
        ErrorKind::BadKey, {"key #1", "empty key"});
    add("duplicate-key", with([](Spec& s) {
            s.kvs.push_back({"test.ints", v_u32(5)});
        }),
        ErrorKind::DuplicateKey, {"key 'test.ints'", "duplicate"});

    // Alignment.
    add("alignment-0", with([](Spec& s) { kv(s, "general.alignment").value = v_u32(0); }), ErrorKind::BadAlignment,
        {"key 'general.alignment'", "value 0"});
    add("alignment-3", with([](Spec& s) { kv(s, "general.alignment").value = v_u32(3); }), ErrorKind::BadAlignment,
        {"key 'general.alignment'", "value 3"});
    add("alignment-48", with([](Spec& s) { kv(s, "general.alignment").value = v_u32(48); }), ErrorKind::BadAlignment,
        {"key 'general.alignment'", "48"});
    add("alignment-128k", with([](Spec& s) { kv(s, "general.alignment").value = v_u32(1u << 17); }),
        ErrorKind::BadAlignment, {"key 'general.alignment'", "value 131072 exceeds the maximum of 65536"});
    add("alignment-u64", with([](Spec& s) { kv(s, "general.alignment").value = v_u64(32); }), ErrorKind::BadAlignment,
        {"key 'general.alignment'", "u64"});
    add("alignment-i32", with([](Spec& s) { kv(s, "general.alignment").value = v_i32(32); }), ErrorKind::BadAlignment,
        {"key 'general.alignment'", "i32"});
    add("alignment-str", with([](Spec& s) { kv(s, "general.alignment").value = v_str("32"); }), ErrorKind::BadAlignment,
        {"key 'general.alignment'", "str"});
    add("alignment-2^31", with([](Spec& s) { kv(s, "general.alignment").value = v_u32(1u << 31); }),
        ErrorKind::BadAlignment, {"key 'general.alignment'", "value 2147483648 exceeds the maximum of 65536"});

    // Tensor infos.
    add("duplicate-tensor", with([](Spec& s) { tensor(s, "norm").name = "q.weight"; }), ErrorKind::DuplicateTensor,
        {"tensor 'q.weight'", "duplicate"});
    add("tensor-name-64-bytes", with([](Spec& s) { tensor(s, "norm").name = std::string(64, 'n'); }),
        ErrorKind::TooLarge, {"tensor '" + std::string(64, 'n') + "'", "64 bytes"});
    {
        Spec s = base_spec();
        size_t hs = 0;
        auto b = build(s, &hs);
        // Tensor infos start after the KVs; the first one begins with its name length.
        Spec no_tensors = base_spec();
        no_tensors.tensors.clear();
        size_t kv_end = 0;
        build(no_tensors, &kv_end);
        const auto intact = b;
        put_u64_at(b, kv_end, u64max - 7);
        add("huge-tensor-name-length", b, ErrorKind::TooLarge, {"tensor #0", "18446744073709551608"});
        // Cut inside the last tensor info's type field.
        add("truncated-in-tensor-info",
            std::vector<uint8_t>(intact.begin(), intact.begin() + static_cast<std::ptrdiff_t>(hs - 10)),
            ErrorKind::Truncated, {"tensor 'norm'", "type needs 4 bytes"});
    }
    add("n-dims-5", with([](Spec& s) {
            auto& t = tensor(s, "norm");
            t.ne = {4, 1, 1, 1, 1};
        }),
        ErrorKind::BadDims, {"tensor 'norm'", "n_dims 5"});
    add("n-dims-max", with([](Spec& s) { tensor(s, "norm").n_dims = 0xFFFFFFFF; }), ErrorKind::BadDims,
        {"tensor 'norm'", "4294967295"});
    add("dim-zero", with([](Spec& s) {
            tensor(s, "tok.weight").ne = {8, 0};
        }),
        ErrorKind::BadDims, {"tensor 'tok.weight'", "dimension 1 is 0"});
    add("dim-negative", with([](Spec& s) {
            tensor(s, "tok.weight").ne = {-8, 2};
        }),
        ErrorKind::BadDims, {"tensor 'tok.weight'", "dimension 0 is -8"});
    add("dim-int64-min", with([&](Spec& s) { tensor(s, "norm").ne = {i64min}; }), ErrorKind::BadDims,
        {"tensor 'norm'", "-9223372036854775808"});
    add("dims-2^40-x-2^40", with([](Spec& s) {
            tensor(s, "tok.weight").ne = {1ll << 40, 1ll << 40};
        }),
        ErrorKind::BadDims, {"tensor 'tok.weight'", "overflows", "1099511627776"});
    add("dims-4x-2^16", with([](Spec& s) {
            tensor(s, "tok.weight").ne = {1 << 16, 1 << 16, 1 << 16, 1 << 16};
        }),
        ErrorKind::BadDims, {"tensor 'tok.weight'", "65536"});
    add("dims-3x-2^21", with([](Spec& s) {
            tensor(s, "tok.weight").ne = {1 << 21, 1 << 21, 1 << 21};
        }),
        ErrorKind::BadDims, {"tensor 'tok.weight'", "2097152"});
    for (uint32_t id : {42u, 1000u, 0xFFFFFFFFu})
        add("type-" + std::to_string(id), with([&](Spec& s) { tensor(s, "norm").type = id; }), ErrorKind::BadType,
            {"tensor 'norm'", "type id " + std::to_string(id)});
    for (uint32_t id : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u}) {
        // F32-like shape so only the type id is wrong.
        add("removed-type-" + std::to_string(id), with([&](Spec& s) { tensor(s, "q.weight").type = id; }),
            ErrorKind::RemovedType,
            {"tensor 'q.weight'", "type id " + std::to_string(id), std::string(type_traits(id)->name),
             "unsupported, removed from ggml"});
    }
    add("block-q4_0-ne0-33", with([](Spec& s) {
            tensor(s, "q.weight").ne = {33, 2};
        }),
        ErrorKind::BadBlock, {"tensor 'q.weight'", "33", "Q4_0", "32"});
    add("block-q4_k-ne0-128", with([](Spec& s) {
            auto& t = tensor(s, "q.weight");
            t.type = kQ4_K;
            t.ne = {128};
        }),
        ErrorKind::BadBlock, {"tensor 'q.weight'", "128", "Q4_K", "256"});

    // Offsets.
    add("misaligned-offset", with([](Spec& s) { tensor(s, "q.weight").offset = 72; }), ErrorKind::Misaligned,
        {"tensor 'q.weight'", "offset 72", "alignment 32"});
    add("misaligned-offset-align-64", with([](Spec& s) {
            kv(s, "general.alignment").value = v_u32(64);
            s.pad_to = 64;
            tensor(s, "norm").offset = 96;
        }),
        ErrorKind::Misaligned, {"tensor 'norm'", "offset 96", "64"});
    add("overlap", with([](Spec& s) { tensor(s, "q.weight").offset = 32; }), ErrorKind::Overlap,
        {"tensor 'q.weight'", "'tok.weight'", "offset 32"});
    add("overlap-same-offset", with([](Spec& s) { tensor(s, "norm").offset = 64; }), ErrorKind::Overlap,
        {"'norm'", "'q.weight'"});
    add("offset-out-of-file", with([](Spec& s) { tensor(s, "norm").offset = 4096; }), ErrorKind::OutOfBounds,
        {"tensor 'norm'", "4096"});
    add("offset-plus-size-overflows-u64", with([&](Spec& s) { tensor(s, "norm").offset = u64max - 31; }),
        ErrorKind::OutOfBounds, {"tensor 'norm'", "18446744073709551584"});
    add("size-past-end", with([](Spec& s) {
            tensor(s, "tok.weight").ne = {1 << 20, 1 << 12};
        }),
        ErrorKind::OutOfBounds, {"tensor 'tok.weight'", "17179869184"});
    add("data-truncated", with([](Spec& s) { s.data_bytes = 135; }), ErrorKind::OutOfBounds,
        {"tensor 'norm'", "[128, +8)"});
    add("no-data-section", with([](Spec& s) {
            s.data_bytes = 0;
            s.pad_to = 1;
        }),
        ErrorKind::OutOfBounds, {"tensor 'tok.weight'"});
    return c;
}

std::string file_name_for(const Case& k) { return "malformed/" + k.name + ".gguf"; }

// Runs `fn`, expecting a FormatError of `kind` whose message names `file` and every needle.
void expect_error(const std::function<void()>& fn, ErrorKind kind, const std::string& file,
                  const std::vector<std::string>& needles) {
    try {
        fn();
        ADD_FAILURE() << file << ": accepted, expected " << error_kind_name(kind);
    } catch (const FormatError& e) {
        const std::string msg = e.what();
        EXPECT_EQ(e.kind(), kind) << file << ": got " << error_kind_name(e.kind()) << ": " << msg;
        EXPECT_EQ(e.file(), file);
        EXPECT_EQ(msg.rfind(file + ": ", 0), 0u) << "message does not start with the file name: " << msg;
        for (const auto& n : needles)
            EXPECT_NE(msg.find(n), std::string::npos) << "'" << n << "' missing from: " << msg;
    } catch (const std::exception& e) {
        ADD_FAILURE() << file << ": non-FormatError exception: " << e.what();
    }
}

TEST(GgufMalformed, BaseImageIsValid) {
    size_t hs = 0;
    auto b = build(base_spec(), &hs);
    GgufFile f = GgufFile::parse_copy(b, "base.gguf");
    EXPECT_EQ(f.header_size(), hs);
    ASSERT_EQ(f.tensors().size(), 3u);
    EXPECT_EQ(f.metadata().size(), 4u);
    EXPECT_EQ(f.tensors()[1].n_bytes, 36u);
    EXPECT_EQ(f.alignment(), 32u);
    EXPECT_TRUE(f.canonical_layout());
    // A one-level array is accepted (v_nested(1) is a plain u8 array).
    EXPECT_NO_THROW(GgufFile::parse_copy(with([](Spec& s) {
                                             s.kvs.push_back({"test.flat", v_nested(1)});
                                         }),
                                         "flat.gguf"));
    // Alignment 1, 4096 and the maximum 65536 are valid.
    EXPECT_NO_THROW(GgufFile::parse_copy(with([](Spec& s) {
                                             kv(s, "general.alignment").value = v_u32(65536);
                                             s.pad_to = 65536;
                                             tensor(s, "q.weight").offset = 65536;
                                             tensor(s, "norm").offset = 131072;
                                             s.data_bytes = 131072 + 8;
                                         }),
                                         "a64k.gguf"));
    EXPECT_NO_THROW(GgufFile::parse_copy(with([](Spec& s) {
                                             kv(s, "general.alignment").value = v_u32(1);
                                             s.pad_to = 1;
                                         }),
                                         "a1.gguf"));
    EXPECT_NO_THROW(GgufFile::parse_copy(with([](Spec& s) {
                                             kv(s, "general.alignment").value = v_u32(4096);
                                             s.pad_to = 4096;
                                             tensor(s, "q.weight").offset = 4096;
                                             tensor(s, "norm").offset = 8192;
                                             s.data_bytes = 8192 + 8;
                                         }),
                                         "a4096.gguf"));
}

TEST(GgufMalformed, Corpus) {
    const auto cases = corpus();
    EXPECT_GE(cases.size(), 30u);
    RecordProperty("cases", static_cast<int>(cases.size()));
    const char* dump = std::getenv("OIW_MALFORMED_CORPUS_DIR");
    if (dump) fs::create_directories(dump);
    const fs::path dir = test::temp_dir();
    for (const auto& k : cases) {
        SCOPED_TRACE(k.name);
        // Exact-size copy, so ASan sees any read past the end.
        std::vector<uint8_t> copy(k.bytes);
        const std::string name = file_name_for(k);
        expect_error([&] { GgufFile::parse_copy(copy, name); }, k.kind, name, k.needles);
        // Through the mmap reader as well: the message names the real path.
        const std::string path = (dir / (k.name + ".gguf")).string();
        test::write_file(path, k.bytes);
        expect_error([&] { GgufFile::open(path); }, k.kind, path, k.needles);
        if (dump) test::write_file((fs::path(dump) / (k.name + ".gguf")).string(), k.bytes);
    }
}

// The kinds the corpus covers: one case at least for every reader-side ErrorKind.
TEST(GgufMalformed, CorpusCoversEveryReaderErrorKind) {
    std::set<ErrorKind> seen;
    for (const auto& k : corpus()) seen.insert(k.kind);
    for (ErrorKind k :
         {ErrorKind::Truncated, ErrorKind::BadMagic, ErrorKind::BigEndian, ErrorKind::BadVersion, ErrorKind::TooLarge,
          ErrorKind::BadValueType, ErrorKind::BadKey, ErrorKind::DuplicateKey, ErrorKind::DuplicateTensor,
          ErrorKind::BadDims, ErrorKind::BadType, ErrorKind::RemovedType, ErrorKind::BadBlock, ErrorKind::BadAlignment,
          ErrorKind::Misaligned, ErrorKind::OutOfBounds, ErrorKind::Overlap})
        EXPECT_TRUE(seen.count(k)) << error_kind_name(k);
}

// Truncating the base image at every byte: inside the header only Truncated / TooLarge (a length
// or count that no longer fits); past the header, OutOfBounds until the last tensor's bytes are in.
TEST(GgufMalformed, TruncationAtEveryByte) {
    size_t hs = 0;
    Spec s = base_spec();
    const auto b = build(s, &hs);
    const size_t data_offset = (hs + 31) / 32 * 32;
    const size_t last_end = data_offset + 128 + 8;  // 'norm' ends there
    for (size_t n = 0; n < b.size(); ++n) {
        std::vector<uint8_t> cut(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(n));
        const std::string name = "trunc-" + std::to_string(n) + ".gguf";
        try {
            GgufFile f = GgufFile::parse_copy(cut, name);
            EXPECT_GE(n, last_end) << name << " accepted";
        } catch (const FormatError& e) {
            EXPECT_LT(n, last_end) << e.what();
            if (n < hs)
                EXPECT_TRUE(e.kind() == ErrorKind::Truncated || e.kind() == ErrorKind::TooLarge)
                    << "cut at " << n << ": " << error_kind_name(e.kind()) << ": " << e.what();
            else
                EXPECT_EQ(e.kind(), ErrorKind::OutOfBounds) << "cut at " << n << ": " << e.what();
            EXPECT_EQ(std::string(e.what()).rfind(name + ": ", 0), 0u) << e.what();
        } catch (const std::exception& e) {
            ADD_FAILURE() << "cut at " << n << ": non-FormatError: " << e.what();
        }
    }
}

// Deterministic random mutations of the base image: only FormatError, never a crash or another
// exception; anything accepted satisfies the reader's invariants.
TEST(GgufMalformed, RandomMutationsNeverCrash) {
    const auto base = build(base_spec());
    uint64_t s = 12345;
    auto next = [&] {
        uint64_t z = (s += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    };
    const uint64_t interesting[] = {
        0,  1,   2,          3,          4,          5,          31,         32,         33,         42,    63,
        64, 255, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 1ull << 32, 1ull << 40, 1ull << 62, 1ull << 63, ~0ull, ~0ull - 31};
    size_t accepted = 0;
    for (int iter = 0; iter < 4000; ++iter) {
        auto b = base;
        const int n_mut = 1 + static_cast<int>(next() % 3);
        for (int m = 0; m < n_mut && !b.empty(); ++m) {
            const size_t at = next() % b.size();
            switch (next() % 4) {
                case 0: b[at] = static_cast<uint8_t>(next()); break;
                case 1:
                    if (at + 4 <= b.size())
                        put_u32_at(b, at, static_cast<uint32_t>(interesting[next() % std::size(interesting)]));
                    break;
                case 2:
                    if (at + 8 <= b.size()) put_u64_at(b, at, interesting[next() % std::size(interesting)]);
                    break;
                case 3: b.resize(at); break;
            }
        }
        const std::string name = "mut-" + std::to_string(iter) + ".gguf";
        try {
            GgufFile f = GgufFile::parse_copy(b, name);
            ++accepted;
            for (size_t i = 0; i < f.tensors().size(); ++i) {
                const auto& t = f.tensors()[i];
                EXPECT_EQ(t.offset % f.alignment(), 0u);
                EXPECT_LE(f.data_offset() + t.offset + t.n_bytes, b.size());
                EXPECT_EQ(f.tensor_data(i).size(), t.n_bytes);
            }
        } catch (const FormatError& e) {
            EXPECT_EQ(std::string(e.what()).rfind(name + ": ", 0), 0u) << e.what();
        } catch (const std::exception& e) {
            ADD_FAILURE() << name << ": non-FormatError: " << e.what();
        }
        if (HasFailure()) return;
    }
    EXPECT_GT(accepted, 0u);
}

// libformat bug (reported to the lead): row_size() wraps modulo 2^64, so an F32 tensor with
// ne0 = 2^62 + 1 has n_bytes 4 and is accepted with 2^62 elements but a 4-byte data view.
// Expected: rejected as BadDims ("byte size overflows"), like the existing rows * row_size check.
TEST(GgufMalformed, RowByteSizeOverflowIsRejected) {
    int idx = 0;
    for (auto [type, ne0] : {std::pair<uint32_t, int64_t>{kF32, (1ll << 62) + 1},
                             {kF32, 1ll << 62},
                             {26u /* I32 */, 1ll << 62},
                             {28u /* F64 */, (1ll << 61) + 1},
                             {27u /* I64 */, 1ll << 61}}) {
        auto b = with([&](Spec& s) {
            auto& t = tensor(s, "norm");
            t.type = type;
            t.ne = {ne0};
        });
        const std::string name = "row-overflow-" + std::to_string(idx++) + ".gguf";
        SCOPED_TRACE(name);
        expect_error([&] { GgufFile::parse_copy(b, name); }, ErrorKind::BadDims, name,
                     {"tensor 'norm'", std::to_string(ne0)});
    }
}

// libformat bug (reported to the lead): read_array() reserve()s the element count taken from the
// file before reading the elements. Arrays of arrays nested 8 deep, each claiming as many
// elements as the bytes left could hold (remaining / 12), make every level reserve
// ~remaining / 12 * sizeof(GgufValue): ~52x the file size in total (a 16 MiB file reserves
// ~880 MB before failing as Truncated; a 1 GiB one ~55 GB, i.e. std::bad_alloc, not
// FormatError). Expected: memory proportional to what was actually decoded (no reserve from
// untrusted counts, or a capped one), and a FormatError. Checked in a child process whose
// address space is limited to its current size + 512 MiB.
TEST(GgufMalformed, NestedArrayCountsDoNotReserveUnboundedMemory) {
#ifdef OIW_UNDER_SANITIZER
    GTEST_SKIP() << "RLIMIT_AS cannot be used under a sanitizer";
#else
    const size_t S = 16u << 20;
    Img i;
    i.raw("GGUF", 4).u32(3).u64(0).u64(1).str("k").u32(9);
    for (int l = 0; l < 7; ++l) i.u32(9).u64((S - i.b.size()) / 12 - 1);
    i.u32(0).u64(0);
    std::vector<uint8_t> b = std::move(i.b);
    b.resize(S, 0);  // the remaining arrays decode as empty u8 arrays until the file ends

    long pages = 0;
    {
        std::ifstream statm("/proc/self/statm");
        statm >> pages;
    }
    const rlim_t vm = static_cast<rlim_t>(pages) * static_cast<rlim_t>(::sysconf(_SC_PAGESIZE));
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        struct rlimit lim {
            vm + (512u << 20), vm + (512u << 20)
        };
        ::setrlimit(RLIMIT_AS, &lim);
        try {
            GgufFile::parse_copy(b, "nested.gguf");
            ::_exit(1);
        } catch (const FormatError&) {
            ::_exit(0);
        } catch (const std::bad_alloc&) {
            ::_exit(3);
        } catch (...) {
            ::_exit(4);
        }
    }
    int st = 0;
    ASSERT_EQ(::waitpid(pid, &st, 0), pid);
    ASSERT_TRUE(WIFEXITED(st)) << "child died with signal " << (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    EXPECT_NE(WEXITSTATUS(st), 1) << "accepted";
    EXPECT_NE(WEXITSTATUS(st), 3) << "a 16 MiB file exhausted 512 MiB of address space (std::bad_alloc)";
    EXPECT_EQ(WEXITSTATUS(st), 0);
#endif
}

}  // namespace
}  // namespace oiw
