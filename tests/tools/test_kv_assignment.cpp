// KEY=TYPE:VALUE parsing (tools/common/tool_support.h): values read as llama.cpp's --override-kv
// reads them (base-10 integers, decimal reals, bool true/false), but strictly: out-of-range,
// overflowing, underflowing and trailing-garbage values are one-line errors naming the key.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "libformat/error.h"
#include "tools/common/tool_support.h"

namespace oiw {
namespace {

template <typename T>
T scalar(const GgufKV& kv) {
    T v;
    std::memcpy(&v, kv.value.raw().data(), sizeof v);
    return v;
}

std::string error_of(std::string_view spec) {
    try {
        parse_kv_assignment(spec);
    } catch (const FormatError& e) {
        return e.what();
    }
    return "(no error)";
}

TEST(KvAssignment, IntegersAreBaseTen) {
    EXPECT_EQ(scalar<int32_t>(parse_kv_assignment("a.b=int:010")), 10);  // std::atol, not octal
    EXPECT_EQ(scalar<uint32_t>(parse_kv_assignment("a.b=u32:0010")), 10u);
    EXPECT_EQ(scalar<int8_t>(parse_kv_assignment("a.b=i8:-128")), -128);
    EXPECT_EQ(scalar<int64_t>(parse_kv_assignment("a.b=i64:+42")), 42);
    EXPECT_EQ(scalar<uint64_t>(parse_kv_assignment("a.b=u64:18446744073709551615")),
              std::numeric_limits<uint64_t>::max());
    EXPECT_EQ(error_of("a.b=u32:0x10"), "key 'a.b': '0x10' is not a base-10 integer from 0 to 4294967295 (u32)");
}

TEST(KvAssignment, OutOfRangeAndGarbageIntegersAreRefused) {
    for (const char* spec :
         {"a.b=u64:-1", "a.b=u64: -1", "a.b=u64:18446744073709551616", "a.b=i8:300", "a.b=i8:-129", "a.b=u8:256",
          "a.b=u16:65536", "a.b=i32:2147483648", "a.b=u32:12abc", "a.b=u32:", "a.b=i32: 5", "a.b=i32:5 ", "a.b=i32:1e3",
          "a.b=u32:+-1", "a.b=u32:++1", "a.b=i64:9223372036854775808"}) {
        const std::string e = error_of(spec);
        EXPECT_EQ(e.rfind("key 'a.b': '", 0), 0u) << spec << ": " << e;
        EXPECT_NE(e.find("is not a base-10 integer"), std::string::npos) << spec << ": " << e;
    }
    EXPECT_EQ(error_of("a.b=i8:300"), "key 'a.b': '300' is not a base-10 integer from -128 to 127 (i8)");
}

TEST(KvAssignment, RealsMustBeFiniteAndRepresentable) {
    EXPECT_EQ(scalar<float>(parse_kv_assignment("a.b=f32:0.5")), 0.5f);
    EXPECT_EQ(scalar<float>(parse_kv_assignment("a.b=float:-1e-3")), -1e-3f);
    EXPECT_EQ(scalar<float>(parse_kv_assignment("a.b=f32:0")), 0.0f);
    EXPECT_EQ(scalar<float>(parse_kv_assignment("a.b=f32:0.0e5")), 0.0f);
    EXPECT_EQ(scalar<float>(parse_kv_assignment("a.b=f32:1e-40")), 1e-40f);  // subnormal: representable
    EXPECT_EQ(scalar<double>(parse_kv_assignment("a.b=f64:1e300")), 1e300);
    EXPECT_EQ(error_of("a.b=f32:1e39"),
              "key 'a.b': '1e39' is out of range for f32 (finite, magnitude 1e-45 to 3.4028235e+38)");
    for (const char* spec : {"a.b=f32:1e-50", "a.b=f32:-1e39", "a.b=f64:1e400", "a.b=f64:1e-400", "a.b=f32:inf",
                             "a.b=f32:nan", "a.b=f64:-inf"})
        EXPECT_NE(error_of(spec).find("is out of range for f"), std::string::npos) << spec << ": " << error_of(spec);
    for (const char* spec : {"a.b=f32:", "a.b=f32:1.5x", "a.b=f32:0x1p3", "a.b=f32: 1", "a.b=f64:1,5", "a.b=f32:++1"})
        EXPECT_NE(error_of(spec).find("is not a number"), std::string::npos) << spec << ": " << error_of(spec);
}

TEST(KvAssignment, BoolsAreTrueOrFalse) {
    EXPECT_EQ(parse_kv_assignment("a.b=bool:true").value.raw()[0], 1);
    EXPECT_EQ(parse_kv_assignment("a.b=bool:false").value.raw()[0], 0);
    EXPECT_EQ(error_of("a.b=bool:1"), "key 'a.b': '1' is not a bool (true/false)");
    EXPECT_EQ(error_of("a.b=bool:TRUE"), "key 'a.b': 'TRUE' is not a bool (true/false)");
}

// The key in an error message is escaped: one line whatever bytes it holds.
TEST(KvAssignment, ErrorsAreOneLine) {
    const std::string e = error_of(std::string_view("a\nb\x1b[2J=u8:999"));
    EXPECT_EQ(e, "key 'a\\nb\\x1b[2J': '999' is not a base-10 integer from 0 to 255 (u8)");
}

}  // namespace
}  // namespace oiw
