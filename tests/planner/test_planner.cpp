// gguf-plan: the knapsack solver against brute force, budgets, pins and ties, the plan file, and
// the quality point (a plan at a preset's exact file size has a lower error than the preset).
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "converters/planner/errtable.h"
#include "converters/planner/planner.h"
#include "converters/planner/solve.h"
#include "inspect/profile.h"
#include "libformat/pattern.h"
#include "tests/support/helpers.h"

namespace oiw {
namespace {
using namespace test;

double brute_force(const std::vector<KnapsackItem>& items, uint64_t budget) {
    double best = std::numeric_limits<double>::infinity();
    std::vector<size_t> c(items.size(), 0);
    while (true) {
        uint64_t cost = 0;
        double v = 0;
        for (size_t i = 0; i < items.size(); ++i) cost += items[i][c[i]].cost, v += items[i][c[i]].value;
        if (cost <= budget) best = std::min(best, v);
        size_t i = 0;
        while (i < items.size() && ++c[i] == items[i].size()) c[i++] = 0;
        if (i == items.size()) return best;
    }
}

TEST(PlannerSolve, ExactAgainstBruteForceOnRandomInstances) {
    std::mt19937_64 rng(12);
    for (int round = 0; round < 300; ++round) {
        std::vector<KnapsackItem> items(1 + rng() % 6);
        uint64_t lo = 0, hi = 0;
        for (auto& item : items) {
            item.resize(1 + rng() % 4);
            uint64_t a = UINT64_MAX, b = 0;
            for (auto& c : item) {
                c.cost = 1 + rng() % 60;
                c.value = static_cast<double>(rng() % 1000) / 100;
                a = std::min(a, c.cost), b = std::max(b, c.cost);
            }
            lo += a, hi += b;
        }
        const uint64_t budget = lo + rng() % (hi - lo + 1);
        const KnapsackResult r = solve_knapsack(items, budget);
        ASSERT_EQ(r.unit, 1u);
        EXPECT_LE(r.cost, budget);
        EXPECT_DOUBLE_EQ(r.value, brute_force(items, budget)) << "round " << round;
        uint64_t cost = 0;
        for (size_t i = 0; i < items.size(); ++i) cost += items[i][r.choice[i]].cost;
        EXPECT_EQ(cost, r.cost);
        EXPECT_LE(r.lower_bound, r.value + 1e-12);
    }
}

// With a grid unit > 1 (gguf-plan's file-size budgets use the data alignment) and budgets that
// are mostly not multiples of it: with costs multiples of the unit the result is still exact, and
// with any costs it never exceeds the budget (the budget is rounded down to the grid, never up).
TEST(PlannerSolve, GridUnitAboveOneNeverExceedsAnUnalignedBudget) {
    std::mt19937_64 rng(21);
    int unaligned = 0;
    for (int round = 0; round < 600; ++round) {
        const uint64_t unit = std::array<uint64_t, 3>{2, 7, 32}[round % 3];
        const bool aligned_costs = round % 2 == 0;
        std::vector<KnapsackItem> items(1 + rng() % 6);
        uint64_t lo = 0, hi = 0;
        for (auto& item : items) {
            item.resize(1 + rng() % 4);
            uint64_t a = UINT64_MAX, b = 0;
            for (auto& c : item) {
                c.cost = aligned_costs ? unit * (1 + rng() % 12) : 1 + rng() % (12 * unit);
                c.value = static_cast<double>(rng() % 1000) / 100;
                a = std::min(a, c.cost), b = std::max(b, c.cost);
            }
            lo += a, hi += b;
        }
        const uint64_t budget = lo + rng() % (hi - lo + 1);
        unaligned += (budget - lo) % unit != 0;
        const KnapsackResult r = solve_knapsack(items, budget, unit);
        ASSERT_EQ(r.unit, unit);
        uint64_t cost = 0;
        for (size_t i = 0; i < items.size(); ++i) cost += items[i][r.choice[i]].cost;
        EXPECT_EQ(cost, r.cost);
        EXPECT_LE(r.cost, budget) << "round " << round << " unit " << unit;
        const double best = brute_force(items, budget);
        if (aligned_costs)
            EXPECT_DOUBLE_EQ(r.value, best) << "round " << round << " unit " << unit;
        else
            EXPECT_GE(r.value, best - 1e-9) << "round " << round;  // sums in another order
    }
    EXPECT_GT(unaligned, 400);  // the sweep is mostly budgets off the grid
}

// One instance worked by hand: unit 32, base cost 32 per item, budget 64 + 63. The extra room is
// 63 bytes = 1 cell (63 / 32 rounded down): one item may step up by 32 bytes, not two (that
// would cost 128 > 127).
TEST(PlannerSolve, BudgetIsRoundedDownToTheGrid) {
    const std::vector<KnapsackItem> items(2, KnapsackItem{{32, 5}, {64, 1}});
    const KnapsackResult r = solve_knapsack(items, 127, 32);
    EXPECT_EQ(r.unit, 32u);
    EXPECT_EQ(r.cost, 96u);
    EXPECT_DOUBLE_EQ(r.value, 6);
    EXPECT_EQ(solve_knapsack(items, 128, 32).cost, 128u);
    EXPECT_EQ(solve_knapsack(items, 95, 32).cost, 64u);
}

// Past kMaxDpCells the Lagrangian path: 20,000 identical items tie at the critical lambda, and
// the in-order fill upgrades exactly as many as fit (here the optimum).
TEST(PlannerSolve, ManyItemsTakeTheLagrangianSolutionWithinTheBudget) {
    const std::vector<KnapsackItem> items(20000, KnapsackItem{{100, 10}, {200, 1}});
    const uint64_t budget = 20000 * 100 + 5000 * 100 + 99;
    const KnapsackResult r = solve_knapsack(items, budget);
    EXPECT_EQ(r.unit, 0u);  // the DP table would be 20000 x ~500k cells
    EXPECT_EQ(r.cost, 20000u * 100 + 5000 * 100);
    EXPECT_DOUBLE_EQ(r.value, 20000 * 10 - 5000 * 9);
    // The LP relaxation also spends the 99 spare bytes, at 9/100 value per byte.
    EXPECT_NEAR(r.lower_bound, r.value - 99 * 0.09, 1e-6 * r.value);
    EXPECT_EQ(std::count(r.choice.begin(), r.choice.end(), 1u), 5000);
    EXPECT_EQ(std::count(r.choice.begin(), r.choice.begin() + 5000, 1u), 5000);  // in item order
    EXPECT_LE(solve_knapsack(items, budget + 1000).value, r.value);              // more budget, no worse
}

// The grid step (solve.h): the largest multiple of min_unit with n * step <= 0.1% of the cheapest
// total, at least min_unit. Two items of cheapest cost 100,000: 200,000 / 1000 / 2 = 100.
TEST(PlannerSolve, GridStepIsAMultipleOfTheMinimumUnit) {
    const std::vector<KnapsackItem> items(2, KnapsackItem{{100000, 2}, {100000 + 32 * 40, 1}});
    EXPECT_EQ(solve_knapsack(items, 300000, 1).unit, 100u);
    EXPECT_EQ(solve_knapsack(items, 300000, 32).unit, 96u);
    EXPECT_EQ(solve_knapsack(items, 300000, 128).unit, 128u);
}

TEST(PlannerSolve, LagrangianBoundIsTightOnAConvexInstance) {
    // Two identical items, values on a line: the relaxation's optimum is the integer optimum.
    const std::vector<KnapsackItem> items(2, KnapsackItem{{10, 4}, {20, 2}, {30, 0}});
    const KnapsackResult r = solve_knapsack(items, 40);
    EXPECT_DOUBLE_EQ(r.value, 4);
    EXPECT_NEAR(r.lower_bound, 4, 1e-9);
}

TEST(PlannerSolve, ImpossibleBudgetIsAUsageError) {
    const std::vector<KnapsackItem> items(2, KnapsackItem{{10, 1}, {20, 0}});
    EXPECT_THROW(solve_knapsack(items, 19), FormatError);
    EXPECT_EQ(solve_knapsack(items, 20).cost, 20u);
}

struct Mini {
    std::string model, imatrix;
};
const Mini kLlama{"models/mini-llama-f16.gguf", "models/mini-llama.imatrix.gguf"};
const Mini kMoe{"models/mini-moe-f16.gguf", "models/mini-moe.imatrix.gguf"};

// tests/data paths, or ../shared ones ("shared:fixtures/..."); "" stays "".
std::string path_of(const std::string& rel) {
    if (rel.empty()) return "";
    return rel.rfind("shared:", 0) == 0 ? shared_path(rel.substr(7)) : data_path(rel);
}

const PlanTable& table_of(const Mini& m) {
    static std::map<std::string, PlanTable> cache;
    auto it = cache.find(m.model);
    if (it == cache.end())
        it = cache.emplace(m.model, measure_plan(open_model(path_of(m.model)), {}, path_of(m.imatrix))).first;
    return it->second;
}

RequantJob preset_job(const Mini& m, const std::string& preset) {
    RequantOptions ro;
    ro.plan.preset = &find_preset(preset);
    ro.plan.has_imatrix = !m.imatrix.empty();
    ro.imatrix_path = path_of(m.imatrix);
    ro.dry_run = true;
    return prepare_requant(open_model(path_of(m.model)), ro);
}

TEST(Planner, LargerBudgetNeverGivesLargerErrorAndNeverExceedsIt) {
    const PlanTable& t = table_of(kLlama);
    const uint64_t lo = preset_job(kLlama, "Q2_K").file_size, hi = preset_job(kLlama, "Q8_0").file_size;
    double last = std::numeric_limits<double>::infinity();
    for (uint64_t b = lo; b <= hi; b += (hi - lo) / 40) {
        const PlanResult r = choose_plan(t, {{BudgetKind::FileSize, static_cast<double>(b)}, {}, {}, {}, {}});
        EXPECT_LE(r.file_size, b);
        EXPECT_LE(r.error, last) << b;
        EXPECT_LE(r.lower_bound, r.error + 1e-12);
        last = r.error;
    }
}

// File-size budgets that are not a whole number of grid units above the fixed part of the file
// (file sizes move in steps of the 32-byte alignment): the plan's predicted size, and the size
// gguf-requant's dry run computes for executing that plan, never exceed the budget. 300
// budgets between the Q2_K and Q8_0 file sizes, each 1..31 bytes past a size a plan can have.
TEST(Planner, UnalignedFileSizeBudgetsAreNeverExceeded) {
    const PlanTable& t = table_of(kLlama);
    ASSERT_EQ(t.alignment, 32u);
    const Model in = open_model(path_of(kLlama.model));
    const uint64_t lo = preset_job(kLlama, "Q2_K").file_size, hi = preset_job(kLlama, "Q8_0").file_size;
    const int n = 300;
    int tight = 0, dry_runs = 0;
    for (int k = 0; k < n; ++k) {
        const uint64_t above = (hi - lo) * static_cast<uint64_t>(k) / n + lo - t.fixed_file_bytes;
        const uint64_t b = t.fixed_file_bytes + above / 32 * 32 + 1 + static_cast<uint64_t>(k % 31);
        const PlanResult r = choose_plan(t, {{BudgetKind::FileSize, static_cast<double>(b)}, {}, {}, {}, {}});
        ASSERT_GT(r.grid_unit, 1u);
        ASSERT_LE(r.file_size, b) << "budget " << b << " (" << k << " of the sweep)";
        const bool is_tight = b - r.file_size < r.grid_unit;
        tight += is_tight;
        if (!is_tight && k % 100 != 0) continue;
        RequantOptions ro = requant_options_for(plan_file_of(t, r), path_of(kLlama.imatrix));
        ro.dry_run = true;
        EXPECT_EQ(prepare_requant(in, ro).file_size, r.file_size) << "budget " << b;
        ++dry_runs;
    }
    EXPECT_GT(tight, 0);  // some plans fill their budget to within a grid unit
    fmt::print("{} unaligned budgets, {} plans within a grid unit of theirs, {} dry runs\n", n, tight, dry_runs);
}

TEST(Planner, BpwAndBytesPerTokenBudgetsHold) {
    const PlanTable& t = table_of(kMoe);
    const PlanResult a = choose_plan(t, {{BudgetKind::Bpw, 4.5}, {}, {}, {}, {}});
    EXPECT_LE(a.bpw, 4.5);
    EXPECT_GT(a.bpw, 4.3);
    const PlanResult b = choose_plan(t, {{BudgetKind::BytesPerToken, 700000}, {}, {}, {}, {}});
    EXPECT_LE(b.bytes_per_token, 700000u);
    EXPECT_GT(b.bytes_per_token, 650000u);
}

TEST(Planner, ImpossibleBudgetIsAUsageError) {
    EXPECT_THROW(choose_plan(table_of(kLlama), {{BudgetKind::FileSize, 100000}, {}, {}, {}, {}}), FormatError);
}

// attn_q and attn_v of a layer, by name part, -> their types.
std::map<int, std::pair<GgmlType, GgmlType>> q_and_v(const PlanTable& t, const PlanResult& r) {
    std::map<int, std::pair<GgmlType, GgmlType>> m;
    for (size_t i = 0; i < t.tensors.size(); ++i) {
        const std::string& n = t.tensors[i].name;
        if (n.find("attn_q") != std::string::npos) m[t.tensors[i].layer].first = r.type[i];
        if (n.find("attn_v") != std::string::npos) m[t.tensors[i].layer].second = r.type[i];
    }
    return m;
}

TEST(Planner, PinsAndTiesAreRespected) {
    const PlanTable& t = table_of(kLlama);
    ChooseOptions o{{BudgetKind::Bpw, 4.0}, {}, {{"ffn_gate", GgmlType::Q8_0}}, {}, {}};
    // Unconstrained, attn_v (gain 2) gets more bits than attn_q: the tie below changes the plan.
    const auto free = q_and_v(t, choose_plan(t, o));
    ASSERT_NE(free.at(0).first, free.at(0).second);
    o.ties = {"attn_(q|v)"};
    const PlanResult r = choose_plan(t, o);
    for (const auto& [layer, qv] : q_and_v(t, r)) EXPECT_EQ(qv.first, qv.second) << layer;
    int n_pinned = 0;
    for (size_t i = 0; i < t.tensors.size(); ++i)
        if (t.tensors[i].name.find("ffn_gate") != std::string::npos) {
            EXPECT_EQ(r.type[i], GgmlType::Q8_0);
            ++n_pinned;
        }
    EXPECT_EQ(n_pinned, 2);
    EXPECT_LE(r.bpw, 4.0);
    // A pin the row length does not allow is refused (ffn_down rows are 320 long).
    EXPECT_THROW(choose_plan(t, {{BudgetKind::Bpw, 8}, {}, {{"ffn_down", GgmlType::Q4_K}}, {}, {}}), FormatError);
}

TEST(Planner, GainsFileOverridesTheDefaults) {
    const auto dir = temp_dir();
    const std::string path = (dir / "g.txt").string();
    std::ofstream(path) << "# more weight on attn_q\n  attn_q = 50\n\nffn_up=0.5\n";
    const auto gains = read_gains_file(path);
    ASSERT_EQ(gains.size(), 2u);
    EXPECT_EQ(gains[0].pattern, "attn_q");
    EXPECT_EQ(gains[0].gain, 50);
    EXPECT_EQ(gains[1].gain, 0.5);
    const PlanTable& t = table_of(kLlama);
    const PlanResult base = choose_plan(t, {{BudgetKind::Bpw, 4.0}, {}, {}, {}, {}});
    ChooseOptions o{{BudgetKind::Bpw, 4.0}, gains, {}, {}, {}};
    const PlanResult r = choose_plan(t, o);
    for (size_t i = 0; i < t.tensors.size(); ++i)
        if (t.tensors[i].name.find("attn_q") != std::string::npos) {
            EXPECT_EQ(r.gain[i], 50);
            EXPECT_GT(traits(r.type[i]).type_size * 1.0 / traits(r.type[i]).block_size,
                      traits(base.type[i]).type_size * 1.0 / traits(base.type[i]).block_size);
        }
    std::ofstream(path) << "attn_q=-1\n";
    EXPECT_THROW(read_gains_file(path), FormatError);
    std::ofstream(path) << "attn_q=\n";
    EXPECT_THROW(read_gains_file(path), FormatError);
    std::ofstream(path) << "attn_q\n";
    EXPECT_THROW(read_gains_file(path), FormatError);
    std::filesystem::remove_all(dir);
}

TEST(Planner, PlanFileRoundTripsAndRejectsUnanchoredLines) {
    const PlanTable& t = table_of(kLlama);
    const PlanResult r = choose_plan(t, {{BudgetKind::Bpw, 5}, {}, {}, {}, {}});
    const auto dir = temp_dir();
    const std::string path = (dir / "a.plan").string();
    std::ofstream(path) << format_plan_file(t, r);
    const PlanFile f = read_plan_file(path);
    const PlanFile g = plan_file_of(t, r);
    EXPECT_EQ(f.names, g.names);
    EXPECT_EQ(f.predicted_size, r.file_size);
    EXPECT_EQ(f.preset, g.preset);
    ASSERT_EQ(f.rules.size(), t.tensors.size());
    EXPECT_EQ(f.rules[0].pattern, "^output\\.weight$");
    std::vector<std::pair<std::string, GgmlType>> types;
    for (size_t i = 0; i < t.tensors.size(); ++i) types.emplace_back(t.tensors[i].name, r.type[i]);
    EXPECT_EQ(plan_mismatch(f, types, r.file_size), "");
    EXPECT_NE(plan_mismatch(f, types, r.file_size + 32), "");
    types[3].second = types[3].second == GgmlType::Q8_0 ? GgmlType::Q6_K : GgmlType::Q8_0;
    EXPECT_NE(plan_mismatch(f, types, r.file_size).find("the plan says"), std::string::npos);
    std::ofstream(path) << "# x\nffn_down=Q4_K\n";
    EXPECT_THROW(read_plan_file(path), FormatError);
    std::filesystem::remove_all(dir);
}

TEST(Planner, RequantExecutesThePlanToThePredictedByte) {
    const auto dir = temp_dir();
    for (const Mini& m : {kLlama, kMoe}) {
        const std::string plan = (dir / "p.plan").string(), out = (dir / "o.gguf").string();
        const std::string im = data_path(m.imatrix), in = data_path(m.model);
        ASSERT_EQ(run(fmt::format("'{}' '{}' --imatrix '{}' --no-cache --target-bpw 4.8 -o '{}' 2>/dev/null",
                                  tool_path("gguf-plan"), in, im, plan)),
                  0);
        ASSERT_EQ(run(fmt::format("'{}' '{}' '{}' --plan '{}' --imatrix '{}' 2>/dev/null", tool_path("gguf-requant"),
                                  in, out, plan, im)),
                  0);
        const PlanFile f = read_plan_file(plan);
        EXPECT_EQ(std::filesystem::file_size(out), f.predicted_size);
        const Model o = open_model(out);
        for (size_t i = 0; i < f.names.size(); ++i)
            EXPECT_EQ(o.tensors()[o.find_tensor(f.names[i])].type, f.rules[i].type);
        // A plan whose predicted size is wrong is refused before anything is written.
        const auto bytes = read_file(plan);
        std::string text(bytes.begin(), bytes.end());
        const auto pos = text.find("# predicted-size: ");
        text.insert(pos + 18, "1");
        std::ofstream(plan) << text;
        std::filesystem::remove(out);
        EXPECT_EQ(run(fmt::format("'{}' '{}' '{}' --plan '{}' --imatrix '{}' 2>/dev/null", tool_path("gguf-requant"),
                                  in, out, plan, im)),
                  2);
        EXPECT_FALSE(std::filesystem::exists(out));
    }
    std::filesystem::remove_all(dir);
}

// --profile candle-x86: no planned type lacks a SIMD dot there (the 320-wide ffn_down rows,
// which would get Q5_0/Q5_1/IQ4_NL without the profile, get Q4_0 or Q8_0).
// `gguf-inspect diff A --plan P` reports exactly what `diff A OUT` reports for the file
// `gguf-requant A OUT --plan P` writes (text, JSON and HTML; B's name aside), and leaves no file.
TEST(Planner, InspectDiffPlanPreviewsTheWrittenOutput) {
    const auto dir = temp_dir();
    for (const Mini& m : {kLlama, kMoe}) {
        const std::string plan = (dir / "v.plan").string(), out = (dir / "v.gguf").string();
        const std::string im = data_path(m.imatrix), in = data_path(m.model);
        ASSERT_EQ(run(fmt::format("'{}' '{}' --imatrix '{}' --no-cache --target-bpw 4.6 -o '{}' 2>/dev/null",
                                  tool_path("gguf-plan"), in, im, plan)),
                  0);
        ASSERT_EQ(run(fmt::format("'{}' '{}' '{}' --plan '{}' --imatrix '{}' 2>/dev/null", tool_path("gguf-requant"),
                                  in, out, plan, im)),
                  0);
        for (const std::string fmt_opt : {"--color never", "--json", "--html -"}) {
            std::string written, preview;
            EXPECT_EQ(run(fmt::format("'{}' diff '{}' '{}' {}", tool_path("gguf-inspect"), in, out, fmt_opt), &written),
                      1);
            EXPECT_EQ(run(fmt::format("'{}' diff '{}' --plan '{}' --imatrix '{}' {}", tool_path("gguf-inspect"), in,
                                      plan, im, fmt_opt),
                          &preview),
                      1);
            auto replace_all = [](std::string s, const std::string& from) {
                for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p))
                    s.replace(p, from.size(), "B");
                return s;
            };
            EXPECT_EQ(replace_all(written, out), replace_all(preview, plan + " (planned)"))
                << m.model << " " << fmt_opt;
        }
        for (const auto& e : std::filesystem::directory_iterator(std::filesystem::temp_directory_path()))
            EXPECT_NE(e.path().filename().string().rfind("oiw-plan-preview-", 0), 0u)
                << e.path();  // nothing left behind
    }
}

TEST(Planner, ProfileExcludesTypesWithoutASimdDot) {
    const inspect::Profile p =
        inspect::load_profile(std::string(OIW_SOURCE_DIR) + "/inspect/profiles/candle-x86.profile");
    auto run_plan = [&](const std::string& extra) {
        std::string out;
        EXPECT_EQ(run(fmt::format("'{}' '{}' --no-cache --target-bpw 5.2 --json {} 2>/dev/null", tool_path("gguf-plan"),
                                  data_path(kLlama.model), extra),
                      &out),
                  0);
        std::set<std::string> types;
        const auto plan = nlohmann::json::parse(out);
        for (const auto& t : plan["tensors"]) types.insert(t["type"].get<std::string>());
        return types;
    };
    auto simd = [&](const std::string& name) {
        const auto* e = p.entry(parse_target_type(name, "type"));
        return e && e->dot == inspect::Dot::Simd;
    };
    const auto free = run_plan("");
    EXPECT_TRUE(std::any_of(free.begin(), free.end(), [&](const std::string& t) { return !simd(t); }));
    for (const auto& t : run_plan("--profile candle-x86")) EXPECT_TRUE(simd(t)) << t;
}

TEST(Planner, ProgressOnATerminalOnly) {
    if (run("script -qec true /dev/null >/dev/null 2>&1") != 0)
        GTEST_SKIP() << "no script(1) to give the tool a terminal";
    const std::string cmd =
        fmt::format("'{}' '{}' --no-cache --target-bpw 5", tool_path("gguf-plan"), data_path(kLlama.model));
    std::string tty, piped;
    ASSERT_EQ(run("script -qec \"" + cmd + "\" /dev/null", &tty), 0) << tty;
    EXPECT_NE(tty.find("\r\x1b[2Kgguf-plan: measuring ["), std::string::npos) << tty;
    ASSERT_EQ(run(cmd + " 2>&1 >/dev/null", &piped), 0);
    EXPECT_EQ(piped.find("measuring"), std::string::npos) << piped;
}

TEST(Planner, ErrorTableCacheRoundTripsAndIsKeyed) {
    const PlanTable& t = table_of(kMoe);
    const std::string text = format_errtable(t, "k1");
    const auto back = parse_errtable(text, "k1");
    ASSERT_TRUE(back);
    EXPECT_EQ(format_errtable(*back, "k1"), text);
    for (size_t i = 0; i < t.tensors.size(); ++i) EXPECT_EQ(back->tensors[i].err, t.tensors[i].err);
    EXPECT_FALSE(parse_errtable(text, "k2"));
    EXPECT_FALSE(parse_errtable(text.substr(0, text.size() / 2), "k1"));
    const Model m = open_model(data_path(kMoe.model));
    EXPECT_NE(errtable_key(m, {}, "", {}), errtable_key(m, {GgmlType::Q4_K}, "", {}));
    EXPECT_NE(errtable_key(m, {}, "", {}), errtable_key(m, {}, data_path(kMoe.imatrix), {}));
}

// Names with LF, CR, ESC, NUL, upper case (plan patterns are lower-cased, as llama-quantize's) and
// regex metacharacters: one escaped line each in the plan file and
// the sidecar, read back to the same names, and each plan line's pattern matches only its name.
TEST(Planner, HostileNamesStayOneLineInPlanFilesAndSidecars) {
    PlanTable t = table_of(kLlama);
    const std::vector<std::string> evil = {std::string("blk.0.a\n^x$=F32\r.weight"),
                                           std::string("blk.0.\x1b[2J\x07\0z.weight", 20), "blk.0.(a|b)\\x0a.weight"};
    for (size_t i = 0; i < evil.size(); ++i) t.tensors[i].name = evil[i];
    const PlanResult r = choose_plan(t, {{BudgetKind::Bpw, 5}, {}, {}, {}, {}});
    const std::string text = format_plan_file(t, r);
    for (char c : text) EXPECT_FALSE((static_cast<unsigned char>(c) < 0x20 && c != '\n') || c == 0x7f) << int(c);
    const auto dir = temp_dir();
    const std::string path = (dir / "evil.plan").string();
    std::ofstream(path) << text;
    const PlanFile f = read_plan_file(path);
    ASSERT_EQ(f.names.size(), t.tensors.size());
    for (size_t i = 0; i < t.tensors.size(); ++i) {
        EXPECT_EQ(f.names[i], t.tensors[i].name);
        const Pattern p(f.rules[i].pattern, "--plan");
        for (size_t j = 0; j < t.tensors.size(); ++j)
            EXPECT_EQ(p.search(t.tensors[j].name), i == j) << f.rules[i].pattern;
    }
    const std::string table = format_errtable(t, "k"), plain = format_errtable(table_of(kLlama), "k");
    EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), std::count(plain.begin(), plain.end(), '\n'));
    const auto back = parse_errtable(table, "k");
    ASSERT_TRUE(back);
    for (size_t i = 0; i < evil.size(); ++i) EXPECT_EQ(back->tensors[i].name, evil[i]);
    std::filesystem::remove_all(dir);
}

TEST(Planner, SecondRunReadsTheSidecarAndPlansTheSame) {
    const auto dir = temp_dir();
    const std::string cache = (dir / "t.errtable").string();
    auto plan = [&](std::string* err) {
        std::string out;
        EXPECT_EQ(run(fmt::format("'{}' '{}' --cache '{}' --target-bpw 5 2>'{}'", tool_path("gguf-plan"),
                                  data_path(kMoe.model), cache, (dir / "err").string()),
                      &out),
                  0);
        const auto e = read_file((dir / "err").string());
        *err = std::string(e.begin(), e.end());
        return out;
    };
    std::string e1, e2, e3;
    const std::string first = plan(&e1);
    EXPECT_EQ(e1.find("error table from"), std::string::npos);
    EXPECT_EQ(plan(&e2), first);
    EXPECT_NE(e2.find("error table from"), std::string::npos);
    std::ofstream(cache) << "oiw-errtable 1 damaged\n";
    EXPECT_EQ(plan(&e3), first);
    EXPECT_EQ(e3.find("error table from"), std::string::npos);
    std::filesystem::remove_all(dir);
}

void beats_presets(const Mini& m) {
    const PlanTable& t = table_of(m);
    for (const char* preset : {"Q3_K_M", "Q4_K_M", "Q5_K_M", "IQ4_XS"}) {
        const RequantJob job = preset_job(m, preset);
        std::map<std::string, GgmlType> by_name;
        for (const auto& tp : job.plan.tensors) by_name[tp.name] = tp.dst_type;
        std::vector<GgmlType> types;
        for (const auto& c : t.tensors) types.push_back(by_name.at(c.name));
        const auto start = std::chrono::steady_clock::now();
        const PlanResult r =
            choose_plan(t, {{BudgetKind::FileSize, static_cast<double>(job.file_size)}, {}, {}, {}, {}});
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        const double preset_err = plan_error(t, r.gain, types);
        const std::vector<double> ones(t.tensors.size(), 1.0);
        fmt::print(
            "{} {}: size {} plan {}: preset error {:.5f} (unweighted {:.5f}), plan error {:.5f} (unweighted {:.5f}), "
            "{:.1f} ms\n",
            m.model, preset, job.file_size, r.file_size, preset_err, plan_error(t, ones, types), r.error,
            plan_error(t, ones, r.type), ms);
        EXPECT_LE(r.file_size, job.file_size);
        EXPECT_LT(r.error, preset_err) << m.model << " " << preset;
    }
}

// The point of the feature: at exactly a preset's file size, the plan's summed gain-weighted error
// is below the preset's own (measured with the same code on the preset's per-tensor types).
TEST(Planner, BeatsPresetsAtTheirOwnFileSize) {
    beats_presets(kLlama);
    beats_presets(kMoe);
}

// The same on the ../shared fixtures (tiny-llama with its imatrix; the others with unit weights).
TEST(Planner, BeatsPresetsOnSharedFixtures) {
    OIW_NEED_SHARED("fixtures/tiny-llama-f16.gguf");
    beats_presets({"shared:fixtures/tiny-llama-f16.gguf", "shared:fixtures/tiny-llama.imatrix.gguf"});
    beats_presets({"shared:fixtures/tiny-moe-f16.gguf", ""});
    beats_presets({"shared:fixtures/smol-like-f16.gguf", ""});
}

}  // namespace
}  // namespace oiw
