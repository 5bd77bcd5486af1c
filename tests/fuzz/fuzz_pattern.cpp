// libFuzzer target for user patterns (libformat/pattern.h): the input's first line is a pattern,
// the rest a name. Every pattern either throws one single-line FormatError(Usage) or compiles and
// searches the name (RE2: no recursion, linear time); an anchored literal's exact_name() is
// matched by its own pattern.
//
// With OIW_FUZZ_EMIT_SEEDS=<dir> the binary writes a few pattern/name pairs to <dir> and exits.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "libformat/error.h"
#include "libformat/pattern.h"

namespace {

[[noreturn]] void fail(const char* what) {
    std::fprintf(stderr, "fuzz_pattern: invariant violated: %s\n", what);
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view in(reinterpret_cast<const char*>(data), size);
    const size_t nl = in.find('\n');
    const std::string_view pattern = in.substr(0, nl),
                           name = nl == std::string_view::npos ? std::string_view() : in.substr(nl + 1);
    try {
        const oiw::Pattern p(pattern, "--fuzz");
        (void)p.search(name);
        if (const auto& exact = p.exact_name(); exact && !p.search(*exact))
            fail("an anchored literal does not match its own name");
    } catch (const oiw::FormatError& e) {
        if (e.kind() != oiw::ErrorKind::Usage) fail("an error other than usage");
        if (std::string_view(e.what()).find('\n') != std::string_view::npos) fail("a multi-line error");
    }
    return 0;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    if (const char* dir = std::getenv("OIW_FUZZ_EMIT_SEEDS")) {
        const char* seeds[] = {"blk\\.[0-9]+\\.ffn_(up|gate)\nblk.12.ffn_up.weight",
                               "^output\\.weight$\noutput.weight",
                               "(.*)*x\naaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                               "[^\\s]\\d{2,3}(?:a|b)*?\\bq\nblk.10.q",
                               "^blk\\.0\\.a\\x0a\\^x\\$=\\x4632$\nblk.0.a\n^x$=F32",
                               "(a)\\1\naa",
                               "(?=a)\na",
                               "[]|[^]\\cA\\u0041\nA"};
        int k = 0;
        for (const char* s : seeds) std::ofstream(std::string(dir) + "/seed-" + std::to_string(k++)) << s;
        std::exit(0);
    }
    return 0;
}
