// Chapter 05: a queue on the real engine, run several times, each step
// timed at its fastest, so that a real run is measured as the bench
// measures a kernel.
//
// The thread's CPU time (cpu_time.h) leaves out the moments other programs
// run instead of ours, but not how much slower ours runs beside them: a
// virtual processor shares its physical core and the machine's caches and
// memory with whatever else the host runs. On this book's shared machines
// the same small engine step has taken twice as long from one second to
// the next. One real run then measures the neighbours as much as the engine.
//
// A queue with every request there at the start is decided by counts
// alone (who fits, who is answered), never by how long a step took, so
// every run of it runs the same steps in the same order, and each step can
// be timed at the fastest of its runs: a burst of other work slows one run
// of a step, not all of them. The machine also drifts over minutes, so
// when the cost model is measured now, the real runs are made between the
// calibration's rounds (experiment.h): both sides then sample the same
// minutes of the machine, and each keeps the fastest of what it timed.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "../core/transformer.h"
#include "../serving/memory_budget.h"
#include "../serving/real_executor.h"
#include "../serving/scheduler.h"
#include "../serving/step_plan.h"

namespace kv {

// How many times the book runs a real queue it compares with the simulator:
// with the calibration's 5 rounds, one run after each round, so that every
// minute the probes sample, the real queues sample too. Measured on this
// book's Emerald Rapids machine (chapter 05, 128 requests per cached
// policy, the virtual machine otherwise idle), the largest error over the
// three cached policies, median and total: with 3 runs, after rounds 1, 3
// and 5, 2.2, 11.8, 20.4 and 3.7 % in four runs of the program; with 5,
// one after each round, 3.7, 2.5, 2.3, 10.6, 4.9 and 5.0 % in six, while
// the slowest run of one queue took 6 to 50 % longer than its fastest.
// Chapter 05's program takes about 80 s instead of 50.
inline constexpr int kRealRuns = 5;

class FastestOfRuns : public Executor {
  public:
    // The next run of the queue executes on `engine` (a fresh one each
    // run: its caches start empty). Runs after the first must run the
    // same steps: a different step is a logic error, thrown.
    void start_run(Executor& engine) {
        check_last_run_ended();
        engine_ = &engine;
        runs_ += 1;
        step_ = 0;
        run_totals_.push_back(0);
    }
    // Run the queue once more without an engine: each step returns its
    // fastest time so far (to price a queue's steps after the runs).
    void replay() {
        check_last_run_ended();
        engine_ = nullptr;
        step_ = 0;
    }
    int runs() const { return runs_; }
    // Each run's own time, its steps summed as the engine timed them.
    const std::vector<double>& run_totals() const { return run_totals_; }
    // How much longer the slowest run took than the fastest, as a
    // fraction (0 with fewer than two runs): how much the machine's speed
    // changed while the runs ran. The queue's real times are each step's
    // fastest run, which changes less than any one run does.
    double run_spread() const {
        if (run_totals_.size() < 2) return 0;
        const auto [least, most] = std::minmax_element(run_totals_.begin(), run_totals_.end());
        return *least > 0 ? *most / *least - 1 : 0;
    }

    double run(const StepPlan& plan) override {
        const Shape shape = shape_of(plan);
        if (!engine_) {
            if (step_ >= shapes_.size() || shapes_[step_] != shape)
                throw std::logic_error("FastestOfRuns: the replay ran another step " +
                                       std::to_string(step_) + " than the runs");
            return fastest_[step_++];
        }
        const double seconds = engine_->run(plan);
        if (runs_ == 1) {
            shapes_.push_back(shape);
            fastest_.push_back(seconds);
        } else if (step_ >= shapes_.size() || shapes_[step_] != shape) {
            throw std::logic_error("FastestOfRuns: run " + std::to_string(runs_) +
                                   " ran another step " + std::to_string(step_) +
                                   " than the first run");
        } else {
            fastest_[step_] = std::min(fastest_[step_], seconds);
        }
        run_totals_.back() += seconds;  // a step of this queue, as the engine timed it
        return fastest_[step_++];
    }
    void release(const Request& r) override {
        if (engine_) engine_->release(r);
    }

  private:
    // A run that stopped short (an exception in the middle of the queue)
    // would leave its last steps at older times and its total short:
    // the runs after it must not build on it.
    void check_last_run_ended() const {
        if (engine_ && step_ != shapes_.size())
            throw std::logic_error("FastestOfRuns: run " + std::to_string(runs_) +
                                   " stopped after step " + std::to_string(step_) + " of " +
                                   std::to_string(shapes_.size()));
    }

    // What identifies a step: its rows, each as (request, first position, tokens).
    using Shape = std::vector<std::array<int, 3>>;
    static Shape shape_of(const StepPlan& plan) {
        Shape s;
        for (const StepRow& row : plan.rows) s.push_back({row.request->id, row.first, row.tokens});
        return s;
    }

    Executor* engine_ = nullptr;
    int runs_ = 0;
    std::size_t step_ = 0;            // steps so far in this run
    std::vector<Shape> shapes_;       // (steps) of the first run
    std::vector<double> fastest_;     // (steps) seconds, the fastest run of each so far
    std::vector<double> run_totals_;  // (runs) seconds, each run's steps summed
};

// How many of the kRealRuns runs of the real queues come after
// calibration round `round` (1..rounds): spread evenly from the first
// round to the last, so that both sides sample the same minutes.
inline int real_runs_after(int round, int rounds) {
    int n = 0;
    for (int run = 0; run < kRealRuns; ++run)
        n += round == 1 + run * (rounds - 1) / std::max(1, kRealRuns - 1);
    return n;
}

// Records the requests in the order the scheduler admits them.
inline ScheduleObserver record_admissions(std::vector<int>& order) {
    return [&order](const ScheduleEvent& e) {
        if (e.kind == ScheduleEvent::admit) order.push_back(e.request);
    };
}

// One queue under one policy on the real engine, run as often as asked.
struct RealQueue {
    RealQueue(Policy p, std::vector<Request> r) : policy(std::move(p)), requests(std::move(r)) {}

    Policy policy;
    std::vector<Request> requests;  // the workload, as run_schedule takes it
    FastestOfRuns fastest;
    Schedule schedule;       // the last run's, each step at the fastest of its runs
    std::vector<int> order;  // the requests as the last run admitted them

    // One more run, on a fresh real executor (its caches start empty).
    void run_once(Transformer& model, const MemoryBudget& budget, std::uint64_t seed,
                  StepClock clock = StepClock::thread_cpu) {
        order.clear();
        RealExecutor real(model, seed, clock);
        fastest.start_run(real);
        schedule = run_schedule(requests, policy, budget, fastest, record_admissions(order));
    }
};

// The order the real queues run in, each time they run: each leveling
// queue (calibration.h) just before the validated queue of its policy,
// the rest where they are. The machine's speed drifts over minutes, and a
// level carries the speed it was measured at into the simulator's prices,
// so it is measured in the same seconds as the queue it is compared with.
// (Chapter 05's static batching, whose decode steps are priced from
// continuous batching's level, runs just before that leveling queue.)
inline std::vector<RealQueue*> leveling_beside(std::vector<RealQueue>& leveling,
                                               std::vector<RealQueue>& validated) {
    std::vector<RealQueue*> order;
    for (RealQueue& q : validated) {
        for (RealQueue& level : leveling)
            if (level.policy.name == q.policy.name) order.push_back(&level);
        order.push_back(&q);
    }
    for (RealQueue& level : leveling)  // no validated queue of its policy
        if (std::find(order.begin(), order.end(), &level) == order.end()) order.push_back(&level);
    return order;
}

}  // namespace kv
