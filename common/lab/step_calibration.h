// Chapter 09: the step cost measured on this machine.
//
// Time the real engine at steps of every mix (decode rows alone, prompt
// chunks alone, and both together, at short and long contexts), on paged
// caches as the queue runs them, then fit
// the one formula of step_cost.h to the timings by non-negative least
// squares on relative error (chapter 05's fit, with five unknowns). Each
// step is timed by the thread's CPU time, shape after shape, round after
// round, and the fastest of the rounds kept: a burst of other work on the
// machine slows one run of many shapes, not every run of one. The real
// queues the simulator is compared with run between the rounds, each step
// at the fastest of its runs (chapter 05's real_queue.h).
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "../core/block_pool.h"
#include "../core/paged_kv_cache.h"
#include "../core/transformer.h"
#include "../kit/timing.h"
#include "../serving/cpu_time.h"
#include "../serving/step_cost.h"
#include "calibration.h"

namespace kv {

struct StepProbe {
    std::string what;  // "decode 8 x 256 + chunk 64 after 0"
    StepWork work;
    double seconds = 0;  // measured: the fastest of the rounds
    double fitted = 0;   // what the fitted formula says
};

struct StepCalibration {
    StepCost cost;
    std::vector<StepProbe> probes;
    double seconds = 0;  // wall time the calibration took
};

// The shapes: decode rows of `batch` sequences at `context` cached
// positions each, beside a chunk of `chunk` prompt tokens after `first`.
struct StepShape {
    int batch = 0, context = 0, chunk = 0, first = 0;
};

// Shapes spanning a queue whose batches reach `largest_batch`, whose
// contexts reach `longest` positions and whose steps carry up to
// `largest_chunk` prompt tokens.
inline std::vector<StepShape> step_shapes(int largest_batch, int longest, int largest_chunk) {
    std::vector<int> batches = {0, 1, 8, std::min(32, largest_batch), largest_batch};
    std::vector<int> chunks = {0, 16, 64, 256, largest_chunk};
    for (auto* list : {&batches, &chunks}) {  // keep each shape once, within its limit
        std::sort(list->begin(), list->end());
        list->erase(std::unique(list->begin(), list->end()), list->end());
    }
    std::erase_if(batches, [&](int b) { return b > largest_batch; });
    std::erase_if(chunks, [&](int n) { return n > std::min(largest_chunk, longest); });
    std::vector<StepShape> shapes;
    for (int b : batches)
        for (int n : chunks) {
            if (b == 0 && n == 0) continue;
            for (int far : {0, 1}) {  // near the start of the context, and deep in it
                StepShape s;
                s.batch = b;
                s.chunk = n;
                s.context = b == 0 ? 0 : far ? std::max(1, longest / 2) : 32;
                s.first = n == 0 ? 0 : far ? std::max(0, std::min(longest - n, longest / 2)) : 0;
                if (s.context + 1 > longest) s.context = longest - 1;
                shapes.push_back(s);
            }
        }
    return shapes;
}

// Blocks of `block_size` positions one shape's caches take.
inline std::uint64_t blocks_of(const StepShape& s, int block_size) {
    auto blocks = [&](int positions) {
        return std::uint64_t((positions + block_size - 1) / block_size);
    };
    return std::uint64_t(s.batch) * blocks(s.context + 1) + blocks(s.first + s.chunk);
}

// Positions of KV cache the calibration holds at once (for the fit check):
// one shape's caches at a time, in one pool sized for the largest.
inline std::uint64_t step_calibration_positions(int largest_batch, int longest, int largest_chunk,
                                                int block_size) {
    std::uint64_t most = 1;
    for (const StepShape& s : step_shapes(largest_batch, longest, largest_chunk))
        most = std::max(most, blocks_of(s, block_size));
    return most * std::uint64_t(block_size);
}

// Each shape runs on block tables in one pool, as the queue's engine runs
// (chapter 07), built anew at its turn and given back after; each is run
// twice in a row and the second run timed, so that a step is measured with
// the weights and its caches as warm as in a queue's run of steps.
// After each timed round, after_round(round, rounds) may run real queues.
inline StepCalibration calibrate_step_cost(Transformer& model, int largest_batch, int longest,
                                           int largest_chunk, int block_size, int rounds,
                                           const std::function<void(int, int)>& on_round,
                                           const std::function<void(int, int)>& after_round = {}) {
    const Config& c = model.config();
    const auto start = Clock::now();
    const std::vector<StepShape> shapes = step_shapes(largest_batch, longest, largest_chunk);
    BlockPool pool(
        c, block_size,
        int(step_calibration_positions(largest_batch, longest, largest_chunk, block_size) /
            std::uint64_t(block_size)));
    std::vector<StepProbe> probes(shapes.size());
    std::vector<std::vector<double>> seconds_of(shapes.size());
    for (std::size_t k = 0; k < shapes.size(); ++k) {
        const StepShape& s = shapes[k];
        probes[k].what = "decode " + std::to_string(s.batch) + " x " + std::to_string(s.context) +
                         " + chunk " + std::to_string(s.chunk) + " after " +
                         std::to_string(s.first);
        auto count = [&](int base, int n) {
            probes[k].work.rows += n;
            probes[k].work.sequences += 1;
            probes[k].work.pairs += attention_pairs(base, n);
            probes[k].work.positions += base + n;
        };
        for (int b = 0; b < s.batch; ++b) count(s.context, 1);
        if (s.chunk > 0) count(s.first, s.chunk);
    }
    auto time_once = [&](const StepShape& s) {
        std::vector<PagedKVCache> caches;
        std::vector<int> bases;
        std::vector<std::vector<int>> tokens;
        auto row = [&](int base, int n) {
            caches.emplace_back(pool, base + n);
            caches.back().reserve(base);  // marked filled: a step costs the same whatever
            caches.back().commit(base);   // numbers the cache holds
            bases.push_back(base);
            std::vector<int> ids(static_cast<std::size_t>(n));
            for (int i = 0; i < n; ++i) ids[std::size_t(i)] = (7 * i + 1) % c.vocab_size;
            tokens.push_back(ids);
        };
        caches.reserve(std::size_t(s.batch) + 1);
        for (int b = 0; b < s.batch; ++b) row(s.context, 1);
        if (s.chunk > 0) row(s.first, s.chunk);
        std::vector<SequenceInput> inputs;
        for (std::size_t i = 0; i < caches.size(); ++i) inputs.push_back({tokens[i], &caches[i]});
        double took = 0;
        for (int run = 0; run < 2; ++run) {  // the first warms, the second is timed
            for (std::size_t i = 0; i < caches.size(); ++i) caches[i].truncate(bases[i]);
            const double began = thread_cpu_seconds();
            model.forward(inputs);
            took = thread_cpu_seconds() - began;
        }
        return took;
    };
    for (int round = 0; round <= rounds; ++round) {  // round 0 warms up
        for (std::size_t k = 0; k < shapes.size(); ++k) {
            const double took = time_once(shapes[k]);
            if (round > 0) seconds_of[k].push_back(took);
        }
        if (on_round) on_round(round, rounds);
        if (after_round && round > 0) after_round(round, rounds);
    }
    StepCalibration cal;
    std::vector<std::array<double, 5>> features;
    std::vector<double> seconds;
    for (std::size_t k = 0; k < shapes.size(); ++k) {
        probes[k].seconds =
            std::max(*std::min_element(seconds_of[k].begin(), seconds_of[k].end()), 1e-9);
        const StepWork& w = probes[k].work;
        features.push_back({1.0, w.rows, w.sequences, w.pairs, w.positions});
        seconds.push_back(probes[k].seconds);
        cal.probes.push_back(probes[k]);
    }
    std::vector<double> fitted(seconds.size());
    const std::array<double, 5> k = fit_nonnegative<5>(features, seconds, fitted);
    cal.cost.fixed = k[0];
    cal.cost.per_row = k[1];
    cal.cost.per_sequence = k[2];
    cal.cost.per_pair = k[3];
    cal.cost.per_position = k[4];
    for (std::size_t i = 0; i < cal.probes.size(); ++i) {
        cal.probes[i].fitted = fitted[i];
        cal.cost.fit_error =
            std::max(cal.cost.fit_error, std::fabs(fitted[i] / cal.probes[i].seconds - 1));
    }
    cal.cost.source = "measured on this machine";
    cal.seconds = seconds_since(start);
    return cal;
}

// ------------------------------------------------- the queue's own level

// The probes time each shape alone, twice in a row; a queue runs its steps
// in its own order and mix (a step of chunks after a decode step, caches
// that grow a block at a time, a new table for every request). As chapter
// 05 does (calibration.h, LevelingExecutor), a short real queue sets the
// level of each kind of step: measured over what the formula says.
struct StepLevel {
    std::string what;  // "prompt-only steps", "decode-only steps", "mixed steps"
    int steps = 0;
    double measured = 0, priced = 0;  // seconds
};

class StepLevelingExecutor : public Executor {
  public:
    // `real` runs the steps, or replays them (chapter 05's real_queue.h).
    StepLevelingExecutor(Executor& real, const StepCost& cost, std::vector<StepLevel>& levels)
        : real_(real), cost_(cost), levels_(levels) {}
    double run(const StepPlan& plan) override {
        StepLevel& level = levels_[std::size_t(kind_of(plan))];
        const double priced = cost_.seconds(work_of(plan)), measured = real_.run(plan);
        level.steps += 1;
        level.priced += priced;
        level.measured += measured;
        return measured;
    }
    void release(const Request& r) override { real_.release(r); }

  private:
    Executor& real_;
    const StepCost& cost_;
    std::vector<StepLevel>& levels_;
};

inline std::vector<StepLevel> no_step_levels() {
    return {{"prompt-only steps"}, {"decode-only steps"}, {"mixed steps"}};
}

// Sets the cost's three scales from what the levels measured.
inline void set_step_scales(StepCost& cost, const std::vector<StepLevel>& levels) {
    auto scale = [&](StepKind k) {
        const StepLevel& l = levels[std::size_t(k)];
        return l.priced > 0 && l.measured > 0 ? l.measured / l.priced : 1.0;
    };
    cost.prompt_scale = scale(StepKind::prompt);
    cost.decode_scale = scale(StepKind::decode);
    cost.mixed_scale = scale(StepKind::mixed);
}

}  // namespace kv
