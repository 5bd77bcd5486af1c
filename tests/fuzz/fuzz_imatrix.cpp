// libFuzzer target for the imatrix loader (GGUF and legacy .dat): parse_imatrix must either throw
// FormatError or return entries whose every value is finite and non-negative, with no matrix of
// zeros (the loader's own contract), without crashing, leaking or touching bytes out of bounds.
//
// With OIW_FUZZ_EMIT_SEEDS=<dir> the binary writes small valid imatrices to <dir> and exits.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "converters/requant/imatrix.h"
#include "libformat/error.h"
#include "libformat/gguf/gguf.h"

namespace {

using namespace oiw;

[[noreturn]] void fail(const char* what) {
    std::fprintf(stderr, "fuzz_imatrix: invariant violated: %s\n", what);
    std::abort();
}

void emit(const std::string& path, std::span<const uint8_t> b) {
    std::ofstream o(path, std::ios::binary);
    o.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

void emit_seeds(const std::string& dir) {
    // Legacy: 2 entries, then chunk count and data set name.
    std::vector<uint8_t> b;
    auto put = [&](const void* p, size_t n) {
        b.insert(b.end(), static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n);
    };
    auto i32 = [&](int32_t v) { put(&v, 4); };
    i32(2);
    for (const char* name : {"blk.0.attn_q.weight", "blk.0.ffn_down.weight"}) {
        i32(static_cast<int32_t>(std::strlen(name)));
        put(name, std::strlen(name));
        i32(3);
        i32(4);
        const float v[4] = {3, 6, 9, 12};
        put(v, sizeof v);
    }
    i32(10);
    i32(5);
    put("calib", 5);
    emit(dir + "/legacy.dat", b);

    // GGUF, alignment 1 (misaligned data) and the default alignment.
    for (uint32_t align : {1u, 32u}) {
        const std::string path = dir + "/imatrix-align" + std::to_string(align) + ".gguf";
        GgufWriter w(path);
        w.add_kv({"general.alignment", GgufValue::make_scalar<uint32_t>(GgufType::U32, align)});
        w.add_kv({"imatrix.datasets", GgufValue::make_string_array({"calib"})});
        w.add_kv({"imatrix.chunk_count", GgufValue::make_scalar<uint32_t>(GgufType::U32, 4)});
        w.add_kv({"imatrix.chunk_size", GgufValue::make_scalar<uint32_t>(GgufType::U32, 512)});
        const std::vector<float> sums = {1, 2, 3, 4, 5, 6, 7, 8}, counts = {1, 2};
        const int64_t ns[] = {4, 2}, nc[] = {2};
        w.add_tensor("x.weight.in_sum2", GgmlType::F32, ns);
        w.add_tensor("x.weight.counts", GgmlType::F32, nc);
        w.write_tensor_data({reinterpret_cast<const uint8_t*>(sums.data()), sums.size() * 4});
        w.write_tensor_data({reinterpret_cast<const uint8_t*>(counts.data()), counts.size() * 4});
        w.finish();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        const Imatrix m = parse_imatrix({data, size}, "fuzz.imatrix");
        for (const auto& [name, v] : m.entries) {
            if (v.empty()) fail("empty entry");
            bool any = false;
            for (float x : v) {
                if (!std::isfinite(x) || x < 0) fail("value not finite and non-negative");
                any |= x != 0;
            }
            if (!any) fail("all-zero entry");
        }
    } catch (const FormatError& e) {
        if (std::strchr(e.what(), '\n')) fail("error message spans lines");
    }
    return 0;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    if (const char* dir = std::getenv("OIW_FUZZ_EMIT_SEEDS")) {
        emit_seeds(dir);
        std::exit(0);
    }
    return 0;
}
