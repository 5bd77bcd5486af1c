#include "libformat/oiw4/oiw4.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>

#include <fmt/format.h>
#include <xxhash.h>

#include "libformat/io/atomic_file.h"
#include "libformat/io/cursor.h"
#include "libformat/io/input_file.h"
#include "libformat/io/mapped_file.h"

namespace oiw {

namespace {

constexpr std::array<char, 4> kMagic = {'O', 'I', 'W', '4'};
constexpr size_t kMaxTensorName = 63;  // as GGUF (ggml's GGML_MAX_NAME - 1)
constexpr uint64_t kChecksumAt = 56;   // header_xxh3 field: covers [0, 56) and the directory
constexpr std::string_view kEncodingNames[kOiw4EncodingCount] = {"raw", "oiw4", "q4kx8", "q4kx8-il4"};

std::string tensor_subject(const std::string& name) { return "tensor '" + name + "'"; }

template <typename T>
void put(std::vector<uint8_t>& b, T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    b.insert(b.end(), p, p + sizeof(T));
}

// A GGUF image holding only metadata ("GGUF" | version | 0 tensors | n_kv | KVs), parsed back with
// the GGUF reader so the source's KVs survive byte for byte.
std::vector<uint8_t> kv_image(uint32_t version, const Metadata& kvs) { return serialize_gguf_header(version, kvs, {}); }

GgufFile read_kv_image(ByteCursor& c, const std::string& file, const char* what) {
    const uint64_t len = c.get<uint64_t>("directory", what);
    if (len > c.remaining())
        throw FormatError(ErrorKind::TooLarge, file, "directory",
                          fmt::format("{} length {} exceeds the {} bytes left", what, len, c.remaining()));
    GgufFile g = GgufFile::parse_copy(c.take(len, "directory", what), file);
    if (!g.tensors().empty())
        throw FormatError(ErrorKind::BadKey, file, "directory", fmt::format("{} holds tensor infos", what));
    if (g.header_size() != len)
        throw FormatError(ErrorKind::OutOfBounds, file, "directory",
                          fmt::format("{} trailing bytes after the {} image", len - g.header_size(), what));
    return g;
}

}  // namespace

std::string_view encoding_name(Oiw4Encoding e) {
    const auto i = static_cast<uint32_t>(e);
    return i < kOiw4EncodingCount ? kEncodingNames[i] : std::string_view("?");
}

std::optional<Oiw4Encoding> encoding_from_name(std::string_view name) {
    for (uint32_t i = 0; i < kOiw4EncodingCount; ++i)
        if (kEncodingNames[i] == name) return static_cast<Oiw4Encoding>(i);
    return std::nullopt;
}

std::string_view codec_name(Oiw4Codec c) {
    switch (c) {
        case Oiw4Codec::None: return "none";
        case Oiw4Codec::Zstd: return "zstd";
    }
    return "?";
}

std::vector<PlaneSpec> encoding_planes(Oiw4Encoding enc, const GgufTensorInfo& t, const std::string& file) {
    const auto fail = [&](const std::string& why) -> std::vector<PlaneSpec> {
        throw FormatError(
            ErrorKind::BadEncoding, file, tensor_subject(t.name),
            fmt::format("cannot encode {} {} as {}: {}", type_name(t.type), t.shape_string(), encoding_name(enc), why));
    };
    const uint64_t rows = static_cast<uint64_t>(t.n_rows());
    switch (enc) {
        case Oiw4Encoding::Raw: return {{"data", t.n_bytes}};
        case Oiw4Encoding::Oiw4: {
            if (t.ne[0] % 32 != 0) return fail(fmt::format("row length {} is not a multiple of 32", t.ne[0]));
            const uint64_t blocks = static_cast<uint64_t>(t.ne[0]) / 32 * rows;  // <= n_elements / 32: no overflow
            if (blocks > UINT64_MAX / 16) return fail("too many blocks");
            return {{"qs", blocks * 16}, {"d", blocks * 4}};
        }
        case Oiw4Encoding::Q4Kx8:
        case Oiw4Encoding::Q4Kx8Il4:
            if (t.type != GgmlType::Q4_K) return fail("only Q4_K tensors can be repacked into block_q4_Kx8");
            if (rows % 8 != 0) return fail(fmt::format("{} rows is not a multiple of 8", rows));
            return {{"blocks", t.n_bytes}};
    }
    return fail(fmt::format("unknown encoding id {}", static_cast<uint32_t>(enc)));
}

uint64_t oiw4_header_checksum(std::span<const uint8_t> head56, std::span<const uint8_t> dir) {
    XXH3_state_t* st = XXH3_createState();
    XXH3_64bits_reset(st);
    XXH3_64bits_update(st, head56.data(), head56.size());
    XXH3_64bits_update(st, dir.data(), dir.size());
    const uint64_t h = XXH3_64bits_digest(st);
    XXH3_freeState(st);
    return h;
}

bool is_oiw4_image(std::span<const uint8_t> bytes) {
    return bytes.size() >= 4 && std::memcmp(bytes.data(), kMagic.data(), 4) == 0;
}

bool is_oiw4_file(const std::string& path) {
    const InputFd in(path);  // refuses a FIFO or device before reading
    std::array<uint8_t, 4> m{};
    return ::pread(in.fd(), m.data(), m.size(), 0) == static_cast<ssize_t>(m.size()) && is_oiw4_image(m);
}

// ---------------------------------------------------------------------------------------------
// Reader

Oiw4File Oiw4File::open(const std::string& path) {
    Oiw4File f;
    f.path_ = path;
    f.map_ = std::make_shared<const MappedFile>(path);
    f.bytes_ = f.map_->bytes();
    f.parse_image();
    return f;
}

Oiw4File Oiw4File::parse(std::span<const uint8_t> bytes, const std::string& name) {
    Oiw4File f;
    f.path_ = name;
    f.bytes_ = bytes;
    f.parse_image();
    return f;
}

namespace {

// Reads the directory entry of one plane of `subj` as `spec` describes it: a known codec, zero
// reserved field, nonzero size (the shape's for raw planes), aligned and inside the data section.
Oiw4Plane read_plane_entry(ByteCursor& c, const PlaneSpec& spec, const std::string& subj, uint64_t data_offset,
                           uint64_t file_size, const std::string& file) {
    const std::string psubj = subj + " plane '" + std::string(spec.name) + "'";
    Oiw4Plane p;
    p.name = spec.name;
    p.decoded_size = spec.size;
    const auto codec = c.get<uint32_t>(psubj, "codec");
    if (codec > static_cast<uint32_t>(Oiw4Codec::Zstd))
        throw FormatError(ErrorKind::BadEncoding, file, psubj, fmt::format("unknown codec id {}", codec));
    p.codec = static_cast<Oiw4Codec>(codec);
    if (c.get<uint32_t>(psubj, "reserved") != 0)
        throw FormatError(ErrorKind::Unsupported, file, psubj, "reserved field is not zero");
    p.offset = c.get<uint64_t>(psubj, "offset");
    p.size = c.get<uint64_t>(psubj, "size");
    p.xxh3 = c.get<uint64_t>(psubj, "checksum");
    if (p.size == 0) throw FormatError(ErrorKind::OutOfBounds, file, psubj, "stored size is 0");
    if (p.codec == Oiw4Codec::None && p.size != p.decoded_size)
        throw FormatError(ErrorKind::OutOfBounds, file, psubj,
                          fmt::format("size {} but the shape needs {}", p.size, p.decoded_size));
    if (p.offset % kOiw4PlaneAlign != 0)
        throw FormatError(ErrorKind::Misaligned, file, psubj,
                          fmt::format("offset {} is not a multiple of {}", p.offset, kOiw4PlaneAlign));
    if (p.offset < data_offset || p.offset > file_size || p.size > file_size - p.offset)
        throw FormatError(ErrorKind::OutOfBounds, file, psubj,
                          fmt::format("bytes [{}, +{}) are outside the data section [{}, {})", p.offset, p.size,
                                      data_offset, file_size));
    return p;
}

// Reads directory entry #i: a name not in `index` yet (which then holds it), shape, a known type
// and encoding, and the encoding's planes.
Oiw4Tensor read_tensor_entry(ByteCursor& c, uint64_t i, std::unordered_map<std::string, size_t>& index,
                             uint64_t data_offset, uint64_t file_size, const std::string& file) {
    const std::string name = c.str(fmt::format("tensor #{}", i), "tensor name", kMaxTensorName);
    const std::string subj = tensor_subject(name);
    if (!index.emplace(name, i).second)
        throw FormatError(ErrorKind::DuplicateTensor, file, subj, "duplicate tensor name");
    const auto n_dims = c.get<uint32_t>(subj, "n_dims");
    if (n_dims > kMaxDims)
        throw FormatError(ErrorKind::BadDims, file, subj,
                          fmt::format("n_dims {} exceeds the maximum of {}", n_dims, kMaxDims));
    std::vector<int64_t> shape(n_dims);
    for (auto& d : shape) d = c.get<int64_t>(subj, "dimension");
    const auto type_id = c.get<uint32_t>(subj, "type");
    if (!type_traits(type_id))
        throw FormatError(ErrorKind::BadType, file, subj, fmt::format("unknown ggml type id {}", type_id));
    Oiw4Tensor t;
    t.info = make_tensor_info(name, static_cast<GgmlType>(type_id), shape, file);
    const auto enc = c.get<uint32_t>(subj, "encoding");
    if (enc >= kOiw4EncodingCount)
        throw FormatError(ErrorKind::BadEncoding, file, subj,
                          fmt::format("unknown encoding id {} (known: 0..{})", enc, kOiw4EncodingCount - 1));
    t.encoding = static_cast<Oiw4Encoding>(enc);
    const auto specs = encoding_planes(t.encoding, t.info, file);
    const auto n_planes = c.get<uint32_t>(subj, "plane count");
    if (n_planes != specs.size())
        throw FormatError(
            ErrorKind::BadEncoding, file, subj,
            fmt::format("{} planes, encoding {} has {}", n_planes, encoding_name(t.encoding), specs.size()));
    for (const auto& spec : specs) t.planes.push_back(read_plane_entry(c, spec, subj, data_offset, file_size, file));
    return t;
}

// Throws FormatError(Overlap) when two planes share bytes.
void check_planes_disjoint(const std::vector<Oiw4Tensor>& tensors, const std::string& file) {
    struct Span {
        uint64_t off, size;
        size_t t, p;
    };
    std::vector<Span> spans;
    for (size_t i = 0; i < tensors.size(); ++i)
        for (size_t p = 0; p < tensors[i].planes.size(); ++p)
            spans.push_back({tensors[i].planes[p].offset, tensors[i].planes[p].size, i, p});
    std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.off < b.off; });
    for (size_t k = 1; k < spans.size(); ++k) {
        const auto& a = spans[k - 1];
        const auto& b = spans[k];
        if (a.off + a.size > b.off)
            throw FormatError(
                ErrorKind::Overlap, file,
                tensor_subject(tensors[b.t].info.name) + " plane '" + std::string(tensors[b.t].planes[b.p].name) + "'",
                fmt::format("bytes at offset {} overlap tensor '{}' plane '{}' [{}, +{})", b.off,
                            tensors[a.t].info.name, tensors[a.t].planes[a.p].name, a.off, a.size));
    }
}

}  // namespace

void Oiw4File::parse_image() {
    const std::string& file = path_;
    if (bytes_.size() < kOiw4HeaderSize)
        throw FormatError(
            ErrorKind::Truncated, file, "header",
            fmt::format("file is {} bytes, shorter than the {}-byte OIW4 header", bytes_.size(), kOiw4HeaderSize));
    if (!is_oiw4_image(bytes_))
        throw FormatError(ErrorKind::BadMagic, file, "header", "bad magic (expected 'OIW4'): not an OIW4 file");
    ByteCursor h(bytes_.first(kOiw4HeaderSize), file);
    h.take(4, "header", "magic");
    const auto version = h.get<uint32_t>("header", "version");
    flags_ = h.get<uint32_t>("header", "flags");
    const auto plane_align = h.get<uint32_t>("header", "plane alignment");
    const auto dir_offset = h.get<uint64_t>("header", "directory offset");
    const auto dir_size = h.get<uint64_t>("header", "directory size");
    data_offset_ = h.get<uint64_t>("header", "data offset");
    const auto file_size = h.get<uint64_t>("header", "file size");
    const auto n_tensors = h.get<uint64_t>("header", "tensor count");
    header_xxh3_ = h.get<uint64_t>("header", "header checksum");
    if (version != kOiw4Version)
        throw FormatError(ErrorKind::BadVersion, file, "header",
                          fmt::format("unsupported OIW4 version {} (supported: {})", version, kOiw4Version));
    if (file_size != bytes_.size())
        throw FormatError(ErrorKind::Truncated, file, "header",
                          fmt::format("file is {} bytes but its header says {}", bytes_.size(), file_size));
    if (dir_offset != kOiw4HeaderSize || dir_size > bytes_.size() - kOiw4HeaderSize)
        throw FormatError(ErrorKind::OutOfBounds, file, "header",
                          fmt::format("directory [{}, +{}) is not inside the {}-byte file after the header", dir_offset,
                                      dir_size, bytes_.size()));
    const auto dir = bytes_.subspan(kOiw4HeaderSize, dir_size);
    const uint64_t sum = oiw4_header_checksum(bytes_.first(kChecksumAt), dir);
    if (sum != header_xxh3_)
        throw FormatError(ErrorKind::BadChecksum, file, "header",
                          fmt::format("header checksum {:016x} does not match the header and directory ({:016x})",
                                      header_xxh3_, sum));
    if ((flags_ & ~kOiw4FlagCompressed) != 0)
        throw FormatError(ErrorKind::Unsupported, file, "header", fmt::format("unknown flags 0x{:x}", flags_));
    if (plane_align != kOiw4PlaneAlign)
        throw FormatError(ErrorKind::BadAlignment, file, "header",
                          fmt::format("plane alignment {} (must be {})", plane_align, kOiw4PlaneAlign));
    if (data_offset_ != align_up(kOiw4HeaderSize + dir_size, kOiw4PlaneAlign) || data_offset_ > bytes_.size())
        throw FormatError(
            ErrorKind::OutOfBounds, file, "header",
            fmt::format("data offset {} is not the 4096-aligned end of the directory inside the file", data_offset_));

    dir_end_ = kOiw4HeaderSize + dir_size;
    ByteCursor c(dir, file);
    const GgufFile meta = read_kv_image(c, file, "source metadata");
    gguf_version_ = meta.version();
    kvs_ = meta.metadata();
    provenance_ = read_kv_image(c, file, "provenance").metadata();
    // Smallest entry: name length, n_dims, type, encoding, plane count.
    if (n_tensors > c.remaining() / 28)
        throw FormatError(ErrorKind::TooLarge, file, "header",
                          fmt::format("tensor count {} cannot fit in the {}-byte directory", n_tensors, dir_size));
    tensors_.clear();
    tensors_.reserve(n_tensors);
    tensor_index_.clear();
    bool any_compressed = false;
    for (uint64_t i = 0; i < n_tensors; ++i) {
        tensors_.push_back(read_tensor_entry(c, i, tensor_index_, data_offset_, bytes_.size(), file));
        for (const Oiw4Plane& p : tensors_.back().planes) any_compressed |= p.codec != Oiw4Codec::None;
    }
    if (c.remaining() != 0)
        throw FormatError(ErrorKind::OutOfBounds, file, "directory",
                          fmt::format("{} bytes left over after the last tensor", c.remaining()));
    if (any_compressed != compressed())
        throw FormatError(ErrorKind::BadEncoding, file, "header",
                          any_compressed ? "compressed planes without the compressed flag"
                                         : "compressed flag without compressed planes");

    check_planes_disjoint(tensors_, file);
    first_plane_.clear();
    size_t n_planes = 0;
    for (const auto& t : tensors_) first_plane_.push_back(n_planes), n_planes += t.planes.size();
    verified_ = std::shared_ptr<std::atomic<bool>[]>(new std::atomic<bool>[n_planes]());  // all false
    check_layout();
}

// Every byte after the directory is a plane or the zero padding that starts the next plane on
// the first 4096-byte boundary; the file ends with its last plane (or at data_offset).
void Oiw4File::check_layout() const {
    struct Span {
        uint64_t off, end;
        const Oiw4Tensor* t;
        const Oiw4Plane* p;
    };
    std::vector<Span> spans;
    for (const auto& t : tensors_)
        for (const auto& p : t.planes) spans.push_back({p.offset, p.offset + p.size, &t, &p});
    std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.off < b.off; });
    const auto zero_padding = [&](uint64_t from, uint64_t to, const std::string& before) {
        const auto pad = bytes_.subspan(from, to - from);
        const auto nz = std::find_if(pad.begin(), pad.end(), [](uint8_t b) { return b != 0; });
        if (nz != pad.end())
            throw FormatError(ErrorKind::BadData, path_, "padding",
                              fmt::format("non-zero byte at offset {} in the padding before {}",
                                          from + static_cast<uint64_t>(nz - pad.begin()), before));
    };
    uint64_t end = dir_end_;
    for (const auto& s : spans) {
        const std::string subj = tensor_subject(s.t->info.name) + " plane '" + std::string(s.p->name) + "'";
        if (s.off != align_up(end, kOiw4PlaneAlign))
            throw FormatError(ErrorKind::OutOfBounds, path_, subj,
                              fmt::format("starts at {}, {} bytes after the previous plane or directory ends at {}: "
                                          "only the padding to the next 4096-byte boundary may lie between",
                                          s.off, s.off - end, end));
        zero_padding(end, s.off, subj);
        end = s.end;
    }
    if (spans.empty()) {
        zero_padding(end, data_offset_, "the end of the file");
        end = data_offset_;
    }
    if (end != bytes_.size())
        throw FormatError(ErrorKind::OutOfBounds, path_, "data",
                          fmt::format("{} bytes after the end of the last plane at {}", bytes_.size() - end, end));
}

int64_t Oiw4File::find_tensor(std::string_view name) const {
    const auto it = tensor_index_.find(std::string(name));
    return it == tensor_index_.end() ? -1 : static_cast<int64_t>(it->second);
}

std::span<const uint8_t> Oiw4File::unverified_plane_data(size_t i, size_t p) const {
    const auto& pl = tensors_.at(i).planes.at(p);
    return bytes_.subspan(pl.offset, pl.size);
}

bool Oiw4File::plane_intact(size_t i, size_t p) const {
    const auto d = unverified_plane_data(i, p);  // range-checks i and p
    std::atomic<bool>& ok = verified_[first_plane_[i] + p];
    if (ok.load(std::memory_order_acquire)) return true;
    if (XXH3_64bits(d.data(), d.size()) != tensors_[i].planes[p].xxh3) return false;
    ok.store(true, std::memory_order_release);
    return true;
}

void Oiw4File::verify_plane(size_t i, size_t p) const {
    if (plane_intact(i, p)) return;
    const auto& t = tensors_[i];
    const auto d = unverified_plane_data(i, p);
    throw FormatError(
        ErrorKind::BadChecksum, path_, tensor_subject(t.info.name) + " plane '" + std::string(t.planes[p].name) + "'",
        fmt::format(
            "checksum mismatch: the {} stored bytes hash to {:016x}, the directory records {:016x} (damaged file)",
            d.size(), XXH3_64bits(d.data(), d.size()), t.planes[p].xxh3));
}

std::span<const uint8_t> Oiw4File::plane_data(size_t i, size_t p) const {
    verify_plane(i, p);
    return unverified_plane_data(i, p);
}

Oiw4View Oiw4File::oiw4_view(size_t i) const {
    const auto& t = tensors_.at(i);
    if (t.encoding != Oiw4Encoding::Oiw4 || t.planes[0].codec != Oiw4Codec::None ||
        t.planes[1].codec != Oiw4Codec::None)
        throw FormatError(ErrorKind::BadEncoding, path_, tensor_subject(t.info.name),
                          fmt::format("is {} ({}), not an uncompressed oiw4 tensor", encoding_name(t.encoding),
                                      codec_name(t.planes[0].codec)));
    const uint8_t* d = plane_data(i, 1).data();
    if (reinterpret_cast<uintptr_t>(d) % alignof(float) !=
        0)  // only an unaligned parse() buffer; a mapping is page-aligned
        throw FormatError(ErrorKind::Misaligned, path_, tensor_subject(t.info.name),
                          "plane 'd' is not float-aligned in memory");
    Oiw4View v;
    v.qs = plane_data(i, 0).data();
    v.d = reinterpret_cast<const float*>(d);
    v.rows = t.info.n_rows();
    v.cols = t.info.ne[0];
    return v;
}

void Oiw4File::require_decoded(size_t i) const {
    const auto& t = tensors_.at(i);
    for (const auto& p : t.planes)
        if (p.codec != Oiw4Codec::None)
            throw FormatError(ErrorKind::Unsupported, path_, tensor_subject(t.info.name),
                              fmt::format("plane '{}' is {}-compressed: run oiw4-convert --decompress first", p.name,
                                          codec_name(p.codec)));
}

void Oiw4File::release_tensor_pages(size_t i) const {
    if (!map_) return;
    for (const auto& p : tensors_.at(i).planes) map_->release(p.offset, p.size);
}

std::vector<PlaneMismatch> verify_planes(const Oiw4File& f) {
    std::vector<PlaneMismatch> bad;
    for (size_t i = 0; i < f.tensors().size(); ++i) {
        const auto& t = f.tensors()[i];
        for (size_t p = 0; p < t.planes.size(); ++p) {
            if (!f.plane_intact(i, p)) bad.push_back({t.info.name, std::string(t.planes[p].name)});
        }
        f.release_tensor_pages(i);
    }
    return bad;
}

// ---------------------------------------------------------------------------------------------
// Writer

// The output file (an AtomicFile: complete or absent, never an input) and the running plane checksum.
struct Oiw4Writer::Impl {
    AtomicFile file;
    XXH3_state_t* xxh = nullptr;  // created last in the constructor: nothing leaks when it throws

    Impl(const std::string& path, const std::vector<std::string>& inputs)
        : file(path, inputs), xxh(XXH3_createState()) {}
    ~Impl() { XXH3_freeState(xxh); }
    uint64_t pos() const { return file.size(); }
    void pad_to(uint64_t target) {
        static const uint8_t zeros[4096] = {};
        while (pos() < target) file.write(zeros, static_cast<size_t>(std::min<uint64_t>(target - pos(), sizeof zeros)));
    }
};

Oiw4Writer::Oiw4Writer(std::string path, std::vector<std::string> inputs)
    : path_(std::move(path)), inputs_(std::move(inputs)) {}

Oiw4Writer::~Oiw4Writer() = default;

void Oiw4Writer::set_metadata(uint32_t gguf_version, Metadata kvs, Metadata provenance) {
    if (impl_) throw FormatError(ErrorKind::Usage, path_, "", "metadata set after planes were written");
    gguf_version_ = gguf_version;
    kvs_ = std::move(kvs);
    provenance_ = std::move(provenance);
}

void Oiw4Writer::add_tensor(const GgufTensorInfo& info, Oiw4Encoding enc) {
    if (impl_)
        throw FormatError(ErrorKind::Usage, path_, tensor_subject(info.name), "tensor added after planes were written");
    if (names_.count(info.name))
        throw FormatError(ErrorKind::DuplicateTensor, path_, tensor_subject(info.name), "duplicate tensor name");
    Oiw4Tensor t;
    t.info = make_tensor_info(info.name, info.type, info.shape(), path_);
    t.encoding = enc;
    for (const auto& s : encoding_planes(enc, t.info, path_))
        t.planes.push_back({s.name, Oiw4Codec::None, 0, s.size, s.size, 0});
    names_.insert(info.name);
    tensors_.push_back(std::move(t));
}

std::vector<uint8_t> Oiw4Writer::directory() const {
    std::vector<uint8_t> d;
    for (const auto* kvs : {&kvs_, &provenance_}) {
        const auto img = kv_image(kvs == &kvs_ ? gguf_version_ : 3, *kvs);
        put<uint64_t>(d, img.size());
        d.insert(d.end(), img.begin(), img.end());
    }
    for (const auto& t : tensors_) {
        put<uint64_t>(d, t.info.name.size());
        d.insert(d.end(), t.info.name.begin(), t.info.name.end());
        put<uint32_t>(d, t.info.n_dims);
        for (uint32_t k = 0; k < t.info.n_dims; ++k) put<int64_t>(d, t.info.ne[k]);
        put<uint32_t>(d, static_cast<uint32_t>(t.info.type));
        put<uint32_t>(d, static_cast<uint32_t>(t.encoding));
        put<uint32_t>(d, static_cast<uint32_t>(t.planes.size()));
        for (const auto& p : t.planes) {
            put<uint32_t>(d, static_cast<uint32_t>(p.codec));
            put<uint32_t>(d, 0);
            put<uint64_t>(d, p.offset);
            put<uint64_t>(d, p.size);
            put<uint64_t>(d, p.xxh3);
        }
    }
    return d;
}

uint64_t Oiw4Writer::planned_size() const {
    uint64_t end = align_up(kOiw4HeaderSize + directory().size(), kOiw4PlaneAlign);
    for (const auto& t : tensors_)
        for (const auto& p : t.planes) end = align_up(end, kOiw4PlaneAlign) + p.decoded_size;
    return end;
}

void Oiw4Writer::begin_plane(Oiw4Codec codec) {
    if (!impl_) {
        impl_ = std::make_unique<Impl>(path_, inputs_);
        impl_->pad_to(
            align_up(kOiw4HeaderSize + directory().size(), kOiw4PlaneAlign));  // header + directory written by finish()
    }
    while (cur_tensor_ < tensors_.size() && cur_plane_ == tensors_[cur_tensor_].planes.size())
        ++cur_tensor_, cur_plane_ = 0;
    if (in_plane_ || cur_tensor_ >= tensors_.size())
        throw FormatError(
            ErrorKind::Usage, path_, "",
            in_plane_ ? "plane begun before the previous one ended" : "more planes written than the tensors have");
    impl_->pad_to(align_up(impl_->pos(), kOiw4PlaneAlign));
    auto& p = tensors_[cur_tensor_].planes[cur_plane_];
    p.codec = codec;
    p.offset = impl_->pos();
    XXH3_64bits_reset(impl_->xxh);
    in_plane_ = true;
}

void Oiw4Writer::append(std::span<const uint8_t> bytes) {
    if (!in_plane_) throw FormatError(ErrorKind::Usage, path_, "", "plane data written outside a plane");
    XXH3_64bits_update(impl_->xxh, bytes.data(), bytes.size());
    impl_->file.write(bytes.data(), bytes.size());
}

void Oiw4Writer::end_plane() {
    if (!in_plane_) throw FormatError(ErrorKind::Usage, path_, "", "end_plane without begin_plane");
    auto& t = tensors_[cur_tensor_];
    auto& p = t.planes[cur_plane_];
    p.size = impl_->pos() - p.offset;
    p.xxh3 = XXH3_64bits_digest(impl_->xxh);
    if (p.codec == Oiw4Codec::None && p.size != p.decoded_size)
        throw FormatError(ErrorKind::Usage, path_, tensor_subject(t.info.name),
                          fmt::format("plane '{}' got {} bytes, expected {}", p.name, p.size, p.decoded_size));
    in_plane_ = false;
    ++cur_plane_;
}

void Oiw4Writer::write_plane(std::span<const uint8_t> bytes, Oiw4Codec codec) {
    begin_plane(codec);
    append(bytes);
    end_plane();
}

void Oiw4Writer::finish() {
    if (!impl_) {  // no planes at all
        impl_ = std::make_unique<Impl>(path_, inputs_);
        impl_->pad_to(align_up(kOiw4HeaderSize + directory().size(), kOiw4PlaneAlign));
    }
    while (cur_tensor_ < tensors_.size() && cur_plane_ == tensors_[cur_tensor_].planes.size())
        ++cur_tensor_, cur_plane_ = 0;
    if (in_plane_ || cur_tensor_ != tensors_.size())
        throw FormatError(ErrorKind::Usage, path_,
                          cur_tensor_ < tensors_.size() ? tensor_subject(tensors_[cur_tensor_].info.name) : "",
                          "planes incomplete: output not written");
    bool compressed = false;
    for (const auto& t : tensors_)
        for (const auto& p : t.planes) compressed |= p.codec != Oiw4Codec::None;
    const auto dir = directory();
    std::vector<uint8_t> h;
    h.insert(h.end(), kMagic.begin(), kMagic.end());
    put<uint32_t>(h, kOiw4Version);
    put<uint32_t>(h, compressed ? kOiw4FlagCompressed : 0);
    put<uint32_t>(h, static_cast<uint32_t>(kOiw4PlaneAlign));
    put<uint64_t>(h, kOiw4HeaderSize);
    put<uint64_t>(h, dir.size());
    put<uint64_t>(h, align_up(kOiw4HeaderSize + dir.size(), kOiw4PlaneAlign));
    put<uint64_t>(h, impl_->pos());
    put<uint64_t>(h, tensors_.size());
    put<uint64_t>(h, oiw4_header_checksum(h, dir));
    impl_->file.write_at(0, h.data(), h.size());
    impl_->file.write_at(kOiw4HeaderSize, dir.data(), dir.size());
    impl_->file.commit();
}

}  // namespace oiw
