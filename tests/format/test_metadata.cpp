// Metadata and GgufValue: values cannot be built with a payload that does not match their type;
// Metadata keeps order, looks keys up by hash, and its typed getters range-check before a value
// becomes a count (naming the key and the value).
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "converters/requant/requant_plan.h"
#include "libformat/gguf/metadata.h"
#include "tests/support/helpers.h"

namespace oiw {
namespace {

GgufKV u32(std::string key, uint32_t v) { return {std::move(key), GgufValue::make_scalar<uint32_t>(GgufType::U32, v)}; }

void expect_error(const std::function<void()>& f, ErrorKind kind, const std::vector<std::string>& needles) {
    try {
        f();
        ADD_FAILURE() << "no error";
    } catch (const FormatError& e) {
        EXPECT_EQ(e.kind(), kind) << e.what();
        for (const auto& n : needles)
            EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << n << " missing from: " << e.what();
    }
}

TEST(GgufValue, FactoriesRefuseMismatchedPayloads) {
    EXPECT_THROW(GgufValue::make_scalar<uint64_t>(GgufType::U32, 1), std::invalid_argument);
    EXPECT_THROW(GgufValue::make_scalar<float>(GgufType::F64, 1.f), std::invalid_argument);
    EXPECT_THROW(GgufValue::make_scalar<uint8_t>(GgufType::BOOL, 1), std::invalid_argument);
    const std::vector<uint8_t> three = {1, 2, 3};
    EXPECT_THROW(GgufValue::from_bytes(GgufType::U32, three), std::invalid_argument);
    EXPECT_THROW(GgufValue::from_bytes(GgufType::STRING, three), std::invalid_argument);
    EXPECT_THROW(GgufValue::make_array(GgufType::U16, three, 2), std::invalid_argument);
    EXPECT_THROW(GgufValue::make_array(GgufType::ARRAY, {}, 0), std::invalid_argument);
    EXPECT_THROW(GgufValue::make_array(GgufType::STRING, {}, 0), std::invalid_argument);
    EXPECT_THROW(GgufValue::make_array(GgufType::U8, {}, UINT64_MAX), std::invalid_argument);

    const GgufValue v = GgufValue::make_scalar<int16_t>(GgufType::I16, -3);
    EXPECT_EQ(v.type(), GgufType::I16);
    EXPECT_EQ(v.as_int(), -3);
    const GgufValue a = GgufValue::make_array(GgufType::U16, {1, 0, 2, 0}, 2);
    EXPECT_EQ(a.count(), 2u);
    EXPECT_EQ(a.array_number(1), 2.0);
    EXPECT_EQ(a.to_string(), "[1, 2]");
}

TEST(GgufValue, AsIntIsExactAndNeverWraps) {
    EXPECT_EQ(GgufValue::make_scalar<uint64_t>(GgufType::U64, uint64_t{1} << 63).as_int(), std::nullopt);
    EXPECT_EQ(GgufValue::make_scalar<uint64_t>(GgufType::U64, INT64_MAX).as_int(), INT64_MAX);
    EXPECT_EQ(GgufValue::make_scalar<int64_t>(GgufType::I64, INT64_MIN).as_int(), INT64_MIN);
    EXPECT_EQ(GgufValue::make_scalar<float>(GgufType::F32, 1.f).as_int(), std::nullopt);
}

TEST(Metadata, OrderedHashedLookupSetEraseDuplicates) {
    Metadata m({u32("a", 1), u32("b", 2), u32("c", 3)}, "m.gguf");
    ASSERT_EQ(m.size(), 3u);
    EXPECT_EQ(m.find("b")->as_int(), 2);
    EXPECT_EQ(m.find("z"), nullptr);
    EXPECT_TRUE(m.set(u32("b", 20)));  // in place
    EXPECT_FALSE(m.set(u32("d", 4)));  // appended
    EXPECT_TRUE(m.erase("a"));
    EXPECT_FALSE(m.erase("a"));
    std::vector<std::string> keys;
    for (const auto& kv : m) keys.push_back(kv.key);
    EXPECT_EQ(keys, (std::vector<std::string>{"b", "c", "d"}));
    // The index follows the erase.
    EXPECT_EQ(m.find("b")->as_int(), 20);
    EXPECT_EQ(m.find("c")->as_int(), 3);
    EXPECT_EQ(m.find("d")->as_int(), 4);
    expect_error([&] { m.add(u32("c", 9)); }, ErrorKind::DuplicateKey, {"m.gguf", "key 'c'", "duplicate"});
    expect_error(
        [] {
            Metadata({u32("x", 1), u32("x", 2)}, "dup.gguf");
        },
        ErrorKind::DuplicateKey, {"dup.gguf", "key 'x'"});
}

TEST(Metadata, TypedGettersRangeCheckNamingKeyAndValue) {
    Metadata m({u32("n", 7),
                u32("big", 0x80000000u),
                {"neg", GgufValue::make_scalar<int32_t>(GgufType::I32, -1)},
                {"huge", GgufValue::make_scalar<uint64_t>(GgufType::U64, UINT64_MAX)},
                {"s", GgufValue::make_string("llama")},
                {"f", GgufValue::make_scalar<float>(GgufType::F32, 2.f)},
                {"arr", GgufValue::make_array(GgufType::I32, {5, 0, 0, 0, 6, 0, 0, 0}, 2)}},
               "g.gguf");
    EXPECT_EQ(m.get_uint("n", 10), 7u);
    EXPECT_EQ(m.get_uint("absent", 10), std::nullopt);
    EXPECT_EQ(m.get_int("neg", -5, 5), -1);
    EXPECT_EQ(m.get_string("s"), "llama");
    EXPECT_EQ(m.get_uint("arr", 10, true), 5u);
    expect_error([&] { m.get_uint("big", INT32_MAX); }, ErrorKind::BadKey,
                 {"g.gguf", "key 'big'", "2147483648", "out of range"});
    expect_error([&] { m.get_uint("neg", 10); }, ErrorKind::BadKey, {"key 'neg'", "value -1"});
    expect_error([&] { m.get_uint("huge", UINT64_MAX); }, ErrorKind::BadKey, {"key 'huge'", "18446744073709551615"});
    expect_error([&] { m.get_uint("s", 10); }, ErrorKind::BadKey, {"key 's'", "has type str, expected an integer"});
    expect_error([&] { m.get_uint("f", 10); }, ErrorKind::BadKey, {"key 'f'", "f32"});
    expect_error([&] { m.get_uint("arr", 10); }, ErrorKind::BadKey, {"key 'arr'", "arr"});
    expect_error([&] { m.get_string("n"); }, ErrorKind::BadKey, {"key 'n'", "expected str"});
}

// <arch>.block_count >= 2^31 used to overflow an int (UBSan); now it is refused by name.
TEST(Metadata, BlockCountAboveIntMaxIsRefused) {
    std::vector<GgufKV> kvs = {{"general.architecture", GgufValue::make_string("llama")},
                               u32("llama.block_count", 0x80000000u)};
    expect_error([&] { quant_model_info(kvs); }, ErrorKind::BadKey, {"key 'llama.block_count'", "2147483648"});
    kvs[1] = u32("llama.block_count", 32);
    EXPECT_EQ(quant_model_info(kvs).n_layer, 32);
}

}  // namespace
}  // namespace oiw
