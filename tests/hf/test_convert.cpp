// gguf-convert against llama.cpp's convert_hf_to_gguf.py: the golden hashes of its outputs for the
// synthetic checkpoints of tests/data/hf/cases (scripts/make-convert-goldens), the naming
// heuristics against gguf-py's own answers, and every refusal.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "converters/hf/checkpoint.h"
#include "converters/hf/convert.h"
#include "converters/hf/model_name.h"
#include "converters/hf/rope_freqs.h"
#include "converters/hf/sentencepiece.h"
#include "converters/synth/synth_hf.h"
#include "libformat/error.h"
#include "libformat/fp16.h"
#include "libformat/gguf/gguf.h"
#include "tests/support/helpers.h"
#include "tests/support/hf_fixtures.h"

namespace {

using namespace oiw;
using namespace oiw::test;
namespace fs = std::filesystem;

// The tool, run as a user runs it: every golden case once, at an outtype that turns with the case
// (so each outtype is run on five or six cases at the machine's default thread count), and the
// first case at all six. Every case's bytes at every outtype, 1 and 7 threads, are checked in
// process by HfConvertWriteGolden.
TEST(HfConvert, MatchesConvertHfToGgufOnEveryGoldenCase) {
    const auto root = temp_dir();
    int checked = 0;
    std::map<std::string, fs::path> built;
    std::map<std::string, int> line_of_case;  // name -> how many of its lines have gone by
    const std::string first_case = convert_goldens().front().name;
    for (const auto& [name, outtype, sha, file_name] : convert_goldens()) {
        if (!built.count(name)) built[name] = make_hf_case(name, root);
        const int line = line_of_case[name]++;  // built.size() - 1: the case's index in the file
        if (name != first_case && line != static_cast<int>(built.size() - 1) % 6) continue;
        SCOPED_TRACE(fmt::format("{} --outtype {}", name, outtype));
        // OUT a directory: the file is named as the Python converter names it there
        const fs::path out_dir = root / fmt::format("out-{}-{}", name, outtype);
        fs::create_directory(out_dir);
        std::string log;
        const std::string opt = outtype == "vocab" ? "--vocab-only" : "--outtype " + outtype;
        ASSERT_EQ(
            run(fmt::format("{} -q {} {} {}", tool_path("gguf-convert"), built[name].string(), out_dir.string(), opt),
                &log, true),
            0)
            << log;
        ASSERT_EQ(listing(out_dir), std::vector<std::string>{file_name});
        EXPECT_EQ(sha256_hex(read_file((out_dir / file_name).string())), sha);
        fs::remove_all(out_dir);
        ++checked;
    }
    // 29 cases (8 llama / Mistral, one with a BPE vocabulary, one with llama3 RoPE, one with rows that
    // are not Q8_0 blocks; 2 Mixtral; 2 Qwen2, one BPE; 3 Qwen3, one with YaRN; Qwen2Moe and 2 Qwen3Moe,
    // one with fused experts, BPE; 3 Gemma3 and a multimodal Gemma3; 3 Phi3, one with LongRoPE, one
    // Phi-4-mini-like (GPT2Tokenizer BPE, partial rotary, GQA, LongRoPE); 4 FP8 releases: llama with
    // block and with row scales, Mixtral per matrix, Qwen3Moe 128 x 128), each with 6 lines (5 outtypes
    // (auto, f32, f16, bf16, q8_0) and --vocab-only): 28 run once, the first six times.
    EXPECT_EQ(built.size(), 29u);
    EXPECT_EQ(checked, 34);
}

// The permutation, checked on values rather than hashes: GGUF row (h, i, j) of attn_q holds HF
// row (h, j, i) of q_proj, every other tensor is copied in order.
TEST(HfConvert, PermutesQueryAndKeyRowsAsLlamaModelDoes) {
    const auto root = temp_dir();
    const fs::path dir = make_hf_case("tiny-llama", root);
    const hf::Checkpoint ck(dir.string());
    const std::string out = (root / "f32.gguf").string();
    hf::write_convert(hf::plan_convert(ck, hf::OutType::F32), out);
    const GgufFile f = GgufFile::open(out);
    auto bf16_at = [&](const std::string& name, uint64_t i) {
        const hf::TensorRef r = ck.find(name);
        uint16_t h;
        std::memcpy(&h, r.part->bytes(*r.tensor).data() + 2 * i, 2);
        return bf16_to_fp32(h);
    };
    const auto q = read_f32(f, "blk.1.attn_q.weight"), k = read_f32(f, "blk.1.attn_k.weight");
    const int64_t cols = 64, heads = 4, kv_heads = 2;
    auto check = [&](const std::vector<float>& got, const std::string& hf_name, int64_t h, int64_t rows) {
        const int64_t per = rows / h, half = per / 2;
        for (int64_t r = 0; r < rows; ++r) {
            const int64_t src = r / per * per + r % 2 * half + r % per / 2;
            for (int64_t c = 0; c < cols; c += 7)
                ASSERT_EQ(got[static_cast<size_t>(r * cols + c)],
                          bf16_at(hf_name, static_cast<uint64_t>(src * cols + c)))
                    << r;
        }
    };
    check(q, "model.layers.1.self_attn.q_proj.weight", heads, 64);
    check(k, "model.layers.1.self_attn.k_proj.weight", kv_heads, 32);
    const auto v = read_f32(f, "blk.1.attn_v.weight");
    for (size_t i = 0; i < v.size(); i += 13) ASSERT_EQ(v[i], bf16_at("model.layers.1.self_attn.v_proj.weight", i));
}

TEST(HfConvert, NamingHeuristicsAnswerAsGgufPyDoes) {
    struct Case {
        const char* id;
        int64_t params;
        const char *name, *org, *base, *finetune, *version, *size;
    };
    // gguf-py's Metadata.get_model_id_components (llama.cpp 1348f67) on each input; "" = None.
    const Case cases[] = {
        {"tiny-llama", 0, "tiny-llama", "", "", "", "", ""},
        {"meta-llama/Llama-2-7b-chat-hf", 125248, "Llama-2-7b-chat-hf", "meta-llama", "Llama-2", "7b-chat-hf", "", ""},
        {"mistralai/Mistral-7B-Instruct-v0.3", 7000000000, "Mistral-7B-Instruct-v0.3", "mistralai", "Mistral",
         "Instruct", "v0.3", "7B"},
        {"Qwen/Qwen2.5-0.5B-Instruct", 494000000, "Qwen2.5-0.5B-Instruct", "Qwen", "Qwen2.5", "Instruct", "", "0.5B"},
        {"bigscience/bloom-7b1", 7100000000, "bloom-7b1", "bigscience", "bloom", "", "", "7.1B"},
        {"Mixtral-8x7B-v0.1", 46700000000, "Mixtral-8x7B-v0.1", "", "Mixtral", "", "v0.1", "8x7B"},
        {"./models/foo", 0, "models/foo", "", "", "", "", ""},
        {"TheBloke/Llama-2-13B-GGUF-q4_k_m", 13000000000, "Llama-2-13B-GGUF-q4_k_m", "TheBloke", "Llama-2", "GGUF", "",
         "13B"},
        {"Phi-3-mini-128k-instruct", 3800000000, "Phi-3-mini-128k-instruct", "", "Phi-3", "128k-instruct", "", "mini"},
        {"gemma-3-1b-it", 1000000000, "gemma-3-1b-it", "", "gemma-3", "it", "", "1B"},
        {"Hello World model", 0, "Hello World model", "", "", "", "", ""},
        {"Qwen3-30B-A3B", 30000000000, "Qwen3-30B-A3B", "", "Qwen3", "", "", "30B-A3B"},
        {"SmolLM2-135M-Instruct-bf16", 135000000, "SmolLM2-135M-Instruct-bf16", "", "SmolLM2", "Instruct", "", "135M"},
        {"my-model-v2.1-iter3", 0, "my-model-v2.1-iter3", "", "my-model", "", "v2.1-iter3", ""},
        {"x--y", 0, "x--y", "", "", "", "", ""},
        {"DeepSeek-V3", 671000000000, "DeepSeek-V3", "", "DeepSeek", "", "V3", ""},
        {"Llama-3.1-8B-Instruct-128K", 8000000000, "Llama-3.1-8B-Instruct-128K", "", "Llama-3.1", "Instruct-128k", "",
         "8B"},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.id);
        const hf::ModelIdParts p = hf::model_id_parts(c.id, c.params);
        EXPECT_EQ(p.full_name.value_or(""), c.name);
        EXPECT_EQ(p.organization.value_or(""), c.org);
        EXPECT_EQ(p.basename.value_or(""), c.base);
        EXPECT_EQ(p.finetune.value_or(""), c.finetune);
        EXPECT_EQ(p.version.value_or(""), c.version);
        EXPECT_EQ(p.size_label.value_or(""), c.size);
    }
    const std::pair<const char*, const char*> titles[] = {
        {"tiny-llama", "Tiny Llama"}, {"Llama-2-7b-chat-hf", "Llama 2 7b Chat Hf"},
        {"mistral", "Mistral"},       {"v2.1 release", "v2.1 Release"},
        {"3b-model", "3b Model"},     {"o'neil test", "O'Neil Test"},
        {"LLaMA-pro", "LLaMA Pro"},   {"gpt2-xl", "Gpt2 Xl"}};
    for (const auto& [in, want] : titles) EXPECT_EQ(hf::id_to_title(in), want) << in;
    // Beyond ASCII, as Python's str.islower / str.title / re's \d do it (Python 3.11 answers): digraphs
    // (title case), full mappings (ß -> Ss, ŉ -> ʼN, ǰ -> J̌), Unicode spaces, digits and versions.
    const std::pair<const char*, const char*> unicode[] = {{"ǆemo-ǈub", "ǅemo ǈub"},
                                                           {"ßtraße-ﬁne", "Sstraße Fine"},
                                                           {"İstanbul-ǅx", "İstanbul ǅx"},
                                                           {"v٣.٤-beta", "v٣.٤ Beta"},
                                                           {"٣b-x", "٣b X"},
                                                           {"ΣΊΣΥΦΟΣ-σίσυφος", "ΣΊΣΥΦΟΣ Σίσυφος"},
                                                           {"ŉapoleon", "ʼNapoleon"},
                                                           {"a\xe2\x80\x83"
                                                            "b\xc2\xa0"
                                                            "c-d",
                                                            "A B C D"},
                                                           {"Ⅷ-ⅷ-ⓐⓑ", "Ⅷ Ⅷ Ⓐⓑ"},
                                                           {"ǰ-ǳ",
                                                            "J\xcc\x8c"
                                                            " ǲ"},
                                                           {"x\xcd\x85"
                                                            "y",
                                                            "X\xcd\x85"
                                                            "y"}};
    for (const auto& [in, want] : unicode) EXPECT_EQ(hf::id_to_title(in), want) << in;
    EXPECT_EQ(hf::size_label(125248, 125248, 0, 0), "125K");
    EXPECT_EQ(hf::size_label(494032768, 494032768, 0, 0), "494M");
    EXPECT_EQ(hf::size_label(7241732096, 0, 0, 0), "7.2B");
    EXPECT_EQ(hf::size_label(999, 999, 0, 0), "1.0K");
    EXPECT_EQ(hf::size_label(1500000, 0, 0, 0), "1.5M");
    EXPECT_EQ(hf::size_label(46702792704, 1600000000, 5600000000, 8), "8x7.2B");
    EXPECT_EQ(hf::size_label(0, 0, 0, 0), "0.00K");
    EXPECT_EQ(hf::size_label(999999, 0, 0, 0), "1000K");
    EXPECT_EQ(hf::size_label(2500000000000, 0, 0, 0), "2.5T");
}

// Output file names as gguf-py's naming_convention and fill_templated_filename give them (their
// answers, run in Python, pasted here); the per-case default names are in goldens.txt.
TEST(HfConvert, FileNamesAsGgufPyMakesThem) {
    hf::ConvertPlan p;
    p.name = " My Model/x ";
    p.finetune = "Instruct it";
    p.version = "v1 2";
    p.size_label = "7B";
    EXPECT_EQ(hf::default_file_name(p, "q8_0"), "My-Model-x-7B-Instruct-it-v1-2-Q8_0");
    EXPECT_EQ(hf::default_file_name(hf::ConvertPlan{}, "f16"), "ggml-model-F16");
    EXPECT_EQ(hf::fill_templated_filename("m-{ftype}.gguf", "Q8_0"), "m-q8_0.gguf");
    EXPECT_EQ(hf::fill_templated_filename("{FTYPE}-{}-{{x}}.gguf", "Q8_0"), "Q8_0-q8_0-{x}.gguf");
    EXPECT_EQ(hf::fill_templated_filename("{outtype}{OUTTYPE}.gguf", "Q8_0"), "q8_0Q8_0.gguf");
    for (const char* bad : {"{x}.gguf", "a}.gguf", "{"})  // KeyError, ValueError, ValueError in Python
        EXPECT_THROW((void)hf::fill_templated_filename(bad, "F16"), FormatError) << bad;
}

// ---------------------------------------------------------------- SentencePiece models

std::vector<uint8_t> varint(uint64_t v) {
    std::vector<uint8_t> o;
    do {
        o.push_back(static_cast<uint8_t>((v & 0x7f) | (v > 0x7f ? 0x80 : 0)));
        v >>= 7;
    } while (v);
    return o;
}

std::vector<uint8_t> piece_msg(const std::string& s, float score, int type) {
    std::vector<uint8_t> m = {0x0a};
    for (uint8_t b : varint(s.size())) m.push_back(b);
    m.insert(m.end(), s.begin(), s.end());
    m.push_back(0x15);
    uint8_t f[4];
    std::memcpy(f, &score, 4);
    m.insert(m.end(), f, f + 4);
    m.push_back(0x18);
    m.push_back(static_cast<uint8_t>(type));
    return m;
}

std::vector<uint8_t> model_msg(const std::vector<std::vector<uint8_t>>& pieces) {
    std::vector<uint8_t> m;
    for (const auto& p : pieces) {
        m.push_back(0x0a);
        for (uint8_t b : varint(p.size())) m.push_back(b);
        m.insert(m.end(), p.begin(), p.end());
    }
    m.insert(m.end(), {0x12, 0x02, 0x18, 0x02});  // a trainer_spec to skip
    return m;
}

TEST(HfSentencePiece, ReadsPiecesScoresAndTypes) {
    const auto pieces = hf::read_spm_pieces(read_file(data_path("hf/tokenizer.model")), "tokenizer.model");
    ASSERT_EQ(pieces.size(), 400u);
    EXPECT_EQ(pieces[0].piece, "<unk>");
    EXPECT_EQ(pieces[0].type, hf::SpmType::Unknown);
    EXPECT_EQ(pieces[3].piece, "<|im_end|>");
    EXPECT_EQ(pieces[3].type, hf::SpmType::Control);
    EXPECT_EQ(pieces[4].type, hf::SpmType::UserDefined);
    EXPECT_EQ(pieces[5].piece, "<0x00>");
    EXPECT_EQ(pieces[5].type, hf::SpmType::Byte);
    EXPECT_EQ(pieces[399].score, -138.0f);  // SentencePieceProcessor.GetScore(399)
    const auto mine = hf::read_spm_pieces(model_msg({piece_msg("a", -1.5f, 1), piece_msg("\xe2\x96\x81x", 2, 5)}), "m");
    ASSERT_EQ(mine.size(), 2u);
    EXPECT_EQ(mine[1].piece, "\xe2\x96\x81x");
    EXPECT_EQ(mine[1].score, 2.0f);
    EXPECT_EQ(mine[1].type, hf::SpmType::Unused);
}

TEST(HfSentencePiece, RefusesMalformedModels) {
    const auto good = model_msg({piece_msg("a", 0, 1)});
    struct Bad {
        const char* label;
        std::vector<uint8_t> bytes;
        const char* says;
    };
    auto cut = good;
    cut.resize(5);
    const std::vector<Bad> cases = {
        {"empty", {}, "no pieces"},
        {"truncated", cut, "runs past the end"},
        {"group wire type", {0x0b}, "wire type 3"},
        {"endless varint", std::vector<uint8_t>(9, 0x80), "runs past the end"},
        {"long varint", std::vector<uint8_t>{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01},
         "longer than 10 bytes"},
        {"bad type", model_msg({piece_msg("a", 0, 9)}), "type 9"},
        {"empty piece", model_msg({piece_msg("", 0, 1)}), "empty piece"},
        {"not utf-8", model_msg({piece_msg("a\xc3", 0, 1)}), "not valid UTF-8"},
        {"surrogate", model_msg({piece_msg("\xed\xa0\x80", 0, 1)}), "not valid UTF-8"},
    };
    for (const Bad& c : cases) {
        SCOPED_TRACE(c.label);
        const std::string what = error_of([&] { hf::read_spm_pieces(c.bytes, "tok.model"); });
        EXPECT_NE(what.find(c.says), std::string::npos) << what;
        EXPECT_EQ(what.rfind("tok.model", 0), 0u) << what;
    }
}

// ---------------------------------------------------------------- refusals

void write_text(const fs::path& p, const std::string& s) {
    write_file(p.string(), {reinterpret_cast<const uint8_t*>(s.data()), s.size()});
}

TEST(HfConvert, RefusesWhatItDoesNotConvertInOneLine) {
    const auto root = temp_dir();
    struct Bad {
        const char* label;
        std::function<void(const fs::path&)> edit;
        ErrorKind kind;
        const char* says;
    };
    const std::vector<Bad> cases = {
        {"unknown architecture",
         [](const fs::path& d) {
             write_text(d / "config.json", R"({"architectures":["GPT2LMHeadModel"],"num_hidden_layers":2})");
         },
         ErrorKind::Unsupported,
         "'GPT2LMHeadModel' is not supported (supported: LlamaForCausalLM, MistralForCausalLM, MixtralForCausalLM, "
         "Qwen2ForCausalLM, Qwen2MoeForCausalLM, Qwen3ForCausalLM, Qwen3MoeForCausalLM, Gemma3ForCausalLM, "
         "Gemma3ForConditionalGeneration, "
         "Phi3ForCausalLM)"},
        {"no config", [](const fs::path& d) { fs::remove(d / "config.json"); }, ErrorKind::Io, "config.json: missing"},
        {"config not json", [](const fs::path& d) { write_text(d / "config.json", "{"); }, ErrorKind::BadJson,
         "not valid JSON"},
        {"no block count",
         [](const fs::path& d) { write_text(d / "config.json", R"({"architectures":["LlamaForCausalLM"]})"); },
         ErrorKind::BadJson, "'n_layers' is missing"},
        {"no tokenizer", [](const fs::path& d) { fs::remove(d / "tokenizer.model"); }, ErrorKind::Unsupported,
         "neither tokenizer.model nor tokenizer.json"},
        {"BPE whose pre-tokenizer is not known",
         [](const fs::path& d) {
             fs::remove(d / "tokenizer.model");
             write_text(d / "tokenizer.json", R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}})");
         },
         ErrorKind::Unsupported, "tokenizer.json: pre-tokenizer: not recognised (chkhsh "},
        {"BPE with byte fallback (LlamaHfVocab)",
         [](const fs::path& d) {
             fs::remove(d / "tokenizer.model");
             write_text(d / "tokenizer.json", R"({"model": {"type": "BPE", "byte_fallback": true, "vocab": {}},
                                                  "decoder": {"type": "Sequence"}})");
         },
         ErrorKind::Unsupported, "a BPE tokenizer with byte fallback (LlamaHfVocab) is not converted yet"},
        {"tokenizer.json of another model",
         [](const fs::path& d) {
             fs::remove(d / "tokenizer.model");
             write_text(d / "tokenizer.json", R"({"model": {"type": "Unigram", "vocab": []}})");
         },
         ErrorKind::Unsupported, "tokenizer.json: model.type: \"Unigram\" is not a BPE tokenizer"},
        {"tokenizer.json not JSON", [](const fs::path& d) { write_text(d / "tokenizer.json", "{\"added_tokens\": ["); },
         ErrorKind::BadJson, "tokenizer.json"},
        {"added_tokens_decoder entry without content",
         [](const fs::path& d) {
             write_text(d / "tokenizer_config.json", R"({"added_tokens_decoder": {"3": {"special": true}}})");
         },
         ErrorKind::BadJson, "entry '3' is not an id with a content string"},
        {"added_tokens.json not a mapping", [](const fs::path& d) { write_text(d / "added_tokens.json", "[1]"); },
         ErrorKind::BadJson, "added_tokens.json"},
        {"unknown rope type",
         [](const fs::path& d) {
             std::string c = read_text((d / "config.json").string());
             c.insert(1, R"("rope_scaling": {"rope_type": "ntk-by-parts", "factor": 8.0},)");
             write_text(d / "config.json", c);
         },
         ErrorKind::Unsupported, "RoPE scaling type \"ntk-by-parts\""},
        {"broken tokenizer.model", [](const fs::path& d) { write_text(d / "tokenizer.model", "\x0a\x05xy"); },
         ErrorKind::Truncated, "tokenizer.model"},
        {"mistyped sampling value",
         [](const fs::path& d) { write_text(d / "generation_config.json", R"({"top_k": 2.5})"); }, ErrorKind::BadJson,
         "generation_config.json: key 'general.sampling.top_k': 2.5 is not an i32"},
    };
    int i = 0;
    for (const Bad& c : cases) {
        SCOPED_TRACE(c.label);
        const fs::path dir = make_hf_case("tiny-llama", root / std::to_string(i++));
        c.edit(dir);
        const FormatError e = format_error_of([&] {
            const hf::Checkpoint ck(dir.string());
            hf::plan_convert(ck, hf::OutType::Auto);
        });
        EXPECT_EQ(e.kind(), c.kind) << e.what();
        EXPECT_NE(std::string(e.what()).find(c.says), std::string::npos) << e.what();
        // The tool: exit 2, one line on stderr, nothing written.
        std::string out;
        const fs::path gguf = root / "never.gguf";
        EXPECT_EQ(run(tool_path("gguf-convert") + " " + dir.string() + " " + gguf.string() + " 2>&1 >/dev/null", &out),
                  2);
        EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
        EXPECT_FALSE(fs::exists(gguf));
    }
}

TEST(HfConvert, NonFiniteWeightsAreAnErrorAndLeaveNoOutput) {
    const auto root = temp_dir();
    const fs::path dir = make_hf_case("tiny-llama", root);
    // Poison one element of model.norm.weight (BF16 0x7fc0 = NaN) in place.
    const hf::File part((dir / "model.safetensors").string());
    const hf::Tensor& t = *part.find("model.norm.weight");
    const uint64_t at = t.offset + 6;
    auto bytes = read_file((dir / "model.safetensors").string());
    bytes[at] = 0xc0;
    bytes[at + 1] = 0x7f;
    write_file((dir / "model.safetensors").string(), bytes);
    std::string out;
    const fs::path gguf = root / "out.gguf";
    EXPECT_EQ(run(tool_path("gguf-convert") + " " + dir.string() + " " + gguf.string(), &out, true), 2);
    EXPECT_NE(out.find("tensor 'model.norm.weight': non-finite value nan at element 3"), std::string::npos) << out;
    EXPECT_FALSE(fs::exists(gguf));
    EXPECT_EQ(listing(root), (std::vector<std::string>{"tiny-llama"}));  // no temp file left
}

TEST(HfConvert, ToolDryRunJsonAndSafety) {
    const auto root = temp_dir();
    const fs::path dir = make_hf_case("Mistral-7B-Instruct-v0.3", root);
    std::string out;
    ASSERT_EQ(run(tool_path("gguf-convert") + " --dry-run --json " + dir.string(), &out), 0) << out;
    const auto j = nlohmann::json::parse(out);
    EXPECT_EQ(j["architecture"], "llama");
    EXPECT_EQ(j["tensors"].size(), 2u + 2 * 9);  // tied: no output.weight
    EXPECT_EQ(j["tensors"][0]["name"], "token_embd.weight");
    EXPECT_EQ(j["tensors"][0]["type"], "F16");  // F32 source, auto: F16
    EXPECT_EQ(j["tensors"][0]["shape"], nlohmann::json::array({64, 400}));
    EXPECT_EQ(listing(root), (std::vector<std::string>{"Mistral-7B-Instruct-v0.3"}));
    // Never over an input (a shard); the checkpoint directory as OUT gets a new file of the Python
    // converter's default name, the inputs untouched.
    EXPECT_EQ(run(tool_path("gguf-convert") + " " + dir.string() + " " + (dir / "model.safetensors").string() + " 2>&1",
                  &out),
              2);
    EXPECT_NE(out.find("model.safetensors"), std::string::npos) << out;
    const auto before = dir_snapshot(dir);
    EXPECT_EQ(run(tool_path("gguf-convert") + " -q " + dir.string() + " " + dir.string() + " 2>&1", &out), 0) << out;
    auto after = dir_snapshot(dir);
    EXPECT_EQ(after.erase("Mistral-83K-7b-Instruct-v0.3-F16.gguf"), 1u);
    EXPECT_EQ(after, before);
    EXPECT_EQ(run(tool_path("gguf-convert") + " " + dir.string() + " x.gguf --outtype q4 2>&1", &out), 2);
    EXPECT_NE(out.find("--outtype"), std::string::npos) << out;
}

// Qwen2 is not permuted: attn_q / attn_k rows are q_proj / k_proj rows in order, and the q/k/v
// biases are F32 copies of their sources.
TEST(HfConvert, Qwen2KeepsQueryAndKeyRowsInOrderWithTheirBiases) {
    const auto root = temp_dir();
    const fs::path dir = make_hf_case("Qwen2-Math-1.5B", root);
    const hf::Checkpoint ck(dir.string());
    const std::string out = (root / "f32.gguf").string();
    hf::write_convert(hf::plan_convert(ck, hf::OutType::F32), out);
    const GgufFile f = GgufFile::open(out);
    EXPECT_EQ(f.tensors()[static_cast<size_t>(f.find_tensor("blk.1.attn_q.bias"))].type, GgmlType::F32);
    const std::pair<const char*, const char*> same[] = {
        {"blk.1.attn_q.weight", "model.layers.1.self_attn.q_proj.weight"},
        {"blk.1.attn_k.weight", "model.layers.1.self_attn.k_proj.weight"},
        {"blk.1.attn_q.bias", "model.layers.1.self_attn.q_proj.bias"},
        {"blk.0.attn_k.bias", "model.layers.0.self_attn.k_proj.bias"},
        {"blk.0.attn_v.bias", "model.layers.0.self_attn.v_proj.bias"}};
    for (const auto& [gguf, hf_name] : same) {
        SCOPED_TRACE(gguf);
        const hf::TensorRef r = ck.find(hf_name);
        ASSERT_NE(r.tensor, nullptr);
        const auto got = read_f32(f, gguf);
        ASSERT_EQ(got.size(), r.tensor->elements);
        for (size_t i = 0; i < got.size(); ++i) {
            uint16_t h;
            std::memcpy(&h, r.part->bytes(*r.tensor).data() + 2 * i, 2);
            ASSERT_EQ(got[i], fp16_to_fp32(h)) << i;
        }
    }
}

// A tensor outside the architecture's MODEL_TENSORS is refused, as gguf-py's name map refuses it:
// Qwen3's q/k norms in a Qwen2 checkpoint, and what a Qwen2 checkpoint holds converts as qwen3 too.
// One edit of a checkpoint's config.json that plan_convert refuses: `from` replaced by `to` gives a
// FormatError of `kind` saying `says`.
struct ConfigRefusal {
    const char* label;
    std::string from, to;
    ErrorKind kind;
    const char* says;
};

// The values of a F16 or BF16 safetensors tensor.
std::vector<float> half_values(const hf::File& part, const std::string& name) {
    const hf::Tensor& t = *part.find(name);
    const auto bytes = part.bytes(t);
    std::vector<float> v;
    for (uint64_t i = 0; i < t.elements; ++i) {
        uint16_t h;
        std::memcpy(&h, bytes.data() + 2 * i, 2);
        v.push_back(t.dtype == hf::Dtype::F16 ? fp16_to_fp32(h) : bf16_to_fp32(h));
    }
    return v;
}

// Checks each refusal on the checkpoint at `dir`, restoring its config.json after each.
void expect_config_refusals(const fs::path& dir, std::span<const ConfigRefusal> cases) {
    for (const ConfigRefusal& c : cases) {
        SCOPED_TRACE(c.label);
        const std::string saved = read_text((dir / "config.json").string());
        std::string cfg = saved;
        ASSERT_NE(cfg.find(c.from), std::string::npos) << cfg;
        cfg.replace(cfg.find(c.from), c.from.size(), c.to);
        write_text(dir / "config.json", cfg);
        const FormatError e = format_error_of([&] {
            const hf::Checkpoint ck(dir.string());
            hf::plan_convert(ck, hf::OutType::Auto);
        });
        EXPECT_EQ(e.kind(), c.kind) << e.what();
        EXPECT_NE(std::string(e.what()).find(c.says), std::string::npos) << e.what();
        write_text(dir / "config.json", saved);
    }
}

// Case `name` built under `root` and converted with --outtype f32 to root/<name>.gguf: the
// checkpoint directory and the output, or an empty output (the tool's output reported) on failure.
std::pair<fs::path, fs::path> converted_f32(const std::string& name, const fs::path& root) {
    const fs::path dir = make_hf_case(name, root), out = root / (name + ".gguf");
    std::string text;
    const int rc =
        run(tool_path("gguf-convert") + " -q --outtype f32 " + dir.string() + " " + out.string(), &text, true);
    EXPECT_EQ(rc, 0) << text;
    return {dir, rc == 0 ? out : fs::path()};
}

// Block `bid` of `g` holds, for each (HF weight, GGUF name) pair in that order, the `n` experts
// `pattern` (formatted with expert index and weight) names in `part`, stacked over the index.
void expect_stacked_experts(const GgufFile& g, const hf::File& part, int bid, int n, const char* pattern,
                            std::initializer_list<std::pair<const char*, const char*>> pairs) {
    int64_t prev = -1;
    for (const auto& [w, gguf] : pairs) {
        const std::string name = fmt::format("blk.{}.{}.weight", bid, gguf);
        std::vector<float> expect;
        for (int x = 0; x < n; ++x) {
            const auto v = half_values(part, fmt::format(fmt::runtime(pattern), x, w));
            expect.insert(expect.end(), v.begin(), v.end());
        }
        EXPECT_EQ(read_f32(g, name), expect) << name;
        const int64_t at = g.find_tensor(name);
        ASSERT_GE(at, 0) << name;
        EXPECT_EQ(g.tensors()[static_cast<size_t>(at)].ne[2], n) << name;
        EXPECT_GT(at, prev) << name;  // in the order given
        prev = at;
    }
}

// Mixtral: each block's experts stacked (w1, w2, w3 over the expert index) into one 3-D tensor, the
// router kept F32, the size label "NxS"; experts that do not complete a block, or that the config
// does not count, are refused naming the tensor.
TEST(HfConvert, MixtralExpertsAreStackedInOrder) {
    const auto root = temp_dir();
    const auto [dir, out] = converted_f32("tiny-mixtral", root);
    ASSERT_FALSE(out.empty());
    const GgufFile g = GgufFile::open(out.string());
    const hf::File part((dir / "model.safetensors").string());
    expect_stacked_experts(g, part, 2, 3, "model.layers.2.block_sparse_moe.experts.{}.{}.weight",
                           {{"w1", "ffn_gate_exps"}, {"w2", "ffn_down_exps"}, {"w3", "ffn_up_exps"}});
    EXPECT_EQ(g.tensors()[static_cast<size_t>(g.find_tensor("blk.0.ffn_gate_inp.weight"))].type, GgmlType::F32);
    EXPECT_EQ(*g.metadata().find("llama.expert_count")->as_int(), 3);
    EXPECT_EQ(*g.metadata().find("llama.expert_used_count")->as_int(), 1);

    const ConfigRefusal cases[] = {
        {"more expertsthan the checkpoint has", "\"num_local_experts\": 3", "\"num_local_experts\": 4",
         ErrorKind::BadDims, "block 0 has 9 of the 3 x num_local_experts expert tensors"},
        {"fewer experts than the checkpoint has", "\"num_local_experts\": 3", "\"num_local_experts\": 2",
         ErrorKind::Unsupported, "experts.2.w1.weight': not an expert of a block below 3"},
        {"no expert count", "\"num_local_experts\": 3", "\"n_local_experts\": 3", ErrorKind::BadJson,
         "'num_local_experts' is missing"},
        {"experts in a Qwen2 checkpoint", "MixtralForCausalLM", "Qwen2ForCausalLM", ErrorKind::Unsupported,
         "cannot map the tensor name to GGUF (qwen2)"},
    };
    expect_config_refusals(dir, cases);
    // A NaN in one expert: named with that expert's own tensor and element.
    {
        const std::string name = "model.layers.1.block_sparse_moe.experts.1.w3.weight";
        const uint64_t at = part.find(name)->offset + 2 * 5;
        auto bytes = read_file((dir / "model.safetensors").string());
        bytes[at] = 0x00;
        bytes[at + 1] = 0x7e;  // F16 NaN
        write_file((dir / "model.safetensors").string(), bytes);
    }
    fs::remove(out);
    std::string text;
    EXPECT_EQ(run(tool_path("gguf-convert") + " " + dir.string() + " " + out.string(), &text, true), 2);
    EXPECT_NE(
        text.find("tensor 'model.layers.1.block_sparse_moe.experts.1.w3.weight': non-finite value nan at element 5"),
        std::string::npos)
        << text;
    EXPECT_FALSE(fs::exists(out));
}

// Qwen3Moe: each block's mlp.experts.X.{down,gate,up}_proj stacked over X in that order (as
// Qwen2MoeModel yields them), the router mlp.gate kept F32, the expert FFN width from
// moe_intermediate_size; experts the config does not count are refused naming the tensor.
TEST(HfConvert, Qwen3MoeExpertsAreStackedInOrder) {
    const auto root = temp_dir();
    const auto [dir, out] = converted_f32("Qwen3-30B-A3B", root);
    ASSERT_FALSE(out.empty());
    const GgufFile g = GgufFile::open(out.string());
    const hf::File part((dir / "model.safetensors").string());
    expect_stacked_experts(
        g, part, 1, 4, "model.layers.1.mlp.experts.{}.{}.weight",
        {{"down_proj", "ffn_down_exps"}, {"gate_proj", "ffn_gate_exps"}, {"up_proj", "ffn_up_exps"}});
    EXPECT_EQ(g.tensors()[static_cast<size_t>(g.find_tensor("blk.0.ffn_gate_inp.weight"))].type, GgmlType::F32);
    EXPECT_EQ(*g.metadata().find("qwen3moe.expert_count")->as_int(), 4);
    EXPECT_EQ(*g.metadata().find("qwen3moe.expert_used_count")->as_int(), 2);
    EXPECT_EQ(*g.metadata().find("qwen3moe.expert_feed_forward_length")->as_int(), 32);
    EXPECT_EQ(*g.metadata().find("qwen3moe.feed_forward_length")->as_int(), 64);
    EXPECT_EQ(*g.metadata().get_string("tokenizer.ggml.pre"), "qwen2");

    const ConfigRefusal cases[] = {
        {"more experts than the checkpoint has", "\"num_experts\": 4", "\"num_experts\": 5", ErrorKind::BadDims,
         "block 0 has 12 of the 3 x num_experts expert tensors"},
        {"fewer experts than the checkpoint has", "\"num_experts\": 4", "\"num_experts\": 3", ErrorKind::Unsupported,
         "not an expert of a block below 2 named as Qwen3MoeForCausalLM names them"},
        {"no expert count", "\"num_experts\": 4", "\"n_experts\": 4", ErrorKind::BadJson,
         "'num_local_experts' is missing"},
    };
    expect_config_refusals(dir, cases);
}

// Newer transformers' fused experts (Qwen2MoeModel.modify_tensors): mlp.experts.down_proj
// [X, E, F] copied as ffn_down_exps, mlp.experts.gate_up_proj [X, 2F, E] split into ffn_gate_exps
// (each expert's first F rows) and ffn_up_exps (the others), in that order; other shapes refused.
TEST(HfConvert, Qwen3MoeFusedExpertsAreSplit) {
    const auto root = temp_dir();
    const auto [dir, out] = converted_f32("Qwen3-30B-A3B-fused", root);
    ASSERT_FALSE(out.empty());
    const GgufFile g = GgufFile::open(out.string());
    const hf::File part((dir / "model.safetensors").string());
    const std::vector<float> gate_up = half_values(part, "model.layers.1.mlp.experts.gate_up_proj");
    const size_t per_expert = 2 * 32 * 64, half = per_expert / 2;
    std::vector<float> gate, up;
    for (size_t x = 0; x < 4; ++x) {
        gate.insert(gate.end(), gate_up.begin() + x * per_expert, gate_up.begin() + x * per_expert + half);
        up.insert(up.end(), gate_up.begin() + x * per_expert + half, gate_up.begin() + (x + 1) * per_expert);
    }
    EXPECT_EQ(read_f32(g, "blk.1.ffn_gate_exps.weight"), gate);
    EXPECT_EQ(read_f32(g, "blk.1.ffn_up_exps.weight"), up);
    EXPECT_EQ(read_f32(g, "blk.1.ffn_down_exps.weight"), half_values(part, "model.layers.1.mlp.experts.down_proj"));
    const int64_t down = g.find_tensor("blk.1.ffn_down_exps.weight"), gt = g.find_tensor("blk.1.ffn_gate_exps.weight");
    EXPECT_LT(down, gt);
    EXPECT_EQ(gt + 1, g.find_tensor("blk.1.ffn_up_exps.weight"));
    const GgufTensorInfo& info = g.tensors()[static_cast<size_t>(gt)];
    EXPECT_EQ((std::vector<int64_t>{info.ne[0], info.ne[1], info.ne[2]}), (std::vector<int64_t>{64, 32, 4}));

    // A gate_up_proj with an odd second dimension, and a 2-D one: refused naming the tensor.
    for (const auto& [shape, says] : {std::pair{std::vector<uint64_t>{4, 63, 64}, "[experts, 2 x n_ff, n_embd]"},
                                      {std::vector<uint64_t>{256, 64}, "[experts, 2 x n_ff, n_embd]"}}) {
        hf::Header h = hf::parse_image(read_file((dir / "model.safetensors").string()), "model.safetensors");
        std::vector<hf::TensorDecl> decls;
        for (const hf::Tensor& t : h.tensors)
            decls.push_back({t.name, t.dtype, t.name == "model.layers.0.mlp.experts.gate_up_proj" ? shape : t.shape});
        const fs::path bad = root / "bad";
        fs::remove_all(bad);
        fs::copy(dir, bad);
        std::vector<uint8_t> image = hf::header_bytes(decls, {});
        uint64_t bytes = 0;
        for (const hf::TensorDecl& d : decls) {
            uint64_t n = 2;
            for (uint64_t x : d.shape) n *= x;
            bytes += n;
        }
        image.resize(image.size() + bytes);
        write_file((bad / "model.safetensors").string(), image);
        const FormatError e =
            format_error_of([&] { hf::plan_convert(hf::Checkpoint(bad.string()), hf::OutType::F16); });
        EXPECT_EQ(e.kind(), ErrorKind::BadDims);
        EXPECT_NE(std::string(e.what()).find("model.layers.0.mlp.experts.gate_up_proj"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
}

// Qwen2Moe: Qwen3Moe's experts plus a shared expert (its own FFN tensors, *_shexp) and the
// shared expert's gate, a [1, E] matrix kept F32 as the routers are; its width as a key.
TEST(HfConvert, Qwen2MoeKeepsItsSharedExpert) {
    const auto root = temp_dir();
    const fs::path dir = make_hf_case("Qwen1.5-MoE-A2.7B", root);
    const fs::path out = root / "q.gguf";
    std::string text;
    ASSERT_EQ(run(tool_path("gguf-convert") + " -q " + dir.string() + " " + out.string(), &text, true), 0) << text;
    const GgufFile g = GgufFile::open(out.string());
    const hf::File part((dir / "model.safetensors").string());
    auto info = [&](const std::string& n) { return g.tensors()[static_cast<size_t>(g.find_tensor(n))]; };
    EXPECT_EQ(info("blk.1.ffn_gate_inp_shexp.weight").type, GgmlType::F32);
    EXPECT_EQ(info("blk.1.ffn_gate_inp_shexp.weight").ne[1], 1);
    EXPECT_EQ(read_f32(g, "blk.1.ffn_gate_inp_shexp.weight"),
              half_values(part, "model.layers.1.mlp.shared_expert_gate.weight"));
    for (const char* w : {"gate", "up", "down"}) {
        const GgufTensorInfo t = info(fmt::format("blk.1.ffn_{}_shexp.weight", w));
        EXPECT_EQ(t.type, GgmlType::F16) << w;
        EXPECT_EQ(t.ne[0] * t.ne[1], 64 * 64) << w;
    }
    EXPECT_EQ(info("blk.0.ffn_up_exps.weight").ne[2], 4);
    EXPECT_EQ(*g.metadata().find("qwen2moe.expert_shared_feed_forward_length")->as_int(), 64);
    EXPECT_EQ(*g.metadata().find("qwen2moe.expert_feed_forward_length")->as_int(), 32);
}

// Gemma3: every *norm.weight stored as 1 + w (its RMSNorm scales by 1 + w), added in F32 for a BF16
// checkpoint and rounded to F16 for an F16 one, as torch adds in the tensor's dtype; other tensors
// copied; the keys it sets again keep their place; and its own refusals.
TEST(HfConvert, Gemma3ShiftsItsNormsByOne) {
    const auto root = temp_dir();
    for (const char* name : {"gemma-3-1b-it", "gemma-3-4b-pt"}) {
        SCOPED_TRACE(name);
        const auto [dir, out] = converted_f32(name, root);
        ASSERT_FALSE(out.empty());
        const GgufFile g = GgufFile::open(out.string());
        const hf::File part((dir / "model.safetensors").string());
        auto source = [&](const std::string& t) { return std::pair{half_values(part, t), part.find(t)->dtype}; };
        for (const auto& [hf_name, gguf] :
             {std::pair{"model.layers.1.input_layernorm.weight", "blk.1.attn_norm.weight"},
              {"model.layers.1.self_attn.k_norm.weight", "blk.1.attn_k_norm.weight"},
              {"model.layers.1.post_feedforward_layernorm.weight", "blk.1.post_ffw_norm.weight"},
              {"model.norm.weight", "output_norm.weight"}}) {
            const auto [v, dtype] = source(hf_name);
            std::vector<float> want;
            for (float x : v) want.push_back(dtype == hf::Dtype::F16 ? fp16_to_fp32(fp32_to_fp16(x + 1.0f)) : x + 1.0f);
            EXPECT_EQ(read_f32(g, gguf), want) << gguf;
        }
        EXPECT_EQ(read_f32(g, "blk.0.ffn_down.weight"), source("model.layers.0.mlp.down_proj.weight").first);
        EXPECT_EQ(g.find_tensor("output.weight"), -1);  // tied
        EXPECT_EQ(g.metadata().find("tokenizer.ggml.add_space_prefix")->as_int(), 0);
    }
    const ConfigRefusal cases[] = {
        {"logit soft-capping in attention", "\"attn_logit_softcapping\": null", "\"attn_logit_softcapping\": 50.0",
         ErrorKind::Unsupported, "Gemma3 has none"},
        {"no sliding window", "\"sliding_window\": 512", "\"sliding_windoww\": 512", ErrorKind::BadJson,
         "'sliding_window' is missing"},
    };
    expect_config_refusals(root / "gemma-3-1b-it", cases);
}

// Gemma3ForConditionalGeneration (gemma-3-4b-it's layout): the text model under language_model.
// converted as Gemma3ForCausalLM's, the vision tower and projector left out, the text_config keys
// read, and the embedding cut to the vocabulary's length (464 rows, 400 SentencePiece pieces and no
// vocab_size: the rows past it are image tokens); with a vocab_size, to that many rows.
TEST(HfConvert, Gemma3MultimodalKeepsItsTextModel) {
    const auto root = temp_dir();
    const auto [dir, out] = converted_f32("gemma-3-4b-it", root);
    ASSERT_FALSE(out.empty());
    const GgufFile g = GgufFile::open(out.string());
    const hf::File part((dir / "model.safetensors").string());
    const std::vector<float> rows = half_values(part, "language_model.model.embed_tokens.weight");
    ASSERT_EQ(rows.size(), 464u * 64);
    EXPECT_EQ(read_f32(g, "token_embd.weight"), std::vector<float>(rows.begin(), rows.begin() + 400 * 64));
    EXPECT_EQ(g.tensors()[static_cast<size_t>(g.find_tensor("token_embd.weight"))].ne[1], 400);
    for (const GgufTensorInfo& t : g.tensors())
        EXPECT_TRUE(t.name == "token_embd.weight" || t.name == "output_norm.weight" || t.name.starts_with("blk."))
            << t.name;
    EXPECT_EQ(*g.metadata().get_string("general.architecture"), "gemma3");
    EXPECT_EQ(g.metadata().find("gemma3.block_count")->as_int(), 6);
    EXPECT_EQ(*g.metadata().find("gemma3.rope.scaling.factor")->as_double(), 8.0);
    EXPECT_EQ(g.metadata().find("gemma3.attention.sliding_window")->as_int(), 1024);
    EXPECT_EQ(g.metadata().find("tokenizer.ggml.tokens")->count(), 400u);
    // config.json's vocab_size decides when given (the SentencePiece vocabulary is padded to it).
    std::string cfg = read_text((dir / "config.json").string());
    cfg.insert(cfg.find("\"hidden_size\""), "\"vocab_size\": 420, ");
    write_text(dir / "config.json", cfg);
    const hf::ConvertPlan plan = hf::plan_convert(hf::Checkpoint(dir.string()), hf::OutType::F16);
    EXPECT_EQ(plan.tensors.front().ne, (std::vector<int64_t>{64, 420}));
    EXPECT_EQ(plan.tensors.front().elements(), 420u * 64);
    // Without tokenizer.model, tokenizer.json's counts; a file without them is refused.
    fs::remove(dir / "tokenizer.model");
    write_text(dir / "tokenizer.json", R"({"model": {"type": "BPE", "merges": []}, "added_tokens": []})");
    const FormatError e = format_error_of([&] { hf::plan_convert(hf::Checkpoint(dir.string()), hf::OutType::F16); });
    EXPECT_EQ(e.kind(), ErrorKind::BadJson);
    EXPECT_NE(std::string(e.what()).find("tokenizer.json: model.vocab: Gemma3 counts the vocabulary"),
              std::string::npos)
        << e.what();
}

// A fast tokenizer next to tokenizer.model (tests/data/hf/cases/TinyLlama-1.1B-Chat-v1.0): the
// added tokens of added_tokens.json and of tokenizer_config's added_tokens_decoder replace the
// pieces (score -1000; CONTROL when special or looking special, else USER_DEFINED with U+2581 read
// as a space; ids past the vocabulary skipped), and the special ids come from tokenizer.json's added
// tokens by tokenizer_config's <type>_token (a dict's content too).
TEST(HfConvert, AddedTokensAndSpecialIdsOfAFastTokenizer) {
    const auto root = temp_dir();
    const fs::path dir = make_hf_case("TinyLlama-1.1B-Chat-v1.0", root);
    const hf::Checkpoint ck(dir.string());
    const hf::ConvertPlan plan = hf::plan_convert(ck, hf::OutType::F16);
    const GgufValue* tokens = plan.kvs.find("tokenizer.ggml.tokens");
    const GgufValue* scores = plan.kvs.find("tokenizer.ggml.scores");
    const GgufValue* types = plan.kvs.find("tokenizer.ggml.token_type");
    ASSERT_TRUE(tokens && scores && types);
    ASSERT_EQ(tokens->strings().size(), 416u);
    const struct {
        size_t id;
        const char* text;
        double score;
        int type;
    } want[] = {
        {0, "<unk>", -1000, 3},          {1, "<s>", -1000, 3},         {405, "<|user|>", -1000, 3},
        {406, " hello world", -1000, 4}, {407, "<unused0>", -1000, 3}, {408, "[PAD]", -1000, 3},
        {409, "<extra_a>", -1000, 4},    {410, "[PAD410]", -10000, 5},
    };
    for (const auto& w : want) {
        SCOPED_TRACE(w.id);
        EXPECT_EQ(tokens->strings()[w.id], w.text);
        EXPECT_EQ(scores->array_number(w.id), w.score);
        EXPECT_EQ(types->array_number(w.id), w.type);
    }
    EXPECT_EQ(plan.kvs.find("tokenizer.ggml.padding_token_id")->as_int(), 408);
    EXPECT_EQ(plan.kvs.find("tokenizer.ggml.bos_token_id")->as_int(), 1);
    EXPECT_EQ(plan.kvs.find("tokenizer.ggml.add_sep_token")->as_int(), 0);  // TemplateProcessing's pair
}

// Phi3: qkv_proj and gate_up_proj stay fused (attn_qkv, a double-height ffn_up); its own vocabulary
// rules (added tokens taken as they are, U+2581 kept; CONTROL only when marked special) and keys
// (no TextModel ones: the original context length, a sliding window of 0 when unset); refusals.
TEST(HfConvert, Phi3KeepsItsFusedProjections) {
    const auto root = temp_dir();
    const fs::path dir = make_hf_case("Phi-3-mini-4k-instruct", root);
    const hf::Checkpoint ck(dir.string());
    const hf::ConvertPlan plan = hf::plan_convert(ck, hf::OutType::F16);
    auto shape_of = [&](const std::string& name) {
        for (const auto& t : plan.tensors)
            if (t.name == name) return t.ne;
        return std::vector<int64_t>{};
    };
    EXPECT_EQ(shape_of("blk.0.attn_qkv.weight"), (std::vector<int64_t>{96, 3 * 96}));
    EXPECT_EQ(shape_of("blk.0.ffn_up.weight"), (std::vector<int64_t>{96, 2 * 128}));
    EXPECT_EQ(shape_of("blk.0.ffn_gate.weight"), std::vector<int64_t>{});
    EXPECT_EQ(plan.kvs.find("phi3.rope.scaling.original_context_length")->as_int(), 4096);
    EXPECT_EQ(plan.kvs.find("phi3.attention.sliding_window")->as_int(), 2047);
    EXPECT_EQ(plan.kvs.find("phi3.rope.dimension_count")->as_int(), 24);
    EXPECT_FALSE(plan.kvs.contains("phi3.attention.layer_norm_epsilon"));
    const GgufValue* tokens = plan.kvs.find("tokenizer.ggml.tokens");
    const GgufValue* types = plan.kvs.find("tokenizer.ggml.token_type");
    EXPECT_EQ(tokens->strings()[410], "\xe2\x96\x81plain");
    EXPECT_EQ(types->array_number(410), 4);  // USER_DEFINED
    EXPECT_EQ(types->array_number(2), 4);    // </s> not marked special
    EXPECT_EQ(types->array_number(411), 3);  // from tokenizer.json's added tokens
    EXPECT_EQ(plan.kvs.find("tokenizer.ggml.eos_token_id")->as_int(), 405);
    const ConfigRefusal cases[] = {
        {"RoPE scaling of another type", "\"rope_scaling\": null", "\"rope_scaling\": {\"type\": \"dynamic\"}",
         ErrorKind::Unsupported, "'dynamic' is not supported by Phi3's converter"},
        {"LongRoPE without its factors", "\"rope_scaling\": null", "\"rope_scaling\": {\"type\": \"longrope\"}",
         ErrorKind::BadJson, "rope_scaling.long_factor"},
        {"no original context length", "\"original_max_position_embeddings\"", "\"original_max_positions\"",
         ErrorKind::BadJson, "'original_max_position_embeddings' is missing"},
        {"more pieces than vocab_size", "\"vocab_size\": 416", "\"vocab_size\": 390", ErrorKind::BadDims,
         "more pieces than vocab_size"},
    };
    expect_config_refusals(dir, cases);
    // A GPT2Tokenizer reads tokenizer.json (Phi-4; the golden case Phi-4-mini-gpt2 converts one):
    // without it, refused as the Python converter's AutoTokenizer fails.
    write_text(dir / "tokenizer_config.json", R"({"tokenizer_class": "GPT2Tokenizer"})");
    EXPECT_NE(
        error_of([&] { hf::plan_convert(hf::Checkpoint(dir.string()), hf::OutType::F16); }).find("tokenizer.json"),
        std::string::npos);
    write_text(dir / "tokenizer_config.json", R"({"add_bos_token": false})");
    EXPECT_NE(
        error_of([&] { hf::plan_convert(hf::Checkpoint(dir.string()), hf::OutType::F16); }).find("tokenizer_class"),
        std::string::npos);
}

// RoPE scaling as the Python converter writes it: Llama 3's rope_freqs.weight computed (first of
// the tensors, F32, one factor per rotated pair; no scaling keys), Phi3's LongRoPE factors copied
// to F32 tensors with its attention factor as the second key, YaRN's keys; and the refusals.
TEST(HfConvert, RopeScalingAsThePythonConverterWritesIt) {
    const auto root = temp_dir();
    {
        const fs::path dir = make_hf_case("Llama-3.2-1B-Instruct", root);
        const hf::ConvertPlan plan = hf::plan_convert(hf::Checkpoint(dir.string()), hf::OutType::F16);
        const hf::PlannedTensor& t = plan.tensors.front();
        EXPECT_EQ(t.name, "rope_freqs.weight");
        EXPECT_EQ(t.type, GgmlType::F32);
        EXPECT_EQ(t.ne, std::vector<int64_t>{32});
        EXPECT_EQ(t.computed, hf::llama3_rope_factors(500000.0, 64, 32.0, 1.0, 4.0, 8192.0));
        EXPECT_EQ(t.source_name(), "(computed)");
        EXPECT_FALSE(plan.kvs.contains("llama.rope.scaling.type"));
        // Written as planned, and reported as computed.
        const fs::path out = root / "l3.gguf";
        std::string text;
        ASSERT_EQ(run(tool_path("gguf-convert") + " -q " + dir.string() + " " + out.string(), &text, true), 0) << text;
        EXPECT_EQ(read_f32(GgufFile::open(out.string()), "rope_freqs.weight"), t.computed);
        ASSERT_EQ(run(tool_path("gguf-convert") + " --dry-run --json " + dir.string() + " " + out.string(), &text), 0);
        const nlohmann::json report = nlohmann::json::parse(text);
        EXPECT_EQ(report["tensors"][0]["name"], "rope_freqs.weight");
        EXPECT_EQ(report["tensors"][0]["source"], "(computed)");
        const ConfigRefusal cases[] = {
            {"factor 0", "\"factor\": 32.0", "\"factor\": 0", ErrorKind::BadJson, "factor != 0"},
            {"equal frequency factors", "\"high_freq_factor\": 4.0", "\"high_freq_factor\": 1.0", ErrorKind::BadJson,
             "high_freq_factor != low_freq_factor"},
            {"theta not a number", "\"rope_theta\": 500000.0", "\"rope_theta\": \"big\"", ErrorKind::BadJson,
             "rope_theta: \"big\" is not a finite number"},
            {"rope type not a string", "\"rope_type\": \"llama3\"", "\"rope_type\": 3", ErrorKind::BadJson,
             "rope_type: not a string"},
            {"no head size", "\"head_dim\": 64", "\"head_dim\": 0", ErrorKind::BadJson, "head size"},
        };
        expect_config_refusals(dir, cases);
    }
    {
        const fs::path dir = make_hf_case("Phi-3-mini-128k-instruct", root);
        const hf::ConvertPlan plan = hf::plan_convert(hf::Checkpoint(dir.string()), hf::OutType::F16);
        ASSERT_GE(plan.kvs.size(), 2u);
        EXPECT_EQ(plan.kvs[1].key, "phi3.rope.scaling.attn_factor");
        EXPECT_EQ(*plan.kvs[1].value.as_double(),
                  static_cast<float>(std::sqrt(1.0 + std::log(32.0) / std::log(4096.0))));
        ASSERT_GE(plan.tensors.size(), 2u);
        EXPECT_EQ(plan.tensors[0].name, "rope_factors_long.weight");
        EXPECT_EQ(plan.tensors[1].name, "rope_factors_short.weight");
        EXPECT_EQ(plan.tensors[0].ne, std::vector<int64_t>{12});
        EXPECT_EQ(plan.tensors[0].computed[11], 9.070000648498535f);
        EXPECT_EQ(plan.tensors[1].computed[3], static_cast<float>(1.3000000000000003));
        const ConfigRefusal cases[] = {
            {"a factor too few", "\"long_factor\": [\n      1.0700000524520874,", "\"long_factor\": [",
             ErrorKind::BadDims, "11 factors; one per rotated pair is 24 / 2"},
            {"a factor not a number", "9.070000648498535", "\"x\"", ErrorKind::BadJson, "is not a finite number"},
            {"no type", "\"type\": \"longrope\"", "\"kind\": \"longrope\"", ErrorKind::BadJson,
             "rope_scaling.type: missing"},
        };
        expect_config_refusals(dir, cases);
    }
    {
        const fs::path dir = make_hf_case("Qwen3-4B-yarn", root);
        const hf::ConvertPlan plan = hf::plan_convert(hf::Checkpoint(dir.string()), hf::OutType::F16);
        EXPECT_EQ(*plan.kvs.get_string("qwen3.rope.scaling.type"), "yarn");
        EXPECT_EQ(*plan.kvs.find("qwen3.rope.scaling.factor")->as_double(), 4.0);
        EXPECT_EQ(plan.kvs.find("qwen3.rope.scaling.original_context_length")->as_int(), 32768);
        EXPECT_FALSE(plan.kvs.contains("qwen3.rope.scaling.yarn_beta_fast"));  // only the parameters given
        EXPECT_EQ(plan.tensors.front().name, "token_embd.weight");             // nothing computed
        const ConfigRefusal cases[] = {
            {"no original context", "\"original_max_position_embeddings\": 32768", "\"original_max\": 32768",
             ErrorKind::BadJson, "original_max_position_embeddings: missing from YaRN's rope parameters"},
        };
        expect_config_refusals(dir, cases);
    }
}

TEST(HfConvert, MapsOnlyTheTensorsOfTheArchitecture) {
    const auto root = temp_dir();
    const fs::path dir = make_hf_case("Qwen3-0.6B", root);
    std::string c = read_text((dir / "config.json").string());
    c.replace(c.find("Qwen3ForCausalLM"), 16, "Qwen2ForCausalLM");
    write_text(dir / "config.json", c);
    const FormatError e = format_error_of([&] {
        const hf::Checkpoint ck(dir.string());
        hf::plan_convert(ck, hf::OutType::Auto);
    });
    EXPECT_EQ(e.kind(), ErrorKind::Unsupported) << e.what();
    EXPECT_NE(std::string(e.what()).find("self_attn.k_norm.weight': cannot map the tensor name to GGUF (qwen2)"),
              std::string::npos)
        << e.what();
}

// Qwen3Model._is_qwen3_reranker: a reranker (named so, a README heading, a SequenceClassification
// architecture) is refused, as is a README the Python converter cannot decode; a model whose names
// only resemble one converts.
TEST(HfConvert, Qwen3RerankersAreRefusedAndOrdinaryModelsAreNot) {
    const auto root = temp_dir();
    const char* const kReranker = "a Qwen3 reranker";
    struct Case {
        const char* label;
        const char* dir;
        std::function<void(const fs::path&)> edit;
        const char* refusal;  // nullptr: converts
    };
    auto config_insert = [](const std::string& json) {
        return [json](const fs::path& d) {
            std::string c = read_text((d / "config.json").string());
            c.insert(1, json);
            write_text(d / "config.json", c);
        };
    };
    auto readme = [](const std::string& text) {
        return [text](const fs::path& d) { write_text(d / "README.md", text); };
    };
    const std::vector<Case> cases = {
        {"plain", "Qwen3-0.6B", [](const fs::path&) {}, nullptr},
        {"directory name", "Qwen3-Reranker-0.6B", [](const fs::path&) {}, kReranker},
        {"_name_or_path", "q", config_insert(R"("_name_or_path": "Qwen/QWEN3-RERANKER-4B",)"), kReranker},
        {"README heading", "q", readme("---\nlicense: apache-2.0\n---\n\n# Qwen3-Reranker-8B\n"), kReranker},
        {"README heading, Kelvin sign", "q", readme("# QWEN3-RERAN\u212AER\n"), kReranker},
        {"VL README heading", "q", readme("# Qwen3-VL-Reranker-2B\n"), kReranker},
        {"a classifier underneath", "q",
         [&](const fs::path& d) {
             config_insert(R"("text_config": {"architectures": ["Qwen3ForCausalLM"]},)")(d);
             std::string c = read_text((d / "config.json").string());
             c.replace(c.rfind("Qwen3ForCausalLM"), 16, "Qwen3ForSequenceClassification");
             write_text(d / "config.json", c);
         },
         kReranker},
        {"README not UTF-8", "q", readme("# Qwen3\xff\n"), "README.md: not UTF-8 at byte 7"},
        {"an embedding model", "Qwen3-Embedding-0.6B", readme("# Qwen3-Embedding-0.6B\nA qwen3-rerank-free model\n"),
         nullptr},
    };
    int i = 0;
    for (const Case& c : cases) {
        SCOPED_TRACE(c.label);
        const fs::path base = root / std::to_string(i++);
        fs::create_directories(base);
        const fs::path dir = base / c.dir;
        fs::rename(make_hf_case("Qwen3-0.6B", base), dir);
        c.edit(dir);
        std::string what;
        try {
            const hf::Checkpoint ck(dir.string());
            EXPECT_EQ(hf::plan_convert(ck, hf::OutType::Auto).arch, "qwen3");
        } catch (const FormatError& e) {
            what = e.what();
        }
        if (c.refusal)
            EXPECT_NE(what.find(c.refusal), std::string::npos) << what;
        else
            EXPECT_EQ(what, "");
    }
}

// Qwen2Model._try_set_pooling_type: a sentence-transformers Pooling module is refused; a
// modules.json without one changes nothing.
TEST(HfConvert, PoolingModulesAreRefused) {
    const auto root = temp_dir();
    const fs::path dir = make_hf_case("Qwen2.5-0.5B-Instruct", root);
    const hf::Checkpoint ck(dir.string());
    const hf::ConvertPlan before = hf::plan_convert(ck, hf::OutType::Auto);
    write_text(dir / "modules.json",
               R"([{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"}])");
    EXPECT_EQ(hf::plan_convert(ck, hf::OutType::Auto).kvs, before.kvs);
    write_text(dir / "modules.json",
               R"([{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
                   {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}])");
    const FormatError e = format_error_of([&] { hf::plan_convert(ck, hf::OutType::Auto); });
    EXPECT_EQ(e.kind(), ErrorKind::Unsupported) << e.what();
    EXPECT_NE(std::string(e.what()).find("sentence-transformers pooling"), std::string::npos) << e.what();
}

}  // namespace
