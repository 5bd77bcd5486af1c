#include "converters/planner/solve.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "libformat/error.h"

namespace oiw {
namespace {

// L(lambda) and the cost of its minimising choices (the slope of L is that cost minus the budget).
std::pair<double, double> lagrangian(const std::vector<KnapsackItem>& items, uint64_t budget, double lambda) {
    double sum = -lambda * static_cast<double>(budget), cost = 0;
    for (const auto& item : items) {
        double best = std::numeric_limits<double>::infinity(), best_cost = 0;
        for (const auto& c : item) {
            const double v = c.value + lambda * static_cast<double>(c.cost);
            if (v < best) best = v, best_cost = static_cast<double>(c.cost);
        }
        sum += best;
        cost += best_cost;
    }
    return {sum, cost};
}

// The items' minimisers of value + lambda * cost (ties to the cheaper choice).
std::vector<size_t> minimisers(const std::vector<KnapsackItem>& items, double lambda) {
    std::vector<size_t> pick(items.size());
    for (size_t i = 0; i < items.size(); ++i) {
        double best = std::numeric_limits<double>::infinity();
        for (size_t c = 0; c < items[i].size(); ++c) {
            const double v = items[i][c].value + lambda * static_cast<double>(items[i][c].cost);
            if (v < best || (v == best && items[i][c].cost < items[i][pick[i]].cost)) best = v, pick[i] = c;
        }
    }
    return pick;
}

uint64_t cost_of(const std::vector<KnapsackItem>& items, const std::vector<size_t>& pick) {
    uint64_t sum = 0;
    for (size_t i = 0; i < items.size(); ++i) sum += items[i][pick[i]].cost;
    return sum;
}

// For many items: the minimisers at the smallest lambda whose total cost fits (bisection on
// log10 lambda), then, in item order, each item whose minimiser just below that lambda differs
// takes it while it still fits (items tied at the critical lambda share the rest of the budget).
// Near-optimal when no single item is a large share of the total. `bound` gets the largest
// Lagrangian L(lambda) met on the way (a lower bound on any feasible value), so the gap is reported
// without a second search.
std::vector<size_t> solve_lagrangian(const std::vector<KnapsackItem>& items, uint64_t budget, double& bound) {
    const auto probe = [&](double lambda) {
        auto pick = minimisers(items, lambda);
        double l = -lambda * static_cast<double>(budget);
        for (size_t i = 0; i < items.size(); ++i)
            l += items[i][pick[i]].value + lambda * static_cast<double>(items[i][pick[i]].cost);
        bound = std::max(bound, l);
        return pick;
    };
    bound = -std::numeric_limits<double>::infinity();
    std::vector<size_t> fit = probe(0);
    if (cost_of(items, fit) <= budget) return fit;
    double lo = -40, hi = 40;  // log10(lambda): infeasible at lo, feasible at hi
    fit = probe(std::pow(10.0, hi));
    for (int it = 0; it < 100 && hi - lo > 1e-12; ++it) {
        const double mid = (lo + hi) / 2;
        auto pick = probe(std::pow(10.0, mid));
        if (cost_of(items, pick) > budget) {
            lo = mid;
        } else {
            hi = mid;
            fit = std::move(pick);
        }
    }
    const std::vector<size_t> over = minimisers(items, std::pow(10.0, lo));
    uint64_t cost = cost_of(items, fit);
    for (size_t i = 0; i < items.size(); ++i) {
        const auto& from = items[i][fit[i]];
        const auto& to = items[i][over[i]];
        if (to.value < from.value && to.cost >= from.cost && cost - from.cost + to.cost <= budget) {
            cost = cost - from.cost + to.cost;
            fit[i] = over[i];
        }
    }
    return fit;
}

}  // namespace

double lagrangian_bound(const std::vector<KnapsackItem>& items, uint64_t budget) {
    // L is concave and piecewise linear: its maximum is where the minimisers' cost crosses the
    // budget. Bisection on log(lambda) by that cost; every evaluated L is a valid lower bound.
    auto [best, cost0] = lagrangian(items, budget, 0);
    if (cost0 <= static_cast<double>(budget)) return best;
    double lo = -40, hi = 40;  // log10(lambda)
    for (int it = 0; it < 200; ++it) {
        const double mid = (lo + hi) / 2;
        const auto [l, cost] = lagrangian(items, budget, std::pow(10.0, mid));
        best = std::max(best, l);
        if (cost > static_cast<double>(budget))
            lo = mid;
        else
            hi = mid;
    }
    return best;
}

KnapsackResult solve_knapsack(const std::vector<KnapsackItem>& items, uint64_t budget, uint64_t min_unit) {
    const size_t n = items.size();
    std::vector<uint64_t> base(n);
    uint64_t min_total = 0, spread = 0;
    for (size_t i = 0; i < n; ++i) {
        if (items[i].empty()) throw FormatError(ErrorKind::Usage, "", "plan", fmt::format("item {} has no choice", i));
        uint64_t lo = UINT64_MAX, hi = 0;
        for (const auto& c : items[i]) lo = std::min(lo, c.cost), hi = std::max(hi, c.cost);
        base[i] = lo;
        min_total += lo;
        spread += hi - lo;
    }
    if (min_total > budget)
        throw FormatError(ErrorKind::Usage, "", "budget",
                          fmt::format("impossible: the cheapest candidate types need {} bytes, the budget allows {}",
                                      min_total, budget));
    // Step: n * unit <= 0.1% of min_total (the rounding loss bound), at least min_unit, a multiple of it.
    min_unit = std::max<uint64_t>(min_unit, 1);
    uint64_t unit = n ? min_total / 1000 / n : 1;
    unit = std::max(min_unit, unit / min_unit * min_unit);
    const uint64_t cells = std::min((budget - min_total) / unit, (spread + unit - 1) / unit + n);
    if (n > 0 && (cells + 1) > kMaxDpCells / n) {  // the grid grows with n: n x cells would be quadratic
        KnapsackResult r;
        r.unit = 0;
        double bound = 0;
        r.choice = solve_lagrangian(items, budget, bound);
        for (size_t i = 0; i < n; ++i) r.cost += items[i][r.choice[i]].cost, r.value += items[i][r.choice[i]].value;
        r.lower_bound = std::min(bound, r.value);
        return r;
    }

    const double inf = std::numeric_limits<double>::infinity();
    std::vector<double> dp(cells + 1, 0.0), next(cells + 1);
    std::vector<std::vector<uint8_t>> pick(n, std::vector<uint8_t>(cells + 1));
    for (size_t i = 0; i < n; ++i) {
        std::fill(next.begin(), next.end(), inf);
        for (size_t c = 0; c < items[i].size(); ++c) {
            const uint64_t w = (items[i][c].cost - base[i] + unit - 1) / unit;
            for (uint64_t b = w; b <= cells; ++b) {
                const double v = dp[b - w] + items[i][c].value;
                if (v < next[b]) next[b] = v, pick[i][b] = static_cast<uint8_t>(c);
            }
        }
        dp.swap(next);
    }
    KnapsackResult r;
    r.unit = unit;
    r.choice.resize(n);
    uint64_t b = cells;
    for (size_t i = n; i-- > 0;) {
        const size_t c = pick[i][b];
        r.choice[i] = c;
        b -= (items[i][c].cost - base[i] + unit - 1) / unit;
        r.cost += items[i][c].cost;
        r.value += items[i][c].value;
    }
    r.lower_bound = std::min(lagrangian_bound(items, budget), r.value);
    return r;
}

}  // namespace oiw
