// oiw4-convert: GGUF -> OIW4 (pre-packed planes), back to GGUF, zstd shipping form, verification.
//   oiw4-convert IN.gguf OUT.oiw4 [--encode REGEX=ENC ...] [--requant REGEX=oiw4 ...] [--dry-run]
//   oiw4-convert --to-gguf IN.oiw4 OUT.gguf
//   oiw4-convert --compress[=LEVEL] IN.oiw4 OUT.oiw4 [--threads N]   |   --decompress IN.oiw4 OUT.oiw4
//   oiw4-convert --verify FILE.oiw4          (exit 1 naming the tensor and plane on a mismatch)
#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "converters/repack/oiw4_convert.h"
#include "libformat/oiw4/zstd/oiw4_zstd.h"
#include "tools/common/cli_parse.h"
#include "tools/common/tool_support.h"

namespace {

using namespace oiw;

struct Options {
    std::vector<std::string> files, encode, requant;
    bool dry_run = false, to_gguf = false, decompress = false, verify = false;
    int compress = 0;  // zstd level; 0: not compressing
    unsigned threads = 0;
};

void need_files(const Options& o, size_t n, const char* usage) {
    if (o.files.size() != n) throw FormatError(ErrorKind::Usage, "", "", fmt::format("expected {} (see --help)", usage));
}

std::string human(uint64_t b) {
    if (b >= (1ull << 30)) return fmt::format("{:.2f} GiB", static_cast<double>(b) / (1ull << 30));
    if (b >= (1ull << 20)) return fmt::format("{:.2f} MiB", static_cast<double>(b) / (1ull << 20));
    return fmt::format("{:.1f} KiB", static_cast<double>(b) / 1024);
}

void print_plan(const Model& in, const Oiw4Plan& plan) {
    std::map<std::string, int> count;
    for (const auto& tp : plan.tensors) {
        const auto& t = in.tensors()[tp.index];
        std::string planes;
        for (const auto& p : tp.planes) planes += fmt::format("{}{} {}", planes.empty() ? "" : ", ", p.name, p.size);
        const std::string enc = std::string(encoding_name(tp.encoding)) + (tp.requant ? " (requant)" : "");
        fmt::print("{:<32} {:<7} {:<20} -> {:<16} {}\n", t.name, type_name(t.type), t.shape_string(), enc, planes);
        ++count[enc];
    }
    std::string by;
    for (const auto& [e, n] : count) by += fmt::format("{}{} {}", by.empty() ? "" : ", ", n, e);
    fmt::print("{} tensors ({}): {} ({} bytes) -> {} ({} bytes)\n", plan.tensors.size(), by, human(in.file_size()), in.file_size(),
               human(plan.out_size), plan.out_size);
}

void print_codec(const CodecReport& r) {
    for (const auto& [enc, t] : r)
        fmt::print("{:<10} {:>14} -> {:>14} bytes  ratio {:.3f}\n", enc, t.decoded, t.stored,
                   t.decoded ? static_cast<double>(t.stored) / static_cast<double>(t.decoded) : 1.0);
}

int run(const Options& o) {
    if (o.verify) {
        need_files(o, 1, "--verify FILE.oiw4");
        const Oiw4File f = Oiw4File::open(o.files[0]);
        const auto bad = verify_planes(f);
        for (const auto& m : bad) fmt::print(stderr, "oiw4-convert: {}: tensor '{}' plane '{}': checksum mismatch\n", f.path(), m.tensor, m.plane);
        if (!bad.empty()) return kExitDiffers;
        uint64_t planes = 0;
        for (const auto& t : f.tensors()) planes += t.planes.size();
        fmt::print("{}: ok ({} tensors, {} planes, header checksum {:016x})\n", f.path(), f.tensors().size(), planes, f.header_xxh3());
        return kExitOk;
    }
    if (o.to_gguf) {
        need_files(o, 2, "--to-gguf IN.oiw4 OUT.gguf");
        const Oiw4File f = Oiw4File::open(o.files[0]);
        const ToGgufResult r = write_gguf_from_oiw4(f, o.files[1]);
        for (const auto& w : r.warnings) fmt::print(stderr, "oiw4-convert: warning: {}\n", w);
        fmt::print("wrote {}: {} tensors, {}\n", o.files[1], f.tensors().size(),
                   r.identical_to_source ? "byte-identical to the source GGUF" : r.lossless ? "lossless (source layout differs)" : "lossy");
        return kExitOk;
    }
    if (o.compress || o.decompress) {
        need_files(o, 2, "--compress/--decompress IN.oiw4 OUT.oiw4");
        const Oiw4File f = Oiw4File::open(o.files[0]);
        print_codec(o.decompress ? decompress_oiw4(f, o.files[1]) : compress_oiw4(f, o.files[1], o.compress, o.threads));
        return kExitOk;
    }
    need_files(o, o.dry_run ? (o.files.size() == 1 ? 1 : 2) : 2, "IN.gguf OUT.oiw4");
    std::vector<EncodeRule> rules;
    for (const auto& s : o.requant) rules.push_back(parse_encode_rule(s, true));
    for (const auto& s : o.encode) rules.push_back(parse_encode_rule(s, false));
    const Model in = open_model(o.files[0]);
    const Oiw4Plan plan = plan_oiw4(in, rules);
    if (o.dry_run) {
        print_plan(in, plan);
        return kExitOk;
    }
    Progress bar("oiw4-convert", plan.tensors.size(), in.file_size());
    write_oiw4(in, plan, o.files[1], [&](size_t i, std::string_view name) { bar.update(i, 0, name); });
    bar.done();
    fmt::print("wrote {}: {} tensors, {} ({} bytes)\n", o.files[1], plan.tensors.size(), human(plan.out_size), plan.out_size);
    return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Convert GGUF models to the OIW4 pre-packed layout (docs/OIW4.md) and back.", "oiw4-convert"};
    Options o;
    app.add_option("FILES", o.files, "IN.gguf OUT.oiw4 | IN.oiw4 OUT.gguf (--to-gguf) | FILE (--verify)");
    app.add_option("--encode", o.encode, "REGEX=ENC: encoding of matching tensors (raw oiw4 q4kx8 q4kx8-il4); first match wins");
    app.add_option("--requant", o.requant, "REGEX=oiw4: dequantize matching tensors of any type and quantize to oiw4");
    app.add_flag("--dry-run", o.dry_run, "print the plan and sizes, write nothing");
    auto* tg = app.add_flag("--to-gguf", o.to_gguf, "convert IN.oiw4 back to GGUF");
    auto* cz = app.add_flag("--compress{3}", o.compress, "zstd-compress every plane (level 1..19, default 3)");
    auto* dz = app.add_flag("--decompress", o.decompress, "decode every zstd plane");
    auto* vf = app.add_flag("--verify", o.verify, "recompute every plane checksum (exit 1 on a mismatch)");
    app.add_option("--threads", o.threads, "zstd worker threads (0: all hardware threads)");
    for (auto* a : {tg, cz, dz, vf})
        for (auto* b : {tg, cz, dz, vf})
            if (a != b) a->excludes(b);
    OIW_CLI_PARSE(app, argc, argv);
    return run_tool("oiw4-convert", [&] { return run(o); });
}
