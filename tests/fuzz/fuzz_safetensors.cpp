// libFuzzer target for the Hugging Face readers: the first byte picks the safetensors image parser
// (length prefix, JSON header, spans) or the shard index parser; the rest is the document. Either
// throws FormatError with a one-line message, or returns what its contract promises: tensors
// sorted by name whose spans lie inside the image, tile its data section and match shape x dtype;
// shard names that are plain file names.
//
// With OIW_FUZZ_EMIT_SEEDS=<dir> the binary writes small valid documents to <dir> and exits.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <string_view>

#include "converters/hf/checkpoint.h"
#include "converters/hf/safetensors.h"
#include "libformat/error.h"

namespace {

using namespace oiw;

[[noreturn]] void fail(const char* what) {
    std::fprintf(stderr, "fuzz_safetensors: invariant violated: %s\n", what);
    std::abort();
}

void check_image(std::span<const uint8_t> image) {
    const hf::Header h = hf::parse_image(image, "fuzz.safetensors");
    uint64_t total = 0, first = UINT64_MAX;
    for (size_t i = 0; i < h.tensors.size(); ++i) {
        const hf::Tensor& t = h.tensors[i];
        if (i > 0 && !(h.tensors[i - 1].name < t.name)) fail("tensors not sorted by name");
        if (t.offset > image.size() || t.size > image.size() - t.offset) fail("span outside the image");
        if (t.size != t.elements * hf::dtype_size(t.dtype)) fail("size is not elements x dtype size");
        total += t.size;
        first = std::min(first, t.offset);
    }
    // Tiling: the spans sum to the data section, which ends at the end of the image.
    if (!h.tensors.empty() && first + total != image.size()) fail("spans do not tile the data section");
}

void check_index(std::string_view json) {
    for (const auto& [name, shard] : hf::parse_index(json, "fuzz.index.json"))
        if (shard.empty() || shard == "." || shard == ".." || shard.find('/') != std::string::npos)
            fail("shard name is not a plain file name");
}

void emit(const std::string& path, uint8_t mode, std::string_view body) {
    std::ofstream o(path, std::ios::binary);
    o.put(static_cast<char>(mode));
    o.write(body.data(), static_cast<std::streamsize>(body.size()));
}

void emit_seeds(const std::string& dir) {
    const std::string header =
        R"({"__metadata__":{"format":"pt"},"a.weight":{"dtype":"BF16","shape":[2,2],"data_offsets":[0,8]},)"
        R"("b.bias":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})";
    std::string image(8, '\0');
    const uint64_t n = header.size();
    std::memcpy(image.data(), &n, 8);
    image += header + std::string(12, '\x11');
    emit(dir + "/image", 0, image);
    emit(dir + "/index", 1,
         R"({"metadata":{"total_size":12},"weight_map":{"a.weight":"model-00001-of-00002.safetensors",)"
         R"("b.bias":"model-00002-of-00002.safetensors"}})");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    try {
        if (data[0] % 2 == 0)
            check_image({data + 1, size - 1});
        else
            check_index({reinterpret_cast<const char*>(data + 1), size - 1});
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
