// gguf-convert's streaming writer: the same bytes for every thread count and against the element by
// element reference, the first non-finite element in source order, split outputs against the
// Python converter's own files (tests/data/hf/split-goldens.txt), and no file from a failed or
// killed run.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <ostream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "converters/hf/checkpoint.h"
#include "converters/hf/convert.h"
#include "libformat/error.h"
#include "tests/support/helpers.h"
#include "tests/support/hf_fixtures.h"

namespace {

using namespace oiw;
using namespace oiw::test;
namespace fs = std::filesystem;

// The golden cases of tests/data/hf/goldens.txt: each case's (outtype, SHA-256) lines.
struct GoldenCase {
    std::string name;
    std::vector<std::pair<std::string, std::string>> lines;
};

std::vector<GoldenCase> golden_cases() {
    std::vector<GoldenCase> cases;
    for (const ConvertGolden& g : convert_goldens()) {
        if (cases.empty() || cases.back().name != g.name) cases.push_back({g.name, {}});
        cases.back().lines.emplace_back(g.outtype, g.sha);
    }
    return cases;
}

void PrintTo(const GoldenCase& c, std::ostream* os) { *os << c.name; }

// One test per case (each within the per-test timeout under the sanitizers): every line's bytes at
// 1 thread (the serial path) and 7 (more workers than most cases have tensors to write at once);
// --vocab-only, which writes no tensor, once. The machine's default count is the tool's, run on
// every case (at one outtype each) by HfConvert.MatchesConvertHfToGgufOnEveryGoldenCase.
class HfConvertWriteGolden : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(HfConvertWriteGolden, EveryThreadCountGivesTheGoldenBytes) {
    const GoldenCase& c = GetParam();
    const auto root = temp_dir();
    const hf::Checkpoint ck(make_hf_case(c.name, root).string());
    for (const auto& [outtype, sha] : c.lines) {
        const hf::ConvertPlan plan = plan_case(ck, outtype);  // what the thread count changes is the writing
        for (unsigned threads : {1u, 7u}) {
            if (outtype == "vocab" && threads > 1) break;
            SCOPED_TRACE(fmt::format("{} --outtype {} -t {}", c.name, outtype, threads));
            hf::WriteOptions opt;
            opt.threads = threads;
            EXPECT_EQ(write_sha(plan, root / "out.gguf", opt), sha);
        }
    }
    EXPECT_EQ(c.lines.size(), 6u);  // auto, f32, f16, bf16, q8_0, vocab
}

INSTANTIATE_TEST_SUITE_P(Cases, HfConvertWriteGolden, ::testing::ValuesIn(golden_cases()),
                         [](const ::testing::TestParamInfo<GoldenCase>& info) {
                             std::string n = info.param.name;
                             for (char& ch : n)
                                 if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                             return n;
                         });

TEST(HfConvertWrite, EveryGoldenCaseHasAThreadTest) { EXPECT_EQ(golden_cases().size(), 29u); }

// Overwrites every tensor of the checkpoint's model.safetensors with random finite bit patterns
// and the values where conversions differ most: signed zeros, subnormals, F16's largest and its
// overflow to infinity, ties to even.
void fill_hard_values(const fs::path& dir) {
    const std::string path = (dir / "model.safetensors").string();
    std::vector<std::pair<uint64_t, uint64_t>> spans;  // offset, bytes
    hf::Dtype dtype = hf::Dtype::F32;
    {
        const hf::File part(path);
        for (const hf::Tensor& t : part.tensors()) spans.emplace_back(t.offset, t.size);
        dtype = part.tensors().front().dtype;
    }
    auto bytes = read_file(path);
    std::mt19937_64 rng(23);
    const std::vector<uint32_t> f32_edges = {0x00000000, 0x80000000, 0x00000001, 0x807fffff, 0x477fe000, 0x477fefff,
                                             0x477ff000, 0xc77ff000, 0x33000000, 0x33000001, 0x3f800001, 0x3f808000};
    const std::vector<uint16_t> half_edges = {0x0000, 0x8000, 0x0001, 0x83ff, 0x7bff, 0xfbff, 0x0400, 0x3c01};
    for (const auto& [off, size] : spans) {
        const uint64_t step = dtype == hf::Dtype::F32 ? 4 : 2;
        for (uint64_t i = 0; i < size / step; ++i) {
            if (step == 4) {
                uint32_t w = i < f32_edges.size() ? f32_edges[i] : static_cast<uint32_t>(rng());
                if ((w & 0x7f800000u) == 0x7f800000u) w &= ~0x00800000u;  // exponent's lowest bit cleared
                std::memcpy(&bytes[off + 4 * i], &w, 4);
            } else {
                const uint16_t e = dtype == hf::Dtype::F16 ? 0x7c00 : 0x7f80;
                uint16_t h = i < half_edges.size() ? half_edges[i] : static_cast<uint16_t>(rng());
                if ((h & e) == e) h = static_cast<uint16_t>(h & ~(e & ~(e << 1)));  // exponent's lowest bit cleared
                std::memcpy(&bytes[off + 2 * i], &h, 2);
            }
        }
    }
    write_file(path, bytes);
}

// Large enough that every matrix spans several tasks (1024 x 1024 q/k: permuted rows in pieces).
constexpr const char* kBig = "--n-embd 1024 --n-head 8 --n-ff 128 --n-vocab 1024 --n-layer 1";

TEST(HfConvertWrite, FastPathsGiveTheReferenceBytesForEveryTypePair) {
    const auto root = temp_dir();
    for (const char* dtype : {"F32", "F16", "BF16"}) {
        const fs::path dir = make_synth(fmt::format("--type {} {}", dtype, kBig), root / dtype);
        fill_hard_values(dir);
        for (const char* outtype : {"f32", "f16", "bf16", "q8_0"}) {
            hf::WriteOptions ref;
            ref.reference = true;
            const std::string want = convert_sha(dir, outtype, root / "ref.gguf", ref);
            for (unsigned threads : {1u, 7u}) {
                SCOPED_TRACE(fmt::format("{} -> {}, -t {}", dtype, outtype, threads));
                hf::WriteOptions opt;
                opt.threads = threads;
                EXPECT_EQ(convert_sha(dir, outtype, root / "fast.gguf", opt), want);
            }
        }
    }
    // Stacked experts (Mixtral): each expert in turn; shifted norms (Gemma3), F16 rounding included.
    int n = 0;
    for (const char* args :
         {"--hf-arch MixtralForCausalLM --type BF16 --n-embd 64 --n-ff 96 --n-vocab 416 --n-layer 2 --n-expert 5 "
          "--n-expert-used 2",
          "--hf-arch Gemma3ForCausalLM --type F16 --n-embd 64 --n-ff 96 --n-vocab 416 --n-layer 2 --head-dim 32 --tied",
          "--hf-arch Gemma3ForCausalLM --type F32 --n-embd 64 --n-ff 96 --n-vocab 416 --n-layer 2 --head-dim 32 "
          "--tied"}) {
        const fs::path dir = make_synth(args, root / fmt::format("family-{}", n++));
        for (const char* outtype : {"f32", "f16", "q8_0"}) {
            hf::WriteOptions ref;
            ref.reference = true;
            const std::string want = convert_sha(dir, outtype, root / "ref.gguf", ref);
            hf::WriteOptions opt;
            opt.threads = 3;
            EXPECT_EQ(convert_sha(dir, outtype, root / "fast.gguf", opt), want) << args << " " << outtype;
        }
    }
}

// Sets source element `i` of tensor `name` in model.safetensors to the F32 bits `w`.
void poison(const fs::path& dir, const std::string& name, uint64_t i, uint32_t w) {
    const std::string path = (dir / "model.safetensors").string();
    uint64_t at = 0;
    {
        const hf::File part(path);
        at = part.find(name)->offset + 4 * i;
    }
    auto bytes = read_file(path);
    std::memcpy(&bytes[at], &w, 4);
    write_file(path, bytes);
}

TEST(HfConvertWrite, NonFiniteNamesTheFirstElementInSourceOrderOnAnyThreads) {
    const auto root = temp_dir();
    const fs::path dir = make_synth(std::string("--type F32 ") + kBig, root / "ck");
    // q_proj rows are permuted (128 rows a head): source row 64 is output row 1, source row 1 is
    // output row 2. The first bad element in source order is row 1's.
    const std::string q = "model.layers.0.self_attn.q_proj.weight";
    poison(dir, q, 64 * 1024 + 7, 0xff800000u);  // -inf
    poison(dir, q, 1 * 1024 + 5, 0x7fc00000u);   // nan
    // In the embeddings (several tasks), an infinity in a later task than an earlier one's NaN.
    poison(dir, "model.embed_tokens.weight", 900000, 0x7f800000u);
    poison(dir, "model.embed_tokens.weight", 700000, 0x7fc00000u);
    const hf::Checkpoint ck(dir.string());
    hf::ConvertPlan plan = hf::plan_convert(ck, hf::OutType::F16);
    for (bool reference : {true, false})
        for (unsigned threads : {1u, 7u}) {
            SCOPED_TRACE(fmt::format("reference {}, -t {}", reference, threads));
            hf::WriteOptions opt;
            opt.threads = threads;
            opt.reference = reference;
            try {
                hf::write_convert(plan, (root / "out.gguf").string(), opt);
                ADD_FAILURE() << "no error";
            } catch (const FormatError& e) {
                EXPECT_NE(std::string(e.what()).find("tensor 'model.embed_tokens.weight': non-finite value nan at "
                                                     "element 700000"),
                          std::string::npos)
                    << e.what();
            }
            EXPECT_FALSE(fs::exists(root / "out.gguf"));
        }
    std::erase_if(plan.tensors, [](const hf::PlannedTensor& t) { return t.name == "token_embd.weight"; });
    for (unsigned threads : {1u, 3u}) {
        hf::WriteOptions opt;
        opt.threads = threads;
        EXPECT_THROW(
            {
                try {
                    hf::write_convert(plan, (root / "out.gguf").string(), opt);
                } catch (const FormatError& e) {
                    EXPECT_NE(std::string(e.what()).find("tensor '" + q + "': non-finite value nan at element 1029"),
                              std::string::npos)
                        << e.what();
                    throw;
                }
            },
            FormatError);
    }
}

// The golden runs of split-goldens.txt: CHECKPOINT OUTTYPE OPTIONS -> file name -> SHA-256.
struct SplitRun {
    std::string checkpoint, outtype, options;
    std::map<std::string, std::string> files;
};

std::vector<SplitRun> split_runs() {
    std::vector<SplitRun> runs;
    std::ifstream g(data_path("hf/split-goldens.txt"));
    std::string line;
    while (std::getline(g, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream f(line);
        SplitRun r;
        std::string file, sha;
        f >> r.checkpoint >> r.outtype >> r.options >> file >> sha;
        if (runs.empty() || runs.back().checkpoint != r.checkpoint || runs.back().outtype != r.outtype ||
            runs.back().options != r.options)
            runs.push_back(r);
        runs.back().files[file] = sha;
    }
    return runs;
}

std::string spaced(std::string s) {
    std::replace(s.begin(), s.end(), ',', ' ');
    return s;
}

TEST(HfConvertWrite, SplitOutputsAreThePythonConvertersFiles) {
    const auto runs = split_runs();
    ASSERT_EQ(runs.size(), 5u);
    for (size_t n = 0; n < runs.size(); ++n) {
        const SplitRun& r = runs[n];
        const fs::path root = temp_dir();
        const fs::path ck = r.checkpoint.starts_with("synth:")
                                ? make_synth(spaced(r.checkpoint.substr(6)), root / "synth")
                                : make_hf_case(r.checkpoint, root);
        for (unsigned threads : {1u, 3u}) {
            SCOPED_TRACE(fmt::format("{} --outtype {} {} -t {}", r.checkpoint, r.outtype, r.options, threads));
            const fs::path out = root / fmt::format("out{}", threads);
            fs::create_directories(out);
            std::string log;
            ASSERT_EQ(run(fmt::format("{} -q {} {} --outtype {} -t {} {}", tool_path("gguf-convert"), ck.string(),
                                      (out / "out.gguf").string(), r.outtype, threads, spaced(r.options)),
                          &log, true),
                      0)
                << log;
            std::vector<std::string> names;
            for (const auto& [file, sha] : r.files) {
                names.push_back(file);
                EXPECT_EQ(sha256_hex(read_file((out / file).string())), sha) << file;
            }
            EXPECT_EQ(listing(out), names);
        }
    }
}

TEST(HfConvertWrite, FailedOrKilledRunsLeaveNoFile) {
    const auto root = temp_dir();
    const fs::path dir =
        make_synth("--type F32 --n-embd 1024 --n-head 8 --n-ff 2048 --n-vocab 8192 --n-layer 4", root / "ck");
    const fs::path out = root / "out";
    fs::create_directories(out);
    const std::string tool = tool_path("gguf-convert");
    struct Case {
        int sig;
        bool named;
    };
    for (const Case c : {Case{SIGKILL, false}, Case{SIGTERM, true}, Case{SIGINT, false}}) {
        SCOPED_TRACE(fmt::format("{}, {} temp files", strsignal(c.sig), c.named ? "named" : "unnamed"));
        int st = 0;
        for (int attempt = 0;; ++attempt) {
            const pid_t pid =
                spawn({tool, dir.string(), (out / "m.gguf").string(), "--outtype", "f16", "-t", "1", "--split-max-size",
                       "20M"},
                      c.named ? std::vector<std::string>{"OIW_ATOMIC_NO_TMPFILE=1"} : std::vector<std::string>{});
            ASSERT_GT(pid, 0);
            const bool seen = wait_for([&] { return open_into(pid, out) >= 2 || listing(out).size() >= 2; });
            ::kill(pid, c.sig);
            ::waitpid(pid, &st, 0);
            ASSERT_TRUE(seen) << "the run never completed shard 1";
            // A run that finished before the signal reached it (a loaded machine) is not the case
            // under test: again, up to 3 runs.
            if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || attempt == 2) break;
            fs::remove_all(out);
            fs::create_directories(out);
        }
        EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == c.sig) << st;
        EXPECT_TRUE(listing(out).empty()) << listing(out).front();
    }
    // A NaN in the last tensor: exit 2, none of the shards written before it appear.
    poison(dir, "model.norm.weight", 3, 0x7fc00000u);
    std::string log;
    EXPECT_EQ(run(fmt::format("{} {} {} -t 2 --split-max-size 20M", tool, dir.string(), (out / "m.gguf").string()),
                  &log, true),
              2);
    EXPECT_NE(log.find("tensor 'model.norm.weight': non-finite value nan at element 3"), std::string::npos) << log;
    EXPECT_TRUE(listing(out).empty());
}

}  // namespace
