// make validate: does the simulator tell the truth?
//
// A checked queue is a queue a chapter teaches, run through the same
// scheduler twice: by the simulator, each step priced by the step cost
// (serving/step_cost.h), and on the real engine, each step at its fastest
// of several runs (real_queue.h). The scheduler is the same code in both,
// so any difference in the times is the step cost's error.
#pragma once

#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "../../common/core/transformer.h"
#include "../../common/lab/side_by_side.h"  // finish_order
#include "../../common/serving/metrics.h"
#include "../../common/serving/scheduler.h"
#include "../../common/serving/step_cost.h"
#include "real_queue.h"

namespace kv {

struct CheckedQueue {
    std::string chapter;            // "05"
    std::string name;               // "continuous, cache, 128 requests"
    bool operating_point = false;   // held to the target (kTarget) on every measure
    std::vector<Request> requests;  // the workload, as run_schedule takes it
    // Runs the queue once through `executor`, with fresh memory bookkeeping
    // (its policy, memory manager and step composition are the chapter's).
    // `engine` is the fresh engine `executor` times, or null (the simulator,
    // the replay of the engine's fastest steps): a run whose block manager
    // lives in the engine (PoolEngine::memory, chapter 08's) takes it there.
    std::function<Schedule(Executor& executor, Executor* engine)> run;
    // A fresh real executor for one run on `model`: its caches start empty.
    std::function<std::unique_ptr<Executor>(Transformer& model)> engine;
    // The simulator's run when a step costs more than the step cost says
    // (chapter 07's swaps copy bytes); none: run() through a SimulatedExecutor.
    std::function<Schedule(const StepCost& cost)> simulate;
};

// What the simulator said against what the engine did, for one queue.
struct CheckedRow {
    std::string chapter, name;
    bool operating_point = false;
    Summary real, simulated;
    bool same_order = true;  // both finished the requests in the same order
    double run_spread = 0;   // the slowest real run against the fastest, minus 1
};

// The largest error the operating points may show on each measure.
inline constexpr double kTarget = 0.05;

// Relative error of the simulation against the measurement.
inline double relative_error(double simulated, double real) {
    return real > 0 ? simulated / real - 1 : 0;
}

// The measures compared: median time to first token, median and 99th
// percentile time between tokens, and the queue's whole time.
struct Measure {
    const char* name;
    double Summary::*value;
};
inline constexpr Measure kMeasures[] = {{"ttft p50", &Summary::ttft_median},
                                        {"tbt p50", &Summary::tbt_median},
                                        {"tbt p99", &Summary::tbt_p99},
                                        {"total", &Summary::total_s}};

// The queue `q` on `model`, `runs` times, against the simulator priced by
// `cost`. Before each run, on_run(run) with run = 1..runs.
inline CheckedRow check_queue_against_engine(const CheckedQueue& q, Transformer& model,
                                             const StepCost& cost, int runs,
                                             const std::function<void(int run)>& on_run = {}) {
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
    // All at once and first come, first served, the first tokens come in
    // request order on either side; the order of finishing depends on every
    // answer's length and every preemption, so it is the order compared.
    row.same_order = finish_order(real) == finish_order(sim);
    row.run_spread = fastest.run_spread();
    return row;
}

// Whether an error is within the target as the report prints it, to 0.1 %;
// whether every measure of `row` is.
inline bool within_target(double error) {
    return std::fabs(std::round(1000 * error) / 1000) <= kTarget;
}
inline bool within_target(const CheckedRow& row) {
    for (const Measure& m : kMeasures)
        if (!within_target(relative_error(row.simulated.*m.value, row.real.*m.value))) return false;
    return true;
}

}  // namespace kv
