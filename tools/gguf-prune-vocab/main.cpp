// gguf-prune-vocab IN OUT [--keep-ids FILE] [--keep-text FILE] [--counts FILE --top N]
//                  [--keep-range A-B] [--map-out FILE.json] [--dry-run] [--json] [-q]
// gguf-prune-vocab tokenize MODEL FILE [--no-bos] [--no-escape] [--no-parse-special]
// Drops unused tokens from the vocabulary, the embeddings and the lm_head (converters/vocab/).

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <sstream>

#include "converters/vocab/prune.h"
#include "converters/vocab/vocab.h"
#include "libformat/io/atomic_file.h"
#include "libformat/io/text_file.h"
#include "libformat/json.h"
#include "libformat/model.h"
#include "libformat/traffic.h"
#include "tools/common/cli_parse.h"
#include "tools/common/split_cli.h"
#include "tools/common/tool_support.h"

namespace {

using oiw::ErrorKind;
using oiw::FormatError;

constexpr uint64_t kTextCap = uint64_t{1} << 30;  // 1 GiB per text input

// Whole text input (--keep-ids, --counts, tokenize's FILE): a regular file or pipe of at most kTextCap bytes.
std::string read_text(const std::string& path) { return oiw::read_text_file(path, kTextCap); }

// One integer token of a text input; anything else is an error naming the file and the token.
int64_t parse_int(const std::string& tok, const std::string& file) {
    size_t used = 0;
    int64_t v = 0;
    try {
        v = std::stoll(tok, &used, 10);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used != tok.size() || tok.empty()) throw FormatError(ErrorKind::Usage, file, "'" + tok + "'", "not an integer");
    return v;
}

// Whitespace-separated ids; '[', ']' and ',' also separate, so `tokenize` output is accepted.
std::vector<int64_t> read_ids(const std::string& path) {
    std::string text = read_text(path);
    std::replace_if(
        text.begin(), text.end(), [](char c) { return c == '[' || c == ']' || c == ','; }, ' ');
    std::istringstream in(text);
    std::vector<int64_t> ids;
    for (std::string tok; in >> tok;) ids.push_back(parse_int(tok, path));
    return ids;
}

// The `top` ids with the highest counts (lines "id count"; ties: lower id first).
std::vector<int64_t> read_top_counts(const std::string& path, size_t top) {
    std::istringstream in(read_text(path));
    std::map<int64_t, int64_t> counts;
    std::string line;
    for (size_t no = 1; std::getline(in, line); ++no) {
        std::istringstream ls(line);
        std::string id, count, extra;
        if (!(ls >> id)) continue;
        if (!(ls >> count) || (ls >> extra))
            throw FormatError(ErrorKind::Usage, path, fmt::format("line {}", no), "expected 'id count'");
        counts[parse_int(id, path)] += parse_int(count, path);
    }
    std::vector<std::pair<int64_t, int64_t>> v(counts.begin(), counts.end());
    std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    std::vector<int64_t> ids;
    for (size_t i = 0; i < v.size() && i < top; ++i) ids.push_back(v[i].first);
    return ids;
}

// The distinct ids the model's tokenizer gives the text file `path` (with BOS/EOS as the model
// asks, special tokens parsed), read in blocks: memory follows the vocabulary, not the text.
std::vector<int64_t> text_token_ids(const oiw::vocab::Vocab& v, const std::string& path) {
    std::vector<uint8_t> seen(v.size(), 0);
    std::vector<int32_t> ids;
    oiw::vocab::TokenStream stream(v, true, true, path);
    const auto mark = [&] {
        for (int32_t id : ids) seen[static_cast<size_t>(id)] = 1;
        ids.clear();
    };
    oiw::read_text_blocks(path, std::numeric_limits<size_t>::max(), [&](std::string_view block) {
        stream.feed(block, &ids);
        mark();
    });
    stream.finish(&ids);
    mark();
    std::vector<int64_t> out;
    for (size_t i = 0; i < seen.size(); ++i)
        if (seen[i]) out.push_back(static_cast<int64_t>(i));
    return out;
}

// Ids A..B of "A-B"; both ends must be in the vocabulary (checked before anything is built).
std::vector<int64_t> parse_range(const std::string& spec, size_t n_vocab) {
    const std::string source = "--keep-range " + spec;
    const size_t dots = spec.find(".."), dash = spec.find('-', 1);
    const size_t at = dots != std::string::npos ? dots : dash, len = dots != std::string::npos ? 2 : 1;
    if (at == std::string::npos) throw FormatError(ErrorKind::Usage, "", source, "expected A..B (or A-B)");
    const int64_t a = parse_int(spec.substr(0, at), source), b = parse_int(spec.substr(at + len), source);
    if (a > b) throw FormatError(ErrorKind::Usage, "", source, "A is greater than B");
    oiw::vocab::check_ids({a, b}, n_vocab, source);
    std::vector<int64_t> ids;
    for (int64_t i = a; i <= b; ++i) ids.push_back(i);
    return ids;
}

// llama.cpp's string_process_escapes (llama-tokenize applies it unless --no-escape).
std::string process_escapes(const std::string& in) {
    std::string out;
    for (size_t i = 0; i < in.size(); ++i) {
        if (in[i] != '\\' || i + 1 >= in.size()) {
            out += in[i];
            continue;
        }
        const char c = in[++i];
        switch (c) {
            case 'n': out += '\n'; break;
            case 'r': out += '\r'; break;
            case 't': out += '\t'; break;
            case '\'': out += '\''; break;
            case '"': out += '"'; break;
            case '\\': out += '\\'; break;
            default: {
                const auto hex = [](char h) { return std::isxdigit(static_cast<unsigned char>(h)) != 0; };
                if (c == 'x' && i + 2 < in.size() && hex(in[i + 1]) && hex(in[i + 2])) {
                    out += static_cast<char>(std::stoi(in.substr(i + 1, 2), nullptr, 16));
                    i += 2;
                } else {
                    out += '\\';
                    out += c;
                }
            }
        }
    }
    return out;
}

int run_tokenize(int argc, char** argv) {
    std::string model, file;
    bool no_bos = false, no_escape = false, no_parse_special = false;
    CLI::App app{"Print the token ids of a text file as llama.cpp's `llama-tokenize --ids -f FILE` does",
                 "gguf-prune-vocab tokenize"};
    app.add_option("MODEL", model, "model or vocabulary .gguf")->required();
    app.add_option("FILE", file, "text file")->required();
    app.add_flag("--no-bos", no_bos, "do not add BOS even if the model asks for it");
    app.add_flag("--no-escape", no_escape, "do not process escapes (\\n, \\t, \\xNN, ...) in the text");
    app.add_flag("--no-parse-special", no_parse_special, "do not match control tokens in the text");
    OIW_CLI_PARSE(app, argc, argv);
    const oiw::vocab::Vocab v = oiw::vocab::Vocab::load(oiw::open_model(model).metadata());
    std::string text = read_text(file);
    if (!no_escape) text = process_escapes(text);
    const auto ids = v.tokenize(text, v.add_bos() && !no_bos, !no_parse_special);
    oiw::write_stdout(fmt::format("[{}]\n", fmt::join(ids, ", ")));
    return oiw::kExitOk;
}

struct Options {
    std::string in, out, map_out;
    std::vector<std::string> keep_ids, keep_text, keep_range;
    std::string counts;
    size_t top = 0;
    bool dry_run = false, json = false, quiet = false;
    oiw::SplitCli split;
};

uint64_t group_bytes(const oiw::traffic::Analysis& a, oiw::traffic::Group g) {
    return a.by_group[static_cast<size_t>(g)].n_bytes;
}

std::string report(const Options& o, const oiw::vocab::PrunePlan& p, const oiw::traffic::Analysis& before,
                   const oiw::traffic::Analysis& after, const std::vector<std::string>& gathered) {
    using oiw::traffic::Group;
    const uint64_t emb0 = group_bytes(before, Group::Embedding), emb1 = group_bytes(after, Group::Embedding);
    const uint64_t lm0 = group_bytes(before, Group::LmHead), lm1 = group_bytes(after, Group::LmHead);
    const uint64_t bpt0 = before.traffic.bytes_per_token, bpt1 = after.traffic.bytes_per_token;
    if (o.json) {
        oiw::json::Writer w;
        w.begin_object();
        w.field("input", o.in);
        w.key("output"), o.dry_run ? w.null() : w.value(o.out);
        w.field("dry_run", o.dry_run);
        w.field("n_vocab_before", static_cast<uint64_t>(p.n_vocab_before));
        w.field("n_vocab_after", static_cast<uint64_t>(p.n_vocab_after));
        w.field("requested", static_cast<uint64_t>(p.requested));
        w.field("always_kept", static_cast<uint64_t>(p.always_kept));
        w.field("closure_added", static_cast<uint64_t>(p.closure_added));
        w.key("closure_skipped"), p.closure_skipped.empty() ? w.null() : w.value(p.closure_skipped);
        w.field("merges_before", static_cast<uint64_t>(p.merges_before));
        w.field("merges_after", static_cast<uint64_t>(p.merges_after));
        w.field("tied_embeddings", before.model.tied_embeddings);
        w.field("embedding_bytes_before", emb0);
        w.field("embedding_bytes_after", emb1);
        w.field("lm_head_bytes_before", lm0);
        w.field("lm_head_bytes_after", lm1);
        w.field("bytes_saved", emb0 + lm0 - emb1 - lm1);
        w.field("bytes_per_token_before", bpt0);
        w.field("bytes_per_token_after", bpt1);
        w.key("gathered_tensors");
        w.begin_array(true);
        for (const auto& t : gathered) w.value(t);
        w.end_array();
        w.end_object();
        return w.take() + "\n";
    }
    std::string s = fmt::format("{}{}\n", o.in, o.dry_run ? " (dry run)" : " -> " + o.out);
    s += fmt::format("  n_vocab      {} -> {} ({} requested, {} always kept, {} added by the closure{})\n",
                     p.n_vocab_before, p.n_vocab_after, p.requested, p.always_kept, p.closure_added,
                     p.closure_skipped.empty() ? "" : "; closure skipped: " + p.closure_skipped);
    if (p.merges_before) s += fmt::format("  merges       {} -> {}\n", p.merges_before, p.merges_after);
    if (before.model.tied_embeddings)  // token_embd.weight is the lm_head too: its bytes are counted there
        s += "  embeddings   tied: token_embd.weight is also the lm_head (counted below)\n";
    else
        s += fmt::format("  embeddings   {} -> {} bytes\n", emb0, emb1);
    s += fmt::format("  lm_head      {} -> {} bytes\n", lm0, lm1);
    s += fmt::format("  saved        {} bytes\n", emb0 + lm0 - emb1 - lm1);
    s += fmt::format("  bytes/token  {} -> {}\n", bpt0, bpt1);
    s += fmt::format("  gathered     {}\n", gathered.empty() ? "(none)" : fmt::format("{}", fmt::join(gathered, ", ")));
    return s;
}

int run_prune(const Options& o) {
    if (!o.dry_run && o.out.empty()) throw FormatError(ErrorKind::Usage, "", "OUT", "required unless --dry-run");
    if (o.counts.empty() != (o.top == 0))
        throw FormatError(ErrorKind::Usage, "", "--counts/--top", "use them together (--top N >= 1)");
    if (o.keep_ids.empty() && o.keep_text.empty() && o.counts.empty() && o.keep_range.empty())
        throw FormatError(ErrorKind::Usage, "", "keep set",
                          "none given: pass --keep-text, --keep-ids, --keep-range or --counts with --top (without one, "
                          "only the special and byte tokens would stay)");
    const auto start = std::chrono::steady_clock::now();
    const oiw::Model in = oiw::open_model(o.in);
    const oiw::vocab::Vocab v = oiw::vocab::Vocab::load(in.metadata());
    std::vector<int64_t> ids;
    const auto add = [&](std::vector<int64_t> more, const std::string& source) {
        oiw::vocab::check_ids(more, v.size(), source);
        ids.insert(ids.end(), more.begin(), more.end());
    };
    for (const auto& f : o.keep_ids) add(read_ids(f), f);
    for (const auto& f : o.keep_text) add(text_token_ids(v, f), f);
    if (!o.counts.empty()) add(read_top_counts(o.counts, o.top), o.counts);
    for (const auto& r : o.keep_range) add(parse_range(r, v.size()), "--keep-range " + r);

    const oiw::vocab::PrunePlan plan = oiw::vocab::plan_prune(in, v, ids);
    std::vector<std::string> gathered;
    for (size_t i = 0; i < plan.tensors.size(); ++i)
        if (plan.vocab_dim[i] >= 0) gathered.push_back(plan.tensors[i].name);
    std::vector<std::string> written;
    const bool map_written = !o.dry_run && !o.map_out.empty();
    if (!o.dry_run) {
        // The map's target is checked (special file, input of the run, the output itself) before
        // the model is written; both land only when both succeed.
        std::optional<oiw::AtomicFile> map;
        if (!o.map_out.empty()) {
            if (std::filesystem::weakly_canonical(o.map_out) == std::filesystem::weakly_canonical(o.out))
                throw FormatError(ErrorKind::Usage, o.map_out, "--map-out", "is the output model");
            map.emplace(o.map_out, std::vector<std::string>{o.in});
            oiw::json::Writer w;
            w.begin_object();
            w.field("n_vocab_before", static_cast<uint64_t>(plan.n_vocab_before));
            w.key("original_ids");
            w.begin_array(true);
            for (int32_t id : plan.original_ids) w.value(id);
            w.end_array();
            w.end_object();
            const std::string text = w.take() + "\n";
            map->write(text.data(), text.size());
        }
        written = oiw::vocab::write_pruned(in, plan, o.out, oiw::split_options(o.split));
        if (map) map->commit();
    }
    if (!o.quiet || o.json)
        oiw::write_stdout(
            report(o, plan, oiw::traffic::analyze(in), oiw::traffic::analyze(plan.kvs, plan.tensors), gathered));
    if (!o.quiet && !o.json && !written.empty()) {
        if (map_written) written.push_back(o.map_out);
        oiw::write_stdout(
            oiw::summary_line("gguf-prune-vocab", written,
                              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()));
    }
    return oiw::kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc > 1 && std::strcmp(argv[1], "tokenize") == 0)
        return oiw::run_tool("gguf-prune-vocab", [&] { return run_tokenize(argc - 1, argv + 1); });
    Options o;
    CLI::App app{
        "gguf-prune-vocab: drop unused tokens from the vocabulary, embeddings and lm_head\n"
        "  (subcommand: gguf-prune-vocab tokenize MODEL FILE [--no-bos])",
        "gguf-prune-vocab"};
    app.add_option("IN", o.in, "input .gguf")->required();
    app.add_option("OUT", o.out, "output .gguf (written atomically; must not be IN)");
    app.add_option("--keep-ids", o.keep_ids, "file of whitespace-separated token ids to keep");
    app.add_option("--keep-text", o.keep_text,
                   "text file (any size, read in blocks): keep the tokens the model's tokenizer uses for it");
    app.add_option("--counts", o.counts, "file of lines 'id count' (with --top)");
    app.add_option("--top", o.top, "keep the N ids with the highest counts");
    app.add_option("--keep-range", o.keep_range, "keep ids A..B (inclusive; A-B also reads)");
    app.add_option("--map-out", o.map_out, "also write the new id -> old id map as JSON");
    app.add_flag("--dry-run", o.dry_run, "report only; write nothing");
    app.add_flag("--json", o.json, "report as JSON");
    app.add_flag("-q,--quiet", o.quiet, "print nothing on success");
    oiw::add_split_options(app, o.split);
    OIW_CLI_PARSE(app, argc, argv);
    return oiw::run_tool("gguf-prune-vocab", [&] { return run_prune(o); });
}
