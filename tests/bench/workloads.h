// What make bench times, and the arithmetic that turns times into fractions
// of the machine's limits.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "../../common/core/config.h"
#include "../../common/core/weights.h"

namespace kv::bench {

struct BenchShape {
    std::string name;
    Config config;
};

// demo: the book's default model (21.3 MiB of weights read per pass);
// cache-resident: half as many (10.5 MiB), to sit inside a last-level cache
// of the size most cores have; large: 376 MiB, larger than any one core's.
// (tests/bench_workloads_test.cpp holds these sizes.)
std::vector<BenchShape> bench_shapes();

// One timed thing: a decode step of `batch` sequences at `context` cached
// positions each, or a prefill of `prompt` tokens into an empty cache.
struct Workload {
    std::string shape;
    std::string what;  // "decode, batch 1", "decode, batch 1, context 4096", "prefill, 128 tokens"
    int batch = 1;
    int context = 0;     // positions already in each cache (decode)
    int prompt = 0;      // tokens of the prefill, 0 for decode
    int block_size = 0;  // decode on paged caches with blocks of this many positions; 0: contiguous
};

// Everything a workload's step must do, counted exactly.
struct StepCost {
    double flops = 0;         // matrix products and attention
    double weight_bytes = 0;  // every weight the step multiplies by, read once
    double cache_bytes = 0;   // keys and values attention reads
};
StepCost step_cost(const Config& c, const Workload& w);

// FLOPs of one forward pass over `rows` new tokens at positions start..,
// with `logit_rows` of them projected to the vocabulary: 2 per weight per
// row for the matrix products, and 4 * dim per attended position per layer
// (scores q.k, then the weighted sum of values).
double forward_flops(const Config& c, int rows, int start, int logit_rows);

// Positions of a decode workload's cache that a real prefill writes; the
// rest repeat them (TimedWorkload's constructor says why).
constexpr int kRealPositions = 64;

// A model and its caches, built once, timed many times.
class TimedWorkload {
  public:
    TimedWorkload(const Config& config, const Workload& workload);
    ~TimedWorkload();
    // The fastest of `repeats` timed steps, in this thread's CPU seconds,
    // after one untimed step, the thread kept on its core; fewer once the
    // timed ones have taken `budget_seconds` (at least one): one round of
    // common/core/timing.h's sample_round, as the chapters time theirs.
    double best_step_seconds(int repeats, double budget_seconds);
    const Workload& workload() const { return workload_; }
    const Config& config() const { return config_; }
    const Weights& weights() const;  // the model's

  private:
    struct State;
    Config config_;
    Workload workload_;
    std::unique_ptr<State> state_;
};

}  // namespace kv::bench
