// libFuzzer target for the model-card reader (converters/hf/model_card.h): the input is a README.md.
// Either parse_model_card throws FormatError (BadData, or Unsupported for a model id it does not
// annotate) with a one-line message naming the file, or it
// returns fields whose lists hold what gguf-py would write: no empty base-model fields, and a
// front matter only when the text starts with a "---" line.
//
// With OIW_FUZZ_EMIT_SEEDS=<dir> the binary writes a few cards to <dir> and exits (scripts/fuzz
// adds tests/data/hf/cards/*.md).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>

#include "converters/hf/model_card.h"
#include "libformat/error.h"

namespace {

[[noreturn]] void fail(const char* what) {
    std::fprintf(stderr, "fuzz_model_card: invariant violated: %s\n", what);
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    try {
        const oiw::hf::CardMetadata m = oiw::hf::parse_model_card(text, "fuzz/README.md", 7'000'000'000);
        if (!oiw::hf::front_matter(text) && (m.name || m.license || m.tags || m.base_models))
            fail("fields without a front matter");
        for (const auto* list : {&m.base_models, &m.datasets})
            if (*list)
                for (const auto& entry : **list)
                    for (const auto& [field, value] : entry)
                        if (value.empty()) fail("an empty source field kept");
    } catch (const oiw::FormatError& e) {
        const std::string_view msg = e.what();
        // BadData; Unsupported for a model id whose Unicode parts gguf-py's regexes read otherwise
        if (e.kind() != oiw::ErrorKind::BadData && e.kind() != oiw::ErrorKind::Unsupported)
            fail("an error other than bad data or unsupported");
        if (msg.find('\n') != std::string_view::npos) fail("a multi-line error");
        if (msg.find("fuzz/README.md") == std::string_view::npos) fail("an error not naming the file");
    }
    return 0;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    if (const char* dir = std::getenv("OIW_FUZZ_EMIT_SEEDS")) {
        const char* seeds[] = {
            "---\nlicense: mit\ntags: [a, b]\nbase_model: org/Model-7B\n---\n",
            "---\nbase_model:\n- https://huggingface.co/a/b\n- {name: x, version: 1}\nlanguage:\n- no\n---\n",
            "---\na: &x {b: [1, 2.5, 2001-12-14, ~, yes, 0x1F, 1:20]}\nc: *x\nd: |\n  text\n---\n"};
        int k = 0;
        for (const char* s : seeds) std::ofstream(std::string(dir) + "/seed-" + std::to_string(k++)) << s;
        std::exit(0);
    }
    return 0;
}
