// The AVX1-only kernels must run on Sandy Bridge: no FMA, no integer instruction on a 256-bit
// register. The object file is disassembled and every instruction classified.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>
#include <string>

#include "tests/support/helpers.h"

namespace {

// Why an AT&T disassembly line (mnemonic + operands) is not Sandy Bridge code, or "".
std::string sandy_bridge_violation(const std::string& mnemonic, const std::string& operands) {
    static const std::regex fma("^vf(n)?m(add|sub)");
    if (std::regex_search(mnemonic, fma)) return "FMA";
    if (operands.find("%zmm") != std::string::npos) return "AVX-512 register";
    if (operands.find("%ymm") == std::string::npos) return "";
    static const std::regex avx1_float_p("^vperm(ilps|ilpd|2f128)");
    const bool integer_ymm = (mnemonic.rfind("vp", 0) == 0 && !std::regex_search(mnemonic, avx1_float_p)) ||
                             mnemonic == "vinserti128" || mnemonic == "vextracti128" || mnemonic == "vbroadcasti128";
    return integer_ymm ? "integer instruction on a ymm register" : "";
}

TEST(MatmulAvx1Object, ClassifierFlagsAvx2AndFma) {
    EXPECT_EQ(sandy_bridge_violation("vpaddd", "%ymm1,%ymm2,%ymm3"), "integer instruction on a ymm register");
    EXPECT_EQ(sandy_bridge_violation("vpmaddubsw", "%ymm1,%ymm2,%ymm3"), "integer instruction on a ymm register");
    EXPECT_EQ(sandy_bridge_violation("vinserti128", "$0x1,%xmm1,%ymm2,%ymm3"), "integer instruction on a ymm register");
    EXPECT_EQ(sandy_bridge_violation("vfmadd231ps", "%ymm1,%ymm2,%ymm3"), "FMA");
    EXPECT_EQ(sandy_bridge_violation("vfmadd231ss", "%xmm1,%xmm2,%xmm3"), "FMA");
    EXPECT_EQ(sandy_bridge_violation("vpmaddubsw", "%xmm1,%xmm2,%xmm3"), "");
    EXPECT_EQ(sandy_bridge_violation("vinsertf128", "$0x1,%xmm1,%ymm2,%ymm3"), "");
    EXPECT_EQ(sandy_bridge_violation("vcvtdq2ps", "%ymm1,%ymm2"), "");
    EXPECT_EQ(sandy_bridge_violation("vpermilps", "$0x1,%ymm1,%ymm2"), "");
}

TEST(MatmulAvx1Object, NoFmaNoIntegerYmm) {
    const std::string object = OIW_MATMUL_AVX1_OBJECT;
    if (object.empty()) GTEST_SKIP() << "not an x86_64 build";
    std::string out;
    ASSERT_EQ(oiw::test::run("objdump -d --no-show-raw-insn '" + object + "'", &out), 0) << object;
    std::istringstream lines(out);
    std::string line;
    int ymm_float = 0;
    // "  4c:\tvcvtdq2ps %ymm0,%ymm0"
    static const std::regex insn(R"(^\s*[0-9a-f]+:\s+(\S+)\s*(.*)$)");
    while (std::getline(lines, line)) {
        std::smatch m;
        if (!std::regex_match(line, m, insn)) continue;
        const std::string why = sandy_bridge_violation(m[1], m[2]);
        EXPECT_EQ(why, "") << line;
        ymm_float += m[2].str().find("%ymm") != std::string::npos;
    }
    EXPECT_GT(ymm_float, 10) << "the AVX1 object should hold 256-bit float code";
}

}  // namespace
