// oiw4-convert: GGUF -> OIW4 (pre-packed planes), back to GGUF, zstd shipping form, verification.
//   oiw4-convert IN.gguf OUT.oiw4 [--encode REGEX=ENC ...] [--requant REGEX=oiw4 ...] [--dry-run]
//   oiw4-convert --to-gguf IN.oiw4 OUT.gguf
//   oiw4-convert --compress[=LEVEL] IN.oiw4 OUT.oiw4   |   --decompress IN.oiw4 OUT.oiw4   [--threads N]
//   oiw4-convert --verify FILE.oiw4          (exit 1 naming the tensor and plane on a mismatch)
// Every report is text on stdout, or JSON with --json; progress on stderr when it is a TTY.
#include <algorithm>
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "converters/repack/oiw4_convert.h"
#include "libformat/escape.h"
#include "libformat/gguf/split.h"
#include "libformat/json.h"
#include "libformat/oiw4/zstd/oiw4_zstd.h"
#include "libformat/parallel.h"
#include "tools/common/cli_parse.h"
#include "tools/common/split_cli.h"
#include "tools/common/tool_support.h"

namespace {

using namespace oiw;

struct Options {
    std::vector<std::string> files, encode, requant;
    bool dry_run = false, to_gguf = false, decompress = false, verify = false, json = false, quiet = false;
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
    int compress = 0;  // zstd level; 0: not compressing
    unsigned threads = 0;
    std::string max_output_size = "1T";  // --decompress: planes may decode to at most this
    SplitCli split;                      // --to-gguf: write gguf-split shards
};

void need_files(const Options& o, size_t n, const char* usage) {
    if (o.files.size() != n)
        throw FormatError(ErrorKind::Usage, "", "", fmt::format("expected {} (see --help)", usage));
}

double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

std::string human(uint64_t b) {
    if (b >= (1ull << 30)) return fmt::format("{:.2f} GiB", static_cast<double>(b) / (1ull << 30));
    if (b >= (1ull << 20)) return fmt::format("{:.2f} MiB", static_cast<double>(b) / (1ull << 20));
    return fmt::format("{:.1f} KiB", static_cast<double>(b) / 1024);
}

double ratio(const CodecTotals& t) {
    return t.stored ? static_cast<double>(t.decoded) / static_cast<double>(t.stored) : 1.0;
}

void json_totals(json::Writer& j, const CodecTotals& t) {
    j.field("planes", t.planes);
    j.field("decoded_bytes", t.decoded);
    j.field("compressed_bytes", t.stored);
    j.field("ratio", ratio(t));
}

void print_plan(const Options& o, const Model& in, const Oiw4Plan& plan) {
    if (o.json) {
        json::Writer j;
        j.begin_object();
        j.field("input", o.files[0]);
        j.key("output");
        if (o.dry_run)
            j.null();
        else
            j.value(o.files[1]);
        j.field("dry_run", o.dry_run);
        j.key("tensors");
        j.begin_array();
        for (const auto& tp : plan.tensors) {
            const auto& t = in.tensors()[tp.index];
            j.begin_object();
            j.field("name", t.name);
            j.field("type", type_name(t.type));
            j.key("shape");
            j.begin_array(true);
            for (int64_t d : t.shape()) j.value(d);
            j.end_array();
            j.field("encoding", encoding_name(tp.encoding));
            j.field("requant", tp.requant);
            j.key("planes");
            j.begin_array();
            for (const auto& p : tp.planes) {
                j.begin_object();
                j.field("name", p.name);
                j.field("size", p.size);
                j.end_object();
            }
            j.end_array();
            j.end_object();
        }
        j.end_array();
        j.field("input_bytes", in.file_size());
        j.field("output_bytes", plan.out_size);
        j.end_object();
        fmt::print("{}\n", j.str());
        return;
    }
    if (!o.dry_run) {
        if (!o.quiet)
            fmt::print("{}: {} tensors, {}\n{}", escape_text(o.files[1]), plan.tensors.size(), human(plan.out_size),
                       summary_line("oiw4-convert", {o.files[1]}, seconds_since(o.start)));
        return;
    }
    std::map<std::string, int> count;
    for (const auto& tp : plan.tensors) {
        const auto& t = in.tensors()[tp.index];
        std::string planes;
        for (const auto& p : tp.planes) planes += fmt::format("{}{} {}", planes.empty() ? "" : ", ", p.name, p.size);
        const std::string enc = std::string(encoding_name(tp.encoding)) + (tp.requant ? " (requant)" : "");
        fmt::print("{:<32} {:<7} {:<20} -> {:<16} {}\n", escape_text(t.name), type_name(t.type), t.shape_string(), enc,
                   planes);
        ++count[enc];
    }
    std::string by;
    for (const auto& [e, n] : count) by += fmt::format("{}{} {}", by.empty() ? "" : ", ", n, e);
    fmt::print("{} tensors ({}): {} ({} bytes) -> {} ({} bytes)\n", plan.tensors.size(), by, human(in.file_size()),
               in.file_size(), human(plan.out_size), plan.out_size);
}

// Planes and bytes per encoding and in total; ratio = decoded / compressed bytes.
void print_codec(const Options& o, const CodecReport& r, unsigned threads) {
    CodecTotals total;
    for (const auto& [enc, t] : r) {
        total.planes += t.planes;
        total.decoded += t.decoded;
        total.stored += t.stored;
    }
    if (o.json) {
        json::Writer j;
        j.begin_object();
        j.field("mode", o.decompress ? "decompress" : "compress");
        j.field("input", o.files[0]);
        j.field("output", o.files[1]);
        j.key("level");
        if (o.decompress)
            j.null();
        else
            j.value(o.compress);
        j.field("threads", threads);
        j.key("encodings");
        j.begin_array();
        for (const auto& [enc, t] : r) {
            j.begin_object();
            j.field("encoding", enc);
            json_totals(j, t);
            j.end_object();
        }
        j.end_array();
        j.key("total");
        j.begin_object();
        json_totals(j, total);
        j.end_object();
        j.end_object();
        fmt::print("{}\n", j.str());
        return;
    }
    fmt::print("{} {} -> {} (zstd{}, {} thread{})\n", o.decompress ? "decompressed" : "compressed",
               escape_text(o.files[0]), escape_text(o.files[1]),
               o.decompress ? "" : fmt::format(" level {}", o.compress), threads, threads == 1 ? "" : "s");
    fmt::print("{:<10} {:>7} {:>16} {:>16} {:>8}\n", "encoding", "planes", "decoded bytes", "compressed", "ratio");
    const auto row = [](const std::string& name, const CodecTotals& t) {
        fmt::print("{:<10} {:>7} {:>16} {:>16} {:>8.3f}\n", name, t.planes, t.decoded, t.stored, ratio(t));
    };
    for (const auto& [enc, t] : r) row(enc, t);
    row("total", total);
    fmt::print("{}", summary_line("oiw4-convert", {o.files[1]}, seconds_since(o.start)));
}

int verify(const Options& o) {
    need_files(o, 1, "--verify FILE.oiw4");
    const Oiw4File f = Oiw4File::open(o.files[0]);
    const auto bad = verify_planes(f);
    for (const auto& m : bad)
        fmt::print(stderr, "oiw4-convert: {}: tensor '{}' plane '{}': checksum mismatch\n", escape_text(f.path()),
                   escape_text(m.tensor), m.plane);
    uint64_t planes = 0;
    for (const auto& t : f.tensors()) planes += t.planes.size();
    if (o.json) {
        json::Writer j;
        j.begin_object();
        j.field("file", f.path());
        j.field("ok", bad.empty());
        j.field("tensors", f.tensors().size());
        j.field("planes", planes);
        j.field("header_xxh3", fmt::format("{:016x}", f.header_xxh3()));
        j.key("mismatches");
        j.begin_array();
        for (const auto& m : bad) {
            j.begin_object();
            j.field("tensor", m.tensor);
            j.field("plane", m.plane);
            j.end_object();
        }
        j.end_array();
        j.end_object();
        fmt::print("{}\n", j.str());
    } else if (bad.empty()) {
        fmt::print("{}: ok ({} tensors, {} planes, header checksum {:016x})\n", escape_text(f.path()),
                   f.tensors().size(), planes, f.header_xxh3());
    }
    return bad.empty() ? kExitOk : kExitDiffers;
}

// The --to-gguf verdict in words.
std::string to_gguf_verdict(const ToGgufResult& r) {
    if (!r.mismatch.empty()) return "NOT identical to the source GGUF";
    if (r.identical_to_source) return "byte-identical to the source GGUF";
    if (!r.lossless) return "lossy";
    return r.tensors_checked ? "lossless: every tensor equals the source's (source layout differs)"
                             : "lossless encodings (no source checksums recorded to compare with)";
}

int to_gguf(const Options& o) {
    need_files(o, 2, "--to-gguf IN.oiw4 OUT.gguf");
    const Oiw4File f = Oiw4File::open(o.files[0]);
    const ToGgufResult r = write_gguf_from_oiw4(f, o.files[1], split_options(o.split));
    for (const auto& w : r.warnings) fmt::print(stderr, "oiw4-convert: warning: {}\n", escape_text(w));
    if (!r.mismatch.empty())
        fmt::print(stderr, "oiw4-convert: {}: {}\n", escape_text(f.path()), escape_text(r.mismatch));
    const int rc = r.mismatch.empty() ? kExitOk : kExitDiffers;
    if (o.json) {
        json::Writer j;
        j.begin_object();
        j.field("input", o.files[0]);
        j.field("output", o.files[1]);
        j.field("tensors", f.tensors().size());
        j.field("lossless", r.lossless);
        j.field("tensors_checked", r.tensors_checked);
        j.field("identical_to_source", r.identical_to_source);
        j.key("mismatch");
        if (r.mismatch.empty())
            j.null();
        else
            j.value(r.mismatch);
        j.key("warnings");
        j.begin_array();
        for (const auto& w : r.warnings) j.value(w);
        j.end_array();
        j.end_object();
        fmt::print("{}\n", j.str());
        return rc;
    }
    if (r.written.empty()) return rc;
    if (!o.quiet)
        fmt::print("{}: {} tensors, {}\n{}", written_text(r.written), f.tensors().size(), to_gguf_verdict(r),
                   summary_line("oiw4-convert", r.written, seconds_since(o.start)));
    return rc;
}

int codec(const Options& o) {
    need_files(o, 2, "--compress/--decompress IN.oiw4 OUT.oiw4");
    const Oiw4File f = Oiw4File::open(o.files[0]);
    uint64_t planes = 0;
    for (const auto& t : f.tensors()) planes += t.planes.size();
    if (o.decompress) {  // the directory gives every plane's decoded size: check before writing a byte
        const uint64_t cap = parse_split_size(o.max_output_size, "--max-output-size");
        uint64_t decoded = 0;
        for (const auto& t : f.tensors())
            for (const auto& p : t.planes) decoded += p.decoded_size;
        if (decoded > cap)
            throw FormatError(
                ErrorKind::TooLarge, o.files[0], "",
                fmt::format(
                    "its planes decode to {} bytes ({}x the {}-byte file), more than --max-output-size {}; raise it if "
                    "that is expected",
                    decoded, decoded / std::max<uint64_t>(1, f.file_size()), f.file_size(), o.max_output_size));
    }
    CodecOptions co;
    co.level = o.compress;
    co.threads = thread_count(o.threads, planes);
    Progress bar(o.decompress ? "decompress" : "compress", f.tensors().size(), f.file_size());
    co.progress = [&](size_t i, uint64_t bytes, std::string_view name) { bar.update(i, bytes, escape_text(name)); };
    const CodecReport r = o.decompress ? decompress_oiw4(f, o.files[1], co) : compress_oiw4(f, o.files[1], co);
    bar.done();
    if (!o.quiet || o.json) print_codec(o, r, co.threads);
    return kExitOk;
}

int run(const Options& o) {
    if (o.to_gguf) return to_gguf(o);
    if (split_options(o.split).active())
        throw FormatError(ErrorKind::Usage, "", "--split-max-size/--split-max-tensors/--shard",
                          "only with --to-gguf (OIW4 files are not split)");
    if (o.verify) return verify(o);
    if (o.compress || o.decompress) return codec(o);
    need_files(o, o.dry_run ? (o.files.size() == 1 ? 1 : 2) : 2, "IN.gguf OUT.oiw4");
    if (is_oiw4_file(o.files[0]))
        throw FormatError(ErrorKind::Usage, o.files[0], "",
                          "is an OIW4 file: pass --to-gguf to convert it back to GGUF (or --verify, --compress, "
                          "--decompress)");
    std::vector<EncodeRule> rules;
    for (const auto& s : o.requant) rules.push_back(parse_encode_rule(s, true));
    for (const auto& s : o.encode) rules.push_back(parse_encode_rule(s, false));
    const Model in = open_model(o.files[0]);
    const Oiw4Plan plan = plan_oiw4(in, rules);
    if (!o.dry_run) {
        Progress bar("oiw4-convert", plan.tensors.size(), in.file_size());
        uint64_t done = 0;  // source bytes of the tensors written so far, for the MB/s figure
        write_oiw4(in, plan, o.files[1], [&](size_t i, std::string_view name) {
            done += in.tensors()[plan.tensors[i].index].n_bytes;
            bar.update(i, done, escape_text(name));
        });
        bar.done();
    }
    print_plan(o, in, plan);
    return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Convert GGUF models to the OIW4 pre-packed layout (docs/OIW4.md) and back.", "oiw4-convert"};
    Options o;
    app.add_option("FILES", o.files, "IN.gguf OUT.oiw4 | IN.oiw4 OUT.gguf (--to-gguf) | FILE (--verify)");
    app.add_option("--encode", o.encode,
                   "REGEX=ENC: encoding of matching tensors (raw oiw4 q4kx8 q4kx8-il4); first match wins");
    app.add_option("--requant", o.requant, "REGEX=oiw4: dequantize matching tensors of any type and quantize to oiw4");
    app.add_flag("--dry-run", o.dry_run, "print the plan and sizes, write nothing");
    auto* tg = app.add_flag("--to-gguf", o.to_gguf, "convert IN.oiw4 back to GGUF");
    auto* cz =
        app.add_flag("--compress{3}", o.compress, "zstd-compress every plane, one frame each (level 1..22, default 3)");
    auto* dz = app.add_flag("--decompress", o.decompress, "decode every zstd plane");
    auto* vf = app.add_flag("--verify", o.verify, "recompute every plane checksum (exit 1 on a mismatch)");
    add_threads_option(app, o.threads);
    app.add_option("--max-output-size", o.max_output_size,
                   "--decompress: refuse a file whose planes decode to more than SIZE bytes (K, M, G, T: powers of "
                   "1000; default 1T)");
    app.add_flag("--json", o.json, "report as JSON");
    app.add_flag("-q,--quiet", o.quiet, "print nothing on success (a check's verdict still prints)");
    add_split_options(app, o.split);
    for (auto* a : {tg, cz, dz, vf})
        for (auto* b : {tg, cz, dz, vf})
            if (a != b) a->excludes(b);
    // "--compress 19" reads as "--compress=19" (a CLI11 flag with a default takes its value only after '=').
    std::vector<std::string> words(argv, argv + argc);
    for (size_t i = 1; i + 1 < words.size(); ++i)
        if (words[i] == "--compress" && !words[i + 1].empty() &&
            words[i + 1].find_first_not_of("0123456789") == std::string::npos)
            words[i] += "=" + words[i + 1], words.erase(words.begin() + static_cast<std::ptrdiff_t>(i) + 1);
    std::vector<char*> args;
    args.reserve(words.size());
    for (auto& w : words) args.push_back(w.data());
    OIW_CLI_PARSE(app, static_cast<int>(args.size()), args.data());
    return run_tool("oiw4-convert", [&] { return run(o); });
}
