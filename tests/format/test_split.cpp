// Split models (gguf-split shards): names, the shard plan, byte-identity with llama-gguf-split's
// --split and --merge (tests/data/split/goldens.json, made by scripts/make-split-goldens with
// llama.cpp's own tool), --shard runs, and the checks open_model makes on a shard set.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "converters/edit/gguf_edit.h"
#include "converters/requant/requant.h"
#include "libformat/gguf/split.h"
#include "libformat/model.h"
#include "tests/support/helpers.h"
#include "tools/common/split_cli.h"

namespace oiw {
namespace {

namespace fs = std::filesystem;

std::string file_sha(const fs::path& p) { return test::sha256_hex(test::read_file(p.string())); }

using test::listing;

// llama-gguf-split's option string ("--split-max-size 1M --no-tensor-first-split").
SplitOptions split_from(const std::string& options) {
    std::istringstream in(options);
    SplitOptions o;
    for (std::string opt, value; in >> opt;) {
        if (opt == "--no-tensor-first-split")
            o.no_tensor_first_split = true;
        else if (in >> value; opt == "--split-max-size")
            o.max_bytes = parse_split_size(value);
        else if (opt == "--split-max-tensors")
            o.max_tensors = std::stoull(value);
    }
    return o;
}

const nlohmann::json& goldens() {
    static const nlohmann::json j = [] {
        std::ifstream f(test::data_path("split/goldens.json"));
        return nlohmann::json::parse(f);
    }();
    return j;
}

// Splits `input` into dir/out-*.gguf (requantized with `preset` when not empty), compares every
// shard with the golden, then merges from each shard in turn and compares with the golden merge.
void check_case(const nlohmann::json& c, const std::string& input) {
    SCOPED_TRACE(c.at("id").get<std::string>());
    const fs::path dir = test::temp_dir();
    const SplitOptions split = split_from(c.at("options"));
    const std::string out = (dir / "out.gguf").string();
    if (const std::string preset = c.at("preset"); !preset.empty()) {
        RequantOptions o;
        o.plan.preset = &find_preset(preset);
        o.split = split;
        requantize(input, out, o, 2);
    } else {
        write_edited(open_model(input), {}, out, split);
    }
    const auto& want = c.at("shards");
    ASSERT_EQ(listing(dir).size(), want.size());
    for (size_t k = 0; k < want.size(); ++k)
        EXPECT_EQ(
            file_sha(split_path((dir / "out").string(), static_cast<unsigned>(k), static_cast<unsigned>(want.size()))),
            want[k].get<std::string>())
            << "shard " << k + 1;
    for (unsigned k = 0; k < want.size(); ++k) {
        const Model m = open_model(split_path((dir / "out").string(), k, static_cast<unsigned>(want.size())));
        ASSERT_EQ(m.shards().size(), want.size());
        const fs::path merged = dir / "merged" / std::to_string(k);
        fs::create_directories(merged);
        write_edited(m, {}, (merged / "m.gguf").string());
        EXPECT_EQ(file_sha(merged / "m.gguf"), c.at("merged").get<std::string>()) << "merged from shard " << k + 1;
    }
}

TEST(GgufSplit, NamesLikeLlamaSplitPath) {
    EXPECT_EQ(split_path("out", 0, 3), "out-00001-of-00003.gguf");
    EXPECT_EQ(split_path("/a/b", 41, 64), "/a/b-00042-of-00064.gguf");
    EXPECT_EQ(split_prefix_of("x/model.gguf"), "x/model");
    EXPECT_EQ(split_prefix_of("x/model"), "x/model");
    EXPECT_EQ(split_prefix_of(".gguf"), ".gguf");
    EXPECT_EQ(split_prefix("m-00002-of-00003.gguf", 1, 3), "m");
    EXPECT_EQ(split_prefix("m-00002-of-00003.gguf", 0, 3), std::nullopt);
    EXPECT_EQ(split_prefix("-00002-of-00003.gguf", 1, 3), std::nullopt);
}

TEST(GgufSplit, ParsesSizesAndShardsStrictly) {
    EXPECT_EQ(parse_split_size("4G"), 4000000000u);
    EXPECT_EQ(parse_split_size("500M"), 500000000u);
    EXPECT_EQ(parse_split_size("3K"), 3000u);
    EXPECT_EQ(parse_split_size("2T"), 2000000000000u);
    EXPECT_EQ(parse_split_size("12345"), 12345u);
    for (const char* bad : {"0", "0G", "-1G", "1.5G", "G", "4g", "4GB", "", "99999999999T"}) {
        SCOPED_TRACE(bad);
        EXPECT_THROW(parse_split_size(bad), FormatError);
    }
    SplitOptions o;
    parse_shard("2/3", o);
    EXPECT_EQ(o.shard, 2u);
    EXPECT_EQ(o.shards, 3u);
    for (const char* bad : {"0/3", "4/3", "3", "1/", "/3", "a/b", "1/3x", "1/65536", "-1/3"}) {
        SCOPED_TRACE(bad);
        EXPECT_THROW(parse_shard(bad, o), FormatError);
    }
}

TEST(GgufSplit, PlanCountsPaddedBytesAndNeverMakesAnEmptyShard) {
    auto t = [](int64_t n) {
        return make_tensor_info("t" + std::to_string(n), GgmlType::F32, std::vector<int64_t>{n});
    };
    const std::vector<GgufTensorInfo> ts = {t(100), t(1), t(7), t(300)};  // 400->416, 4->32, 28->32, 1200->1216 bytes
    SplitOptions o;
    o.max_bytes = 480;  // 416 + 32 + 32 fit exactly
    auto r = plan_split(ts, o);
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0].end, 3u);
    EXPECT_EQ(r[1].begin, 3u);
    o.max_bytes = 479;  // one byte less: the third tensor moves on
    EXPECT_EQ(plan_split(ts, o)[1].begin, 2u);
    o.max_bytes = 10;  // every tensor is too big: one per shard, none empty
    EXPECT_EQ(plan_split(ts, o).size(), 4u);
    o.no_tensor_first_split = true;
    r = plan_split(ts, o);
    ASSERT_EQ(r.size(), 5u);
    EXPECT_EQ(r[0].begin, r[0].end);
    o = {};
    o.max_tensors = 3;
    r = plan_split(ts, o);
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[1].begin, 3u);
    EXPECT_EQ(r[1].end, 4u);
}

TEST(GgufSplit, SplitAndMergeMatchLlamaGgufSplit) {
    size_t n = 0;
    for (const auto& c : goldens().at("cases"))
        if (!c.at("shared").get<bool>()) {
            check_case(c, test::data_path(c.at("input")));
            ++n;
        }
    EXPECT_EQ(n, 6u);
}

// The split model of golden case `id`, written into `dir` (in-0000K-of-0000N.gguf); returns shard 2's path.
std::string split_case_input(const std::string& id, const fs::path& dir) {
    const auto& cases = goldens().at("cases");
    const auto& c = *std::find_if(cases.begin(), cases.end(), [&](const auto& x) { return x.at("id") == id; });
    write_edited(open_model(test::data_path(c.at("input"))), {}, (dir / "in.gguf").string(),
                 split_from(c.at("options")));
    return split_path((dir / "in").string(), 1, static_cast<unsigned>(c.at("shards").size()));
}

// gguf-requant from a middle shard writes what llama-quantize writes from the split model.
TEST(GgufSplit, RequantFromASplitModelMatchesLlamaQuantize) {
    const auto& g = goldens().at("requant_from_split");
    const fs::path dir = test::temp_dir();
    RequantOptions o;
    o.plan.preset = &find_preset(g.at("preset").get<std::string>());
    requantize(split_case_input(g.at("case"), dir), (dir / "q.gguf").string(), o, 2);
    EXPECT_EQ(file_sha(dir / "q.gguf"), g.at("sha256").get<std::string>());
}

// --keep-split writes llama-quantize --keep-split's shards (also shard by shard), and from one
// file its single shard named -00001-of-00001 without split keys.
TEST(GgufSplit, KeepSplitMatchesLlamaQuantize) {
    for (const auto& g : goldens().at("keep_split")) {
        SCOPED_TRACE(g.dump());
        const fs::path dir = test::temp_dir(), out = dir / "out";
        fs::create_directories(out);
        const std::string in =
            g.contains("case") ? split_case_input(g.at("case"), dir) : test::data_path(g.at("input"));
        const auto& want = g.at("shards");
        const auto n = static_cast<unsigned>(want.size());
        RequantOptions o;
        o.plan.preset = &find_preset(g.at("preset").get<std::string>());
        o.keep_split = true;
        for (unsigned k = n; k >= 1; --k) {  // one shard per run, last first
            o.split.shard = k;
            o.split.shards = n;
            requantize(in, (out / "q.gguf").string(), o, 2);
        }
        ASSERT_EQ(listing(out).size(), n);
        for (unsigned k = 0; k < n; ++k)
            EXPECT_EQ(file_sha(split_path((out / "q").string(), k, n)), want[k].get<std::string>()) << k;
    }
    RequantOptions o;
    o.plan.preset = &find_preset("Q8_0");
    o.keep_split = true;
    o.split.max_tensors = 3;
    EXPECT_THROW(
        requantize(test::data_path("models/mini-llama-f16.gguf"), (test::temp_dir() / "q.gguf").string(), o, 1),
        FormatError);
}

TEST(GgufSplit, SplitAndMergeMatchLlamaGgufSplitOnFixtures) {
    OIW_NEED_SHARED("fixtures");
    for (const auto& c : goldens().at("cases"))
        if (c.at("shared").get<bool>()) check_case(c, test::shared_path(c.at("input")));
}

// --shard K/N, run for every K, writes exactly the shards of one run; a wrong N is refused.
TEST(GgufSplit, ShardRunsMakeTheSameSetAsOneRun) {
    const std::string in = test::data_path("models/mini-moe-f16.gguf");
    const fs::path one = test::temp_dir(), each = test::temp_dir();
    RequantOptions o;
    o.plan.preset = &find_preset("Q4_0");
    o.split.max_bytes = 700000;
    requantize(in, (one / "q.gguf").string(), o, 2);
    const auto names = listing(one);
    ASSERT_GE(names.size(), 3u);
    o.split.shards = static_cast<unsigned>(names.size());
    for (unsigned k = 1; k <= names.size(); ++k) {
        o.split.shard = k;
        requantize(in, (each / "q.gguf").string(), o, 1);
        EXPECT_EQ(listing(each).size(), k);
    }
    ASSERT_EQ(listing(each), names);
    for (const auto& f : names)
        EXPECT_EQ(test::read_file((one / f).string()), test::read_file((each / f).string())) << f;
    o.split.shard = 1;
    o.split.shards = static_cast<unsigned>(names.size()) + 1;
    try {
        requantize(in, (test::temp_dir() / "q.gguf").string(), o, 1);
        ADD_FAILURE() << "wrong shard count accepted";
    } catch (const FormatError& e) {
        EXPECT_NE(std::string(e.what()).find(fmt::format("makes {} shards, not {}", names.size(), names.size() + 1)),
                  std::string::npos)
            << e.what();
    }
}

// A 4-tensor F32 model (t0..t3, 64 weights each) written through GgufOutput with `split`;
// tensor `nan_at` (when in range) holds a NaN.
void write_f32_model(const std::string& path, int nan_at, const SplitOptions& split = {}) {
    GgufOutput w(path, split);
    std::vector<float> good(64, 1.0f), bad(64, 1.0f);
    bad[5] = std::nanf("");
    for (int i = 0; i < 4; ++i) w.add_tensor("t" + std::to_string(i), GgmlType::F32, std::vector<int64_t>{64});
    for (int i = 0; i < 4; ++i)
        w.write_tensor_data({reinterpret_cast<const uint8_t*>((i == nan_at ? bad : good).data()), 64 * sizeof(float)});
    w.finish();
}

using test::dir_snapshot;

// A conversion that fails in a middle shard (a NaN weight in shard 3 of 4, once split by
// --split-max-tensors and once by --keep-split) leaves the existing set of the same name as it
// was (same inodes, same bytes) and no other file: shards 1 and 2 were complete but are never
// renamed. With the unnamed and with the named temp file.
TEST(GgufSplit, FailedRunLeavesTheOldSetAsItWas) {
    const fs::path dir = test::temp_dir();
    SplitOptions per_tensor;
    per_tensor.max_tensors = 1;
    const std::string good = (dir / "good.gguf").string(), bad = (dir / "bad.gguf").string();
    write_f32_model(good, -1);
    write_f32_model(bad, 2);
    fs::create_directories(dir / "good-split");
    fs::create_directories(dir / "bad-split");
    write_f32_model((dir / "good-split" / "m.gguf").string(), -1, per_tensor);
    write_f32_model((dir / "bad-split" / "m.gguf").string(), 2, per_tensor);
    struct Unset {
        ~Unset() { ::unsetenv("OIW_ATOMIC_NO_TMPFILE"); }
    } unset;
    for (const bool named : {false, true}) {
        if (named) ::setenv("OIW_ATOMIC_NO_TMPFILE", "1", 1);
        for (const bool keep : {false, true}) {
            SCOPED_TRACE(fmt::format("{} temp file, {}", named ? "named" : "unnamed",
                                     keep ? "--keep-split" : "--split-max-tensors 1"));
            RequantOptions o;
            o.plan.preset = &find_preset("F16");
            o.split.max_tensors = keep ? 0 : 1;
            o.keep_split = keep;
            const std::string good_in = keep ? split_path((dir / "good-split" / "m").string(), 0, 4) : good;
            const std::string bad_in = keep ? split_path((dir / "bad-split" / "m").string(), 1, 4) : bad;
            const fs::path out = test::temp_dir();
            requantize(good_in, (out / "q.gguf").string(), o, 1);
            const auto before = dir_snapshot(out);
            ASSERT_EQ(before.size(), 4u);
            EXPECT_TRUE(before.contains("q-00004-of-00004.gguf"));
            try {
                requantize(bad_in, (out / "q.gguf").string(), o, 1);
                ADD_FAILURE() << "NaN weight accepted";
            } catch (const FormatError& e) {
                EXPECT_NE(std::string(e.what()).find("'t2'"), std::string::npos) << e.what();
            }
            EXPECT_TRUE(dir_snapshot(out) == before) << fmt::format("{}", fmt::join(listing(out), " "));
            const fs::path empty = test::temp_dir();
            EXPECT_THROW(requantize(bad_in, (empty / "q.gguf").string(), o, 1), FormatError);
            EXPECT_TRUE(listing(empty).empty());
        }
    }
}

// A rename that fails (injected: OIW_ATOMIC_FAIL_RENAME=K fails the K-th of publish_all) after
// others succeeded names the shards replaced and those not; as the first, it replaces none.
TEST(GgufSplit, FailedRenameSaysWhichShardsWereReplaced) {
    const fs::path dir = test::temp_dir();
    const std::string in = (dir / "in.gguf").string();
    write_f32_model(in, -1);
    const Model m = open_model(in);
    SplitOptions split;
    split.max_tensors = 1;
    const auto edit = [&](const std::string& out) { write_edited(m, {}, out, split); };
    const fs::path out = test::temp_dir();
    const std::string q = (out / "q.gguf").string();
    edit(q);
    const auto old = dir_snapshot(out);
    ASSERT_EQ(old.size(), 4u);
    struct Unset {
        ~Unset() { ::unsetenv("OIW_ATOMIC_FAIL_RENAME"); }
    } unset;
    ::setenv("OIW_ATOMIC_FAIL_RENAME", "1", 1);
    EXPECT_THROW(edit(q), FormatError);
    EXPECT_TRUE(dir_snapshot(out) == old);
    ::setenv("OIW_ATOMIC_FAIL_RENAME", "3", 1);
    std::string msg;
    try {
        edit(q);
    } catch (const FormatError& err) {
        msg = err.what();
    }
    EXPECT_EQ(
        msg,
        fmt::format("{}: {}: rename failed: Input/output error; shards 1-2 of 4 replaced by this run, shards 3-4 not: "
                    "the set is mixed, rerun the conversion",
                    q, split_path((out / "q").string(), 2, 4)));
    const auto now = dir_snapshot(out);
    ASSERT_EQ(now.size(), 4u);
    for (unsigned k = 0; k < 4; ++k) {
        const std::string f = fs::path(split_path("q", k, 4)).filename().string();
        EXPECT_EQ(now.at(f).inode != old.at(f).inode, k < 2) << f;  // replaced: a new inode
        EXPECT_EQ(now.at(f).bytes, old.at(f).bytes) << f;           // same conversion, same bytes
    }
}

// Writes shard k of n of a made-up split model into `dir` with the given keys and tensors.
void write_shard(const fs::path& dir, unsigned k, unsigned n, const Metadata& kvs,
                 const std::vector<std::string>& tensors, const std::string& prefix = "m") {
    GgufWriter w(split_path((dir / prefix).string(), k, n));
    w.set_kvs(kvs);
    for (const auto& t : tensors) w.add_tensor(t, GgmlType::F32, std::vector<int64_t>{8});
    const std::vector<uint8_t> zeros(32);
    for (size_t i = 0; i < tensors.size(); ++i) w.write_tensor_data(zeros);
    w.finish();
}

FormatError open_error(const std::string& path) {
    try {
        open_model(path);
    } catch (const FormatError& e) {
        return e;
    }
    return FormatError(ErrorKind::Io, "", "", "(no error)");
}

TEST(GgufSplit, OpenModelSeesOneModelFromAnyShard) {
    const fs::path dir = test::temp_dir();
    Metadata model({{"general.architecture", GgufValue::make_string("llama")}});
    const std::vector<std::vector<std::string>> t = {{"a", "b"}, {"c"}, {"d", "e"}};
    for (unsigned k = 0; k < 3; ++k) write_shard(dir, k, 3, shard_kvs(model, k, 3, 5), t[k]);
    for (unsigned k = 0; k < 3; ++k) {
        const Model m = open_model(split_path((dir / "m").string(), k, 3));
        EXPECT_TRUE(m.is_split());
        EXPECT_EQ(m.path(), split_path((dir / "m").string(), 0, 3));
        EXPECT_TRUE(m.metadata() == model);  // split keys are not the model's
        EXPECT_EQ(m.shards().front().metadata().size(), 4u);
        ASSERT_EQ(m.tensors().size(), 5u);
        EXPECT_EQ(m.find_tensor("d"), 3);
        EXPECT_EQ(m.shard_of(3), 2u);
        EXPECT_EQ(m.tensor_file(2), split_path((dir / "m").string(), 1, 3));
        EXPECT_EQ(m.tensor_data(4).size(), 32u);
        EXPECT_EQ(m.files().size(), 3u);
    }
}

TEST(GgufSplit, OpenModelRefusesBrokenSetsNamingTheShard) {
    Metadata model({{"general.architecture", GgufValue::make_string("llama")}});
    const std::vector<std::vector<std::string>> t = {{"a", "b"}, {"c"}, {"d", "e"}};
    auto make = [&](auto&& tweak) {
        const fs::path dir = test::temp_dir();
        for (unsigned k = 0; k < 3; ++k) {
            Metadata kvs = shard_kvs(model, k, 3, 5);
            std::vector<std::string> names = t[k];
            tweak(k, kvs, names);
            write_shard(dir, k, 3, kvs, names);
        }
        return dir;
    };
    auto shard = [](const fs::path& dir, unsigned k) { return split_path((dir / "m").string(), k, 3); };
    struct Case {
        const char* name;
        std::function<void(unsigned, Metadata&, std::vector<std::string>&)> tweak;
        ErrorKind kind;
        unsigned bad_shard;  // the shard the message names
        const char* says;
    };
    const std::vector<Case> cases = {
        {"duplicate tensor",
         [](unsigned k, Metadata&, std::vector<std::string>& n) {
             if (k == 2) n[1] = "a";
         },
         ErrorKind::DuplicateTensor, 2, "also in shard 1 of 3"},
        {"another split's count",
         [](unsigned k, Metadata& kv, std::vector<std::string>&) {
             if (k == 1) kv.set({"split.count", GgufValue::make_scalar<uint16_t>(GgufType::U16, 4)});
         },
         ErrorKind::BadSplit, 1, "is 4, expected 3"},
        {"another split's tensor count",
         [](unsigned k, Metadata& kv, std::vector<std::string>&) {
             if (k == 2) kv.set({"split.tensors.count", GgufValue::make_scalar<int32_t>(GgufType::I32, 6)});
         },
         ErrorKind::BadSplit, 2, "is 6, expected 5"},
        {"wrong split.no",
         [](unsigned k, Metadata& kv, std::vector<std::string>&) {
             if (k == 1) kv.set({"split.no", GgufValue::make_scalar<uint16_t>(GgufType::U16, 2)});
         },
         ErrorKind::BadSplit, 1, "is 2, expected 1"},
        {"missing tensors",
         [](unsigned k, Metadata&, std::vector<std::string>& n) {
             if (k == 2) n.pop_back();
         },
         ErrorKind::BadSplit, 0, "the 3 shards hold 4 tensors"},
        {"split key of the wrong type",
         [](unsigned k, Metadata& kv, std::vector<std::string>&) {
             if (k == 1) kv.set({"split.count", GgufValue::make_scalar<uint32_t>(GgufType::U32, 3)});
         },
         ErrorKind::BadKey, 1, "is u32, must be u16"},
        {"split keys missing",
         [](unsigned k, Metadata& kv, std::vector<std::string>&) {
             if (k == 2) kv.erase("split.no");
         },
         ErrorKind::BadSplit, 2, "missing"},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.name);
        const fs::path dir = make(c.tweak);
        const FormatError e = open_error(shard(dir, 0));
        EXPECT_EQ(e.kind(), c.kind) << e.what();
        EXPECT_EQ(e.file(), shard(dir, c.bad_shard)) << e.what();
        EXPECT_NE(std::string(e.what()).find(c.says), std::string::npos) << e.what();
    }
    // A missing shard, named.
    const fs::path dir = make([](unsigned, Metadata&, std::vector<std::string>&) {});
    fs::remove(shard(dir, 1));
    FormatError e = open_error(shard(dir, 2));
    EXPECT_EQ(e.kind(), ErrorKind::BadSplit);
    EXPECT_EQ(e.file(), shard(dir, 1));
    EXPECT_NE(std::string(e.what()).find("missing: shard 2 of 3"), std::string::npos) << e.what();
    // A shard renamed: the others cannot be found.
    fs::rename(shard(dir, 2), dir / "renamed.gguf");
    e = open_error((dir / "renamed.gguf").string());
    EXPECT_EQ(e.kind(), ErrorKind::BadSplit);
    EXPECT_NE(std::string(e.what()).find("does not end in '-00003-of-00003.gguf'"), std::string::npos) << e.what();
}

}  // namespace
}  // namespace oiw
