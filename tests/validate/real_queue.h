// make validate: a queue on the real engine, run several times, each step timed
// at its fastest, as the bench times a kernel.
//
// The thread's CPU time leaves out the moments other programs run instead
// of ours, but not how much slower ours runs beside them (shared caches
// and memory), so one real run measures the neighbours as much as the
// engine. A queue with every request there at the start is decided by
// counts alone, never by how long a step took, so every run of it runs
// the same steps in the same order, and each step can be timed at the
// fastest of its runs: a burst of other work slows one run of a step, not
// all of them.
#pragma once

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string>
#include <vector>

#include "../../common/serving/scheduler.h"
#include "../../common/serving/step_plan.h"

namespace kv {

// How many times `make validate` runs each real queue.
inline constexpr int kRealRuns = 5;

class FastestOfRuns : public Executor {
  public:
    // The next run of the queue executes on `engine` (a fresh one each
    // run). Runs after the first must run the same steps, or it throws.
    void start_run(Executor& engine) {
        check_last_run_ended();
        engine_ = &engine;
        step_ = 0;
        run_totals_.push_back(0);
    }
    // Run the queue once more without an engine: each step returns its
    // fastest time.
    void replay() {
        check_last_run_ended();
        engine_ = nullptr;
        step_ = 0;
    }
    // Each run's own time, its steps summed as the engine timed them.
    const std::vector<double>& run_totals() const { return run_totals_; }
    // How much longer the slowest run took than the fastest, as a fraction
    // (0 with fewer than two runs): how much the machine's speed changed.
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
        if (run_totals_.size() == 1) {
            shapes_.push_back(shape);
            fastest_.push_back(seconds);
        } else if (step_ >= shapes_.size() || shapes_[step_] != shape) {
            throw std::logic_error("FastestOfRuns: run " + std::to_string(run_totals_.size()) +
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
    // A run that stopped short (an exception) must not be built on.
    void check_last_run_ended() const {
        if (engine_ && step_ != shapes_.size())
            throw std::logic_error("FastestOfRuns: run " + std::to_string(run_totals_.size()) +
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
    std::size_t step_ = 0;            // steps so far in this run
    std::vector<Shape> shapes_;       // (steps) of the first run
    std::vector<double> fastest_;     // (steps) seconds, the fastest run of each so far
    std::vector<double> run_totals_;  // (runs) seconds, each run's steps summed
};

}  // namespace kv
