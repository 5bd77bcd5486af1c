#include "libformat/gguf/gguf.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <unordered_set>

#include <fmt/format.h>

#include "libformat/io/atomic_file.h"
#include "libformat/io/cursor.h"
#include "libformat/io/mapped_file.h"

namespace oiw {

namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read little-endian
constexpr size_t kMaxTensorName = 63;    // ggml: GGML_MAX_NAME - 1

// Array value: fixed-size elements are kept packed, strings decoded; arrays of arrays are refused
// as ggml refuses them (gguf.cpp: "key has invalid GGUF type").
GgufValue read_array(ByteCursor& c, const std::string& file, const std::string& key) {
    const std::string subj = "key '" + key + "'";
    uint32_t et = c.get<uint32_t>(subj, "array element type");
    if (et >= kGgufTypeCount)
        throw FormatError(ErrorKind::BadValueType, file, subj,
                          fmt::format("array element type {} is not a GGUF value type (0..12)", et));
    const auto elem = static_cast<GgufType>(et);
    if (elem == GgufType::ARRAY)
        throw FormatError(ErrorKind::BadValueType, file, subj,
                          "arrays of arrays are not supported (ggml refuses them)");
    uint64_t n = c.get<uint64_t>(subj, "array length");
    const size_t es = gguf_type_size(elem);
    // Minimum encoded size per element bounds the count by the bytes left.
    const uint64_t min_elem = es ? es : 8;
    if (n > c.remaining() / min_elem)
        throw FormatError(ErrorKind::TooLarge, file, subj,
                          fmt::format("array of {} {} elements cannot fit in the {} bytes left", n,
                                      gguf_type_name(elem), c.remaining()));
    if (es) {
        auto s = c.take(n * es, subj, "array data");
        return GgufValue::make_array(elem, std::vector<uint8_t>(s.begin(), s.end()), n);
    }
    std::vector<std::string> strings;
    strings.reserve(n);
    for (uint64_t i = 0; i < n; ++i) strings.push_back(c.str(subj, "array string"));
    return GgufValue::make_string_array(std::move(strings));
}

GgufValue read_value(ByteCursor& c, GgufType t, const std::string& file, const std::string& key) {
    if (t == GgufType::ARRAY) return read_array(c, file, key);
    if (t == GgufType::STRING) return GgufValue::make_string(c.str("key '" + key + "'", "string value"));
    return GgufValue::from_bytes(t, c.take(gguf_type_size(t), "key '" + key + "'", "value"));
}

void put_u32(std::vector<uint8_t>& b, uint32_t v) {
    b.insert(b.end(), reinterpret_cast<uint8_t*>(&v), reinterpret_cast<uint8_t*>(&v) + 4);
}
void put_u64(std::vector<uint8_t>& b, uint64_t v) {
    b.insert(b.end(), reinterpret_cast<uint8_t*>(&v), reinterpret_cast<uint8_t*>(&v) + 8);
}
void put_str(std::vector<uint8_t>& b, const std::string& s) {
    put_u64(b, s.size());
    b.insert(b.end(), s.begin(), s.end());
}

void put_value(std::vector<uint8_t>& b, const GgufValue& v) {
    put_u32(b, static_cast<uint32_t>(v.type()));
    if (v.is_array()) {
        put_u32(b, static_cast<uint32_t>(v.elem_type()));
        put_u64(b, v.count());
    }
    if (v.type() == GgufType::STRING || v.elem_type() == GgufType::STRING)
        for (const auto& s : v.strings()) put_str(b, s);
    else
        b.insert(b.end(), v.raw().begin(), v.raw().end());
}

// Validates dims/type of a tensor info and derives n_bytes. `file` may be empty (writer side).
void check_tensor_shape(GgufTensorInfo& ti, uint32_t type_id, const std::string& file) {
    const std::string subj = "tensor '" + ti.name + "'";
    if (ti.n_dims > kMaxDims)
        throw FormatError(ErrorKind::BadDims, file, subj,
                          fmt::format("n_dims {} exceeds the maximum of {}", ti.n_dims, kMaxDims));
    for (uint32_t d = 0; d < ti.n_dims; ++d)
        if (ti.ne[d] < 1)
            throw FormatError(ErrorKind::BadDims, file, subj,
                              fmt::format("dimension {} is {} (must be >= 1)", d, ti.ne[d]));
    const int64_t mx = std::numeric_limits<int64_t>::max();
    if (ti.ne[1] > mx / ti.ne[0] || ti.ne[2] > mx / (ti.ne[0] * ti.ne[1]) ||
        ti.ne[3] > mx / (ti.ne[0] * ti.ne[1] * ti.ne[2]))
        throw FormatError(ErrorKind::BadDims, file, subj,
                          "element count overflows int64 (shape " + ti.shape_string() + ")");
    auto tt = type_traits(type_id);
    if (!tt)
        throw FormatError(ErrorKind::BadType, file, subj,
                          fmt::format("unknown ggml type id {} (valid: 0..{})", type_id, kGgmlTypeCount - 1));
    if (tt->removed)
        throw FormatError(ErrorKind::RemovedType, file, subj,
                          fmt::format("type id {} ({}) is unsupported, removed from ggml", type_id, tt->name));
    ti.type = static_cast<GgmlType>(type_id);
    if (ti.ne[0] % tt->block_size != 0)
        throw FormatError(
            ErrorKind::BadBlock, file, subj,
            fmt::format("row length {} is not a multiple of the {} block size {}", ti.ne[0], tt->name, tt->block_size));
    const uint64_t blocks = static_cast<uint64_t>(ti.ne[0]) / tt->block_size;
    const uint64_t rows = static_cast<uint64_t>(ti.n_rows());
    const uint64_t max_bytes = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    if (blocks > max_bytes / tt->type_size || blocks * tt->type_size > max_bytes / rows)
        throw FormatError(
            ErrorKind::BadDims, file, subj,
            "byte size overflows int64 (shape " + ti.shape_string() + ", type " + std::string(tt->name) + ")");
    const uint64_t row = blocks * tt->type_size;
    ti.n_bytes = row * rows;
}

// The alignment general.alignment sets (a u32 power of two <= kMaxAlignment), or the default.
uint64_t alignment_of(const GgufValue* v, const std::string& file) {
    if (!v) return kDefaultAlignment;
    if (v->type() != GgufType::U32)
        throw FormatError(ErrorKind::BadAlignment, file, "key 'general.alignment'",
                          fmt::format("has type {}, expected u32", gguf_type_name(v->type())));
    const uint64_t a = static_cast<uint64_t>(*v->as_int());
    if (a == 0 || (a & (a - 1)) != 0)
        throw FormatError(ErrorKind::BadAlignment, file, "key 'general.alignment'",
                          fmt::format("value {} is not a power of two", a));
    if (a > kMaxAlignment)
        throw FormatError(ErrorKind::BadAlignment, file, "key 'general.alignment'",
                          fmt::format("value {} exceeds the maximum of {}", a, kMaxAlignment));
    return a;
}

}  // namespace

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

GgufFile GgufFile::parse_copy(std::span<const uint8_t> bytes, const std::string& name) {
    GgufFile f;
    f.path_ = name;
    f.owned_ = std::make_shared<const std::vector<uint8_t>>(bytes.begin(), bytes.end());
    f.bytes_ = *f.owned_;
    f.parse_image();
    return f;
}

namespace {

// Reads the magic and the version: a little-endian GGUF v2 or v3, named clearly otherwise.
uint32_t read_version(ByteCursor& c, uint64_t file_size, const std::string& file) {
    if (file_size < 4)
        throw FormatError(ErrorKind::Truncated, file, "header",
                          fmt::format("file is {} bytes, too short for the GGUF magic", file_size));
    uint32_t magic = c.get<uint32_t>("header", "magic");
    if (magic != kMagic) {
        char m[4];
        std::memcpy(m, &magic, 4);
        std::string shown;
        for (char ch : m)
            shown +=
                (ch >= 32 && ch < 127) ? std::string(1, ch) : fmt::format("\\x{:02x}", static_cast<unsigned char>(ch));
        throw FormatError(ErrorKind::BadMagic, file, "header",
                          "bad magic '" + shown + "' (expected 'GGUF'): not a GGUF file");
    }
    uint32_t version = c.get<uint32_t>("header", "version");
    if ((version & 0xFFFF) == 0 && version != 0) {
        uint32_t swapped = __builtin_bswap32(version);
        throw FormatError(ErrorKind::BigEndian, file, "header",
                          fmt::format("big-endian GGUF (version reads as {} byte-swapped) is not supported", swapped));
    }
    if (version == 1)
        throw FormatError(ErrorKind::BadVersion, file, "header",
                          "GGUF version 1 is no longer supported (use v2 or v3)");
    if (version != 2 && version != 3)
        throw FormatError(ErrorKind::BadVersion, file, "header",
                          fmt::format("unsupported GGUF version {} (supported: 2, 3)", version));
    return version;
}

// Reads the tensor and key/value counts, refusing counts the rest of the file cannot hold.
std::pair<uint64_t, uint64_t> read_counts(ByteCursor& c, uint64_t file_size, const std::string& file) {
    uint64_t n_tensors = c.get<uint64_t>("header", "tensor count");
    uint64_t n_kv = c.get<uint64_t>("header", "key/value count");
    // Smallest possible KV is 13 bytes (len + type + u8), smallest tensor info 24 bytes (n_dims 0).
    if (n_kv > c.remaining() / 13)
        throw FormatError(ErrorKind::TooLarge, file, "header",
                          fmt::format("key/value count {} cannot fit in a {}-byte file", n_kv, file_size));
    if (n_tensors > (c.remaining() - n_kv * 13) / 24)
        throw FormatError(ErrorKind::TooLarge, file, "header",
                          fmt::format("tensor count {} cannot fit in a {}-byte file", n_tensors, file_size));
    return {n_tensors, n_kv};
}

// Reads n_kv key/value pairs: non-empty, unique keys and known value types.
Metadata read_kvs(ByteCursor& c, uint64_t n_kv, const std::string& file) {
    Metadata kvs({}, file);
    for (uint64_t i = 0; i < n_kv; ++i) {
        std::string key = c.str(fmt::format("key #{}", i), "key");
        if (key.empty()) throw FormatError(ErrorKind::BadKey, file, fmt::format("key #{}", i), "empty key");
        if (kvs.contains(key)) throw FormatError(ErrorKind::DuplicateKey, file, "key '" + key + "'", "duplicate key");
        uint32_t t = c.get<uint32_t>("key '" + key + "'", "value type");
        if (t >= kGgufTypeCount)
            throw FormatError(ErrorKind::BadValueType, file, "key '" + key + "'",
                              fmt::format("value type {} is not a GGUF value type (0..12)", t));
        GgufValue v = read_value(c, static_cast<GgufType>(t), file, key);
        kvs.add({std::move(key), std::move(v)});
    }
    return kvs;
}

// Reads tensor info #i (name within ggml's limit and not in `index` yet, which then holds it;
// dims, type and shape checked).
GgufTensorInfo read_tensor_info(ByteCursor& c, uint64_t i, std::unordered_map<std::string, size_t>& index,
                                const std::string& file) {
    GgufTensorInfo ti;
    ti.name = c.str(fmt::format("tensor #{}", i), "tensor name");
    const std::string subj = "tensor '" + ti.name + "'";
    if (ti.name.size() > kMaxTensorName)
        throw FormatError(ErrorKind::TooLarge, file, subj,
                          fmt::format("name is {} bytes (ggml allows at most {})", ti.name.size(), kMaxTensorName));
    if (!index.emplace(ti.name, i).second)
        throw FormatError(ErrorKind::DuplicateTensor, file, subj, "duplicate tensor name");
    ti.n_dims = c.get<uint32_t>(subj, "n_dims");
    if (ti.n_dims > kMaxDims)
        throw FormatError(ErrorKind::BadDims, file, subj,
                          fmt::format("n_dims {} exceeds the maximum of {}", ti.n_dims, kMaxDims));
    for (uint32_t d = 0; d < ti.n_dims; ++d) ti.ne[d] = c.get<int64_t>(subj, "dimension");
    uint32_t type_id = c.get<uint32_t>(subj, "type");
    ti.offset = c.get<uint64_t>(subj, "offset");
    check_tensor_shape(ti, type_id, file);
    return ti;
}

// Tensor data offsets: aligned, inside the data section of a `file_size`-byte file, no two
// tensors overlapping.
void check_data_layout(const std::vector<GgufTensorInfo>& tensors, uint64_t data_offset, uint64_t alignment,
                       uint64_t file_size, const std::string& file) {
    const uint64_t data_size = data_offset <= file_size ? file_size - data_offset : 0;
    std::vector<size_t> order(tensors.size());
    for (size_t i = 0; i < order.size(); ++i) {
        const auto& t = tensors[i];
        const std::string subj = "tensor '" + t.name + "'";
        if (t.offset % alignment != 0)
            throw FormatError(ErrorKind::Misaligned, file, subj,
                              fmt::format("offset {} is not a multiple of the alignment {}", t.offset, alignment));
        if (t.offset > data_size || t.n_bytes > data_size - t.offset)
            throw FormatError(ErrorKind::OutOfBounds, file, subj,
                              fmt::format("data [{}, +{}) ends past the data section ({} bytes from offset {})",
                                          t.offset, t.n_bytes, data_size, data_offset));
        order[i] = i;
    }
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return tensors[a].offset < tensors[b].offset; });
    for (size_t k = 1; k < order.size(); ++k) {
        const auto& p = tensors[order[k - 1]];
        const auto& q = tensors[order[k]];
        if (p.offset + p.n_bytes > q.offset)
            throw FormatError(
                ErrorKind::Overlap, file, "tensor '" + q.name + "'",
                fmt::format("data at offset {} overlaps tensor '{}' [{}, +{})", q.offset, p.name, p.offset, p.n_bytes));
    }
}

}  // namespace

void GgufFile::parse_image() {
    const std::string& file = path_;
    ByteCursor c(bytes_, file);
    version_ = read_version(c, bytes_.size(), file);
    const auto [n_tensors, n_kv] = read_counts(c, bytes_.size(), file);
    kvs_ = read_kvs(c, n_kv, file);
    alignment_ = alignment_of(kvs_.find("general.alignment"), file);
    tensors_.clear();
    tensors_.reserve(n_tensors);
    tensor_index_.clear();
    for (uint64_t i = 0; i < n_tensors; ++i) tensors_.push_back(read_tensor_info(c, i, tensor_index_, file));
    header_size_ = c.pos();
    data_offset_ = align_up(c.pos(), alignment_);
    check_data_layout(tensors_, data_offset_, alignment_, bytes_.size(), file);
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

int64_t GgufFile::find_tensor(std::string_view name) const {
    auto it = tensor_index_.find(std::string(name));
    return it == tensor_index_.end() ? -1 : static_cast<int64_t>(it->second);
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

std::vector<uint8_t> serialize_gguf_header(uint32_t version, const Metadata& kvs,
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
    : path_(std::move(path)), inputs_(std::move(inputs)), version_(version), kvs_({}, path_) {
    if (version_ != 2 && version_ != 3)
        throw FormatError(ErrorKind::Usage, path_, "", fmt::format("cannot write GGUF version {}", version_));
}

GgufWriter::~GgufWriter() = default;

void GgufWriter::add_kv(GgufKV kv) {
    if (header_done_)
        throw FormatError(ErrorKind::Usage, path_, "key '" + kv.key + "'",
                          "metadata added after the header was written");
    const bool sets_alignment = kv.key == "general.alignment";
    const uint64_t a = sets_alignment ? alignment_of(&kv.value, path_) : alignment_;
    kvs_.add(std::move(kv));
    if (a != alignment_) {
        alignment_ = a;
        assign_offsets();
    }
}

void GgufWriter::set_kvs(const Metadata& kvs) {
    if (header_done_) throw FormatError(ErrorKind::Usage, path_, "", "metadata replaced after the header was written");
    kvs_ = Metadata({}, path_);
    if (alignment_ != kDefaultAlignment) {
        alignment_ = kDefaultAlignment;
        assign_offsets();
    }
    for (const auto& kv : kvs) add_kv(kv);
}

GgufTensorInfo make_tensor_info(const std::string& name, GgmlType type, std::span<const int64_t> shape,
                                const std::string& file) {
    const std::string subj = "tensor '" + name + "'";
    if (name.size() > kMaxTensorName)
        throw FormatError(ErrorKind::TooLarge, file, subj,
                          fmt::format("name is {} bytes (ggml allows at most {})", name.size(), kMaxTensorName));
    if (shape.size() > kMaxDims)
        throw FormatError(ErrorKind::BadDims, file, subj,
                          fmt::format("n_dims {} exceeds the maximum of {}", shape.size(), kMaxDims));
    GgufTensorInfo ti;
    ti.name = name;
    ti.n_dims = static_cast<uint32_t>(shape.size());
    for (size_t d = 0; d < shape.size(); ++d) ti.ne[d] = shape[d];
    check_tensor_shape(ti, static_cast<uint32_t>(type), file);
    return ti;
}

void GgufWriter::add_tensor(const std::string& name, GgmlType type, std::span<const int64_t> shape) {
    if (header_done_)
        throw FormatError(ErrorKind::Usage, path_, "tensor '" + name + "'",
                          "tensor added after the header was written");
    GgufTensorInfo ti = make_tensor_info(name, type, shape, path_);
    if (!tensor_names_.insert(name).second)
        throw FormatError(ErrorKind::DuplicateTensor, path_, "tensor '" + name + "'", "duplicate tensor name");
    ti.offset = data_size_;
    data_size_ = align_up(ti.offset + ti.n_bytes, alignment_);
    tensors_.push_back(std::move(ti));
}

void GgufWriter::assign_offsets() {
    data_size_ = 0;
    for (auto& t : tensors_) {
        t.offset = data_size_;
        data_size_ = align_up(data_size_ + t.n_bytes, alignment_);
    }
}

uint64_t GgufWriter::planned_size() const {
    uint64_t h = serialize_gguf_header(version_, kvs_, tensors_).size();
    if (tensors_.empty()) return pad_empty_ ? align_up(h, alignment_) : h;
    return align_up(h, alignment_) + data_size_;
}

void GgufWriter::out(const void* p, size_t n) { file_->write(p, n); }

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
    file_ = std::make_unique<AtomicFile>(path_, inputs_);
    auto h = serialize_gguf_header(version_, kvs_, tensors_);
    out(h.data(), h.size());
    if (!tensors_.empty() || pad_empty_) pad_zeros(align_up(h.size(), alignment_) - h.size());
    header_done_ = true;
}

void GgufWriter::write_tensor_data(std::span<const uint8_t> bytes) { put_tensor_data(bytes.data(), bytes.size()); }

void GgufWriter::write_tensor_zeros(uint64_t n) { put_tensor_data(nullptr, n); }

void GgufWriter::put_tensor_data(const uint8_t* p, uint64_t n) {
    write_header();
    while (n) {
        if (cur_tensor_ >= tensors_.size())
            throw FormatError(ErrorKind::Usage, path_, "", "more tensor data written than the tensor infos describe");
        const auto& t = tensors_[cur_tensor_];
        const uint64_t k = std::min<uint64_t>(n, t.n_bytes - cur_written_);
        if (p) {
            out(p, static_cast<size_t>(k));
            p += k;
        } else {
            file_->skip(k);
        }
        n -= k;
        cur_written_ += k;
        if (cur_written_ == t.n_bytes) {
            pad_zeros(align_up(t.n_bytes, alignment_) - t.n_bytes);
            ++cur_tensor_;
            cur_written_ = 0;
        }
    }
}

void GgufWriter::complete() {
    write_header();
    if (cur_tensor_ != tensors_.size())
        throw FormatError(ErrorKind::Usage, path_,
                          cur_tensor_ < tensors_.size() ? "tensor '" + tensors_[cur_tensor_].name + "'" : "",
                          "data incomplete: output not written");
    file_->complete();
}

void GgufWriter::finish() {
    complete();
    file_->commit();
}

}  // namespace oiw
