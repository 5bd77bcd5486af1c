// gguf-requant command line: exit status 2 with one-line errors listing valid names, warnings,
// --dry-run --json figures checked against a real conversion, option order, quiet when piped.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>

#include "libformat/gguf/gguf.h"
#include "libformat/traffic.h"
#include "tests/support/helpers.h"

namespace oiw {
namespace {
using Json = nlohmann::ordered_json;
namespace fs = std::filesystem;

const std::string kTinyF16 = test::shared_path("fixtures/tiny-llama-f16.gguf");

int requant(const std::string& args, std::string* out, bool merge_stderr = true) {
    return test::run(test::tool_path("gguf-requant") + " " + args, out, merge_stderr);
}

size_t lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

TEST(RequantCli, BadInputExitsWithOneLineError) {
    OIW_NEED_SHARED("fixtures");
    const std::string out = (test::temp_dir() / "o.gguf").string();
    struct Case {
        std::string args, expect;
    };
    const std::vector<Case> cases = {
        {"'" + kTinyF16 + "' '" + out + "' --preset Q4_K_X",
         "unknown preset 'Q4_K_X' (valid: Q1_0 Q4_0 Q4_1 MXFP4_MOE Q5_0"},
        {"'" + kTinyF16 + "' '" + out + "' --preset Q4_K_M --tensor-type attn_v=q9_9",
         "unknown type 'q9_9' (valid: F32 F16"},
        {"'" + kTinyF16 + "' '" + out + "' --preset Q4_K_M --output-tensor-type bogus",
         "--output-tensor-type: unknown type 'bogus'"},
        {"'" + kTinyF16 + "' '" + out + "' --preset Q4_K_M --tensor-type 'attn_(v=q8_0'", "invalid regular expression"},
        {"'" + kTinyF16 + "' '" + out + "' --preset Q4_K_M --override-kv general.name=text:x",
         "unknown value type 'text'"},
        {"'" + kTinyF16 + "' --preset Q4_K_M", "output path required"},
        {"'" + test::shared_path("fixtures/tiny-llama-Q4_0.gguf") + "' '" + out + "' --preset Q8_0",
         "requantizing from Q6_K to Q8_0 is disabled (pass --allow-requantize; 30 tensor(s) are quantized)"},
        {"'" + kTinyF16 + "' '" + kTinyF16 + "' --preset Q8_0", "refusing to overwrite the input"},
        {"'" + kTinyF16 + "' '" + out + "' --preset Q8_0 --threads -1", "--threads: must be 0 (all cores) or more"},
        {"'" + kTinyF16 + "' '" + out + "' Q8_0 -1", "NTHREADS: '-1' is not a thread count"},
        {"'" + kTinyF16 + "' '" + out + "' Q4_K_X", "TYPE: unknown preset 'Q4_K_X'"},
        {"'" + kTinyF16 + "' Q4_K_M '" + out + "'", "'Q4_K_M': a preset where OUT belongs: write IN OUT Q4_K_M"},
        {"'" + kTinyF16 + "' '" + out + "' --preset Q8_0 Q8_0", "unexpected: the type is given by --preset"},
        {"'" + kTinyF16 + "' '" + out + "' --prest Q8_0", "unknown option --prest (did you mean --preset?)"},
        {"'" + kTinyF16 + "' '" + out + "' Q8_0 --include-weights attn", "--include-weights: needs --imatrix"},
        {"'" + test::shared_path("fixtures/llama-2-tiny-random.gguf") + "' '" + out + "' Q4_K_M",
         "tensor 'output.weight': row length 8 is not a multiple of 32 (required by Q8_0) and Q8_0 has no fallback "
         "type; "
         "choose a type its row length allows, e.g. --output-tensor-type F16 (or --leave-output-tensor)"},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.args);
        std::string log;
        EXPECT_EQ(requant(c.args, &log), 2);
        EXPECT_EQ(log.rfind("gguf-requant: error: ", 0), 0u) << log;
        EXPECT_NE(log.find(c.expect), std::string::npos) << log;
        EXPECT_EQ(lines(log), 1u) << log;
    }
    EXPECT_FALSE(fs::exists(out));
}

Json run_json(const std::string& args) {
    std::string text;
    EXPECT_EQ(requant(args + " --json", &text, false), 0) << text;
    return Json::parse(text);
}

// The dry-run figures are those of the file a real run writes (traffic: inspect's model).
TEST(RequantCli, DryRunJsonMatchesTheRealOutput) {
    OIW_NEED_SHARED("fixtures");
    const std::string out = (test::temp_dir() / "q.gguf").string();
    const std::string args = "'" + kTinyF16 + "' '" + out + "' --preset Q4_K_M --leave-output-tensor --threads 2";
    Json plan = run_json(args + " --dry-run");
    EXPECT_FALSE(fs::exists(out));
    EXPECT_TRUE(plan.at("dry_run").get<bool>());
    EXPECT_EQ(plan.at("file_type").get<double>(), 15);
    Json done = run_json(args);
    EXPECT_TRUE(done.at("seconds").is_number());

    GgufFile f = GgufFile::open(out);
    const Json& totals = plan.at("totals");
    EXPECT_EQ(totals.at("file_size").get<double>(), static_cast<double>(f.file_size()));
    EXPECT_EQ(totals.at("file_size").get<double>(), done.at("totals").at("file_size").get<double>());
    traffic::Analysis a = traffic::analyze(f);
    EXPECT_EQ(totals.at("new_bytes").get<double>(), static_cast<double>(a.model.n_bytes));
    EXPECT_EQ(totals.at("n_elements").get<double>(), static_cast<double>(a.model.n_elements));
    EXPECT_DOUBLE_EQ(totals.at("new_bpw").get<double>(), a.model.bpw());
    EXPECT_DOUBLE_EQ(totals.at("bytes_per_token").get<double>(), a.traffic.bytes_per_token);
    EXPECT_EQ(totals.at("old_bytes").get<double>(), 39068672.0);
    EXPECT_EQ(totals.at("tensors").get<double>(), 39);

    const auto& tensors = plan.at("tensors");
    ASSERT_EQ(tensors.size(), f.tensors().size());
    for (size_t i = 0; i < tensors.size(); ++i) {
        const GgufTensorInfo& t = f.tensors()[i];
        SCOPED_TRACE(t.name);
        EXPECT_EQ(tensors[i].at("name").get<std::string>(), t.name);
        EXPECT_EQ(tensors[i].at("new_type").get<std::string>(), type_name(t.type));
        EXPECT_EQ(tensors[i].at("new_bytes").get<double>(), static_cast<double>(t.n_bytes));
        EXPECT_EQ(tensors[i].at("action").get<std::string>(),
                  t.name.find("norm") != std::string::npos || t.name == "output.weight" ? "copy" : "convert");
    }
}

TEST(RequantCli, RuleOrderWarningsAndOverrides) {
    OIW_NEED_SHARED("fixtures");
    const fs::path dir = test::temp_dir();
    const std::string rules = (dir / "rules.txt").string();
    const std::string text = "attn_v=q8_0\n  blk\\.0\\.attn_k=q5_1 ";
    test::write_file(rules, std::vector<uint8_t>(text.begin(), text.end()));
    auto type_of = [](const Json& plan, const std::string& name) {
        for (const auto& t : plan.at("tensors"))
            if (t.at("name").get<std::string>() == name) return t.at("new_type").get<std::string>();
        return std::string("(missing)");
    };
    const std::string base = "'" + kTinyF16 + "' --preset Q4_K_M --dry-run ";
    Json a = run_json(base + "--tensor-type attn_v=q5_0 --tensor-type-file '" + rules + "'");
    EXPECT_EQ(type_of(a, "blk.2.attn_v.weight"), "Q5_0");
    EXPECT_EQ(type_of(a, "blk.0.attn_k.weight"), "Q5_1");
    Json b = run_json(base + "--tensor-type-file '" + rules + "' --tensor-type attn_v=q5_0");
    EXPECT_EQ(type_of(b, "blk.2.attn_v.weight"), "Q8_0");
    EXPECT_EQ(b.at("warnings").size(), 1u);  // the later attn_v rule never applies
    EXPECT_NE(b.at("warnings").at(0).get<std::string>().find("'attn_v=Q5_0' applies to no tensor"), std::string::npos);

    std::string log;
    EXPECT_EQ(requant(base + "--tensor-type nothing=q8_0", &log), 0);
    EXPECT_NE(log.find("gguf-requant: warning: tensor type rule 'nothing=Q8_0' applies to no tensor"),
              std::string::npos)
        << log;

    // Overrides as llama-quantize writes them ("int" becomes u32); piped runs print one summary line.
    const std::string out = (dir / "o.gguf").string();
    EXPECT_EQ(requant("'" + kTinyF16 + "' '" + out +
                          "' --preset Q8_0 --override-kv oiw.n=int:-5 "
                          "--override-kv general.name=str:x --keep 'blk\\.1\\.' --threads 1",
                      &log),
              0);
    EXPECT_EQ(log.rfind("gguf-requant: wrote " + out + " (" + std::to_string(fs::file_size(out)) + " bytes) in ", 0),
              0u)
        << log;
    EXPECT_EQ(lines(log), 1u) << log;
    GgufFile f = GgufFile::open(out);
    EXPECT_EQ(f.metadata().find("oiw.n")->type(), GgufType::U32);
    EXPECT_EQ(f.metadata().find("oiw.n")->as_int(), 5);
    EXPECT_EQ(*f.metadata().find("general.name")->as_string(), "x");
    EXPECT_EQ(f.tensors()[static_cast<size_t>(f.find_tensor("blk.1.attn_q.weight"))].type, GgmlType::F16);
    EXPECT_EQ(f.tensors()[static_cast<size_t>(f.find_tensor("blk.2.attn_q.weight"))].type, GgmlType::Q8_0);
}

TEST(RequantCli, AllowRequantizeWarns) {
    OIW_NEED_SHARED("fixtures");
    const std::string out = (test::temp_dir() / "r.gguf").string();
    std::string log;
    EXPECT_EQ(requant("'" + test::shared_path("fixtures/tiny-llama-Q4_0.gguf") + "' '" + out +
                          "' --preset Q4_K_M --allow-requantize",
                      &log),
              0);
    EXPECT_NE(log.find("gguf-requant: warning: requantizing 29 already-quantized tensor(s)"), std::string::npos) << log;
    EXPECT_EQ(GgufFile::open(out).metadata().find("general.file_type")->as_int(), 15);
    // A dry run shows the plan and reports the refusal instead of failing.
    Json plan = run_json("'" + test::shared_path("fixtures/tiny-llama-Q4_0.gguf") + "' --preset Q8_0 --dry-run");
    ASSERT_EQ(plan.at("warnings").size(), 1u);
    EXPECT_NE(plan.at("warnings").at(0).get<std::string>().find("a conversion would fail:"), std::string::npos);
    EXPECT_EQ(plan.at("tensors").size(), 39u);
}

}  // namespace
}  // namespace oiw
