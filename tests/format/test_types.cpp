// The ggml type table: ids, names, block sizes and tombstones as in ggml 0.11.
#include <gtest/gtest.h>

#include <algorithm>

#include "libformat/types.h"

namespace oiw {
namespace {

TEST(TypeTable, SizesMatchGgml) {
    struct Row {
        uint32_t id;
        const char* name;
        uint32_t bs, ts;
    };
    const Row rows[] = {
        {0, "F32", 1, 4},         {1, "F16", 1, 2},         {2, "Q4_0", 32, 18},      {3, "Q4_1", 32, 20},
        {6, "Q5_0", 32, 22},      {7, "Q5_1", 32, 24},      {8, "Q8_0", 32, 34},      {9, "Q8_1", 32, 36},
        {10, "Q2_K", 256, 84},    {11, "Q3_K", 256, 110},   {12, "Q4_K", 256, 144},   {13, "Q5_K", 256, 176},
        {14, "Q6_K", 256, 210},   {15, "Q8_K", 256, 292},   {16, "IQ2_XXS", 256, 66}, {17, "IQ2_XS", 256, 74},
        {18, "IQ3_XXS", 256, 98}, {19, "IQ1_S", 256, 50},   {20, "IQ4_NL", 32, 18},   {21, "IQ3_S", 256, 110},
        {22, "IQ2_S", 256, 82},   {23, "IQ4_XS", 256, 136}, {24, "I8", 1, 1},         {25, "I16", 1, 2},
        {26, "I32", 1, 4},        {27, "I64", 1, 8},        {28, "F64", 1, 8},        {29, "IQ1_M", 256, 56},
        {30, "BF16", 1, 2},       {34, "TQ1_0", 256, 54},   {35, "TQ2_0", 256, 66},   {39, "MXFP4", 32, 17},
        {40, "NVFP4", 64, 36},    {41, "Q1_0", 128, 18}};
    for (const auto& r : rows) {
        SCOPED_TRACE(r.name);
        auto t = type_traits(r.id);
        ASSERT_TRUE(t.has_value());
        EXPECT_EQ(t->name, r.name);
        EXPECT_EQ(t->block_size, r.bs);
        EXPECT_EQ(t->type_size, r.ts);
        EXPECT_FALSE(t->removed);
        EXPECT_TRUE(type_id_valid(r.id));
        EXPECT_EQ(type_from_name(r.name), static_cast<GgmlType>(r.id));
    }
    EXPECT_EQ(std::size(rows), static_cast<size_t>(std::count_if(kTypeTraits.begin(), kTypeTraits.end(),
                                                                 [](const TypeTraits& t) { return !t.removed; })));
}

TEST(TypeTable, RemovedIdsAreTombstones) {
    for (uint32_t id : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u}) {
        auto t = type_traits(id);
        ASSERT_TRUE(t.has_value());
        EXPECT_TRUE(t->removed) << id;
        EXPECT_FALSE(type_id_valid(id));
        EXPECT_FALSE(type_from_name(t->name).has_value()) << t->name;
    }
    EXPECT_FALSE(type_traits(kGgmlTypeCount).has_value());
    EXPECT_FALSE(type_id_valid(kGgmlTypeCount));
}

TEST(TypeTable, RowSizeAndNames) {
    EXPECT_EQ(row_size(GgmlType::Q4_K, 4096), 4096u / 256 * 144);
    EXPECT_EQ(row_size(GgmlType::F16, 576), 1152u);
    EXPECT_EQ(type_from_name("q4_k"), GgmlType::Q4_K);
    EXPECT_DOUBLE_EQ(type_bpw(GgmlType::Q4_0), 4.5);
    EXPECT_FALSE(type_from_name("Q4_2").has_value());
}

TEST(TypeTable, RowsAreIdOrderedAndSizedByTheBlockStructs) {
    for (uint32_t id = 0; id < kGgmlTypeCount; ++id) EXPECT_EQ(static_cast<uint32_t>(kTypeTraits[id].id), id);
    static_assert(kTypeTraits[static_cast<size_t>(GgmlType::Q4_K)].type_size == sizeof(block_q4_K));
    EXPECT_EQ(traits(GgmlType::IQ4_XS).type_size, sizeof(block_iq4_xs));
    EXPECT_EQ(traits(GgmlType::Q1_0).type_size, sizeof(block_q1_0));
}

// ggml-cpu.c type_traits_cpu[].vec_dot_type (ggml 0.11.1): the activation type of each dot product.
TEST(TypeTable, VecDotTypeIsGgmlCpus) {
    using T = GgmlType;
    const std::pair<T, std::optional<T>> rows[] = {
        {T::F32, T::F32},      {T::F16, T::F16},       {T::BF16, T::BF16},     {T::Q4_0, T::Q8_0},
        {T::Q4_1, T::Q8_1},    {T::Q5_0, T::Q8_0},     {T::Q5_1, T::Q8_1},     {T::Q8_0, T::Q8_0},
        {T::Q8_1, T::Q8_1},    {T::Q2_K, T::Q8_K},     {T::Q6_K, T::Q8_K},     {T::Q8_K, std::nullopt},
        {T::IQ2_XXS, T::Q8_K}, {T::IQ1_M, T::Q8_K},    {T::IQ4_NL, T::Q8_0},   {T::IQ4_XS, T::Q8_K},
        {T::TQ1_0, T::Q8_K},   {T::TQ2_0, T::Q8_K},    {T::MXFP4, T::Q8_0},    {T::NVFP4, T::Q8_0},
        {T::Q1_0, T::Q8_0},    {T::I32, std::nullopt}, {T::F64, std::nullopt},
    };
    for (const auto& [t, dot] : rows) EXPECT_EQ(traits(t).vec_dot_type, dot) << type_name(t);
}

}  // namespace
}  // namespace oiw
