// The kernel table and the ISA dispatch: every type id has its row, the quantizable set and the
// imatrix rules are ggml's, and the reference runs whenever no optimized kernel is selected.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "converters/quant/dispatch.h"
#include "converters/quant/kernels.h"
#include "converters/quant/quants.h"
#include "libformat/error.h"
#include "libformat/types.h"
#include "tests/support/helpers.h"

namespace oiw {
namespace {

using T = GgmlType;

bool forced_scalar() {
    const char* e = std::getenv("OIW_ISA");
    return e && std::strcmp(e, "scalar") == 0;
}

TEST(KernelTable, EveryLiveIdConvertsToFloat) {
    const KernelTable& k = reference_kernels();
    for (uint32_t id = 0; id < kGgmlTypeCount; ++id) {
        SCOPED_TRACE(kTypeTraits[id].name);
        EXPECT_EQ(k[id].to_float != nullptr, type_id_valid(id));
        if (!type_id_valid(id)) {
            EXPECT_EQ(k[id].quantize, nullptr);
        }
        EXPECT_EQ(k[id].fast.plain, nullptr);
        EXPECT_EQ(k[id].fast.weighted, nullptr);
    }
}

// The completeness check of the kernel table: a removed id has no kernels; a live one converts to
// f32, validates its data (an all-zero block is valid; all-ones bytes are NaN or a bad exponent
// unless every bit pattern of the type is a value) and has a check limit. A new type's row
// fails here until it is whole.
TEST(KernelTable, EveryRowIsComplete) {
    const std::set<T> every_pattern_valid = {T::I8, T::I16, T::I32, T::I64, T::NVFP4};
    for (uint32_t id = 0; id < kGgmlTypeCount; ++id) {
        const TypeKernels& k = reference_kernels()[id];
        SCOPED_TRACE(kTypeTraits[id].name);
        if (kTypeTraits[id].removed) {
            EXPECT_EQ(k.to_float, nullptr);
            EXPECT_EQ(k.find_invalid, nullptr);
            EXPECT_EQ(k.quantize, nullptr);
            EXPECT_LT(k.max_rel_rms, 0);
            continue;
        }
        ASSERT_NE(k.to_float, nullptr);
        ASSERT_NE(k.find_invalid, nullptr);
        EXPECT_GE(k.max_rel_rms, 0);
        const std::vector<uint8_t> zeros(kTypeTraits[id].type_size, 0x00), ones(kTypeTraits[id].type_size, 0xff);
        EXPECT_EQ(k.find_invalid(zeros), "");
        EXPECT_EQ(k.find_invalid(ones).empty(), every_pattern_valid.count(static_cast<T>(id)) == 1)
            << k.find_invalid(ones);
        std::vector<float> f(kTypeTraits[id].block_size, 1.f);
        k.to_float(zeros.data(), f.data(), static_cast<int64_t>(f.size()));
        for (const float v : f) EXPECT_EQ(v, 0.f);
    }
}

// The limit table of docs/matmul.md ("| converted type | max_rel_rms | why |"): type name -> limit.
std::map<std::string, double> documented_limits() {
    std::ifstream f(test::data_path("../../docs/matmul.md"));
    std::map<std::string, double> out;
    std::string line;
    bool in_table = false;
    while (std::getline(f, line)) {
        if (line.rfind("| converted type | max_rel_rms |", 0) == 0)
            in_table = true;
        else if (in_table && line.rfind("|", 0) != 0)
            break;
        else if (in_table && line.rfind("|---", 0) != 0) {
            std::stringstream cells(line.substr(1));
            std::string names, limit, name;
            std::getline(cells, names, '|');
            std::getline(cells, limit, '|');
            std::stringstream list(names);
            while (std::getline(list, name, ',')) {
                name.erase(0, name.find_first_not_of(' '));
                name.erase(name.find_last_not_of(' ') + 1);
                EXPECT_TRUE(out.emplace(name, std::stod(limit)).second) << name << " listed twice";
            }
        }
    }
    return out;
}

TEST(KernelTable, EveryLiveIdHasItsDocumentedRelRmsLimit) {
    const std::map<std::string, double> docs = documented_limits();
    size_t live = 0;
    for (uint32_t id = 0; id < kGgmlTypeCount; ++id) {
        const T t = static_cast<T>(id);
        SCOPED_TRACE(kTypeTraits[id].name);
        if (!type_id_valid(id)) {
            EXPECT_LT(reference_kernels()[id].max_rel_rms, 0);
            EXPECT_THROW(max_rel_rms(t), FormatError);
            continue;
        }
        ++live;
        const double limit = max_rel_rms(t);
        EXPECT_TRUE(limit >= 0 && limit <= 1) << limit;
        EXPECT_EQ(limit, reference_kernels()[id].max_rel_rms);
        ASSERT_TRUE(docs.count(std::string(kTypeTraits[id].name))) << "no row in docs/matmul.md";
        EXPECT_EQ(docs.at(std::string(kTypeTraits[id].name)), limit);
    }
    EXPECT_EQ(live, 34u);
    EXPECT_EQ(docs.size(), live);  // no stale rows
    // Anchors: the lossless-by-value types and the measured ones.
    EXPECT_EQ(max_rel_rms(T::I32), 0);
    EXPECT_EQ(max_rel_rms(T::Q4_K), 0.12);
    EXPECT_EQ(max_rel_rms(T::Q1_0), 0.8);
    EXPECT_EQ(max_rel_rms(T::NVFP4), 0.2);
}

TEST(KernelTable, QuantizableTypesAndImatrixRulesAreGgmls) {
    // ggml_quantize_chunk's switch (ggml 0.11.1), minus NVFP4 (no reference quantizer here).
    const std::set<T> quantizable = {T::F16,   T::BF16,    T::Q4_0,  T::Q4_1,  T::Q5_0,  T::Q5_1,    T::Q8_0,
                                     T::Q2_K,  T::Q3_K,    T::Q4_K,  T::Q5_K,  T::Q6_K,  T::IQ2_XXS, T::IQ2_XS,
                                     T::IQ2_S, T::IQ3_XXS, T::IQ3_S, T::IQ1_S, T::IQ1_M, T::IQ4_NL,  T::IQ4_XS,
                                     T::TQ1_0, T::TQ2_0,   T::MXFP4, T::Q1_0};
    // ggml_quantize_requires_imatrix.
    const std::set<T> required = {T::IQ2_XXS, T::IQ2_XS, T::IQ1_S};
    // Quantizers that never read importance weights.
    const std::set<T> ignored = {T::F16, T::BF16, T::Q8_0, T::TQ1_0, T::TQ2_0, T::MXFP4, T::Q1_0};
    for (uint32_t id = 0; id < kGgmlTypeCount; ++id) {
        const T t = static_cast<T>(id);
        const TypeKernels& k = reference_kernels()[id];
        SCOPED_TRACE(kTypeTraits[id].name);
        EXPECT_EQ(can_quantize(t), quantizable.count(t) == 1);
        EXPECT_EQ(quantize_requires_imatrix(t), required.count(t) == 1);
        if (!k.quantize) continue;
        const Imatrix want = required.count(t)  ? Imatrix::Required
                             : ignored.count(t) ? Imatrix::Ignored
                                                : Imatrix::Optional;
        EXPECT_EQ(k.imatrix, want);
    }
}

TEST(Dispatch, ScalarTableIsTheReference) {
    const KernelTable& s = kernel_table(Isa::Scalar);
    const KernelTable& r = reference_kernels();
    for (uint32_t id = 0; id < kGgmlTypeCount; ++id) {
        EXPECT_EQ(s[id].to_float, r[id].to_float);
        EXPECT_EQ(s[id].quantize, r[id].quantize);
        EXPECT_EQ(s[id].fast.plain, nullptr);
        EXPECT_EQ(s[id].fast.weighted, nullptr);
    }
    EXPECT_EQ(isa_name(Isa::Scalar), "scalar");
}

TEST(Dispatch, Avx2KernelsOnlyOnX86) {
    const KernelTable& a = kernel_table(Isa::Avx2);
    std::set<T> plain, weighted;
    for (uint32_t id = 0; id < kGgmlTypeCount; ++id) {
        EXPECT_EQ(a[id].quantize, reference_kernels()[id].quantize);  // the fallback stays the reference
        if (a[id].fast.plain) plain.insert(static_cast<T>(id));
        if (a[id].fast.weighted) weighted.insert(static_cast<T>(id));
    }
#if defined(__x86_64__)
    // IQ2_XXS, IQ2_XS and IQ1_S have no plain path: ggml refuses them without importance weights.
    EXPECT_EQ(plain, (std::set<T>{T::F16, T::BF16, T::Q8_0, T::Q4_0, T::Q2_K, T::Q3_K, T::Q4_K, T::Q5_K, T::Q6_K,
                                  T::IQ4_NL, T::IQ4_XS, T::IQ2_S, T::IQ3_XXS, T::IQ3_S, T::IQ1_M}));
    EXPECT_EQ(weighted,
              (std::set<T>{T::Q4_0, T::Q4_1, T::Q5_0, T::Q5_1, T::Q2_K, T::Q3_K, T::Q4_K, T::Q5_K, T::Q6_K, T::IQ4_NL,
                           T::IQ4_XS, T::IQ2_XXS, T::IQ2_XS, T::IQ2_S, T::IQ3_XXS, T::IQ3_S, T::IQ1_S, T::IQ1_M}));
#else
    EXPECT_TRUE(plain.empty());
    EXPECT_TRUE(weighted.empty());
    EXPECT_EQ(detected_isa(), Isa::Scalar);
#endif
}

// The AVX-512 table is the AVX2 one with the AVX-512 quantizers over it, for both AVX-512 ISAs;
// AVX-VNNI keeps the AVX2 table.
TEST(Dispatch, Avx512TableReplacesOnlyItsTypes) {
    const KernelTable& a = kernel_table(Isa::Avx2);
    const KernelTable& b = kernel_table(Isa::Avx512);
    std::set<T> differ;
    for (uint32_t id = 0; id < kGgmlTypeCount; ++id) {
        if (a[id].fast.plain != b[id].fast.plain || a[id].fast.weighted != b[id].fast.weighted)
            differ.insert(static_cast<T>(id));
    }
#if defined(__x86_64__)
    EXPECT_EQ(differ, (std::set<T>{T::IQ2_XXS, T::IQ2_XS, T::Q2_K, T::Q3_K, T::Q4_K, T::Q5_K, T::Q6_K}));
    // Q3_K keeps AVX2's kernel without weights (the AVX-512 file has only make_qx_quants).
    EXPECT_EQ(a[static_cast<uint32_t>(T::Q3_K)].fast.plain, b[static_cast<uint32_t>(T::Q3_K)].fast.plain);
    EXPECT_NE(a[static_cast<uint32_t>(T::Q3_K)].fast.weighted, b[static_cast<uint32_t>(T::Q3_K)].fast.weighted);
#else
    EXPECT_TRUE(differ.empty());
#endif
    EXPECT_EQ(&kernel_table(Isa::Avx512Vnni), &b);
    EXPECT_EQ(&kernel_table(Isa::AvxVnni), &a);
}

// One CPU detection for quantizers and GEMVs: detected_isa() is the best ISA cpu_runs() accepts.
TEST(Dispatch, DetectedIsaIsTheBestTheCpuRuns) {
    EXPECT_EQ(isa_name(Isa::Avx1), "avx1");
    EXPECT_EQ(isa_name(Isa::Avx2), "avx2");
    EXPECT_EQ(isa_name(Isa::AvxVnni), "avxvnni");
    EXPECT_EQ(isa_name(Isa::Avx512), "avx512");
    EXPECT_EQ(isa_name(Isa::Avx512Vnni), "avx512vnni");
    EXPECT_TRUE(cpu_runs(Isa::Scalar));
    Isa best = Isa::Scalar;  // the last (most preferred) ISA the CPU runs
    for (Isa i : {Isa::Avx1, Isa::Avx2, Isa::AvxVnni, Isa::Avx512, Isa::Avx512Vnni})
        if (cpu_runs(i)) best = i;
    EXPECT_EQ(detected_isa(), best);
    if (cpu_runs(Isa::Avx2)) {
        EXPECT_TRUE(cpu_runs(Isa::Avx1));  // AVX2 implies AVX
    }
    for (Isa i : {Isa::AvxVnni, Isa::Avx512, Isa::Avx512Vnni}) {
        if (cpu_runs(i)) {
            EXPECT_TRUE(cpu_runs(Isa::Avx2)) << isa_name(i) << " implies AVX2 + F16C";
        }
    }
    if (cpu_runs(Isa::Avx512Vnni)) {
        EXPECT_TRUE(cpu_runs(Isa::Avx512));
    }
#if !defined(__x86_64__)
    EXPECT_FALSE(cpu_runs(Isa::Avx1));
    EXPECT_FALSE(cpu_runs(Isa::Avx2));
#endif
}

// ctest runs this file once more with OIW_ISA=scalar (CMakeLists.txt): then nothing optimized runs.
TEST(Dispatch, ActiveIsaHonoursOiwIsa) {
    EXPECT_EQ(active_isa(), forced_scalar() ? Isa::Scalar : detected_isa());
    if (active_isa() != Isa::Scalar) return;
    for (uint32_t id = 0; id < kGgmlTypeCount; ++id) {
        if (!type_id_valid(id)) continue;
        EXPECT_FALSE(has_fast_path(static_cast<T>(id), false)) << kTypeTraits[id].name;
        EXPECT_FALSE(has_fast_path(static_cast<T>(id), true)) << kTypeTraits[id].name;
    }
}

}  // namespace
}  // namespace oiw
