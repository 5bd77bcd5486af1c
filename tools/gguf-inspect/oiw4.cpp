// gguf-inspect on an .oiw4 file: header, provenance, and per tensor its encoding, planes (offset,
// size, codec, stored XXH3-64, optional digest) and bytes read per token. With --hash every plane
// is checked against its stored XXH3 first (a mismatch is an error naming the plane, exit 2).
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "libformat/escape.h"
#include "libformat/io/hash.h"
#include "libformat/json.h"
#include "libformat/oiw4/oiw4.h"
#include "libformat/traffic.h"
#include "tools/gguf-inspect/commands.h"

namespace oiw::inspect_tool {

namespace {

// Bytes per decoded token of each tensor: gguf-inspect's traffic model applied to the GGUF
// tensor, scaled by the planes' decoded size over the GGUF size (every encoding is uniform per row).
std::vector<uint64_t> bytes_per_token(const Oiw4File& f) {
    std::vector<GgufTensorInfo> infos;
    for (const auto& t : f.tensors()) infos.push_back(t.info);
    const traffic::Analysis a = traffic::analyze(f.metadata(), infos);
    std::vector<uint64_t> out;
    for (size_t i = 0; i < infos.size(); ++i) {
        unsigned __int128 planes = 0;
        for (const auto& p : f.tensors()[i].planes) planes += p.decoded_size;
        out.push_back(infos[i].n_bytes ? static_cast<uint64_t>(planes * a.tensors[i].bytes_per_token / infos[i].n_bytes)
                                       : 0);
    }
    return out;
}

std::string digest(std::span<const uint8_t> b, const std::string& algo) {
    return algo == "sha256" ? sha256_hex(b) : xxh3_hex(b);
}

std::string render_json(const Oiw4File& f, const std::vector<uint64_t>& bpt, const std::string& algo) {
    json::Writer w;
    w.begin_object();
    w.field("file", f.path());
    w.field("format", "oiw4");
    w.field("file_size", f.file_size());
    w.field("compressed", f.compressed());
    w.field("header_xxh3", fmt::format("{:016x}", f.header_xxh3()));
    w.field("gguf_version", f.gguf_version());
    w.field("metadata_count", static_cast<uint64_t>(f.metadata().size()));
    w.key("provenance");
    w.begin_object();
    for (const auto& kv : f.provenance())
        w.field(kv.key, kv.value.as_string() ? *kv.value.as_string() : kv.value.to_string(64));
    w.end_object();
    uint64_t total = 0;
    for (auto b : bpt) total += b;
    w.field("bytes_per_token", total);
    w.key("tensors");
    w.begin_array();
    for (size_t i = 0; i < f.tensors().size(); ++i) {
        const auto& t = f.tensors()[i];
        w.begin_object();
        w.field("name", t.info.name);
        w.field("type", type_name(t.info.type));
        w.key("shape");
        w.begin_array(true);
        for (auto d : t.info.shape()) w.value(d);
        w.end_array();
        w.field("encoding", encoding_name(t.encoding));
        w.field("bytes_per_token", bpt[i]);
        w.key("planes");
        w.begin_array();
        for (size_t p = 0; p < t.planes.size(); ++p) {
            const auto& pl = t.planes[p];
            w.begin_object();
            w.field("name", pl.name);
            w.field("codec", codec_name(pl.codec));
            w.field("offset", pl.offset);
            w.field("size", pl.size);
            w.field("decoded_size", pl.decoded_size);
            w.field("xxh3", fmt::format("{:016x}", pl.xxh3));
            if (!algo.empty()) f.verify_plane(i, p);  // --hash: the stored xxh3 shown is the bytes'
            if (algo == "sha256") w.field("sha256", digest(f.plane_data(i, p), algo));
            w.end_object();
        }
        w.end_array();
        w.end_object();
    }
    w.end_array();
    w.end_object();
    return w.take() + "\n";
}

std::string render_text(const Oiw4File& f, const std::vector<uint64_t>& bpt, const std::string& algo) {
    // Every string from the file (and the path) goes through escape_text: no control byte of a
    // hostile name reaches the terminal.
    std::string out =
        fmt::format("{}: OIW4 v1, {} bytes, {} tensors{}, header xxh3 {:016x}\n", escape_text(f.path()), f.file_size(),
                    f.tensors().size(), f.compressed() ? ", zstd-compressed planes" : "", f.header_xxh3());
    out += fmt::format("source: GGUF v{}, {} metadata keys\n", f.gguf_version(), f.metadata().size());
    for (const auto& kv : f.provenance())
        out += fmt::format("  {} = {}\n", escape_text(kv.key), escape_text(kv.value.to_string(8)));
    std::map<std::string, std::pair<uint64_t, uint64_t>> by_enc;  // count, bytes per token
    uint64_t total = 0;
    out += fmt::format("\n{:<32} {:<7} {:<16} {:<10} {:>12}  planes (name offset size xxh3{})\n", "tensor", "type",
                       "shape", "encoding", "bytes/token", algo.empty() ? "" : " " + algo);
    for (size_t i = 0; i < f.tensors().size(); ++i) {
        const auto& t = f.tensors()[i];
        std::string planes;
        for (size_t p = 0; p < t.planes.size(); ++p) {
            const auto& pl = t.planes[p];
            planes += fmt::format("{}{} {} {}{} {:016x}", p ? "; " : "", pl.name, pl.offset, pl.size,
                                  pl.codec == Oiw4Codec::None ? "" : " zstd", pl.xxh3);
            if (!algo.empty()) planes += " " + digest(f.plane_data(i, p), algo);
        }
        out += fmt::format("{:<32} {:<7} {:<16} {:<10} {:>12}  {}\n", escape_text(t.info.name), type_name(t.info.type),
                           t.info.shape_string(), encoding_name(t.encoding), bpt[i], planes);
        auto& e = by_enc[std::string(encoding_name(t.encoding))];
        ++e.first;
        e.second += bpt[i];
        total += bpt[i];
    }
    out += "\nby encoding:\n";
    for (const auto& [enc, e] : by_enc)
        out += fmt::format("  {:<10} {:>5} tensors {:>14} bytes/token\n", enc, e.first, e.second);
    out += fmt::format("bytes per token: {}\n", total);
    return out;
}

}  // namespace

int run_oiw4_report(const std::string& path, bool json, const std::string& hash) {
    const Oiw4File f = Oiw4File::open(path);
    const auto bpt = bytes_per_token(f);
    write_stdout(json ? render_json(f, bpt, hash) : render_text(f, bpt, hash));
    return kExitOk;
}

}  // namespace oiw::inspect_tool
