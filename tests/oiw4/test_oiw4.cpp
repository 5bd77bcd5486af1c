// OIW4 container and conversion: GGUF -> OIW4 -> GGUF byte identity, plane layout and views,
// policy and rules, requantization, corruption (checksums, truncation, overlap, encodings).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <regex>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <xxhash.h>
#include <zstd.h>

#include "converters/quant/quants.h"
#include "converters/repack/oiw4_convert.h"
#include "converters/repack/repack.h"
#include "libformat/fp16.h"
#include "libformat/io/hash.h"
#include "libformat/model.h"
#include "libformat/oiw4/oiw4.h"
#include "libformat/oiw4/zstd/oiw4_zstd.h"
#include "tests/support/helpers.h"
#include "tests/support/oiw4_fixtures.h"

namespace oiw {
namespace {

namespace fs = std::filesystem;
using test::data_path;

std::string convert(const std::string& in, const std::vector<EncodeRule>& rules = {}) {
    const Model f = open_model(in);
    const std::string out = (test::temp_dir() / (fs::path(in).stem().string() + ".oiw4")).string();
    const Oiw4Plan plan = plan_oiw4(f, rules);
    write_oiw4(f, plan, out);
    EXPECT_EQ(fs::file_size(out), plan.out_size) << in;
    return out;
}

// GGUF -> OIW4 -> GGUF; expects the result byte-identical to the input.
void expect_round_trip(const std::string& in, const std::vector<EncodeRule>& rules = {}) {
    const std::string o = convert(in, rules);
    const std::string back = (test::temp_dir() / "back.gguf").string();
    const ToGgufResult r = write_gguf_from_oiw4(Oiw4File::open(o), back);
    EXPECT_TRUE(r.lossless) << in;
    EXPECT_TRUE(r.identical_to_source) << in;
    EXPECT_TRUE(r.warnings.empty()) << in;
    EXPECT_EQ(test::sha256_hex(test::read_file(back)), test::sha256_hex(test::read_file(in))) << in;
}

TEST(Oiw4RoundTrip, VendoredModelsByteIdentical) {
    for (const auto& m : test::vendored_roundtrip_models()) expect_round_trip(m);
}

TEST(Oiw4RoundTrip, Il4AndRawEverywhereByteIdentical) {
    const std::string m = test::mini_requant("mini-moe", "Q4_K_M");
    std::string q4k;  // every Q4_K tensor with whole row groups, names as literal regexes
    const Model model = open_model(m);
    for (const auto& t : model.tensors())
        if (t.type == GgmlType::Q4_K && t.n_rows() % 8 == 0)
            q4k += (q4k.empty() ? "^(" : "|") + std::regex_replace(t.name, std::regex("\\."), "\\.");
    expect_round_trip(m, {parse_encode_rule(q4k + ")$=q4kx8-il4", false)});
    expect_round_trip(m, {parse_encode_rule(".*=raw", false)});
}

TEST(Oiw4RoundTrip, SharedFixturesByteIdentical) {
    OIW_NEED_SHARED("fixtures");
    for (const auto& m : test::fixture_files()) {
        if (!open_model(m).canonical_layout()) continue;  // only canonical layouts can come back byte for byte
        expect_round_trip(m);
    }
}

TEST(Oiw4Policy, DefaultEncodings) {
    const Oiw4File q40 = Oiw4File::open(convert(test::mini_requant("mini-llama", "Q4_0")));
    const Oiw4File q4k = Oiw4File::open(convert(test::mini_requant("mini-llama", "Q4_K_M")));
    for (const Oiw4File* f : {&q40, &q4k})
        for (const auto& t : f->tensors()) {
            Oiw4Encoding want = Oiw4Encoding::Raw;
            if (t.info.type == GgmlType::Q4_0) want = Oiw4Encoding::Oiw4;
            if (t.info.type == GgmlType::Q4_K && t.info.name != "token_embd.weight" && t.info.n_rows() % 8 == 0)
                want = Oiw4Encoding::Q4Kx8;
            EXPECT_EQ(t.encoding, want) << t.info.name;
        }
    EXPECT_EQ(q4k.tensors()[static_cast<size_t>(q4k.find_tensor("token_embd.weight"))].info.type, GgmlType::Q4_K);
    EXPECT_EQ(q4k.tensors()[static_cast<size_t>(q4k.find_tensor("token_embd.weight"))].encoding, Oiw4Encoding::Raw);
    // Provenance and the source's metadata.
    const std::string src_path = test::mini_requant("mini-llama", "Q4_K_M");
    const Model src = open_model(src_path);
    EXPECT_EQ(q4k.metadata(), src.metadata());
    EXPECT_EQ(q4k.gguf_version(), src.version());
    ASSERT_EQ(q4k.provenance().size(), 6u);
    EXPECT_EQ(q4k.provenance()[0].key, "oiw4.source.name");
    EXPECT_EQ(*q4k.provenance()[2].value.as_string(), xxh3_hex(test::read_file(src_path)));
    EXPECT_EQ(q4k.provenance()[3].key, "oiw4.source.tensor_xxh3");
}

TEST(Oiw4Layout, PlanesAlignedAndViewsMatchTheSource) {
    const std::string src_path = test::mini_requant("mini-llama", "Q4_0");
    const Model src = open_model(src_path);
    const Oiw4File f = Oiw4File::open(convert(src_path));
    size_t views = 0;
    for (size_t i = 0; i < f.tensors().size(); ++i) {
        const auto& t = f.tensors()[i];
        for (const auto& p : t.planes) EXPECT_EQ(p.offset % kOiw4PlaneAlign, 0u) << t.info.name;
        if (t.encoding != Oiw4Encoding::Oiw4) {
            EXPECT_THROW(f.oiw4_view(i), FormatError);
            continue;
        }
        const Oiw4View v = f.oiw4_view(i);
        EXPECT_EQ(v.rows, t.info.n_rows());
        EXPECT_EQ(v.cols, t.info.ne[0]);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(v.d) % alignof(float), 0u);
        const auto* b = reinterpret_cast<const block_q4_0*>(
            src.tensor_data(static_cast<size_t>(src.find_tensor(t.info.name))).data());
        const int64_t last = v.rows * v.cols / 32 - 1;
        EXPECT_EQ(0, std::memcmp(v.qs + 16 * last, b[last].qs, 16));
        EXPECT_EQ(v.d[last], fp16_to_fp32(b[last].d));
        ++views;
    }
    EXPECT_GT(views, 10u);
}

TEST(Oiw4Policy, ImpossibleEncodingNamesTheTensor) {
    // A Q4_K tensor of 12 rows cannot take q4kx8; an F16 tensor cannot take oiw4 without --requant.
    const std::string path = (test::temp_dir() / "odd.gguf").string();
    {
        GgufWriter w(path);
        const std::vector<int64_t> odd = {256, 12}, f16 = {64, 8};
        w.add_tensor("odd.weight", GgmlType::Q4_K, odd);
        w.add_tensor("half.weight", GgmlType::F16, f16);
        std::vector<uint8_t> zeros(12 * 144);
        w.write_tensor_data(zeros);
        zeros.assign(64 * 8 * 2, 0);
        w.write_tensor_data(zeros);
        w.finish();
    }
    const Model f = open_model(path);
    EXPECT_EQ(plan_oiw4(f, {}).tensors[0].encoding, Oiw4Encoding::Raw);  // the default leaves it raw
    try {
        plan_oiw4(f, {parse_encode_rule("odd=q4kx8", false)});
        FAIL();
    } catch (const FormatError& e) {
        EXPECT_EQ(e.kind(), ErrorKind::BadEncoding);
        EXPECT_NE(std::string(e.what()).find("tensor 'odd.weight'"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("12 rows is not a multiple of 8"), std::string::npos) << e.what();
    }
    try {
        plan_oiw4(f, {parse_encode_rule("half=oiw4", false)});
        FAIL();
    } catch (const FormatError& e) {
        EXPECT_NE(std::string(e.what()).find("tensor 'half.weight'"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("--requant"), std::string::npos) << e.what();
    }
    EXPECT_THROW(parse_encode_rule("x=q8", false), FormatError);
    EXPECT_THROW(parse_encode_rule("x=q4kx8", true), FormatError);
    EXPECT_THROW(parse_encode_rule("(=raw", false), FormatError);
}

TEST(Oiw4Requant, AnyTypeToOiw4IsQ4_0Rounding) {
    const std::string src_path = data_path("models/mini-llama-f16.gguf");
    const Model src = open_model(src_path);
    const std::string o = convert(src_path, {parse_encode_rule("ffn_up|output_norm=oiw4", true)});
    const Oiw4File f = Oiw4File::open(o);
    const auto i = static_cast<size_t>(f.find_tensor("blk.0.ffn_up.weight"));
    ASSERT_EQ(f.tensors()[i].encoding, Oiw4Encoding::Oiw4);
    EXPECT_EQ(f.tensors()[i].info.type, GgmlType::F16);  // the source type is recorded
    // Expected: dequantize, then ggml's Q4_0.
    const auto& st = src.tensors()[static_cast<size_t>(src.find_tensor("blk.0.ffn_up.weight"))];
    std::vector<float> x(static_cast<size_t>(st.n_elements()));
    dequantize_row(st.type, src.tensor_data(static_cast<size_t>(src.find_tensor(st.name))).data(), x.data(),
                   st.n_elements());
    std::vector<uint8_t> q4(static_cast<size_t>(st.n_rows()) * row_size(GgmlType::Q4_0, st.ne[0]));
    quantize_chunk(GgmlType::Q4_0, x.data(), q4.data(), st.n_rows(), st.ne[0], nullptr);
    // Back to GGUF: that tensor becomes Q4_0 equal to ggml's, with a warning on the fp32 scales.
    const std::string back = (test::temp_dir() / "rq.gguf").string();
    const ToGgufResult r = write_gguf_from_oiw4(f, back);
    EXPECT_FALSE(r.lossless);
    EXPECT_FALSE(r.identical_to_source);
    // F16 data keeps fp16-exact scales (max / -8); the F32 norm's are not: one warning, naming it.
    ASSERT_EQ(r.warnings.size(), 1u);
    EXPECT_NE(r.warnings[0].find("tensor 'output_norm.weight'"), std::string::npos) << r.warnings[0];
    const Model g = open_model(back);
    const auto gi = static_cast<size_t>(g.find_tensor("blk.0.ffn_up.weight"));
    EXPECT_EQ(g.tensors()[gi].type, GgmlType::Q4_0);
    EXPECT_EQ(test::sha256_hex(g.tensor_data(gi)), test::sha256_hex(q4));
}

// ---------------------------------------------------------------------------------------------
// Corruption

std::vector<uint8_t> image_of(const std::string& model) { return test::read_file(convert(model)); }

uint64_t u64_at(const std::vector<uint8_t>& b, size_t off) {
    uint64_t v;
    std::memcpy(&v, b.data() + off, 8);
    return v;
}

// Offset of tensor `name`'s encoding field in the directory.
size_t encoding_field(const std::vector<uint8_t>& b, const std::string& name, uint32_t n_dims) {
    std::vector<uint8_t> needle(8);
    const uint64_t len = name.size();
    std::memcpy(needle.data(), &len, 8);
    needle.insert(needle.end(), name.begin(), name.end());
    const auto it =
        std::search(b.begin() + 64, b.begin() + 64 + static_cast<int64_t>(u64_at(b, 24)), needle.begin(), needle.end());
    EXPECT_NE(it, b.end());
    return static_cast<size_t>(it - b.begin()) + needle.size() + 4 + 8 * n_dims + 4;
}

FormatError parse_error(const std::vector<uint8_t>& b) {
    try {
        Oiw4File::parse(b, "bad.oiw4");
    } catch (const FormatError& e) {
        return e;
    }
    ADD_FAILURE() << "image parsed";
    return FormatError(ErrorKind::Usage, "", "", "");
}

TEST(Oiw4Corruption, FlippedBitInEveryPlaneIsCaughtByVerify) {
    const std::string path = convert(test::mini_requant("mini-moe", "Q4_K_M"));
    const auto clean = test::read_file(path);
    const Oiw4File f = Oiw4File::parse(clean, "clean.oiw4");
    EXPECT_TRUE(verify_planes(f).empty());
    size_t planes = 0;
    for (const auto& t : f.tensors())
        for (const auto& p : t.planes) {
            auto b = clean;
            b[p.offset + p.size / 2] ^= 0x10;
            const Oiw4File g = Oiw4File::parse(b, "flipped.oiw4");  // opening checks the header, not the planes
            const auto bad = verify_planes(g);
            ASSERT_EQ(bad.size(), 1u) << t.info.name;
            EXPECT_EQ(bad[0].tensor, t.info.name);
            EXPECT_EQ(bad[0].plane, p.name);
            ++planes;
        }
    EXPECT_GT(planes, 20u);
}

TEST(Oiw4Corruption, HeaderAndDirectoryDamageIsOneError) {
    const auto clean = image_of(test::mini_requant("mini-llama", "Q4_0"));
    auto b = clean;
    b[100] ^= 1;  // inside the directory (the source metadata)
    EXPECT_EQ(parse_error(b).kind(), ErrorKind::BadChecksum);
    b = clean;
    b[5] ^= 1;  // version, checksum resealed
    test::reseal_oiw4(b);
    EXPECT_EQ(parse_error(b).kind(), ErrorKind::BadVersion);
    b = clean;
    b[0] = 'X';
    EXPECT_EQ(parse_error(b).kind(), ErrorKind::BadMagic);
    for (size_t cut : {size_t{0}, size_t{10}, size_t{63}, size_t{64}, size_t{5000}, clean.size() - 1}) {
        b.assign(clean.begin(), clean.begin() + static_cast<int64_t>(cut));
        EXPECT_EQ(parse_error(b).kind(), ErrorKind::Truncated) << cut;
    }
    // Unknown encoding id.
    b = clean;
    const size_t enc = encoding_field(b, "blk.0.attn_q.weight", 2);
    uint32_t e;
    std::memcpy(&e, b.data() + enc, 4);
    EXPECT_EQ(e, static_cast<uint32_t>(Oiw4Encoding::Oiw4));
    e = 9;
    std::memcpy(b.data() + enc, &e, 4);
    test::reseal_oiw4(b);
    const FormatError ue = parse_error(b);
    EXPECT_EQ(ue.kind(), ErrorKind::BadEncoding);
    EXPECT_NE(std::string(ue.what()).find("tensor 'blk.0.attn_q.weight'"), std::string::npos) << ue.what();
    // Overlapping planes: point the qs plane at the d plane's offset (both 4096-aligned).
    b = clean;
    const size_t qs_off = enc + 4 + 4 + 8, d_off = qs_off + 32;
    std::memcpy(b.data() + qs_off, b.data() + d_off, 8);
    test::reseal_oiw4(b);
    EXPECT_EQ(parse_error(b).kind(), ErrorKind::Overlap);
    // Misaligned and out-of-bounds planes.
    b = clean;
    uint64_t off = u64_at(b, d_off) + 16;
    std::memcpy(b.data() + d_off, &off, 8);
    test::reseal_oiw4(b);
    EXPECT_EQ(parse_error(b).kind(), ErrorKind::Misaligned);
    b = clean;
    off = clean.size() / 4096 * 4096 + 4096;
    std::memcpy(b.data() + d_off, &off, 8);
    test::reseal_oiw4(b);
    EXPECT_EQ(parse_error(b).kind(), ErrorKind::OutOfBounds);
}

// Offset of plane `p`'s entry (its offset field) in the directory of image `b`.
size_t plane_entry(const std::vector<uint8_t>& b, const Oiw4Plane& p) {
    uint8_t key[24];
    std::memcpy(key, &p.offset, 8);
    std::memcpy(key + 8, &p.size, 8);
    std::memcpy(key + 16, &p.xxh3, 8);
    const auto dir = b.begin() + 64;
    const auto it = std::search(dir, dir + static_cast<int64_t>(u64_at(b, 24)), key, key + 24);
    EXPECT_NE(it, dir + static_cast<int64_t>(u64_at(b, 24)));
    return static_cast<size_t>(it - b.begin());
}

void set_u64(std::vector<uint8_t>& b, size_t off, uint64_t v) { std::memcpy(b.data() + off, &v, 8); }

std::string all_encodings_file();  // below: raw, oiw4, q4kx8 and q4kx8-il4 tensors

// One plane of each kind (raw data, oiw4 qs and d, q4kx8 blocks, q4kx8-il4 blocks) with one
// byte flipped, each in its own copy of the file: every path that reads plane bytes refuses it,
// naming the file, tensor and plane, and leaves no output.
TEST(Oiw4Corruption, EveryReadChecksThePlane) {
    const std::string path = all_encodings_file();
    const auto clean = test::read_file(path);
    const Oiw4File f = Oiw4File::parse(clean, path);
    std::map<std::string, std::pair<size_t, size_t>> pick;  // "encoding/plane" -> (tensor, plane)
    for (size_t i = 0; i < f.tensors().size(); ++i)
        for (size_t p = 0; p < f.tensors()[i].planes.size(); ++p)
            pick.emplace(
                std::string(encoding_name(f.tensors()[i].encoding)) + "/" + std::string(f.tensors()[i].planes[p].name),
                std::pair{i, p});
    ASSERT_EQ(pick.size(), 5u);  // raw/data oiw4/qs oiw4/d q4kx8/blocks q4kx8-il4/blocks
    const auto dir = test::temp_dir();
    const std::string out = (dir / "out").string();
    for (const auto& [kind, ip] : pick) {
        SCOPED_TRACE(kind);
        const auto [i, p] = ip;
        const auto& t = f.tensors()[i];
        auto b = clean;
        b[t.planes[p].offset + t.planes[p].size / 3] ^= 0x04;
        const std::string bad = (dir / "bad.oiw4").string();
        test::write_file(bad, b);
        const Oiw4File g = Oiw4File::open(bad);  // opening reads no plane
        const std::string where =
            bad + ": tensor '" + t.info.name + "' plane '" + std::string(t.planes[p].name) + "': checksum mismatch";
        const auto expect_named = [&](const FormatError& e) {
            EXPECT_EQ(e.kind(), ErrorKind::BadChecksum);
            EXPECT_NE(std::string(e.what()).find(where), std::string::npos) << e.what();
        };
        expect_named(test::format_error_of([&] { g.plane_data(i, p); }));
        expect_named(test::format_error_of([&] { g.verify_plane(i, p); }));
        EXPECT_FALSE(g.plane_intact(i, p));
        if (t.encoding == Oiw4Encoding::Oiw4) expect_named(test::format_error_of([&] { g.oiw4_view(i); }));
        const size_t other = i == 0 ? 1 : 0;
        EXPECT_EQ(g.plane_data(other, 0).size(), g.tensors()[other].planes[0].size);  // the other planes still read
        expect_named(test::format_error_of([&] { write_gguf_from_oiw4(g, out + ".gguf"); }));
        for (unsigned threads : {1u, 2u}) {
            CodecOptions o;
            o.threads = threads;
            expect_named(test::format_error_of([&] { compress_oiw4(g, out + ".z.oiw4", o); }));
            expect_named(
                test::format_error_of([&] { decompress_oiw4(g, out + ".u.oiw4", o); }));  // copies plain planes
        }
        expect_named(test::format_error_of([&] { decode_plane(g, i, p); }));
        EXPECT_EQ(test::listing(dir), std::vector<std::string>{"bad.oiw4"});
    }
}

// A zstd plane whose frame bytes changed is refused by its XXH3 before zstd decodes it.
TEST(Oiw4Corruption, ZstdPlaneCheckedBeforeDecoding) {
    const std::string z = (test::temp_dir() / "z.oiw4").string();
    compress_oiw4(Oiw4File::open(all_encodings_file()), z, {});
    const Oiw4File zf = Oiw4File::open(z);
    const auto i = static_cast<size_t>(zf.find_tensor("blk.0.ffn_down.weight"));
    const auto& p = zf.tensors()[i].planes[0];
    ASSERT_EQ(p.codec, Oiw4Codec::Zstd);
    ASSERT_TRUE(decode_plane(zf, i, 0).size() == p.decoded_size);
    auto b = test::read_file(z);
    b[p.offset + p.size / 2] ^= 0x01;  // mid-frame: zstd alone might decode it and fail later
    const std::string bad = (test::temp_dir() / "zbad.oiw4").string(), out = bad + ".out";
    test::write_file(bad, b);
    const Oiw4File g = Oiw4File::open(bad);
    const std::string where = bad + ": tensor 'blk.0.ffn_down.weight' plane 'qs': checksum mismatch";
    for (const FormatError& e : {test::format_error_of([&] { decode_plane(g, i, 0); }),
                                 test::format_error_of([&] { decompress_oiw4(g, out, {}); }),
                                 test::format_error_of([&] { compress_oiw4(g, out, {}); })}) {
        EXPECT_EQ(e.kind(), ErrorKind::BadChecksum);
        EXPECT_NE(std::string(e.what()).find(where), std::string::npos) << e.what();
    }
    EXPECT_FALSE(fs::exists(out));
}

// A plane is hashed once: after its first verified access the result is remembered (changing
// the bytes of a parse() buffer afterwards goes unnoticed by design; --verify rehashes
// unverified planes only). Copies of the file share what was verified.
TEST(Oiw4Corruption, PlaneVerifiedOnceAtFirstAccess) {
    auto b = test::read_file(convert(test::mini_requant("mini-llama", "Q4_0")));
    const Oiw4File f = Oiw4File::parse(b, "once.oiw4");
    const auto& pl = f.tensors()[1].planes[0];
    b[pl.offset] ^= 0x01;
    EXPECT_FALSE(f.plane_intact(1, 0));
    EXPECT_EQ(verify_planes(f).size(), 1u);
    b[pl.offset] ^= 0x01;
    const Oiw4File copy = f;
    EXPECT_EQ(f.plane_data(1, 0).size(), pl.size);  // verified now
    b[pl.offset] ^= 0x01;
    EXPECT_NO_THROW(copy.plane_data(1, 0));
    EXPECT_TRUE(verify_planes(f).empty());
}

// The reader follows docs/OIW4.md strictly: no byte after the directory escapes the checksums.
TEST(Oiw4Corruption, StrictLayout) {
    const auto clean = image_of(test::mini_requant("mini-llama", "Q4_0"));
    const Oiw4File f = Oiw4File::parse(clean, "clean.oiw4");
    const uint64_t dir_end = 64 + u64_at(clean, 24);
    ASSERT_LT(dir_end + 8, f.data_offset());  // room to grow the directory, and padding to damage
    const auto expect_error = [](const std::vector<uint8_t>& b, ErrorKind kind, const std::string& what) {
        const FormatError e = parse_error(b);
        EXPECT_EQ(e.kind(), kind) << e.what();
        EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    };
    // Trailing bytes after the last plane (file size field updated, header resealed).
    auto b = clean;
    b.push_back(0);
    set_u64(b, 40, b.size());
    test::reseal_oiw4(b);
    expect_error(b, ErrorKind::OutOfBounds,
                 "bad.oiw4: data: 1 bytes after the end of the last plane at " + std::to_string(clean.size()));
    // A non-zero byte in the padding after the directory, and in the padding after a plane.
    b = clean;
    b[f.data_offset() - 1] = 0x80;
    expect_error(b, ErrorKind::BadData,
                 fmt::format("non-zero byte at offset {} in the padding before tensor '", f.data_offset() - 1));
    const auto padded = [&](const Oiw4Plane& p) {
        return (p.offset + p.size) % 4096 != 0 && p.offset + p.size < clean.size();
    };
    const auto it =
        std::find_if(f.tensors().begin(), f.tensors().end(), [&](const Oiw4Tensor& t) { return padded(t.planes[0]); });
    ASSERT_NE(it, f.tensors().end());
    const auto& pp = it->planes[0];
    b = clean;
    b[pp.offset + pp.size] = 1;
    expect_error(b, ErrorKind::BadData, fmt::format("non-zero byte at offset {} in the padding", pp.offset + pp.size));
    // A whole unreferenced page before the last plane (its offset moved, resealed).
    const Oiw4Plane* last = &f.tensors()[0].planes[0];
    for (const auto& t : f.tensors())
        for (const auto& p : t.planes)
            if (p.offset > last->offset) last = &p;
    b = clean;
    b.insert(b.begin() + static_cast<int64_t>(last->offset), 4096, 0);
    set_u64(b, plane_entry(clean, *last), last->offset + 4096);
    set_u64(b, 40, b.size());
    test::reseal_oiw4(b);
    expect_error(b, ErrorKind::OutOfBounds, fmt::format("starts at {}, ", last->offset + 4096));
    // Trailing bytes after the source metadata image inside the directory.
    b = clean;
    const uint64_t image = u64_at(clean, 64);
    b.insert(b.begin() + static_cast<int64_t>(72 + image), 8, 0);
    set_u64(b, 64, image + 8);
    set_u64(b, 24, u64_at(clean, 24) + 8);
    b.erase(b.begin() + static_cast<int64_t>(f.data_offset()),
            b.begin() + static_cast<int64_t>(f.data_offset()) + 8);  // out of the padding
    test::reseal_oiw4(b);
    expect_error(b, ErrorKind::OutOfBounds, "bad.oiw4: directory: 8 trailing bytes after the source metadata image");
    // The same edits undone parse: the cases above differ from a valid file only where stated.
    EXPECT_NO_THROW(Oiw4File::parse(clean, "clean.oiw4"));
}

// A plane may not start inside the header or directory (docs/OIW4.md: at or after data_offset).
TEST(Oiw4Corruption, PlaneAtOffsetZeroIsRefused) {
    const auto clean = image_of(test::mini_requant("mini-llama", "Q4_0"));
    const Oiw4File f = Oiw4File::parse(clean, "clean.oiw4");
    const auto& t = f.tensors()[2];
    auto b = clean;
    set_u64(b, plane_entry(clean, t.planes[0]), 0);
    test::reseal_oiw4(b);
    const FormatError e = parse_error(b);
    EXPECT_EQ(e.kind(), ErrorKind::OutOfBounds);
    EXPECT_NE(std::string(e.what()).find(
                  fmt::format("bad.oiw4: tensor '{}' plane '{}': bytes [0, +{}) are outside the data section [{}, ",
                              t.info.name, t.planes[0].name, t.planes[0].size, f.data_offset())),
              std::string::npos)
        << e.what();
}

// ---------------------------------------------------------------------------------------------
// Provenance: --to-gguf against the recorded source

// `in` rewritten with its planes as given by `plane(i, p, bytes)` (checksums recomputed) and the
// provenance without `drop_key`.
std::string rewrite(const Oiw4File& in, const std::string& out, const std::string& drop_key,
                    const std::function<void(size_t, size_t, std::vector<uint8_t>&)>& plane = {}) {
    std::vector<GgufKV> prov;
    for (const auto& kv : in.provenance())
        if (kv.key != drop_key) prov.push_back(kv);
    Oiw4Writer w(out, {});
    w.set_metadata(in.gguf_version(), in.metadata(), Metadata(prov));
    for (const auto& t : in.tensors()) w.add_tensor(t.info, t.encoding);
    for (size_t i = 0; i < in.tensors().size(); ++i)
        for (size_t p = 0; p < in.tensors()[i].planes.size(); ++p) {
            const auto d = in.plane_data(i, p);
            std::vector<uint8_t> bytes(d.begin(), d.end());
            if (plane) plane(i, p, bytes);
            w.write_plane(bytes);
        }
    w.finish();
    return out;
}

TEST(Oiw4Provenance, RecordsEverySourceTensorXxh3) {
    const std::string src = test::mini_requant("mini-moe", "Q4_K_M");
    const Oiw4File f = Oiw4File::open(convert(src));
    const Model m = open_model(src);
    const GgufKV* kv = nullptr;
    for (const auto& k : f.provenance())
        if (k.key == "oiw4.source.tensor_xxh3") kv = &k;
    ASSERT_NE(kv, nullptr);
    ASSERT_EQ(kv->value.elem_type(), GgufType::U64);
    ASSERT_EQ(kv->value.count(), m.tensors().size());
    for (size_t i = 0; i < m.tensors().size(); ++i) {
        uint64_t h;
        std::memcpy(&h, kv->value.raw().data() + 8 * i, 8);
        const auto d = m.tensor_data(i);
        EXPECT_EQ(h, XXH3_64bits(d.data(), d.size())) << m.tensors()[i].name;
    }
}

TEST(Oiw4Provenance, ToGgufNamesTheFirstTensorThatDiffersFromTheSource) {
    const Oiw4File f = Oiw4File::open(all_encodings_file());
    const auto dir = test::temp_dir();
    const std::string out = (dir / "out.gguf").string();
    // Clean: identical, every tensor checked.
    ToGgufResult r = write_gguf_from_oiw4(f, out);
    EXPECT_TRUE(r.tensors_checked);
    EXPECT_FALSE(r.lossless);  // ffn_down was requantized
    EXPECT_TRUE(r.mismatch.empty()) << r.mismatch;
    fs::remove(out);
    // One byte of a q4kx8 plane (attn_k) and of a later raw plane changed, checksums valid: the
    // first in tensor order is named, nothing is written.
    const auto k = static_cast<size_t>(f.find_tensor("blk.0.attn_k.weight"));
    size_t n = k + 1;  // the first raw tensor after it
    while (n < f.tensors().size() && f.tensors()[n].encoding != Oiw4Encoding::Raw) ++n;
    ASSERT_EQ(f.tensors()[k].encoding, Oiw4Encoding::Q4Kx8);
    ASSERT_LT(n, f.tensors().size());
    const std::string edited =
        rewrite(f, (dir / "edited.oiw4").string(), "", [&](size_t i, size_t, std::vector<uint8_t>& b) {
            if (i == k || i == n) b[b.size() / 2] ^= 0x01;
        });
    r = write_gguf_from_oiw4(Oiw4File::open(edited), out);
    EXPECT_NE(r.mismatch.find("tensor 'blk.0.attn_k.weight': rebuilt bytes hash to "), std::string::npos) << r.mismatch;
    EXPECT_NE(r.mismatch.find("not identical to the source, nothing written"), std::string::npos) << r.mismatch;
    EXPECT_TRUE(r.written.empty());
    EXPECT_FALSE(fs::exists(out));
}

TEST(Oiw4Provenance, FilesWithoutTensorChecksums) {
    const std::string src = test::mini_requant("mini-llama", "Q4_0");
    const Oiw4File f = Oiw4File::open(convert(src));
    const auto dir = test::temp_dir();
    const std::string out = (dir / "out.gguf").string();
    // An older file (no per-tensor key), intact: identical to the source.
    const Oiw4File old = Oiw4File::open(rewrite(f, (dir / "old.oiw4").string(), "oiw4.source.tensor_xxh3"));
    ToGgufResult r = write_gguf_from_oiw4(old, out);
    EXPECT_TRUE(r.identical_to_source);
    EXPECT_FALSE(r.tensors_checked);
    EXPECT_TRUE(r.mismatch.empty());
    EXPECT_TRUE(test::read_file(out) == test::read_file(src));
    // Changed (checksums valid): written, but the mismatch is reported with both sizes and hashes.
    const Oiw4File bad = Oiw4File::open(rewrite(f, (dir / "bad.oiw4").string(), "oiw4.source.tensor_xxh3",
                                                [](size_t i, size_t p, std::vector<uint8_t>& b) {
                                                    if (i == 1 && p == 0) b[0] ^= 0x11;
                                                }));
    r = write_gguf_from_oiw4(bad, out);
    EXPECT_FALSE(r.identical_to_source);
    const auto size = fs::file_size(src);
    EXPECT_NE(r.mismatch.find(fmt::format("differs from the source recorded in the provenance (size {}, xxh3 ", size)),
              std::string::npos)
        << r.mismatch;
    EXPECT_NE(r.mismatch.find(fmt::format("rebuilt: size {}, xxh3 ", size)), std::string::npos) << r.mismatch;
    EXPECT_NE(r.mismatch.find("no per-tensor checksums"), std::string::npos) << r.mismatch;
    // A per-tensor key of the wrong length is a format error naming it.
    std::vector<GgufKV> prov(f.provenance().begin(), f.provenance().end());
    for (auto& kv : prov)
        if (kv.key == "oiw4.source.tensor_xxh3")
            kv.value = GgufValue::make_array(GgufType::U64, std::vector<uint8_t>(8), 1);
    Oiw4Writer w((dir / "short.oiw4").string(), {});
    w.set_metadata(f.gguf_version(), f.metadata(), Metadata(prov));
    for (const auto& t : f.tensors()) w.add_tensor(t.info, t.encoding);
    for (size_t i = 0; i < f.tensors().size(); ++i)
        for (size_t p = 0; p < f.tensors()[i].planes.size(); ++p) w.write_plane(f.plane_data(i, p));
    w.finish();
    const FormatError e = test::format_error_of(
        [&] { write_gguf_from_oiw4(Oiw4File::open((dir / "short.oiw4").string()), (dir / "s.gguf").string()); });
    EXPECT_EQ(e.kind(), ErrorKind::BadKey);
    EXPECT_NE(std::string(e.what()).find("oiw4.source.tensor_xxh3: must be a u64 array of "), std::string::npos)
        << e.what();
}

// A source not in ggml's layout (8 bytes after its last tensor): every tensor matches the
// recorded checksums, so the rebuilt file is lossless but not identical, and not an error.
TEST(Oiw4Provenance, SourceLayoutDiffersButEveryTensorMatches) {
    const std::string dir = test::temp_dir().string();
    auto b = test::read_file(test::mini_requant("mini-llama", "Q4_0"));
    b.insert(b.end(), 8, 0);
    const std::string src = dir + "/tail.gguf";
    test::write_file(src, b);
    const ToGgufResult r = write_gguf_from_oiw4(Oiw4File::open(convert(src)), dir + "/out.gguf");
    EXPECT_TRUE(r.lossless);
    EXPECT_TRUE(r.tensors_checked);
    EXPECT_FALSE(r.identical_to_source);
    EXPECT_TRUE(r.mismatch.empty()) << r.mismatch;
    EXPECT_EQ(fs::file_size(dir + "/out.gguf"), b.size() - 8);
}

TEST(Oiw4Writer, RefusesWrongPlaneSizesAndLeavesNoFile) {
    const std::string out = (test::temp_dir() / "w.oiw4").string();
    {
        Oiw4Writer w(out, {});
        GgufTensorInfo t = make_tensor_info("x", GgmlType::Q4_0, std::vector<int64_t>{64, 2});
        w.add_tensor(t, Oiw4Encoding::Oiw4);
        EXPECT_THROW(w.write_plane(std::vector<uint8_t>(63)), FormatError);  // qs needs 64 bytes
    }
    EXPECT_FALSE(fs::exists(out));
    for (const auto& e : fs::directory_iterator(fs::path(out).parent_path()))
        ADD_FAILURE() << "left behind: " << e.path();
}

// ---------------------------------------------------------------------------------------------
// zstd

TEST(Oiw4Zstd, CompressDecompressRestoresTheFile) {
    const std::string path = convert(test::mini_requant("mini-llama", "Q4_K_M"));
    const std::string z = (test::temp_dir() / "z.oiw4").string(), u = (test::temp_dir() / "u.oiw4").string();
    CodecOptions co;
    co.threads = 2;
    const CodecReport cr = compress_oiw4(Oiw4File::open(path), z, co);
    EXPECT_TRUE(cr.contains("q4kx8") && cr.contains("raw"));
    const Oiw4File zf = Oiw4File::open(z);
    EXPECT_TRUE(zf.compressed());
    EXPECT_TRUE(verify_planes(zf).empty());
    for (const auto& t : zf.tensors())
        for (const auto& p : t.planes) EXPECT_EQ(p.codec, Oiw4Codec::Zstd);
    EXPECT_LT(fs::file_size(z), fs::file_size(path));
    EXPECT_THROW(write_gguf_from_oiw4(zf, (test::temp_dir() / "no.gguf").string()), FormatError);
    decompress_oiw4(zf, u, {});
    EXPECT_EQ(test::sha256_hex(test::read_file(u)), test::sha256_hex(test::read_file(path)));
    // A damaged frame (checksum resealed so only zstd can tell) fails decompression, naming the plane.
    auto b = test::read_file(z);
    const auto& p = zf.tensors()[3].planes[0];
    b[p.offset + p.size - 2] ^= 0x40;  // inside the content checksum
    const Oiw4File bad = Oiw4File::parse(b, "bad.oiw4");
    try {
        decompress_oiw4(bad, (test::temp_dir() / "bad-out.oiw4").string(), {});
        FAIL();
    } catch (const FormatError& e) {
        EXPECT_NE(std::string(e.what()).find("tensor '" + zf.tensors()[3].info.name + "' plane '"), std::string::npos)
            << e.what();
    }
}

// Every encoding at once: mini-llama Q4_K_M with ffn_down requantized to oiw4 and attn_q in il4.
std::string all_encodings_file() {
    return convert(test::mini_requant("mini-llama", "Q4_K_M"),
                   {parse_encode_rule("ffn_down=oiw4", true), parse_encode_rule("attn_q=q4kx8-il4", false)});
}

TEST(Oiw4Zstd, BytesIndependentOfThreadsAndWindow) {
    const std::string path = all_encodings_file();
    const Oiw4File f = Oiw4File::open(path);
    std::vector<uint64_t> sizes;
    for (const auto& t : f.tensors())
        for (const auto& p : t.planes) sizes.push_back(p.size);
    std::sort(sizes.begin(), sizes.end());
    // A window of the median plane: the larger planes stream through the writer, the smaller
    // ones are buffered by the workers and wait for room.
    const uint64_t median = sizes[sizes.size() / 2];
    ASSERT_GT(std::count_if(sizes.begin(), sizes.end(), [&](uint64_t s) { return ZSTD_compressBound(s) > median; }), 2);
    ASSERT_GT(std::count_if(sizes.begin(), sizes.end(), [&](uint64_t s) { return ZSTD_compressBound(s) <= median; }),
              2);
    const auto plain = test::read_file(path);
    std::string first;
    for (const auto& [threads, window] : std::vector<std::pair<unsigned, uint64_t>>{
             {1, kDefaultCodecWindow}, {2, kDefaultCodecWindow}, {4, kDefaultCodecWindow}, {4, median}, {1, median}}) {
        SCOPED_TRACE(fmt::format("{} threads, window {}", threads, window));
        CodecOptions o;
        o.threads = threads;
        o.window_bytes = window;
        std::vector<size_t> seen;  // progress: once per plane, in order
        o.progress = [&](size_t i, uint64_t, std::string_view) { seen.push_back(i); };
        const std::string z = (test::temp_dir() / "t.oiw4").string(), u = (test::temp_dir() / "u.oiw4").string();
        const CodecReport r = compress_oiw4(f, z, o);
        EXPECT_EQ(r.size(), 4u);
        const std::string h = test::sha256_hex(test::read_file(z));
        if (first.empty()) first = h;
        EXPECT_EQ(h, first);
        EXPECT_EQ(seen.size(), sizes.size());
        EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
        EXPECT_EQ(seen.back(), f.tensors().size() - 1);
        decompress_oiw4(Oiw4File::open(z), u, o);
        EXPECT_TRUE(test::read_file(u) == plain);
    }
}

// A zstd frame of `src` (content size and checksum flags as asked).
std::vector<uint8_t> zstd_frame(std::span<const uint8_t> src, bool checksum, bool content_size) {
    ZSTD_CCtx* c = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, checksum);
    ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, content_size);
    std::vector<uint8_t> out(ZSTD_compressBound(src.size()));
    const size_t n = ZSTD_compress2(c, out.data(), out.size(), src.data(), src.size());
    ZSTD_freeCCtx(c);
    EXPECT_FALSE(ZSTD_isError(n));
    out.resize(n);
    return out;
}

struct BadFrame {
    std::string name;
    std::string path;  // a one-tensor OIW4 file whose only plane is the frame
    std::string what;  // expected in the error ("" for the good frame)
    ErrorKind kind;
};

// One good and seven damaged zstd frames of `plain`, each as the plane of its own OIW4 file.
std::vector<BadFrame> bad_frame_files(const std::vector<uint8_t>& plain) {
    const auto good = zstd_frame(plain, true, true);
    const auto with = [&](size_t cut, std::vector<uint8_t> tail) {
        std::vector<uint8_t> b(good.begin(), good.end() - static_cast<ptrdiff_t>(cut));
        b.insert(b.end(), tail.begin(), tail.end());
        return b;
    };
    auto bad_sum = good;
    bad_sum.back() ^= 0x01;
    const std::vector<std::tuple<std::string, std::vector<uint8_t>, std::string, ErrorKind>> cases{
        {"good", good, "", ErrorKind::Io},
        {"short", zstd_frame(std::span(plain).first(1020), true, true), "declares 1020 bytes, the plane has 1024",
         ErrorKind::BadData},
        {"truncated", with(6, {}), "truncated", ErrorKind::Truncated},
        {"trailing", with(0, {0, 0, 0}), "3 trailing bytes after the frame", ErrorKind::BadData},
        {"no-checksum", zstd_frame(plain, false, true), "no content checksum", ErrorKind::BadData},
        {"no-size", zstd_frame(plain, true, false), "no content size", ErrorKind::BadData},
        {"not-zstd", std::vector<uint8_t>(64, 0x5A), "no zstd frame magic", ErrorKind::BadData},
        {"bad-sum", bad_sum, "checksum", ErrorKind::BadChecksum},
    };
    const GgufTensorInfo w = make_tensor_info("w", GgmlType::F32, std::vector<int64_t>{256});
    std::vector<BadFrame> out;
    for (const auto& [name, frame, what, kind] : cases) {
        const std::string path = (test::temp_dir() / (name + ".oiw4")).string();
        Oiw4Writer wr(path, {});
        wr.set_metadata(3, {}, {});
        wr.add_tensor(w, Oiw4Encoding::Raw);
        wr.write_plane(frame, Oiw4Codec::Zstd);
        wr.finish();
        out.push_back({name, path, what, kind});
    }
    return out;
}

std::vector<uint8_t> frame_plain() {
    std::vector<uint8_t> plain(1024);
    for (size_t k = 0; k < plain.size(); ++k) plain[k] = static_cast<uint8_t>(k * k / 7);
    return plain;
}

TEST(Oiw4Zstd, BadFramesAreErrorsNamingThePlane) {
    const auto plain = frame_plain();
    for (const BadFrame& c : bad_frame_files(plain)) {
        SCOPED_TRACE(c.name);
        const std::string out = (test::temp_dir() / "out.oiw4").string();
        const Oiw4File f = Oiw4File::open(c.path);
        if (c.what.empty()) {
            EXPECT_TRUE(decode_plane(f, 0, 0) == plain);
            continue;
        }
        try {
            decode_plane(f, 0, 0);
            ADD_FAILURE() << "no error";
        } catch (const FormatError& e) {
            EXPECT_EQ(e.kind(), c.kind);
            EXPECT_NE(std::string(e.what()).find(c.path + ": tensor 'w' plane 'data': zstd frame: "), std::string::npos)
                << e.what();
            EXPECT_NE(std::string(e.what()).find(c.what), std::string::npos) << e.what();
        }
        for (unsigned threads : {1u, 2u}) {
            CodecOptions o;
            o.threads = threads;
            EXPECT_THROW(decompress_oiw4(f, out, o), FormatError);
            EXPECT_FALSE(fs::exists(out));
        }
    }
}

// The tool on the same frames: one error line, exit 2, nothing written (spawns the tool, so it is
// not in the qemu subset of scripts/test).
TEST(Oiw4Cli, BadFramesAreOneLineErrors) {
    for (const BadFrame& c : bad_frame_files(frame_plain())) {
        if (c.what.empty()) continue;
        SCOPED_TRACE(c.name);
        const std::string out = (test::temp_dir() / "out.oiw4").string();
        std::string text;
        EXPECT_EQ(test::run(test::tool_path("oiw4-convert") + " --decompress " + c.path + " " + out, &text, true), 2);
        EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
        EXPECT_NE(text.find(c.what), std::string::npos) << text;
        EXPECT_FALSE(fs::exists(out));
    }
}

}  // namespace
}  // namespace oiw
