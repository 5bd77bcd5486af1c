// The multiple-choice knapsack behind gguf-plan: one choice per item, total cost within a budget,
// minimal total value. Solved by dynamic programming over a cost grid, with the Lagrangian lower
// bound beside it so the optimality gap is visible.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace oiw {

struct KnapsackChoice {
    uint64_t cost = 0;  // bytes (or any additive cost)
    double value = 0;   // what is minimised (>= 0)
};
using KnapsackItem = std::vector<KnapsackChoice>;  // at least one choice

struct KnapsackResult {
    std::vector<size_t> choice;  // per item, an index into its choices
    uint64_t cost = 0;           // exact total cost of the chosen choices (<= budget)
    double value = 0;            // their total value
    double lower_bound = 0;      // max over lambda >= 0 of the Lagrangian relaxation (<= any feasible value)
    uint64_t unit = 1;           // grid step the costs were rounded up to (1 or `min_unit`: exact); 0: Lagrangian
};

// Largest dynamic-programming table (items x grid cells) solve_knapsack builds: 64 Mi one-byte picks.
inline constexpr uint64_t kMaxDpCells = uint64_t{1} << 26;

// Minimises the summed value subject to summed cost <= budget. Costs above each item's cheapest
// choice are rounded up to a grid step: the largest multiple of `min_unit` (at least min_unit)
// with n_items * step <= 0.1% of the cheapest total cost, so the rounding loses at most 0.1% of
// any feasible budget. The grid depends on the items only, never on the budget, so a larger budget
// never gives a larger value. With step == min_unit and costs multiples of it, the result is
// exact. The grid has ~1000 x n cells, so the table grows as n^2: when it would exceed kMaxDpCells
// (tens of thousands of items) the Lagrangian solution is taken instead (smallest feasible lambda,
// then items tied at the critical lambda upgraded in order while they fit; unit = 0), which stays
// within the budget and whose gap to lower_bound the caller reports. Throws FormatError(Usage)
// when even the cheapest choices exceed the budget.
KnapsackResult solve_knapsack(const std::vector<KnapsackItem>& items, uint64_t budget, uint64_t min_unit = 1);

// Lagrangian lower bound: max over lambda >= 0 of sum_i min_c (value + lambda cost) - lambda budget.
double lagrangian_bound(const std::vector<KnapsackItem>& items, uint64_t budget);

}  // namespace oiw
