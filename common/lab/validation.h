// Chapter 05: validation, does the simulator tell the truth?
//
// Run requests through the real engine under each policy, with the same
// scheduler and the real executor, and the same requests through the
// simulator with the cost model. The scheduler code is the same in both, so
// any difference in time to first token is the cost model's error. The
// real run is timed with the thread's CPU time, as the calibration is, so
// that other work on the machine does not count as the engine's, and
// several times, each step at its fastest (real_queue.h).
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "../core/transformer.h"
#include "../serving/cost_model.h"
#include "../serving/cpu_time.h"
#include "../serving/metrics.h"
#include "../serving/real_executor.h"
#include "../serving/scheduler.h"
#include "real_queue.h"

namespace kv {

// Who runs a queue of `requests` in a later chapter's experiment, as
// (real engine?, how many of the first requests): the simulator on all of
// it; the real engine on its first `engine_requests`, and the simulator on
// those too, so that the two compare like with like.
inline std::vector<std::pair<bool, int>> queue_sides(int requests, int engine_requests) {
    const int engine = std::min(engine_requests, requests);
    std::vector<std::pair<bool, int>> s = {{false, requests}};
    if (engine > 0 && engine < requests) s.push_back({false, engine});
    if (engine > 0) s.push_back({true, engine});
    return s;
}

struct ValidationRow {
    std::string policy;
    Summary real;            // measured on the real engine (the thread's CPU time)
    Summary simulated;       // the cost model's replay of the same requests
    bool same_order = true;  // the same requests joined in the same order
    int real_requests = 0;   // how many requests ran
    int batch = 1;           // the policy's batch size in this run
    double run_spread = 0;   // the slowest real run's time against the fastest's, minus 1
};

// The batch size validation uses: a quarter of the requests (at least 1),
// so that requests queue, join and leave as in the full run.
inline int validation_batch(int requests, int batch) {
    return std::clamp(requests / 4, 1, batch);
}

// Relative error of the simulation against the measurement.
inline double relative_error(double simulated, double real) {
    return real > 0 ? simulated / real - 1 : 0;
}

// Each real queue against the simulator's replay of the same requests.
inline std::vector<ValidationRow> compare_with_simulator(std::span<const RealQueue> queues,
                                                         const MemoryBudget& budget,
                                                         const CostModel& cost) {
    std::vector<ValidationRow> rows;
    for (const RealQueue& q : queues) {
        std::vector<int> sim_order;
        SimulatedExecutor simulated(cost);
        const Schedule replayed =
            run_schedule(q.requests, q.policy, budget, simulated, record_admissions(sim_order));
        rows.push_back({q.policy.name, summarize(q.schedule), summarize(replayed),
                        q.order == sim_order, int(q.requests.size()), q.policy.batch,
                        q.fastest.run_spread()});
    }
    return rows;
}

// The requests under each policy on the real engine, `runs` times in a row
// (when the cost model was not measured just now, there are no rounds to
// run them between), then against the simulator. After each policy's
// runs, on_policy(policies done, of).
inline std::vector<ValidationRow> validate(Transformer& model, std::span<const Request> requests,
                                           const std::vector<Policy>& policies,
                                           const MemoryBudget& budget, const CostModel& cost,
                                           std::uint64_t seed,
                                           const std::function<void(int, int)>& on_policy = {},
                                           StepClock clock = StepClock::thread_cpu,
                                           int runs = kRealRuns) {
    std::vector<RealQueue> queues;
    for (const Policy& policy : policies) {
        queues.emplace_back(policy, std::vector<Request>(requests.begin(), requests.end()));
        for (int run = 0; run < runs; ++run) queues.back().run_once(model, budget, seed, clock);
        if (on_policy) on_policy(int(queues.size()), int(policies.size()));
    }
    return compare_with_simulator(queues, budget, cost);
}

}  // namespace kv
