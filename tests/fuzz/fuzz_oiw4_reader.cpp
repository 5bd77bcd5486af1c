// libFuzzer target for the OIW4 reader: Oiw4File::parse must either throw FormatError naming the
// file or hand out tensors whose planes are inside the input, 4096-aligned, sized for their
// encoding and disjoint; verify_planes and the oiw4 views must then read only those bytes, and
// decoding a zstd plane (up to 1 MiB decoded) must give exactly its decoded size or throw
// FormatError naming the file.
//
// With OIW_FUZZ_EMIT_SEEDS=<dir> the binary writes a few small valid files to <dir> and exits.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "libformat/oiw4/oiw4.h"
#include "libformat/oiw4/zstd/oiw4_zstd.h"

namespace {

using namespace oiw;

[[noreturn]] void fail(const char* what) {
    std::fprintf(stderr, "fuzz_oiw4_reader: invariant violated: %s\n", what);
    std::abort();
}
#define CHECK(c) \
    do {         \
        if (!(c)) fail(#c); \
    } while (0)

volatile uint64_t g_sink;
constexpr uint64_t kMaxDecoded = 1 << 20;  // larger planes are not decoded (memory of the run)

void check_name(const FormatError& e) {
    CHECK(std::strncmp(e.what(), "fuzz.oiw4: ", 11) == 0);
    CHECK(e.file() == "fuzz.oiw4");
}

void check_file(const Oiw4File& f, std::span<const uint8_t> in) {
    CHECK(f.file_size() == in.size());
    CHECK(f.data_offset() % kOiw4PlaneAlign == 0 && f.data_offset() <= in.size());
    std::vector<std::pair<uint64_t, uint64_t>> spans;
    for (size_t i = 0; i < f.tensors().size(); ++i) {
        const auto& t = f.tensors()[i];
        CHECK(f.find_tensor(t.info.name) == static_cast<int64_t>(i));
        const auto specs = encoding_planes(t.encoding, t.info, "fuzz");
        CHECK(specs.size() == t.planes.size());
        for (size_t p = 0; p < t.planes.size(); ++p) {
            const auto& pl = t.planes[p];
            CHECK(pl.decoded_size == specs[p].size);
            CHECK(pl.codec != Oiw4Codec::None || pl.size == pl.decoded_size);
            CHECK(pl.offset % kOiw4PlaneAlign == 0 && pl.offset >= f.data_offset());
            const auto d = f.plane_data(i, p);
            CHECK(d.data() == in.data() + pl.offset && d.size() == pl.size);
            spans.push_back({pl.offset, pl.size});
            if (pl.codec != Oiw4Codec::None && pl.decoded_size <= kMaxDecoded) {
                try {
                    CHECK(decode_plane(f, i, p).size() == pl.decoded_size);
                } catch (const FormatError& e) {
                    check_name(e);
                }
            }
        }
        if (t.encoding == Oiw4Encoding::Oiw4 && !f.compressed() && reinterpret_cast<uintptr_t>(in.data()) % alignof(float) == 0) {
            const Oiw4View v = f.oiw4_view(i);
            const int64_t blocks = v.rows * (v.cols / 32);
            CHECK(blocks > 0);
            g_sink = g_sink + v.qs[blocks * 16 - 1] + static_cast<uint64_t>(v.d[blocks - 1] != 0);  // last bytes: ASan checks
        }
    }
    std::sort(spans.begin(), spans.end());
    for (size_t k = 1; k < spans.size(); ++k) CHECK(spans[k - 1].first + spans[k - 1].second <= spans[k].first);
    g_sink = g_sink + verify_planes(f).size();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::span<const uint8_t> in(data, size);
    try {
        check_file(Oiw4File::parse(in, "fuzz.oiw4"), in);
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
