// libFuzzer target for the OIW4 reader: Oiw4File::parse must either throw FormatError naming the
// file or hand out tensors whose planes are inside the input, 4096-aligned, sized for their
// encoding, disjoint and laid out as docs/OIW4.md says (zero padding, nothing after the last
// plane); a plane is handed out only when it matches its XXH3 (else BadChecksum); verify_planes and
// the oiw4 views must read only those bytes, and decoding a zstd plane (up to 1 MiB decoded) must
// give exactly its decoded size or throw FormatError naming the file. A file whose planes fail
// their checksums is checked again with the checksums recomputed, so mutated frames still reach
// the zstd decoder.
//
// With OIW_FUZZ_EMIT_SEEDS=<dir> the binary writes a few small valid files to <dir> and exits.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <xxhash.h>

#include "libformat/oiw4/oiw4.h"
#include "libformat/oiw4/zstd/oiw4_zstd.h"

namespace {

using namespace oiw;

[[noreturn]] void fail(const char* what) {
    std::fprintf(stderr, "fuzz_oiw4_reader: invariant violated: %s\n", what);
    std::abort();
}
#define CHECK(c)            \
    do {                    \
        if (!(c)) fail(#c); \
    } while (0)

volatile uint64_t g_sink;
constexpr uint64_t kMaxDecoded = 1 << 20;  // larger planes are not decoded (memory of the run)

void check_name(const FormatError& e) {
    CHECK(std::strncmp(e.what(), "fuzz.oiw4: ", 11) == 0);
    CHECK(e.file() == "fuzz.oiw4");
}

// Plane p of tensor i: handed out only when its bytes match its XXH3, else a BadChecksum naming it.
bool check_plane_access(const Oiw4File& f, size_t i, size_t p, std::span<const uint8_t> stored) {
    if (f.plane_intact(i, p)) {
        const auto d = f.plane_data(i, p);
        CHECK(d.data() == stored.data() && d.size() == stored.size());
        return true;
    }
    try {
        f.plane_data(i, p);
        fail("a plane that fails its checksum was handed out");
    } catch (const FormatError& e) {
        check_name(e);
        CHECK(e.kind() == ErrorKind::BadChecksum);
    }
    return false;
}

void check_file(const Oiw4File& f, std::span<const uint8_t> in) {
    CHECK(f.file_size() == in.size());
    CHECK(f.data_offset() % kOiw4PlaneAlign == 0 && f.data_offset() <= in.size());
    std::vector<std::pair<uint64_t, uint64_t>> spans;
    bool all_intact = true;
    for (size_t i = 0; i < f.tensors().size(); ++i) {
        const auto& t = f.tensors()[i];
        CHECK(f.find_tensor(t.info.name) == static_cast<int64_t>(i));
        const auto specs = encoding_planes(t.encoding, t.info, "fuzz");
        CHECK(specs.size() == t.planes.size());
        bool intact = true;
        for (size_t p = 0; p < t.planes.size(); ++p) {
            const auto& pl = t.planes[p];
            CHECK(pl.decoded_size == specs[p].size);
            CHECK(pl.codec != Oiw4Codec::None || pl.size == pl.decoded_size);
            CHECK(pl.offset % kOiw4PlaneAlign == 0 && pl.offset >= f.data_offset() && pl.size > 0);
            const auto d = f.unverified_plane_data(i, p);
            CHECK(d.data() == in.data() + pl.offset && d.size() == pl.size);
            spans.push_back({pl.offset, pl.size});
            const bool ok = check_plane_access(f, i, p, d);
            intact &= ok;
            if (pl.codec != Oiw4Codec::None && pl.decoded_size <= kMaxDecoded) {
                try {
                    CHECK(decode_plane(f, i, p).size() == pl.decoded_size);
                    CHECK(ok);
                } catch (const FormatError& e) {
                    check_name(e);
                }
            }
        }
        all_intact &= intact;
        if (intact && t.encoding == Oiw4Encoding::Oiw4 && !f.compressed() &&
            reinterpret_cast<uintptr_t>(in.data()) % alignof(float) == 0) {
            const Oiw4View v = f.oiw4_view(i);
            const int64_t blocks = v.rows * (v.cols / 32);
            CHECK(blocks > 0);
            g_sink = g_sink + v.qs[blocks * 16 - 1] +
                     static_cast<uint64_t>(v.d[blocks - 1] != 0);  // last bytes: ASan checks
        }
    }
    // Strict layout: sorted planes start on the first 4096 boundary after the previous one (or the
    // directory), padding is zero, the file ends with the last plane.
    std::sort(spans.begin(), spans.end());
    uint64_t end = kOiw4HeaderSize + [&] {
        uint64_t v;
        std::memcpy(&v, in.data() + 24, 8);
        return v;
    }();
    for (const auto& [off, size] : spans) {
        CHECK(off == (end + kOiw4PlaneAlign - 1) / kOiw4PlaneAlign * kOiw4PlaneAlign);
        for (uint64_t k = end; k < off; ++k) CHECK(in[k] == 0);
        end = off + size;
    }
    if (spans.empty())
        for (uint64_t k = end; k < f.data_offset(); ++k) CHECK(in[k] == 0);
    CHECK(in.size() == (spans.empty() ? f.data_offset() : end));
    CHECK(verify_planes(f).empty() == all_intact);
}

// `in` with every plane's XXH3 and the header checksum recomputed, so that a mutated plane reaches
// the decoders and views (directory entries found by their offset, size and stored checksum).
std::vector<uint8_t> resealed(const Oiw4File& f, std::span<const uint8_t> in) {
    std::vector<uint8_t> b(in.begin(), in.end());
    uint64_t dir_size;
    std::memcpy(&dir_size, b.data() + 24, 8);
    const auto dir = b.begin() + 64, dir_end = dir + static_cast<int64_t>(dir_size);
    for (size_t i = 0; i < f.tensors().size(); ++i)
        for (const auto& p : f.tensors()[i].planes) {
            uint8_t key[24];
            std::memcpy(key, &p.offset, 8);
            std::memcpy(key + 8, &p.size, 8);
            std::memcpy(key + 16, &p.xxh3, 8);
            const auto at = std::search(dir, dir_end, key, key + 24);
            if (at == dir_end) continue;
            const uint64_t h = XXH3_64bits(b.data() + p.offset, p.size);
            std::memcpy(&*at + 16, &h, 8);
        }
    const uint64_t h = oiw4_header_checksum({b.data(), 56}, {b.data() + 64, static_cast<size_t>(dir_size)});
    std::memcpy(b.data() + 56, &h, 8);
    return b;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::span<const uint8_t> in(data, size);
    try {
        const Oiw4File f = Oiw4File::parse(in, "fuzz.oiw4");
        check_file(f, in);
        if (!verify_planes(f).empty()) {  // again with the checksums made to match the mutated planes
            const auto b = resealed(f, in);
            check_file(Oiw4File::parse(b, "fuzz.oiw4"), b);
        }
    } catch (const FormatError& e) {
        check_name(e);
    }
    return 0;
}

// ---------------------------------------------------------------------------------------------
// Seed files (OIW_FUZZ_EMIT_SEEDS).

namespace {

void emit_seed(const std::string& path, std::vector<std::pair<GgufTensorInfo, Oiw4Encoding>> tensors) {
    Oiw4Writer w(path, {});
    w.set_metadata(3, Metadata(std::vector<GgufKV>{{"general.architecture", GgufValue::make_string("llama")}}),
                   Metadata(std::vector<GgufKV>{{"oiw4.tool", GgufValue::make_string("fuzz seed")}}));
    for (const auto& [t, e] : tensors) w.add_tensor(t, e);
    for (const auto& [t, e] : tensors)
        for (const auto& p : encoding_planes(e, t, path)) w.write_plane(std::vector<uint8_t>(p.size, 0x5A));
    w.finish();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    if (const char* dir = std::getenv("OIW_FUZZ_EMIT_SEEDS")) {
        const std::string d = dir;
        const auto ti = [](const char* n, GgmlType t, std::vector<int64_t> s) { return make_tensor_info(n, t, s); };
        emit_seed(d + "/seed-mixed.oiw4", {{ti("a", GgmlType::Q4_0, {64, 2}), Oiw4Encoding::Oiw4},
                                           {ti("b", GgmlType::Q4_K, {256, 8}), Oiw4Encoding::Q4Kx8},
                                           {ti("c", GgmlType::Q4_K, {256, 16}), Oiw4Encoding::Q4Kx8Il4},
                                           {ti("n", GgmlType::F32, {8}), Oiw4Encoding::Raw}});
        emit_seed(d + "/seed-empty.oiw4", {});
        CodecOptions o;
        o.threads = 1;
        compress_oiw4(Oiw4File::open(d + "/seed-mixed.oiw4"), d + "/seed-zstd.oiw4", o);
        std::exit(0);
    }
    return 0;
}
