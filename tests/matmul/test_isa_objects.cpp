// Each GEMV object holds only what its ISA's CPUs run and what keeps the reference's bits: the
// objects are disassembled and checked for FMA (any ISA), 512-bit registers outside the AVX-512
// objects, and VNNI instructions outside the VNNI objects (the AVX1 object has its own test).
#include <gtest/gtest.h>

#include <regex>
#include <sstream>
#include <string>

#include "tests/support/helpers.h"

namespace {

struct IsaObject {
    const char* file;
    bool zmm, vnni;  // may use 512-bit registers, VNNI instructions (and must: the kernels' point)
};

TEST(MatmulIsaObjects, EachHoldsOnlyItsIsa) {
    const std::string dir = OIW_MATMUL_X86_OBJECT_DIR;
    if (dir.empty()) GTEST_SKIP() << "not an x86_64 build";
    for (const IsaObject& o : {IsaObject{"gemv_avx2.cpp.o", false, false},
                               {"gemv_avxvnni.cpp.o", false, true},
                               {"gemv_avx512.cpp.o", true, false},
                               {"gemv_avx512vnni.cpp.o", true, true}}) {
        std::string out;
        ASSERT_EQ(oiw::test::run("objdump -d --no-show-raw-insn '" + dir + "/" + o.file + "'", &out), 0) << o.file;
        std::istringstream lines(out);
        std::string line;
        static const std::regex insn(R"(^\s*[0-9a-f]+:\s+(\{vex\}\s+)?(\S+)\s*(.*)$)");
        static const std::regex fma("^vf(n)?m(add|sub)"), vnni("^vpdp(bu|ws)sds?$");
        int zmm = 0, dp = 0;
        while (std::getline(lines, line)) {
            std::smatch m;
            if (!std::regex_match(line, m, insn)) continue;
            const std::string mnemonic = m[2], operands = m[3];
            EXPECT_FALSE(std::regex_search(mnemonic, fma)) << o.file << ": " << line;
            zmm += operands.find("%zmm") != std::string::npos;
            dp += std::regex_match(mnemonic, vnni);
        }
        EXPECT_EQ(zmm > 0, o.zmm) << o.file << ": " << zmm << " instructions on zmm registers";
        EXPECT_EQ(dp > 0, o.vnni) << o.file << ": " << dp << " VNNI instructions";
    }
}

}  // namespace
