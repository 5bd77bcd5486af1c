#include "libformat/gguf/metadata.h"

#include <algorithm>

#include <fmt/format.h>

#include "libformat/error.h"
#include "libformat/escape.h"

namespace oiw {

namespace {

constexpr size_t kTypeSize[kGgufTypeCount] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
constexpr std::string_view kTypeName[kGgufTypeCount] = {"u8",   "i8",  "u16", "i16", "u32", "i32", "f32",
                                                        "bool", "str", "arr", "u64", "i64", "f64"};

[[noreturn]] void bad_value(const char* what) { throw std::invalid_argument(std::string("GgufValue: ") + what); }

double number_at(GgufType t, const uint8_t* p) {
    auto rd = [p]<typename T>(T) {
        T v;
        std::memcpy(&v, p, sizeof(T));
        return v;
    };
    switch (t) {
        case GgufType::U8: return rd(uint8_t{});
        case GgufType::I8: return rd(int8_t{});
        case GgufType::U16: return rd(uint16_t{});
        case GgufType::I16: return rd(int16_t{});
        case GgufType::U32: return rd(uint32_t{});
        case GgufType::I32: return rd(int32_t{});
        case GgufType::F32: return rd(float{});
        case GgufType::BOOL: return rd(uint8_t{}) != 0;
        case GgufType::U64: return static_cast<double>(rd(uint64_t{}));
        case GgufType::I64: return static_cast<double>(rd(int64_t{}));
        case GgufType::F64: return rd(double{});
        default: return 0;
    }
}

std::string scalar_to_string(GgufType t, const uint8_t* p) {
    switch (t) {
        case GgufType::F32: {
            float f;
            std::memcpy(&f, p, 4);
            return fmt::format("{}", f);
        }
        case GgufType::F64: {
            double f;
            std::memcpy(&f, p, 8);
            return fmt::format("{}", f);
        }
        case GgufType::BOOL: return *p ? "true" : "false";
        case GgufType::U64: {
            uint64_t v;
            std::memcpy(&v, p, 8);
            return fmt::format("{}", v);
        }
        case GgufType::I64: {
            int64_t v;
            std::memcpy(&v, p, 8);
            return fmt::format("{}", v);
        }
        default: return fmt::format("{}", static_cast<int64_t>(number_at(t, p)));
    }
}

// A string value quoted and escaped; one longer than kMaxShownString is cut at a UTF-8 boundary
// and followed by its full length, so a 64 MiB value costs a report 4 KiB, not 64 MiB.
std::string quote(const std::string& s) {
    if (s.size() <= kMaxShownString) return '"' + escape_text(s, '"') + '"';
    size_t cut = kMaxShownString;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
    return '"' + escape_text(std::string_view(s).substr(0, cut), '"') + fmt::format("\"... ({} bytes)", s.size());
}

bool fixed_size(GgufType t) { return gguf_type_size(t) != 0; }

}  // namespace

// ---------------------------------------------------------------------------------------------
// Value types

std::string_view gguf_type_name(GgufType t) {
    auto i = static_cast<uint32_t>(t);
    return i < kGgufTypeCount ? kTypeName[i] : std::string_view("?");
}

std::optional<GgufType> gguf_type_from_name(std::string_view name) {
    for (uint32_t i = 0; i < kGgufTypeCount; ++i)
        if (kTypeName[i] == name && i != static_cast<uint32_t>(GgufType::ARRAY)) return static_cast<GgufType>(i);
    if (name == "string") return GgufType::STRING;
    if (name == "float") return GgufType::F32;
    if (name == "int") return GgufType::I32;
    return std::nullopt;
}

size_t gguf_type_size(GgufType t) {
    auto i = static_cast<uint32_t>(t);
    return i < kGgufTypeCount ? kTypeSize[i] : 0;
}

// ---------------------------------------------------------------------------------------------
// Values

GgufValue GgufValue::make_string(std::string s) {
    GgufValue v;
    v.type_ = GgufType::STRING;
    v.strings_.push_back(std::move(s));
    return v;
}

GgufValue GgufValue::make_bool(bool b) {
    const uint8_t byte = b ? 1 : 0;
    return from_bytes(GgufType::BOOL, {&byte, 1});
}

GgufValue GgufValue::from_bytes(GgufType t, std::span<const uint8_t> bytes) {
    if (!fixed_size(t) || bytes.size() != gguf_type_size(t)) bad_value("scalar bytes do not match the value type");
    GgufValue v;
    v.type_ = t;
    v.raw_.assign(bytes.begin(), bytes.end());
    return v;
}

GgufValue GgufValue::make_string_array(std::vector<std::string> s) {
    GgufValue v;
    v.type_ = GgufType::ARRAY;
    v.elem_type_ = GgufType::STRING;
    v.count_ = s.size();
    v.strings_ = std::move(s);
    return v;
}

GgufValue GgufValue::make_array(GgufType et, std::vector<uint8_t> packed, uint64_t count) {
    if (!fixed_size(et) || count > packed.size() || packed.size() != count * gguf_type_size(et))
        bad_value("packed array bytes do not match the element type and count");
    GgufValue v;
    v.type_ = GgufType::ARRAY;
    v.elem_type_ = et;
    v.count_ = count;
    v.raw_ = std::move(packed);
    return v;
}

bool GgufValue::is_integer() const {
    switch (type_) {
        case GgufType::U8:
        case GgufType::I8:
        case GgufType::U16:
        case GgufType::I16:
        case GgufType::U32:
        case GgufType::I32:
        case GgufType::U64:
        case GgufType::I64: return true;
        default: return false;
    }
}

std::optional<int64_t> GgufValue::as_int() const {
    if (type_ == GgufType::BOOL) return raw_.at(0) != 0;
    if (!is_integer()) return std::nullopt;
    if (type_ == GgufType::U64) {
        uint64_t v;
        std::memcpy(&v, raw_.data(), 8);
        if (v > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
        return static_cast<int64_t>(v);
    }
    if (type_ == GgufType::I64) {
        int64_t v;
        std::memcpy(&v, raw_.data(), 8);
        return v;
    }
    return static_cast<int64_t>(number_at(type_, raw_.data()));
}

std::optional<double> GgufValue::as_double() const {
    if (type_ == GgufType::STRING || type_ == GgufType::ARRAY) return std::nullopt;
    return number_at(type_, raw_.data());
}

const std::string* GgufValue::as_string() const { return type_ == GgufType::STRING ? &strings_.at(0) : nullptr; }

double GgufValue::array_number(uint64_t i) const {
    return number_at(elem_type_, raw_.data() + i * gguf_type_size(elem_type_));
}

std::string GgufValue::to_string(size_t max_elems) const {
    if (type_ == GgufType::STRING) return quote(strings_.at(0));
    if (type_ != GgufType::ARRAY) return scalar_to_string(type_, raw_.data());
    std::string o = "[";
    const uint64_t shown = std::min<uint64_t>(count_, max_elems);
    for (uint64_t i = 0; i < shown; ++i) {
        if (i) o += ", ";
        if (elem_type_ == GgufType::STRING)
            o += quote(strings_[i]);
        else
            o += scalar_to_string(elem_type_, raw_.data() + i * gguf_type_size(elem_type_));
    }
    if (shown < count_) o += fmt::format(", ... ({} total)", count_);
    return o + "]";
}

// ---------------------------------------------------------------------------------------------
// Metadata

Metadata::Metadata(std::vector<GgufKV> kvs, std::string source) : source_(std::move(source)) {
    kvs_.reserve(kvs.size());
    index_.reserve(kvs.size());
    for (auto& kv : kvs) add(std::move(kv));
}

const GgufValue* Metadata::find(std::string_view key) const {
    auto it = index_.find(std::string(key));
    return it == index_.end() ? nullptr : &kvs_[it->second].value;
}

void Metadata::add(GgufKV kv) {
    if (!index_.emplace(kv.key, kvs_.size()).second)
        throw FormatError(ErrorKind::DuplicateKey, source_, "key '" + kv.key + "'", "duplicate key");
    kvs_.push_back(std::move(kv));
}

bool Metadata::set(GgufKV kv) {
    auto it = index_.find(kv.key);
    if (it == index_.end()) {
        add(std::move(kv));
        return false;
    }
    kvs_[it->second].value = std::move(kv.value);
    return true;
}

bool Metadata::erase(std::string_view key) {
    auto it = index_.find(std::string(key));
    if (it == index_.end()) return false;
    const size_t pos = it->second;
    index_.erase(it);
    kvs_.erase(kvs_.begin() + static_cast<std::ptrdiff_t>(pos));
    for (auto& [k, i] : index_)
        if (i > pos) --i;
    return true;
}

std::optional<std::string> Metadata::get_string(std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v) return std::nullopt;
    if (!v->as_string())
        throw FormatError(
            ErrorKind::BadKey, source_, "key '" + std::string(key) + "'",
            fmt::format("has type {}, expected str (value {})", gguf_type_name(v->type()), v->to_string()));
    return *v->as_string();
}

std::optional<int64_t> Metadata::get_int(std::string_view key, int64_t min, int64_t max) const {
    const GgufValue* v = find(key);
    if (!v) return std::nullopt;
    const std::string subject = "key '" + std::string(key) + "'";
    if (!v->is_integer())
        throw FormatError(
            ErrorKind::BadKey, source_, subject,
            fmt::format("has type {}, expected an integer (value {})", gguf_type_name(v->type()), v->to_string()));
    const std::optional<int64_t> i = v->as_int();
    if (!i || *i < min || *i > max)
        throw FormatError(ErrorKind::BadKey, source_, subject,
                          fmt::format("value {} is out of range [{}, {}]", v->to_string(), min, max));
    return i;
}

std::optional<uint64_t> Metadata::get_uint(std::string_view key, uint64_t max, bool first_of_array) const {
    const int64_t hi = static_cast<int64_t>(std::min<uint64_t>(max, INT64_MAX));
    const GgufValue* v = find(key);
    if (first_of_array && v && v->is_array() && v->count() > 0 && fixed_size(v->elem_type())) {
        // Element 0 as a scalar of the element type, checked like one.
        Metadata first(
            {{std::string(key), GgufValue::from_bytes(v->elem_type(), v->raw().first(gguf_type_size(v->elem_type())))}},
            source_);
        return first.get_uint(key, max);
    }
    auto i = get_int(key, 0, hi);
    return i ? std::optional<uint64_t>(static_cast<uint64_t>(*i)) : std::nullopt;
}

}  // namespace oiw
