// Man pages (help2man, at build time) and the bash completion script: options come from each
// tool's --help, presets and types from gguf-requant's list.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/support/helpers.h"

namespace oiw {
namespace {
namespace fs = std::filesystem;

// What the completion function offers for the words of a command line (the last one completed).
std::string complete(const std::string& words, int cword) {
    const std::string script = std::string(OIW_SOURCE_DIR) + "/tools/common/oiw-completion.bash";
    std::string out;
    const std::string cmd = "cd '" + test::temp_dir().string() + "' && PATH='" + std::string(OIW_BIN_DIR) +
                            "':\"$PATH\" bash -c 'source \"" + script + "\"; COMP_WORDS=(" + words +
                            "); COMP_CWORD=" + std::to_string(cword) + "; _oiw_tool; echo \"${COMPREPLY[*]}\"'";
    EXPECT_EQ(test::run(cmd, &out), 0) << cmd;
    return out;
}

TEST(Completion, OptionsPresetsAndTypes) {
    EXPECT_EQ(complete("gguf-requant --pre", 1), "--preset\n");
    EXPECT_EQ(complete("gguf-requant m.gguf --preset Q4_K", 3), "Q4_K_S Q4_K_M\n");
    EXPECT_EQ(complete("gguf-requant m.gguf --output-tensor-type IQ4", 3), "IQ4_NL IQ4_XS\n");
    EXPECT_EQ(complete("gguf-inspect diff --da", 2), "--data\n");  // the subcommand's own options
    EXPECT_EQ(complete("gguf-eval m.gguf --kl", 2), "--kl-divergence --kl-divergence-base\n");
    EXPECT_EQ(complete("gguf-prune-vocab --keep-r", 1), "--keep-range\n");
    EXPECT_EQ(complete("oiw4-check bench --ro", 2), "--rows\n");
}

// Every tool has a man page built from its --help (skipped where help2man is not installed).
TEST(ManPages, OnePerToolFromItsHelp) {
    const fs::path dir = fs::path(OIW_BIN_DIR) / ".." / "share" / "man" / "man1";
    if (!fs::exists(dir / "gguf-requant.1")) GTEST_SKIP() << "no man pages in this build (help2man not installed)";
    for (const std::string tool : {"gguf-inspect", "gguf-requant", "gguf-plan", "gguf-edit", "gguf-synth",
                                   "gguf-prune-vocab", "gguf-convert", "gguf-eval", "oiw4-convert", "oiw4-check"}) {
        SCOPED_TRACE(tool);
        const auto bytes = test::read_file((dir / (tool + ".1")).string());
        const std::string page(bytes.begin(), bytes.end());
        EXPECT_NE(page.find(".TH "), std::string::npos);
        const bool has_workers = tool != "gguf-edit" && tool != "gguf-synth" && tool != "gguf-prune-vocab";
        EXPECT_EQ(page.find("\\-\\-threads") != std::string::npos, has_workers);
    }
    const auto bytes = test::read_file((dir / "gguf-requant.1").string());
    const std::string page(bytes.begin(), bytes.end());
    EXPECT_NE(page.find("\\-\\-tensor\\-type\\-file"), std::string::npos);
    EXPECT_NE(page.find("NTHREADS"), std::string::npos);
}

}  // namespace
}  // namespace oiw
