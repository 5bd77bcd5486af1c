// GGUF metadata: value types, values that always match their type, and Metadata, the one ordered
// key/value container (hashed lookup, typed range-checked getters) used by files read, planned
// outputs and the editor.
#pragma once
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace oiw {

// Bytes of a string value that human-readable renderings (GgufValue::to_string) show.
inline constexpr size_t kMaxShownString = 4096;

enum class GgufType : uint32_t {
    U8 = 0,
    I8 = 1,
    U16 = 2,
    I16 = 3,
    U32 = 4,
    I32 = 5,
    F32 = 6,
    BOOL = 7,
    STRING = 8,
    ARRAY = 9,
    U64 = 10,
    I64 = 11,
    F64 = 12,
};
inline constexpr uint32_t kGgufTypeCount = 13;

// Lower-case name of a value type ("u32", "str", "arr").
std::string_view gguf_type_name(GgufType t);
// Parses a value type name as used on command lines: u8 i8 u16 i16 u32 i32 f32 bool str u64 i64 f64.
std::optional<GgufType> gguf_type_from_name(std::string_view name);
// Byte size of a fixed-size value type; 0 for STRING and ARRAY.
size_t gguf_type_size(GgufType t);

// The value type a C++ scalar is stored as (uint8_t -> U8, float -> F32, ...).
template <typename T>
constexpr GgufType gguf_type_of() {
    if constexpr (std::is_same_v<T, uint8_t>)
        return GgufType::U8;
    else if constexpr (std::is_same_v<T, int8_t>)
        return GgufType::I8;
    else if constexpr (std::is_same_v<T, uint16_t>)
        return GgufType::U16;
    else if constexpr (std::is_same_v<T, int16_t>)
        return GgufType::I16;
    else if constexpr (std::is_same_v<T, uint32_t>)
        return GgufType::U32;
    else if constexpr (std::is_same_v<T, int32_t>)
        return GgufType::I32;
    else if constexpr (std::is_same_v<T, float>)
        return GgufType::F32;
    else if constexpr (std::is_same_v<T, uint64_t>)
        return GgufType::U64;
    else if constexpr (std::is_same_v<T, int64_t>)
        return GgufType::I64;
    else if constexpr (std::is_same_v<T, double>)
        return GgufType::F64;
    else
        static_assert(sizeof(T) == 0, "not a GGUF scalar type");
}

// One metadata value: a scalar, a string, or an array of fixed-size scalars or of strings (arrays
// of arrays are refused, as ggml refuses them). Built only through the factories below, so its
// payload always matches its type; they throw std::invalid_argument on a mismatch (a caller bug).
class GgufValue {
public:
    static GgufValue make_string(std::string s);
    static GgufValue make_bool(bool b);
    // Scalar of type `t`, which must be the type T is stored as (gguf_type_of<T>()).
    template <typename T>
    static GgufValue make_scalar(GgufType t, T v);
    // Fixed-size scalar of type `t` from its little-endian bytes (size must be gguf_type_size(t)).
    static GgufValue from_bytes(GgufType t, std::span<const uint8_t> bytes);
    static GgufValue make_string_array(std::vector<std::string> v);
    // Array of `count` fixed-size `elem_type` elements packed little-endian in `packed`.
    static GgufValue make_array(GgufType elem_type, std::vector<uint8_t> packed, uint64_t count);

    GgufType type() const { return type_; }
    GgufType elem_type() const { return elem_type_; }                     // arrays only
    uint64_t count() const { return count_; }                             // arrays: number of elements
    std::span<const uint8_t> raw() const { return raw_; }                 // fixed-size scalar or packed array elements
    const std::vector<std::string>& strings() const { return strings_; }  // STRING scalar (one entry) or string array

    bool is_array() const { return type_ == GgufType::ARRAY; }
    bool is_integer() const;  // any of the 8 integer scalar types
    // Exact scalar integer value (integer types; bool reads as 0/1); nullopt for other types and
    // for a u64 above INT64_MAX.
    std::optional<int64_t> as_int() const;
    // Scalar numeric value (integer, float, bool) as double; nullopt otherwise.
    std::optional<double> as_double() const;
    // STRING scalar; nullptr otherwise.
    const std::string* as_string() const;
    // Numeric array element i as double (elem type must be fixed-size).
    double array_number(uint64_t i) const;
    // Human-readable rendering; arrays show at most `max_elems` elements then "... (N total)".
    // A string longer than kMaxShownString shows its first kMaxShownString bytes, then its length.
    std::string to_string(size_t max_elems = 8) const;
    bool operator==(const GgufValue&) const = default;

private:
    GgufValue() = default;
    GgufType type_ = GgufType::U8;
    GgufType elem_type_ = GgufType::U8;
    std::vector<uint8_t> raw_;
    std::vector<std::string> strings_;
    uint64_t count_ = 0;
};

template <typename T>
GgufValue GgufValue::make_scalar(GgufType t, T v) {
    std::vector<uint8_t> b(sizeof(T));
    std::memcpy(b.data(), &v, sizeof(T));
    if (t != gguf_type_of<T>())
        throw std::invalid_argument("GgufValue::make_scalar: C++ type does not match the value type");
    return from_bytes(t, b);
}

struct GgufKV {
    std::string key;
    GgufValue value;
    bool operator==(const GgufKV&) const = default;
};

// Ordered key/value pairs with unique keys and hashed lookup. `source` (a file path, or a label
// such as "(planned output)") is named in the errors it throws.
class Metadata {
public:
    Metadata() = default;
    // Takes `kvs` in order; a repeated key throws FormatError(DuplicateKey) naming `source`.
    Metadata(std::vector<GgufKV> kvs, std::string source = {});

    const std::string& source() const { return source_; }
    size_t size() const { return kvs_.size(); }
    bool empty() const { return kvs_.empty(); }
    const GgufKV& operator[](size_t i) const { return kvs_[i]; }
    const GgufKV& back() const { return kvs_.back(); }
    auto begin() const { return kvs_.begin(); }
    auto end() const { return kvs_.end(); }
    const std::vector<GgufKV>& entries() const { return kvs_; }

    // The value of `key`; nullptr when absent.
    const GgufValue* find(std::string_view key) const;
    bool contains(std::string_view key) const { return find(key) != nullptr; }
    // Appends; a key already present throws FormatError(DuplicateKey).
    void add(GgufKV kv);
    // Replaces the value of an existing key in place, or appends. Returns true when it replaced.
    bool set(GgufKV kv);
    // Removes `key`, keeping the order of the others. Returns false when absent.
    bool erase(std::string_view key);

    // Typed getters: nullopt when the key is absent; a value of another type, or an integer
    // outside [min, max], throws FormatError naming the source, the key and the value.
    std::optional<std::string> get_string(std::string_view key) const;
    std::optional<int64_t> get_int(std::string_view key, int64_t min, int64_t max) const;
    // get_int over [0, max]. With `first_of_array`, a numeric array yields its element 0 (how
    // llama.cpp reads per-layer arrays such as head_count_kv).
    std::optional<uint64_t> get_uint(std::string_view key, uint64_t max, bool first_of_array = false) const;

    bool operator==(const Metadata& o) const { return kvs_ == o.kvs_; }

private:
    std::string source_;
    std::vector<GgufKV> kvs_;
    std::unordered_map<std::string, size_t> index_;  // key -> position in kvs_
};

}  // namespace oiw
