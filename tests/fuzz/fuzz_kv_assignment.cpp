// libFuzzer target for the KEY=TYPE:VALUE parser (tools/common/tool_support.h): every input
// either throws a one-line FormatError or yields a KV whose key is the text before '=', whose
// numbers are finite, and whose value, printed and parsed again, gives the same bytes.
//
// With OIW_FUZZ_EMIT_SEEDS=<dir> the binary writes a few assignments to <dir> and exits.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include <fmt/format.h>

#include "libformat/error.h"
#include "tools/common/tool_support.h"

namespace {

using namespace oiw;

[[noreturn]] void fail(const char* what, std::string_view spec) {
    std::fprintf(stderr, "fuzz_kv_assignment: invariant violated: %s (input of %zu bytes)\n", what, spec.size());
    std::abort();
}

// The value as text that parse_kv_assignment reads back to the same value.
std::string value_text(const GgufValue& v) {
    if (v.type() == GgufType::STRING) return *v.as_string();
    if (v.type() == GgufType::BOOL) return v.raw()[0] ? "true" : "false";
    if (v.type() == GgufType::F32) {
        float f;
        std::memcpy(&f, v.raw().data(), 4);
        return fmt::format("{}", f);
    }
    if (v.type() == GgufType::F64) {
        double d;
        std::memcpy(&d, v.raw().data(), 8);
        return fmt::format("{}", d);
    }
    return v.to_string();  // integers: decimal
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view spec(reinterpret_cast<const char*>(data), size);
    try {
        const GgufKV kv = parse_kv_assignment(spec);
        if (kv.key != spec.substr(0, spec.find('='))) fail("key is not the text before '='", spec);
        if (auto d = kv.value.as_double(); d && !std::isfinite(*d)) fail("non-finite number", spec);
        const std::string type(spec.substr(spec.find('=') + 1, spec.find(':', spec.find('=')) - spec.find('=') - 1));
        const GgufKV again = parse_kv_assignment(kv.key + "=" + type + ":" + value_text(kv.value));
        if (again.value != kv.value) fail("value does not round-trip", spec);
    } catch (const FormatError& e) {
        if (std::strchr(e.what(), '\n')) fail("error message spans lines", spec);
    }
    return 0;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    if (const char* dir = std::getenv("OIW_FUZZ_EMIT_SEEDS")) {
        int i = 0;
        for (const char* s : {"general.name=str:x", "a.b=u32:010", "a.b=i8:-128", "a.b=u64:18446744073709551615",
                              "a.b=f32:1e-40", "a.b=f64:2.5e300", "a.b=bool:true", "a.b=int:-7", "a.b=float:0.5"})
            std::ofstream(std::string(dir) + "/kv-" + std::to_string(i++)) << s;
        std::exit(0);
    }
    return 0;
}
