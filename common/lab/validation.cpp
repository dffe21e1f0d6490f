#include "validation.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace kv {

namespace {

// The requests in the order they got their first token (ties by id): set
// by counts alone, so the engine and the simulator must agree on it.
std::vector<int> first_token_order(const Schedule& s) {
    std::vector<int> order(s.requests.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        return s.requests[std::size_t(a)].first_token_s < s.requests[std::size_t(b)].first_token_s;
    });
    return order;
}

}  // namespace

CheckedRow check_queue_against_engine(const CheckedQueue& q, Transformer& model,
                                      const StepCost& cost, int runs,
                                      const std::function<void(int run)>& on_run) {
    FastestOfRuns fastest;
    for (int run = 1; run <= runs; ++run) {
        if (on_run) on_run(run);
        const std::unique_ptr<Executor> engine = q.engine(model);
        fastest.start_run(*engine);
        q.run(fastest);
    }
    fastest.replay();
    const Schedule real = q.run(fastest);
    SimulatedExecutor simulated(cost);
    const Schedule sim = q.run(simulated);
    CheckedRow row{q.chapter, q.name, q.operating_point, summarize(real), summarize(sim)};
    row.same_order = first_token_order(real) == first_token_order(sim);
    row.run_spread = fastest.run_spread();
    return row;
}

bool within_target(double error) {
    return std::fabs(std::round(1000 * error) / 1000) <= kTarget;
}

bool within_target(const CheckedRow& row) {
    for (const Measure& m : kMeasures)
        if (!within_target(relative_error(row.simulated.*m.value, row.real.*m.value))) return false;
    return true;
}

}  // namespace kv
