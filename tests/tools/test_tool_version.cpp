// Every tool (each tools/<name>/ folder) answers --version with the project version and the
// llama.cpp / ggml versions it is byte-compatible with.
#include <gtest/gtest.h>

#include <filesystem>

#include "oiw_version.h"
#include "tests/support/helpers.h"

namespace oiw {
namespace {
namespace fs = std::filesystem;

TEST(ToolVersion, EveryToolAnswersVersion) {
    EXPECT_STREQ(OIW_COMPAT_LLAMA_CPP, "1348f67");
    EXPECT_STREQ(OIW_COMPAT_GGML, "0.11.1");
    size_t tools = 0;
    for (const auto& e : fs::directory_iterator(fs::path(OIW_SOURCE_DIR) / "tools")) {
        const std::string name = e.path().filename().string();
        if (!e.is_directory() || name == "common") continue;
        SCOPED_TRACE(name);
        ++tools;
        std::string out;
        EXPECT_EQ(test::run(test::tool_path(name) + " --version", &out, true), 0);
        EXPECT_EQ(out, name + " " OIW_VERSION " (compatible with llama.cpp 1348f67, ggml 0.11.1)\n");
    }
    EXPECT_GE(tools, 4u);  // gguf-edit, gguf-inspect, gguf-requant, gguf-synth
}

}  // namespace
}  // namespace oiw
