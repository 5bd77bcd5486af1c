// libFuzzer target for the GGUF reader: GgufFile::parse_copy must either throw FormatError or hand
// out a file whose every view is inside the input and which re-serializes byte-identically.
//
// With OIW_FUZZ_EMIT_SEEDS=<dir> in the environment the binary writes a few small valid images
// to <dir> and exits (scripts/fuzz uses this to seed the corpus).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "libformat/gguf/gguf.h"
#include "libformat/types.h"

namespace {

using namespace oiw;

[[noreturn]] void fail(const char* what) {
    std::fprintf(stderr, "fuzz_gguf_reader: invariant violated: %s\n", what);
    std::abort();
}
#define CHECK(c)            \
    do {                    \
        if (!(c)) fail(#c); \
    } while (0)

volatile uint64_t g_sink;

void touch_value(const GgufValue& v) {
    uint64_t h = v.count() + static_cast<uint32_t>(v.type());
    (void)v.to_string(4);
    if (auto i = v.as_int()) h += static_cast<uint64_t>(*i);
    if (auto d = v.as_double()) h += static_cast<uint64_t>(*d != *d);
    if (auto s = v.as_string()) h += s->size();
    if (v.is_array()) {
        const size_t es = gguf_type_size(v.elem_type());
        if (v.elem_type() == GgufType::STRING)
            CHECK(v.strings().size() == v.count());
        else {
            CHECK(es > 0 && v.raw().size() == v.count() * es);  // arrays of arrays never get through
            for (uint64_t i = 0; i < v.count(); ++i) h += static_cast<uint64_t>(v.array_number(i) != v.array_number(i));
        }
    } else if (v.type() == GgufType::STRING) {
        CHECK(v.strings().size() == 1);
    } else {
        CHECK(v.raw().size() == gguf_type_size(v.type()));
    }
    g_sink = g_sink + h;
}

void check_file(const GgufFile& f, std::span<const uint8_t> in) {
    CHECK(f.version() == 2 || f.version() == 3);
    CHECK(f.alignment() > 0 && (f.alignment() & (f.alignment() - 1)) == 0);
    CHECK(f.header_size() <= in.size());
    CHECK(f.data_offset() >= f.header_size() && f.data_offset() % f.alignment() == 0);
    for (const auto& kv : f.metadata()) {
        CHECK(!kv.key.empty());
        CHECK(f.metadata().find(kv.key) == &kv.value);  // keys are unique
        touch_value(kv.value);
    }
    (void)f.canonical_layout();
    for (size_t i = 0; i < f.tensors().size(); ++i) {
        const auto& t = f.tensors()[i];
        CHECK(f.find_tensor(t.name) == static_cast<int64_t>(i));  // names unique
        CHECK(t.name.size() < 64);
        CHECK(t.n_dims <= kMaxDims);
        CHECK(type_id_valid(static_cast<uint32_t>(t.type)));
        const TypeTraits& tt = traits(t.type);
        for (uint32_t d = 0; d < kMaxDims; ++d) CHECK(t.ne[d] >= 1);
        CHECK(t.ne[0] % tt.block_size == 0);
        (void)t.shape_string();
        // n_bytes agrees with the shape, computed without wrap-around.
        const unsigned __int128 exact = static_cast<unsigned __int128>(t.ne[0] / tt.block_size) * tt.type_size *
                                        static_cast<unsigned __int128>(t.n_rows());
        CHECK(exact == t.n_bytes);
        CHECK(t.offset % f.alignment() == 0);
        CHECK(f.data_offset() <= in.size() && t.offset <= in.size() - f.data_offset() &&
              t.n_bytes <= in.size() - f.data_offset() - t.offset);
        auto d = f.tensor_data(i);
        CHECK(d.size() == t.n_bytes);
        // The view holds the input's bytes at that offset (GgufFile::parse_copy keeps its own copy).
        CHECK(d.empty() || std::memcmp(d.data(), in.data() + f.data_offset() + t.offset, d.size()) == 0);
        uint64_t h = 0;
        for (uint8_t b : d) h = h * 31 + b;  // every byte read: ASan checks the bounds
        g_sink = g_sink + h;
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::span<const uint8_t> in(data, size);
    try {
        GgufFile f = GgufFile::parse_copy(in, "fuzz.gguf");
        check_file(f, in);
        // The header re-serializes to exactly the bytes it was read from.
        std::vector<uint8_t> h = serialize_gguf_header(f.version(), f.metadata(), f.tensors());
        CHECK(h.size() == f.header_size());
        CHECK(std::memcmp(h.data(), data, h.size()) == 0);
        // Re-parse the re-serialized image: same metadata, tensors and data.
        h.insert(h.end(), data + f.header_size(), data + size);
        GgufFile g = GgufFile::parse_copy(h, "fuzz-reparsed.gguf");
        CHECK(g.metadata() == f.metadata());
        CHECK(g.tensors().size() == f.tensors().size());
        CHECK(g.data_offset() == f.data_offset() && g.alignment() == f.alignment() && g.version() == f.version());
        for (size_t i = 0; i < f.tensors().size(); ++i) {
            const auto &a = f.tensors()[i], &b = g.tensors()[i];
            CHECK(a.name == b.name && a.n_dims == b.n_dims && a.ne == b.ne && a.type == b.type &&
                  a.offset == b.offset && a.n_bytes == b.n_bytes);
            CHECK(std::ranges::equal(f.tensor_data(i), g.tensor_data(i)));
        }
    } catch (const FormatError& e) {
        // Every error names the file.
        CHECK(std::strncmp(e.what(), "fuzz.gguf: ", 11) == 0);
        CHECK(e.file() == "fuzz.gguf");
        (void)error_kind_name(e.kind());
    }
    return 0;
}

// ---------------------------------------------------------------------------------------------
// Seed images (OIW_FUZZ_EMIT_SEEDS).

namespace {

void emit(const std::string& dir, const std::string& name, const std::vector<uint8_t>& b) {
    std::ofstream o(dir + "/" + name, std::ios::binary);
    o.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

std::vector<uint8_t> image(uint32_t version, const std::vector<GgufKV>& kvs, std::vector<GgufTensorInfo> ts,
                           uint64_t align) {
    uint64_t off = 0;
    for (auto& t : ts) {
        const TypeTraits& tt = traits(t.type);
        t.n_bytes = static_cast<uint64_t>(t.ne[0]) / tt.block_size * tt.type_size * static_cast<uint64_t>(t.n_rows());
        t.offset = off;
        off = (off + t.n_bytes + align - 1) / align * align;
    }
    auto b = serialize_gguf_header(version, kvs, ts);
    b.resize((b.size() + align - 1) / align * align + off, 0x5A);
    return b;
}

GgufTensorInfo ti(const std::string& name, GgmlType type, std::vector<int64_t> ne) {
    GgufTensorInfo t;
    t.name = name;
    t.type = type;
    t.n_dims = static_cast<uint32_t>(ne.size());
    for (size_t d = 0; d < ne.size(); ++d) t.ne[d] = ne[d];
    return t;
}

void emit_seeds(const std::string& dir) {
    std::vector<GgufKV> kvs = {
        {"general.architecture", GgufValue::make_string("llama")},
        {"general.alignment", GgufValue::make_scalar<uint32_t>(GgufType::U32, 32)},
        {"llama.block_count", GgufValue::make_scalar<uint32_t>(GgufType::U32, 1)},
        {"llama.rope.freq_base", GgufValue::make_scalar<float>(GgufType::F32, 10000.f)},
        {"tokenizer.ggml.tokens", GgufValue::make_string_array({"<s>", "</s>", "a", "é", ""})},
        {"tokenizer.ggml.scores", GgufValue::make_array(GgufType::F32, std::vector<uint8_t>(20, 0), 5)},
        {"general.flag", GgufValue::make_bool(true)},
        {"general.i64", GgufValue::make_scalar<int64_t>(GgufType::I64, -5)},
    };
    kvs.push_back({"test.u8s", GgufValue::make_array(GgufType::U8, {1, 2}, 2)});
    std::vector<GgufTensorInfo> ts = {ti("token_embd.weight", GgmlType::Q4_0, {32, 4}), ti("norm", GgmlType::F32, {8}),
                                      ti("q", GgmlType::Q4_K, {256, 1}), ti("e", GgmlType::F16, {2, 2, 2, 2})};
    emit(dir, "seed-v3.gguf", image(3, kvs, ts, 32));
    emit(dir, "seed-v2.gguf", image(2, kvs, ts, 32));
    emit(dir, "seed-kv-only.gguf", image(3, kvs, {}, 32));
    emit(dir, "seed-empty.gguf", image(3, {}, {}, 32));
    auto kvs1 = kvs;
    kvs1[1].value = GgufValue::make_scalar<uint32_t>(GgufType::U32, 1);
    emit(dir, "seed-align1.gguf", image(3, kvs1, ts, 1));
    std::vector<GgufTensorInfo> all;
    for (uint32_t id = 0; id < kGgmlTypeCount; ++id)
        if (type_id_valid(id)) {
            auto t = static_cast<GgmlType>(id);
            all.push_back(ti("t" + std::to_string(id), t, {static_cast<int64_t>(traits(t).block_size)}));
        }
    emit(dir, "seed-all-types.gguf", image(3, {}, all, 32));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    if (const char* dir = std::getenv("OIW_FUZZ_EMIT_SEEDS")) {
        emit_seeds(dir);
        std::exit(0);
    }
    return 0;
}
