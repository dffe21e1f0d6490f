// Chapter 05: calibration, the cost model measured on this machine.
//
// Time the real engine at a handful of shapes (prefills and recomputations
// of a few lengths, decode steps at a few batch sizes and context lengths),
// then fit the two formulas of cost_model.h to those timings by least
// squares. A few seconds of measurement let the simulator replay hours of
// queue. The fit error printed beside the coefficients says how far to
// trust it; --validate checks it against a real run.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "../core/batched_decoding.h"
#include "../core/transformer.h"
#include "../kit/timing.h"
#include "../serving/cost_model.h"
#include "../serving/cpu_time.h"
#include "../serving/memory_budget.h"
#include "../serving/real_executor.h"
#include "../serving/scheduler.h"
#include "../serving/workload.h"
#include "real_queue.h"

namespace kv {

// The widest batch calibration times; beyond it the fitted formula extrapolates.
inline constexpr int kMostCalibratedBatch = 64;

struct CalibrationPoint {
    std::string what;    // "prefill 96", "recompute 4 x 32", "decode 16 x 128"
    double x1 = 0;       // a pass: rows; a decode step: sequences
    double x2 = 0;       // a pass: sum(length^2); a decode step: sum(context)
    double seconds = 0;  // measured: the fastest of a few runs after a warm-up
    double fitted = 0;   // what the fitted formula says
};

// ----------------------------------------------------------- the fit

// seconds ~ k[0] f0 + k[1] f1 + ... over N features (f0 = 1 for a fixed
// cost), each point weighted by 1/seconds so that the fit minimizes
// relative error (a 1 ms step counts as much as a 100 ms pass), with every
// k >= 0: no piece of work takes negative time. Fitting every subset of the
// unknowns and keeping the best non-negative one is an exact non-negative
// least squares (2^N - 1 small systems; N is 3 here and 5 in chapter 09).
// Returns the coefficients; `fitted` gets what they say at each point.
template <std::size_t N>
std::array<double, N> fit_nonnegative(std::span<const std::array<double, N>> features,
                                      std::span<const double> seconds, std::span<double> fitted) {
    std::array<double, N> scale;  // columns scaled to at most 1 keep the system well conditioned
    scale.fill(1);
    for (std::size_t i = 0; i < features.size(); ++i)
        for (std::size_t j = 0; j < N; ++j)
            scale[j] = std::max(scale[j], std::fabs(features[i][j] / seconds[i]));

    std::array<double, N> best{};
    double best_residual = std::numeric_limits<double>::infinity();
    for (unsigned mask = 1; mask < (1u << N); ++mask) {
        std::vector<std::size_t> cols;
        for (std::size_t j = 0; j < N; ++j)
            if (mask >> j & 1) cols.push_back(j);
        const std::size_t m = cols.size();
        // Normal equations: (A^T A) k = A^T 1, where row i of A is
        // (features of point i) / seconds_i, so a perfect fit gives all ones.
        std::array<std::array<double, N + 1>, N> M{};
        for (std::size_t i = 0; i < features.size(); ++i)
            for (std::size_t r = 0; r < m; ++r) {
                const double ar = features[i][cols[r]] / seconds[i] / scale[cols[r]];
                for (std::size_t c = 0; c < m; ++c)
                    M[r][c] += ar * features[i][cols[c]] / seconds[i] / scale[cols[c]];
                M[r][m] += ar;
            }
        bool solved = true;  // Gaussian elimination with partial pivoting
        for (std::size_t c = 0; c < m && solved; ++c) {
            std::size_t pivot = c;
            for (std::size_t r = c + 1; r < m; ++r)
                if (std::fabs(M[r][c]) > std::fabs(M[pivot][c])) pivot = r;
            std::swap(M[c], M[pivot]);
            if (std::fabs(M[c][c]) < 1e-12) solved = false;
            for (std::size_t r = 0; r < m && solved; ++r)
                if (r != c) {
                    const double f = M[r][c] / M[c][c];
                    for (std::size_t k = c; k <= m; ++k) M[r][k] -= f * M[c][k];
                }
        }
        if (!solved) continue;
        std::array<double, N> k{};
        bool non_negative = true;
        for (std::size_t r = 0; r < m; ++r) {
            k[cols[r]] = M[r][m] / M[r][r] / scale[cols[r]];
            non_negative = non_negative && k[cols[r]] >= 0;
        }
        if (!non_negative) continue;
        double residual = 0;
        for (std::size_t i = 0; i < features.size(); ++i) {
            double t = 0;
            for (std::size_t j = 0; j < N; ++j) t += k[j] * features[i][j];
            const double e = t / seconds[i] - 1;
            residual += e * e;
        }
        if (residual < best_residual) {
            best_residual = residual;
            best = k;
        }
    }
    for (std::size_t i = 0; i < features.size() && i < fitted.size(); ++i) {
        fitted[i] = 0;
        for (std::size_t j = 0; j < N; ++j) fitted[i] += best[j] * features[i][j];
    }
    return best;
}

// Chapter 05's two formulas: seconds ~ k[0] + k[1] x1 + k[2] x2.
struct LinearFit {
    std::array<double, 3> k{};  // a, b, c or d, e, f
    double max_error = 0;       // largest |fitted - measured| / measured
};

inline LinearFit fit_nonnegative(std::span<CalibrationPoint> points) {
    std::vector<std::array<double, 3>> features;
    std::vector<double> seconds, fitted(points.size());
    for (const CalibrationPoint& p : points) {
        features.push_back({1.0, p.x1, p.x2});
        seconds.push_back(p.seconds);
    }
    LinearFit best;
    best.k = fit_nonnegative<3>(features, seconds, fitted);
    for (std::size_t i = 0; i < points.size(); ++i) {
        points[i].fitted = fitted[i];
        best.max_error = std::max(best.max_error, std::fabs(fitted[i] / points[i].seconds - 1));
    }
    return best;
}

// ---------------------------------------------------------- the timing

// One kind of step a queue runs, summed over a short real queue: what the
// steps took, and what the probes' formulas price them at.
struct QueueLevel {
    std::string what;  // "prefills", "one-sequence decode steps", "batched decode steps"
    int steps = 0;
    double measured = 0;  // seconds, the thread's CPU time
    double priced = 0;    // seconds, the formulas before the scale
};

struct Calibration {
    CostModel cost;
    std::vector<QueueLevel> queue;         // with calibrate_on_a_queue: the three kinds of step
    std::vector<CalibrationPoint> passes;  // prefills and recomputations
    std::vector<CalibrationPoint> steps;   // decode steps with the cache
    double seconds = 0;                    // wall time the calibration took
};

// One shape to time: the work, and its timings so far.
struct Probe {
    CalibrationPoint point;
    bool pass = true;           // a pass over whole sequences, or a decode step
    std::function<void()> run;  // does the work once
    std::vector<double> seconds;
};

// A pass over `count` sequences of `length` tokens, each into a fresh cache,
// as a prefill or a step without the cache does it (naive_batch_step).
inline Probe pass_probe(Transformer& model, int count, int length) {
    std::vector<int> tokens(static_cast<std::size_t>(length));
    for (int i = 0; i < length; ++i)
        tokens[std::size_t(i)] = (7 * i + 1) % model.config().vocab_size;
    Probe p;
    p.point.what = count == 1
                       ? "prefill " + std::to_string(length)
                       : "recompute " + std::to_string(count) + " x " + std::to_string(length);
    p.point.x1 = double(count) * length;
    p.point.x2 = double(count) * length * length;
    p.run = [&model, whole = std::vector<std::vector<int>>(std::size_t(count), tokens)] {
        naive_batch_step(model, whole);
    };
    return p;
}

// One decode step for `batch` sequences whose caches hold `context`
// positions each. The caches are marked filled rather than prefilled: the
// step costs the same whatever numbers they hold, and this keeps
// calibration to seconds.
inline Probe decode_probe(Transformer& model, int batch, int context) {
    auto owned = std::make_shared<std::vector<std::unique_ptr<KVCache>>>();
    std::vector<KVCache*> caches;
    for (int i = 0; i < batch; ++i) {
        owned->push_back(std::make_unique<KVCache>(model.config(), context + 1));
        owned->back()->commit(context);
        caches.push_back(owned->back().get());
    }
    Probe p;
    p.pass = false;
    p.point.what = "decode " + std::to_string(batch) + " x " + std::to_string(context);
    p.point.x1 = batch;
    p.point.x2 = double(batch) * context;
    p.run = [&model, owned, caches, context] {
        for (KVCache* c : caches) c->truncate(context);  // forget the last step's token
        const std::vector<int> tokens(caches.size(), 1);
        decode_batch(model, tokens, caches);
    };
    return p;
}

// Times the engine at shapes spanning the workload: sequences up to
// `longest` positions, batches up to `largest_batch` (at most
// kMostCalibratedBatch), and fits both formulas. Every shape runs
// once per round, round after round: a burst of other work on the machine
// then slows one run of many shapes, not every run of one shape, and the
// fastest run of each shape is kept, as a real queue keeps the fastest run
// of each step (fastest_of_runs.h). After each round, on_round(rounds done, of).
// The shapes calibrate() times: passes (sequences, length) and decode
// steps (batch, context), for sequences up to `longest` positions and
// batches up to `largest_batch` (at most kMostCalibratedBatch).
struct CalibrationShapes {
    std::vector<std::pair<int, int>> passes;  // (count, length)
    std::vector<int> batches;
    std::vector<int> contexts;  // positions cached before the step

    // Cache positions held at once: every decode probe keeps its caches
    // (context + 1 positions a sequence), and one pass at a time its own.
    std::uint64_t cache_positions() const {
        std::uint64_t held = 0, widest_pass = 0;
        for (int b : batches)
            for (int c : contexts) held += std::uint64_t(b) * std::uint64_t(c + 1);
        for (const auto& [count, length] : passes)
            widest_pass = std::max(widest_pass, std::uint64_t(count) * std::uint64_t(length));
        return held + widest_pass;
    }
    // The most rows one forward pass carries.
    std::uint64_t widest_pass_rows() const {
        std::uint64_t rows = batches.empty() ? 0 : std::uint64_t(batches.back());
        for (const auto& [count, length] : passes)
            rows = std::max(rows, std::uint64_t(count) * std::uint64_t(length));
        return rows;
    }
};

inline CalibrationShapes calibration_shapes(int longest, int largest_batch) {
    const int widest = std::clamp(largest_batch, 1, kMostCalibratedBatch);
    CalibrationShapes s;
    s.passes = {{1, 8},       {1, 32}, {1, 96}, {1, longest / 2},
                {1, longest}, {4, 32}, {8, 48}, {3, longest / 2}};
    s.batches = {1, 2, 4, 8, 16, widest};
    s.contexts = {16, longest / 2, longest - 1};
    for (auto& [count, length] : s.passes) length = std::clamp(length, 1, longest);
    for (int& b : s.batches) b = std::min(b, widest);
    for (int& c : s.contexts) c = std::clamp(c, 0, longest - 1);  // the cache holds context + 1
    auto unique = [](auto& v) {
        std::sort(v.begin(), v.end());
        v.erase(std::unique(v.begin(), v.end()), v.end());
    };
    unique(s.passes);
    unique(s.batches);
    unique(s.contexts);
    return s;
}

// After each round, after_round(round, of) may run real queues
// (real_queue.h): between the rounds, so that both sample the same minutes.
inline Calibration calibrate(Transformer& model, int longest, int largest_batch,
                             const std::function<void(int, int)>& on_round = {},
                             const std::function<void(int, int)>& after_round = {}) {
    const auto start = Clock::now();
    const CalibrationShapes shapes = calibration_shapes(longest, largest_batch);
    const auto& [passes, batches, contexts] = shapes;

    std::vector<Probe> probes;
    for (const auto& [count, length] : passes) probes.push_back(pass_probe(model, count, length));
    for (int b : batches)
        for (int c : contexts) probes.push_back(decode_probe(model, b, c));

    const int rounds = 5;
    for (Probe& p : probes) p.run();  // warm-up
    for (int round = 0; round < rounds; ++round) {
        for (Probe& p : probes) {
            // A decode step is short, and after a long pass it finds the
            // weights pushed out of the processor's caches: the first one
            // runs half again slower, the next few less so. In a queue,
            // decode steps follow one another, so time them in a row.
            const int warm = p.pass ? 0 : 3, timed = p.pass ? 1 : 3;
            for (int i = 0; i < warm; ++i) p.run();
            for (int i = 0; i < timed; ++i) {
                const double t0 = thread_cpu_seconds();
                p.run();
                p.seconds.push_back(thread_cpu_seconds() - t0);
            }
        }
        if (on_round) on_round(round + 1, rounds);
        if (after_round) after_round(round + 1, rounds);
    }
    Calibration cal;
    for (Probe& p : probes) {
        p.point.seconds = *std::min_element(p.seconds.begin(), p.seconds.end());
        (p.pass ? cal.passes : cal.steps).push_back(p.point);
    }

    const LinearFit pass = fit_nonnegative(cal.passes);
    const LinearFit step = fit_nonnegative(cal.steps);
    CostModel& m = cal.cost;
    m.pass_fixed = pass.k[0];
    m.pass_per_token = pass.k[1];
    m.pass_per_token_sq = pass.k[2];
    m.step_fixed = step.k[0];
    m.step_per_sequence = step.k[1];
    m.step_per_context = step.k[2];
    m.fit_error = std::max(pass.max_error, step.max_error);
    m.source = "measured on this machine";
    m.model = model.config().describe();
    cal.seconds = seconds_since(start);
    return cal;
}

// ------------------------------------------------- the queue's own level

// The probes time each shape alone, over and over. A queue runs the same
// shapes in its own order and mix: a decode step right after a prefill
// (37% of continuous batching's decode steps), caches that grow, a new
// cache for every request, one-sequence steps one after another (all of
// serial service), and what the formulas fit worst: the smallest batches.
// So beside the probes (between their rounds), run a short real queue and
// price each step it ran with the formulas too: for each kind of step, measured over priced is
// the level the queue runs it at, and the cost model keeps it as a scale.
class LevelingExecutor : public Executor {
  public:
    // `real` runs the steps, or replays them (real_queue.h).
    LevelingExecutor(Executor& real, const CostModel& cost, std::vector<QueueLevel>& levels)
        : real_(real), priced_(cost), levels_(levels) {}
    double run(const StepPlan& plan) override {
        const std::size_t kind = !plan.is_decode_step() ? 0 : plan.rows.size() == 1 ? 1 : 2;
        const double priced = priced_.run(plan), measured = real_.run(plan);
        levels_[kind].steps += 1;
        levels_[kind].priced += priced;
        levels_[kind].measured += measured;
        return measured;
    }
    void release(const Request& r) override { real_.release(r); }

  private:
    Executor& real_;
    SimulatedExecutor priced_;
    std::vector<QueueLevel>& levels_;
};

// The short real queues (serial service of a few requests, continuous
// batching of more, both with the cache) have run (RealQueue::run_once);
// replayed at each step's fastest time and priced by the formulas, they
// set the cost model's three scales.
inline void level_on_queues(std::span<RealQueue> queues, const MemoryBudget& budget,
                            Calibration& cal) {
    const CostModel formulas = cal.cost;
    cal.queue = {{"prefills"}, {"one-sequence decode steps"}, {"batched decode steps"}};
    for (RealQueue& q : queues) {
        q.fastest.replay();
        LevelingExecutor executor(q.fastest, formulas, cal.queue);
        run_schedule(q.requests, q.policy, budget, executor);
    }
    auto scale = [](const QueueLevel& level) {
        return level.priced > 0 && level.measured > 0 ? level.measured / level.priced : 1.0;
    };
    cal.cost.prefill_scale = scale(cal.queue[0]);
    cal.cost.single_step_scale = scale(cal.queue[1]);
    cal.cost.batch_step_scale = scale(cal.queue[2]);
}

}  // namespace kv
