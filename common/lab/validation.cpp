#include "validation.h"

#include <algorithm>
#include <cmath>

#include "side_by_side.h"  // first_token_order

namespace kv {

CheckedRow check_queue_against_engine(const CheckedQueue& q, Transformer& model,
                                      const StepCost& cost, int runs,
                                      const std::function<void(int run)>& on_run) {
    FastestOfRuns fastest;
    for (int run = 1; run <= runs; ++run) {
        if (on_run) on_run(run);
        const std::unique_ptr<Executor> engine = q.engine(model);
        fastest.start_run(*engine);
        q.run(fastest, engine.get());
    }
    fastest.replay();
    const Schedule real = q.run(fastest, nullptr);
    SimulatedExecutor simulated(cost);
    const Schedule sim = q.simulate ? q.simulate(cost) : q.run(simulated, nullptr);
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
