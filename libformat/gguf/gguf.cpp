#include "libformat/gguf/gguf.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <unordered_set>

#include <fmt/format.h>

#include "libformat/escape.h"
#include "libformat/io/mapped_file.h"

namespace oiw {

namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read little-endian
constexpr int kMaxArrayDepth = 8;
constexpr size_t kMaxTensorName = 63;     // ggml: GGML_MAX_NAME - 1

constexpr size_t kTypeSize[kGgufTypeCount] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
constexpr std::string_view kTypeName[kGgufTypeCount] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32",
                                                         "bool", "str", "arr", "u64", "i64", "f64"};

uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

// Bounded little-endian cursor over the file image; every read is checked against the end.
class Cursor {
public:
    Cursor(std::span<const uint8_t> b, const std::string& file) : b_(b), file_(file) {}
    uint64_t pos() const { return pos_; }
    uint64_t remaining() const { return b_.size() - pos_; }

    void need(uint64_t n, const std::string& subject, const char* what) const {
        if (n > remaining())
            throw FormatError(ErrorKind::Truncated, file_, subject,
                              fmt::format("{} needs {} bytes at offset {} but the file ends at {}", what, n, pos_,
                                          b_.size()));
    }
    template <typename T>
    T get(const std::string& subject, const char* what) {
        need(sizeof(T), subject, what);
        T v;
        std::memcpy(&v, b_.data() + pos_, sizeof(T));
        pos_ += sizeof(T);
        return v;
    }
    std::span<const uint8_t> take(uint64_t n, const std::string& subject, const char* what) {
        need(n, subject, what);
        auto s = b_.subspan(pos_, n);
        pos_ += n;
        return s;
    }
    std::string str(const std::string& subject, const char* what) {
        uint64_t len = get<uint64_t>(subject, what);
        if (len > remaining())
            throw FormatError(ErrorKind::TooLarge, file_, subject,
                              fmt::format("{} length {} exceeds the {} bytes left in the file", what, len, remaining()));
        auto s = take(len, subject, what);
        return std::string(reinterpret_cast<const char*>(s.data()), s.size());
    }

private:
    std::span<const uint8_t> b_;
    const std::string& file_;
    uint64_t pos_ = 0;
};

GgufValue read_value(Cursor& c, GgufType t, const std::string& file, const std::string& key, int depth);

GgufValue read_array(Cursor& c, const std::string& file, const std::string& key, int depth) {
    if (depth >= kMaxArrayDepth)
        throw FormatError(ErrorKind::TooLarge, file, "key '" + key + "'", fmt::format("arrays nested deeper than {}", kMaxArrayDepth));
    const std::string subj = "key '" + key + "'";
    uint32_t et = c.get<uint32_t>(subj, "array element type");
    if (et >= kGgufTypeCount)
        throw FormatError(ErrorKind::BadValueType, file, subj, fmt::format("array element type {} is not a GGUF value type (0..12)", et));
    uint64_t n = c.get<uint64_t>(subj, "array length");
    GgufValue v;
    v.type = GgufType::ARRAY;
    v.elem_type = static_cast<GgufType>(et);
    v.count = n;
    const size_t es = kTypeSize[et];
    // Minimum encoded size per element bounds the count by the bytes left.
    const uint64_t min_elem = es ? es : (v.elem_type == GgufType::STRING ? 8 : 12);
    if (n > c.remaining() / min_elem)
        throw FormatError(ErrorKind::TooLarge, file, subj,
                          fmt::format("array of {} {} elements cannot fit in the {} bytes left", n, kTypeName[et], c.remaining()));
    if (es) {
        auto s = c.take(n * es, subj, "array data");
        v.raw.assign(s.begin(), s.end());
    } else if (v.elem_type == GgufType::STRING) {
        v.strings.reserve(n);
        for (uint64_t i = 0; i < n; ++i) v.strings.push_back(c.str(subj, "array string"));
    } else {
        // No reserve: nested counts are only bounded by the bytes left at each level.
        for (uint64_t i = 0; i < n; ++i) v.arrays.push_back(read_array(c, file, key, depth + 1));
    }
    return v;
}

GgufValue read_value(Cursor& c, GgufType t, const std::string& file, const std::string& key, int depth) {
    if (t == GgufType::ARRAY) return read_array(c, file, key, depth);
    GgufValue v;
    v.type = t;
    if (t == GgufType::STRING) {
        v.strings.push_back(c.str("key '" + key + "'", "string value"));
    } else {
        auto s = c.take(kTypeSize[static_cast<uint32_t>(t)], "key '" + key + "'", "value");
        v.raw.assign(s.begin(), s.end());
    }
    return v;
}

void put_u32(std::vector<uint8_t>& b, uint32_t v) { b.insert(b.end(), reinterpret_cast<uint8_t*>(&v), reinterpret_cast<uint8_t*>(&v) + 4); }
void put_u64(std::vector<uint8_t>& b, uint64_t v) { b.insert(b.end(), reinterpret_cast<uint8_t*>(&v), reinterpret_cast<uint8_t*>(&v) + 8); }
void put_str(std::vector<uint8_t>& b, const std::string& s) {
    put_u64(b, s.size());
    b.insert(b.end(), s.begin(), s.end());
}

void put_array_body(std::vector<uint8_t>& b, const GgufValue& v) {
    put_u32(b, static_cast<uint32_t>(v.elem_type));
    put_u64(b, v.count);
    if (v.elem_type == GgufType::STRING) {
        for (const auto& s : v.strings) put_str(b, s);
    } else if (v.elem_type == GgufType::ARRAY) {
        for (const auto& a : v.arrays) put_array_body(b, a);
    } else {
        b.insert(b.end(), v.raw.begin(), v.raw.end());
    }
}

void put_value(std::vector<uint8_t>& b, const GgufValue& v) {
    put_u32(b, static_cast<uint32_t>(v.type));
    if (v.type == GgufType::ARRAY) put_array_body(b, v);
    else if (v.type == GgufType::STRING) put_str(b, v.strings.at(0));
    else b.insert(b.end(), v.raw.begin(), v.raw.end());
}

// Validates dims/type of a tensor info and derives n_bytes. `file` may be empty (writer side).
void check_tensor_shape(GgufTensorInfo& ti, uint32_t type_id, const std::string& file) {
    const std::string subj = "tensor '" + ti.name + "'";
    if (ti.n_dims > kMaxDims)
        throw FormatError(ErrorKind::BadDims, file, subj, fmt::format("n_dims {} exceeds the maximum of {}", ti.n_dims, kMaxDims));
    for (uint32_t d = 0; d < ti.n_dims; ++d)
        if (ti.ne[d] < 1)
            throw FormatError(ErrorKind::BadDims, file, subj, fmt::format("dimension {} is {} (must be >= 1)", d, ti.ne[d]));
    const int64_t mx = std::numeric_limits<int64_t>::max();
    if (ti.ne[1] > mx / ti.ne[0] || ti.ne[2] > mx / (ti.ne[0] * ti.ne[1]) ||
        ti.ne[3] > mx / (ti.ne[0] * ti.ne[1] * ti.ne[2]))
        throw FormatError(ErrorKind::BadDims, file, subj, "element count overflows int64 (shape " + ti.shape_string() + ")");
    auto tt = type_traits(type_id);
    if (!tt) throw FormatError(ErrorKind::BadType, file, subj, fmt::format("unknown ggml type id {} (valid: 0..{})", type_id, kGgmlTypeCount - 1));
    if (tt->removed)
        throw FormatError(ErrorKind::RemovedType, file, subj,
                          fmt::format("type id {} ({}) is unsupported, removed from ggml", type_id, tt->name));
    ti.type = static_cast<GgmlType>(type_id);
    if (ti.ne[0] % tt->block_size != 0)
        throw FormatError(ErrorKind::BadBlock, file, subj,
                          fmt::format("row length {} is not a multiple of the {} block size {}", ti.ne[0], tt->name, tt->block_size));
    const uint64_t blocks = static_cast<uint64_t>(ti.ne[0]) / tt->block_size;
    const uint64_t rows = static_cast<uint64_t>(ti.n_rows());
    const uint64_t max_bytes = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    if (blocks > max_bytes / tt->type_size || blocks * tt->type_size > max_bytes / rows)
        throw FormatError(ErrorKind::BadDims, file, subj, "byte size overflows int64 (shape " + ti.shape_string() + ", type " + std::string(tt->name) + ")");
    const uint64_t row = blocks * tt->type_size;
    ti.n_bytes = row * rows;
}

uint64_t alignment_of(const std::vector<GgufKV>& kvs, const std::string& file) {
    for (const auto& kv : kvs) {
        if (kv.key != "general.alignment") continue;
        if (kv.value.type != GgufType::U32)
            throw FormatError(ErrorKind::BadAlignment, file, "key 'general.alignment'",
                              fmt::format("has type {}, expected u32", gguf_type_name(kv.value.type)));
        uint32_t a;
        std::memcpy(&a, kv.value.raw.data(), 4);
        if (a == 0 || (a & (a - 1)) != 0)
            throw FormatError(ErrorKind::BadAlignment, file, "key 'general.alignment'", fmt::format("value {} is not a power of two", a));
        return a;
    }
    return kDefaultAlignment;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Values

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

GgufValue GgufValue::make_string(std::string s) {
    GgufValue v;
    v.type = GgufType::STRING;
    v.strings.push_back(std::move(s));
    return v;
}

GgufValue GgufValue::make_bool(bool b) { return make_scalar<uint8_t>(GgufType::BOOL, b ? 1 : 0); }

GgufValue GgufValue::make_string_array(std::vector<std::string> s) {
    GgufValue v;
    v.type = GgufType::ARRAY;
    v.elem_type = GgufType::STRING;
    v.count = s.size();
    v.strings = std::move(s);
    return v;
}

GgufValue GgufValue::make_array(GgufType et, std::vector<uint8_t> packed, uint64_t count) {
    GgufValue v;
    v.type = GgufType::ARRAY;
    v.elem_type = et;
    v.count = count;
    v.raw = std::move(packed);
    return v;
}

bool GgufValue::is_integer() const {
    switch (type) {
        case GgufType::U8: case GgufType::I8: case GgufType::U16: case GgufType::I16:
        case GgufType::U32: case GgufType::I32: case GgufType::U64: case GgufType::I64: return true;
        default: return false;
    }
}

static double number_at(GgufType t, const uint8_t* p) {
    auto rd = [p]<typename T>(T) { T v; std::memcpy(&v, p, sizeof(T)); return v; };
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

std::optional<int64_t> GgufValue::as_int() const {
    if (type == GgufType::BOOL) return raw.at(0) != 0;
    if (!is_integer()) return std::nullopt;
    if (type == GgufType::U64) { uint64_t v; std::memcpy(&v, raw.data(), 8); return static_cast<int64_t>(v); }
    if (type == GgufType::I64) { int64_t v; std::memcpy(&v, raw.data(), 8); return v; }
    return static_cast<int64_t>(number_at(type, raw.data()));
}

std::optional<double> GgufValue::as_double() const {
    if (type == GgufType::STRING || type == GgufType::ARRAY) return std::nullopt;
    return number_at(type, raw.data());
}

const std::string* GgufValue::as_string() const { return type == GgufType::STRING ? &strings.at(0) : nullptr; }

double GgufValue::array_number(uint64_t i) const { return number_at(elem_type, raw.data() + i * gguf_type_size(elem_type)); }

static std::string scalar_to_string(GgufType t, const uint8_t* p) {
    switch (t) {
        case GgufType::F32: { float f; std::memcpy(&f, p, 4); return fmt::format("{}", f); }
        case GgufType::F64: { double f; std::memcpy(&f, p, 8); return fmt::format("{}", f); }
        case GgufType::BOOL: return *p ? "true" : "false";
        case GgufType::U64: { uint64_t v; std::memcpy(&v, p, 8); return fmt::format("{}", v); }
        case GgufType::I64: { int64_t v; std::memcpy(&v, p, 8); return fmt::format("{}", v); }
        default: return fmt::format("{}", static_cast<int64_t>(number_at(t, p)));
    }
}

static std::string quote(const std::string& s) { return '"' + escape_text(s, '"') + '"'; }

std::string GgufValue::to_string(size_t max_elems) const {
    if (type == GgufType::STRING) return quote(strings.at(0));
    if (type != GgufType::ARRAY) return scalar_to_string(type, raw.data());
    std::string o = "[";
    const uint64_t shown = std::min<uint64_t>(count, max_elems);
    for (uint64_t i = 0; i < shown; ++i) {
        if (i) o += ", ";
        if (elem_type == GgufType::STRING) o += quote(strings[i]);
        else if (elem_type == GgufType::ARRAY) o += arrays[i].to_string(max_elems);
        else o += scalar_to_string(elem_type, raw.data() + i * gguf_type_size(elem_type));
    }
    if (shown < count) o += fmt::format(", ... ({} total)", count);
    return o + "]";
}

std::string GgufTensorInfo::shape_string() const {
    std::string s = "[";
    for (uint32_t d = 0; d < n_dims; ++d) s += (d ? ", " : "") + std::to_string(ne[d]);
    return s + "]";
}

// ---------------------------------------------------------------------------------------------
// Reader

GgufFile GgufFile::open(const std::string& path) {
    GgufFile f;
    f.path_ = path;
    f.map_ = std::make_shared<const MappedFile>(path);
    f.bytes_ = f.map_->bytes();
    f.parse_image();
    return f;
}

GgufFile GgufFile::parse(std::span<const uint8_t> bytes, const std::string& name) {
    GgufFile f;
    f.path_ = name;
    f.bytes_ = bytes;
    f.parse_image();
    return f;
}

void GgufFile::parse_image() {
    const std::string& file = path_;
    Cursor c(bytes_, file);
    if (bytes_.size() < 4)
        throw FormatError(ErrorKind::Truncated, file, "header", fmt::format("file is {} bytes, too short for the GGUF magic", bytes_.size()));
    uint32_t magic = c.get<uint32_t>("header", "magic");
    if (magic != kMagic) {
        char m[4];
        std::memcpy(m, &magic, 4);
        std::string shown;
        for (char ch : m) shown += (ch >= 32 && ch < 127) ? std::string(1, ch) : fmt::format("\\x{:02x}", static_cast<unsigned char>(ch));
        throw FormatError(ErrorKind::BadMagic, file, "header", "bad magic '" + shown + "' (expected 'GGUF'): not a GGUF file");
    }
    uint32_t version = c.get<uint32_t>("header", "version");
    if ((version & 0xFFFF) == 0 && version != 0) {
        uint32_t swapped = __builtin_bswap32(version);
        throw FormatError(ErrorKind::BigEndian, file, "header",
                          fmt::format("big-endian GGUF (version reads as {} byte-swapped) is not supported", swapped));
    }
    if (version == 1) throw FormatError(ErrorKind::BadVersion, file, "header", "GGUF version 1 is no longer supported (use v2 or v3)");
    if (version != 2 && version != 3)
        throw FormatError(ErrorKind::BadVersion, file, "header", fmt::format("unsupported GGUF version {} (supported: 2, 3)", version));
    version_ = version;
    uint64_t n_tensors = c.get<uint64_t>("header", "tensor count");
    uint64_t n_kv = c.get<uint64_t>("header", "key/value count");
    // Smallest possible KV is 13 bytes (len + type + u8), smallest tensor info 24 bytes (n_dims 0).
    if (n_kv > c.remaining() / 13)
        throw FormatError(ErrorKind::TooLarge, file, "header", fmt::format("key/value count {} cannot fit in a {}-byte file", n_kv, bytes_.size()));
    if (n_tensors > (c.remaining() - n_kv * 13) / 24)
        throw FormatError(ErrorKind::TooLarge, file, "header", fmt::format("tensor count {} cannot fit in a {}-byte file", n_tensors, bytes_.size()));

    kvs_.clear();
    kvs_.reserve(n_kv);
    std::unordered_set<std::string> seen;
    for (uint64_t i = 0; i < n_kv; ++i) {
        std::string key = c.str(fmt::format("key #{}", i), "key");
        if (key.empty()) throw FormatError(ErrorKind::BadKey, file, fmt::format("key #{}", i), "empty key");
        if (!seen.insert(key).second) throw FormatError(ErrorKind::DuplicateKey, file, "key '" + key + "'", "duplicate key");
        uint32_t t = c.get<uint32_t>("key '" + key + "'", "value type");
        if (t >= kGgufTypeCount)
            throw FormatError(ErrorKind::BadValueType, file, "key '" + key + "'", fmt::format("value type {} is not a GGUF value type (0..12)", t));
        GgufValue v = read_value(c, static_cast<GgufType>(t), file, key, 0);
        kvs_.push_back({std::move(key), std::move(v)});
    }
    alignment_ = alignment_of(kvs_, file);

    tensors_.clear();
    tensors_.reserve(n_tensors);
    std::unordered_set<std::string> names;
    for (uint64_t i = 0; i < n_tensors; ++i) {
        GgufTensorInfo ti;
        ti.name = c.str(fmt::format("tensor #{}", i), "tensor name");
        const std::string subj = "tensor '" + ti.name + "'";
        if (ti.name.size() > kMaxTensorName)
            throw FormatError(ErrorKind::TooLarge, file, subj, fmt::format("name is {} bytes (ggml allows at most {})", ti.name.size(), kMaxTensorName));
        if (!names.insert(ti.name).second) throw FormatError(ErrorKind::DuplicateTensor, file, subj, "duplicate tensor name");
        ti.n_dims = c.get<uint32_t>(subj, "n_dims");
        if (ti.n_dims > kMaxDims)
            throw FormatError(ErrorKind::BadDims, file, subj, fmt::format("n_dims {} exceeds the maximum of {}", ti.n_dims, kMaxDims));
        for (uint32_t d = 0; d < ti.n_dims; ++d) ti.ne[d] = c.get<int64_t>(subj, "dimension");
        uint32_t type_id = c.get<uint32_t>(subj, "type");
        ti.offset = c.get<uint64_t>(subj, "offset");
        check_tensor_shape(ti, type_id, file);
        tensors_.push_back(std::move(ti));
    }
    header_size_ = c.pos();
    data_offset_ = align_up(c.pos(), alignment_);

    // Offsets: aligned, inside the file, non-overlapping.
    const uint64_t data_size = data_offset_ <= bytes_.size() ? bytes_.size() - data_offset_ : 0;
    std::vector<size_t> order(tensors_.size());
    for (size_t i = 0; i < order.size(); ++i) {
        const auto& t = tensors_[i];
        const std::string subj = "tensor '" + t.name + "'";
        if (t.offset % alignment_ != 0)
            throw FormatError(ErrorKind::Misaligned, file, subj, fmt::format("offset {} is not a multiple of the alignment {}", t.offset, alignment_));
        if (t.offset > data_size || t.n_bytes > data_size - t.offset)
            throw FormatError(ErrorKind::OutOfBounds, file, subj,
                              fmt::format("data [{}, +{}) ends past the data section ({} bytes from offset {})", t.offset, t.n_bytes,
                                          data_size, data_offset_));
        order[i] = i;
    }
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return tensors_[a].offset < tensors_[b].offset; });
    for (size_t k = 1; k < order.size(); ++k) {
        const auto& p = tensors_[order[k - 1]];
        const auto& q = tensors_[order[k]];
        if (p.offset + p.n_bytes > q.offset)
            throw FormatError(ErrorKind::Overlap, file, "tensor '" + q.name + "'",
                              fmt::format("data at offset {} overlaps tensor '{}' [{}, +{})", q.offset, p.name, p.offset, p.n_bytes));
    }
}

bool GgufFile::canonical_layout() const {
    if (tensors_.empty()) return bytes_.size() == header_size_ || bytes_.size() == data_offset_;
    uint64_t expect = 0;
    for (const auto& t : tensors_) {
        if (t.offset != expect) return false;
        expect = align_up(t.offset + t.n_bytes, alignment_);
    }
    return bytes_.size() == data_offset_ + expect &&
           std::all_of(bytes_.begin() + header_size_, bytes_.begin() + data_offset_, [](uint8_t b) { return b == 0; });
}

const GgufValue* GgufFile::find(std::string_view key) const {
    for (const auto& kv : kvs_)
        if (kv.key == key) return &kv.value;
    return nullptr;
}

int64_t GgufFile::find_tensor(std::string_view name) const {
    for (size_t i = 0; i < tensors_.size(); ++i)
        if (tensors_[i].name == name) return static_cast<int64_t>(i);
    return -1;
}

std::span<const uint8_t> GgufFile::tensor_data(size_t i) const {
    const auto& t = tensors_.at(i);
    return bytes_.subspan(data_offset_ + t.offset, t.n_bytes);
}

void GgufFile::release_tensor_pages(size_t i) const {
    if (!map_) return;
    const auto& t = tensors_.at(i);
    map_->release(data_offset_ + t.offset, t.n_bytes);
}

// ---------------------------------------------------------------------------------------------
// Writer

std::vector<uint8_t> serialize_gguf_header(uint32_t version, const std::vector<GgufKV>& kvs,
                                           const std::vector<GgufTensorInfo>& tensors) {
    std::vector<uint8_t> b;
    put_u32(b, kMagic);
    put_u32(b, version);
    put_u64(b, tensors.size());
    put_u64(b, kvs.size());
    for (const auto& kv : kvs) {
        put_str(b, kv.key);
        put_value(b, kv.value);
    }
    for (const auto& t : tensors) {
        put_str(b, t.name);
        put_u32(b, t.n_dims);
        for (uint32_t d = 0; d < t.n_dims; ++d) put_u64(b, static_cast<uint64_t>(t.ne[d]));
        put_u32(b, static_cast<uint32_t>(t.type));
        put_u64(b, t.offset);
    }
    return b;
}

GgufWriter::GgufWriter(std::string path, std::vector<std::string> inputs, uint32_t version)
    : path_(std::move(path)), inputs_(std::move(inputs)), version_(version) {
    if (version_ != 2 && version_ != 3)
        throw FormatError(ErrorKind::Usage, path_, "", fmt::format("cannot write GGUF version {}", version_));
}

GgufWriter::~GgufWriter() {
    if (fd_ >= 0) ::close(fd_);
    if (!finished_ && !tmp_path_.empty()) ::unlink(tmp_path_.c_str());
}

void GgufWriter::add_kv(GgufKV kv) {
    if (header_done_) throw FormatError(ErrorKind::Usage, path_, "key '" + kv.key + "'", "metadata added after the header was written");
    for (const auto& k : kvs_)
        if (k.key == kv.key) throw FormatError(ErrorKind::DuplicateKey, path_, "key '" + kv.key + "'", "duplicate key");
    if (kv.key == "general.alignment") alignment_of({kv}, path_);
    kvs_.push_back(std::move(kv));
}

void GgufWriter::set_kvs(std::vector<GgufKV> kvs) {
    kvs_.clear();
    for (auto& kv : kvs) add_kv(std::move(kv));
}

uint64_t GgufWriter::alignment() const { return alignment_of(kvs_, path_); }

GgufTensorInfo make_tensor_info(const std::string& name, GgmlType type, std::span<const int64_t> shape, const std::string& file) {
    const std::string subj = "tensor '" + name + "'";
    if (name.size() > kMaxTensorName)
        throw FormatError(ErrorKind::TooLarge, file, subj, fmt::format("name is {} bytes (ggml allows at most {})", name.size(), kMaxTensorName));
    if (shape.size() > kMaxDims)
        throw FormatError(ErrorKind::BadDims, file, subj, fmt::format("n_dims {} exceeds the maximum of {}", shape.size(), kMaxDims));
    GgufTensorInfo ti;
    ti.name = name;
    ti.n_dims = static_cast<uint32_t>(shape.size());
    for (size_t d = 0; d < shape.size(); ++d) ti.ne[d] = shape[d];
    check_tensor_shape(ti, static_cast<uint32_t>(type), file);
    return ti;
}

void GgufWriter::add_tensor(const std::string& name, GgmlType type, std::span<const int64_t> shape) {
    if (header_done_) throw FormatError(ErrorKind::Usage, path_, "tensor '" + name + "'", "tensor added after the header was written");
    GgufTensorInfo ti = make_tensor_info(name, type, shape, path_);
    for (const auto& t : tensors_)
        if (t.name == name) throw FormatError(ErrorKind::DuplicateTensor, path_, "tensor '" + name + "'", "duplicate tensor name");
    tensors_.push_back(std::move(ti));
    assign_offsets();
}

void GgufWriter::assign_offsets() {
    const uint64_t a = alignment();
    uint64_t off = 0;
    for (auto& t : tensors_) {
        t.offset = off;
        off = align_up(off + t.n_bytes, a);
    }
}

uint64_t GgufWriter::planned_size() const {
    const uint64_t a = alignment();
    uint64_t h = serialize_gguf_header(version_, kvs_, tensors_).size();
    if (tensors_.empty()) return pad_empty_ ? align_up(h, a) : h;
    uint64_t data = 0;
    for (const auto& t : tensors_) data = align_up(data + t.n_bytes, a);
    return align_up(h, a) + data;
}

void GgufWriter::out(const void* p, size_t n) {
    const auto* s = static_cast<const uint8_t*>(p);
    if (buf_.size() + n > kBufSize) flush();
    if (n >= kBufSize) return write_all(s, n);  // large pieces bypass the buffer: memory stays bounded
    buf_.insert(buf_.end(), s, s + n);
}

void GgufWriter::write_all(const uint8_t* p, size_t n) {
    while (n) {
        ssize_t w = ::write(fd_, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            throw FormatError(ErrorKind::Io, path_, "", std::string("write failed: ") + std::strerror(errno));
        }
        p += w;
        n -= static_cast<size_t>(w);
    }
}

void GgufWriter::flush() {
    write_all(buf_.data(), buf_.size());
    buf_.clear();
}

void GgufWriter::pad_zeros(uint64_t n) {
    static const uint8_t zeros[256] = {};
    while (n) {
        size_t k = static_cast<size_t>(std::min<uint64_t>(n, sizeof zeros));
        out(zeros, k);
        n -= k;
    }
}

void GgufWriter::write_header() {
    if (header_done_) return;
    namespace fs = std::filesystem;
    // Refuse to overwrite any input (same device and inode), even through another name.
    struct stat out_st {};
    if (::stat(path_.c_str(), &out_st) == 0) {
        for (const auto& in : inputs_) {
            struct stat in_st {};
            if (::stat(in.c_str(), &in_st) == 0 && in_st.st_dev == out_st.st_dev && in_st.st_ino == out_st.st_ino)
                throw FormatError(ErrorKind::Usage, path_, "", "refusing to overwrite the input file '" + in + "'");
        }
        if (S_ISDIR(out_st.st_mode)) throw FormatError(ErrorKind::Usage, path_, "", "output path is a directory");
    }
    fs::path p(path_);
    fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
    std::string tmpl = (dir / ("." + p.filename().string() + ".tmp.XXXXXX")).string();
    std::vector<char> name(tmpl.begin(), tmpl.end());
    name.push_back('\0');
    fd_ = ::mkstemp(name.data());
    if (fd_ < 0) throw FormatError(ErrorKind::Io, path_, "", std::string("cannot create temp file in '") + dir.string() + "': " + std::strerror(errno));
    tmp_path_ = name.data();
    mode_t um = ::umask(0);
    ::umask(um);
    ::fchmod(fd_, 0666 & ~um);
    buf_.reserve(kBufSize);
    assign_offsets();  // general.alignment may have been set after the tensors
    auto h = serialize_gguf_header(version_, kvs_, tensors_);
    out(h.data(), h.size());
    if (!tensors_.empty() || pad_empty_) pad_zeros(align_up(h.size(), alignment()) - h.size());
    header_done_ = true;
}

void GgufWriter::write_tensor_data(std::span<const uint8_t> bytes) {
    write_header();
    while (!bytes.empty()) {
        if (cur_tensor_ >= tensors_.size())
            throw FormatError(ErrorKind::Usage, path_, "", "more tensor data written than the tensor infos describe");
        const auto& t = tensors_[cur_tensor_];
        uint64_t k = std::min<uint64_t>(bytes.size(), t.n_bytes - cur_written_);
        out(bytes.data(), k);
        bytes = bytes.subspan(k);
        cur_written_ += k;
        if (cur_written_ == t.n_bytes) {
            pad_zeros(align_up(t.n_bytes, alignment()) - t.n_bytes);
            ++cur_tensor_;
            cur_written_ = 0;
        }
    }
}

void GgufWriter::finish() {
    write_header();
    if (cur_tensor_ != tensors_.size())
        throw FormatError(ErrorKind::Usage, path_, cur_tensor_ < tensors_.size() ? "tensor '" + tensors_[cur_tensor_].name + "'" : "",
                          "data incomplete: output not written");
    flush();
    if (::fsync(fd_) != 0) throw FormatError(ErrorKind::Io, path_, "", std::string("fsync failed: ") + std::strerror(errno));
    if (::close(fd_) != 0) {
        fd_ = -1;
        throw FormatError(ErrorKind::Io, path_, "", std::string("close failed: ") + std::strerror(errno));
    }
    fd_ = -1;
    if (::rename(tmp_path_.c_str(), path_.c_str()) != 0)
        throw FormatError(ErrorKind::Io, path_, "", std::string("rename failed: ") + std::strerror(errno));
    finished_ = true;
    namespace fs = std::filesystem;
    fs::path p(path_);
    std::string dir = p.has_parent_path() ? p.parent_path().string() : ".";
    int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        ::fsync(dfd);
        ::close(dfd);
    }
}

}  // namespace oiw
