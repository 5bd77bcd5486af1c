// The ggml type table: ids, names, block sizes and tombstones as in ggml 0.11.
#include <gtest/gtest.h>

#include "libformat/types.h"

namespace oiw {
namespace {

TEST(TypeTable, SizesMatchGgml) {
    struct Row { uint32_t id; const char* name; uint32_t bs, ts; };
    const Row rows[] = {{0, "F32", 1, 4},       {1, "F16", 1, 2},       {2, "Q4_0", 32, 18},    {3, "Q4_1", 32, 20},
                        {6, "Q5_0", 32, 22},    {7, "Q5_1", 32, 24},    {8, "Q8_0", 32, 34},    {9, "Q8_1", 32, 36},
                        {10, "Q2_K", 256, 84},  {11, "Q3_K", 256, 110}, {12, "Q4_K", 256, 144}, {13, "Q5_K", 256, 176},
                        {14, "Q6_K", 256, 210}, {15, "Q8_K", 256, 292}, {16, "IQ2_XXS", 256, 66}, {17, "IQ2_XS", 256, 74},
                        {18, "IQ3_XXS", 256, 98}, {19, "IQ1_S", 256, 50}, {20, "IQ4_NL", 32, 18}, {21, "IQ3_S", 256, 110},
                        {22, "IQ2_S", 256, 82}, {23, "IQ4_XS", 256, 136}, {24, "I8", 1, 1}, {25, "I16", 1, 2},
                        {26, "I32", 1, 4},      {27, "I64", 1, 8},      {28, "F64", 1, 8},      {29, "IQ1_M", 256, 56},
                        {30, "BF16", 1, 2},     {34, "TQ1_0", 256, 54}, {35, "TQ2_0", 256, 66}, {39, "MXFP4", 32, 17},
                        {40, "NVFP4", 64, 36},  {41, "Q1_0", 128, 18}};
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
    EXPECT_EQ(std::size(rows), 42u - 8u);
}

TEST(TypeTable, RemovedIdsAreTombstones) {
    for (uint32_t id : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u}) {
        auto t = type_traits(id);
        ASSERT_TRUE(t.has_value());
        EXPECT_TRUE(t->removed) << id;
        EXPECT_FALSE(type_id_valid(id));
        EXPECT_FALSE(type_from_name(t->name).has_value()) << t->name;
    }
    EXPECT_FALSE(type_traits(42).has_value());
    EXPECT_FALSE(type_id_valid(42));
}

TEST(TypeTable, RowSizeAndNames) {
    EXPECT_EQ(row_size(GgmlType::Q4_K, 4096), 4096u / 256 * 144);
    EXPECT_EQ(row_size(GgmlType::F16, 576), 1152u);
    EXPECT_EQ(type_from_name("q4_k"), GgmlType::Q4_K);
    EXPECT_DOUBLE_EQ(type_bpw(GgmlType::Q4_0), 4.5);
    EXPECT_FALSE(type_from_name("Q4_2").has_value());
}

}  // namespace
}  // namespace oiw
