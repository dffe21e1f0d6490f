// Chapter 09's experiment: its parameters, their check, and the run.
//
// The queue is chapter 05's (its flags: model, workload lengths, batch,
// KV budget), on chapter 07's paged memory, served by continuous batching
// with the cache. What changes is what each step carries: chapter 05's
// prefill-first steps, batched prefill, and chunked prefill at several
// chunk sizes (step_policies.h). Two workloads: chapter 05's short prompts,
// and the same queue with every prompt 512 tokens long. Each runs in the
// simulator, priced by one step cost for every mix (step_cost.h, measured
// on this machine or counted), and its first requests on the real engine
// too, side by side.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "../../common/core/block_pool.h"
#include "../../common/core/transformer.h"
#include "../../common/kit/answer_timing.h"  // PassesShown
#include "../../common/kit/flags.h"
#include "../../common/kit/machine.h"
#include "../../common/kit/model_flags.h"
#include "../../common/kit/program.h"
#include "../../common/lab/real_queue.h"
#include "../../common/lab/step_calibration.h"
#include "../../common/serving/metrics.h"
#include "../../common/serving/paged_executor.h"
#include "../../common/serving/paged_memory.h"
#include "../../common/serving/real_executor.h"
#include "../../common/serving/step_cost.h"
#include "../05_queue_simulation/experiment.h"
#include "step_policies.h"

namespace kv::ch09 {

// The chunk sizes the sweep tries (with the chapter's own).
inline const std::vector<int> kChunks = {16, 32, 64, 128, 256, 512};

// How steps are filled: chapter 05's rule, batched prefill, or chunks.
struct StepRule {
    std::string name;  // "prefill first", "batched prefill", "chunked 64"
    int chunk = 0;     // chunked prefill's chunk size; 0 for the others
};

struct QueueRun {
    std::string workload;  // "short prompts" or "512-token prompts"
    StepRule rule;
    bool engine = false;
    int requests = 0;
    Summary summary;
    std::int64_t steps = 0;        // decode steps (every step with a decode row)
    std::int64_t mixed = 0;        // steps with decode rows and prompt tokens both
    std::int64_t most_prompt = 0;  // the most prompt tokens one step carried
    double run_spread = 0;         // engine: its slowest run's time against its fastest's, minus 1
};

struct Results {
    Config config;
    WorkloadOptions work;
    int long_prompt = 0;
    int batch = 0;
    int block_size = 0, blocks = 0;
    std::uint64_t kv_budget_mib = 0;
    int chunk = 0;  // the headline's chunk size
    StepCost cost;
    std::vector<StepProbe> probes;  // measured: the calibration's steps
    std::vector<StepLevel> levels;  // measured: each kind of step in the short real queues
    double calibration_seconds = 0;
    std::vector<StepRule> rules;
    std::vector<QueueRun> runs;

    const QueueRun& run(const std::string& workload, const std::string& rule, bool engine,
                        int requests) const {
        for (const QueueRun& q : runs)
            if (q.workload == workload && q.rule.name == rule && q.engine == engine &&
                q.requests == requests)
                return q;
        throw std::logic_error("no run of " + rule + " on " + workload);
    }
};

inline const std::string kShortPrompts = "short prompts";
inline std::string long_prompts(int n) {
    return std::to_string(n) + "-token prompts";
}
inline const std::string kPrefillFirst = "prefill first";
inline const std::string kBatchedPrefill = "batched prefill";
inline std::string chunked(int c) {
    return "chunked " + std::to_string(c);
}

// The composition a rule names.
inline std::unique_ptr<StepComposition> steps_for(const StepRule& rule) {
    if (rule.name == kPrefillFirst) return std::make_unique<PrefillFirst>();
    if (rule.name == kBatchedPrefill) return std::make_unique<BatchedPrefill>();
    return std::make_unique<ChunkedPrefill>(rule.chunk);
}

// Counts what the steps carried, around the executor that runs them.
class CountingExecutor : public Executor {
  public:
    explicit CountingExecutor(Executor& inner) : inner_(inner) {}
    double run(const StepPlan& plan) override {
        const int prompt = prompt_tokens(plan);
        const bool decodes = std::any_of(plan.rows.begin(), plan.rows.end(), [](const StepRow& r) {
            return r.request->status == RequestStatus::decoding;
        });
        mixed += decodes && prompt > 0;
        most_prompt = std::max<std::int64_t>(most_prompt, prompt);
        return inner_.run(plan);
    }
    void release(const Request& r) override { inner_.release(r); }
    std::int64_t mixed = 0, most_prompt = 0;

  private:
    Executor& inner_;
};

// The short real queues that set each kind of step's level (step_calibration.h).
inline const std::string kLevelingQueue = "leveling";
inline constexpr int kLevelingRequests = 32;

// A queue the real engine runs kRealRuns times: its last run, each step
// at the fastest of its runs.
struct EngineQueue {
    EngineQueue(std::string w, StepRule r, std::span<const Request> q)
        : workload(std::move(w)), rule(std::move(r)), requests(q) {}
    std::string workload;
    StepRule rule;
    std::span<const Request> requests;
    FastestOfRuns fastest;
    QueueRun run;
};

// A workload by name: "short prompts" or "512-token prompts", and its requests.
using NamedQueue = std::pair<std::string, std::vector<Request>>;

// The real engine's queues, in the order they run: each runs kRealRuns
// times, each step at its fastest (chapter 05's real_queue.h), between
// the calibration's rounds when it is measured now. `sides` says how many
// requests of each queue the engine runs (chapter 05's queue_sides).
// Each leveling queue (`leveling`, none if empty) runs just before the
// long prompts' queue under its rule (the operating point's, for the
// headline's chunks): the machine's speed drifts over minutes, and a
// level carries the speed it was measured at into the simulator's
// prices, so it is measured in the same seconds as the queue it is
// compared with.
inline std::vector<EngineQueue> engine_queues(const std::vector<NamedQueue>& queues,
                                              const std::vector<StepRule>& rules,
                                              const std::vector<std::pair<bool, int>>& sides,
                                              std::span<const Request> leveling,
                                              const std::vector<StepRule>& leveling_rules) {
    std::vector<EngineQueue> engine;
    for (const auto& [name, all] : queues)
        for (const StepRule& rule : rules)
            for (const auto& [on_engine, n] : sides) {
                if (!on_engine) continue;
                for (const StepRule& level : leveling_rules)
                    if (!leveling.empty() && name != kShortPrompts && level.name == rule.name)
                        engine.emplace_back(kLevelingQueue, level, leveling);
                engine.emplace_back(name, rule, std::span(all).first(std::size_t(n)));
            }
    return engine;
}

struct Experiment {
    ch05::Experiment queue;  // chapter 05's model, queue, batch and KV budget (its flags)
    int chunk = 64;          // the headline's chunk size: prompt tokens per step at most
    int long_prompt = 512;   // the second workload's prompt length
    int block_size = 16;     // chapter 07's blocks
    double watermark = 0.05;
    int engine_requests = 48;  // each queue's first requests on the real engine too; 0: none
    int rounds = 5;            // calibration rounds (the fastest is kept)

    Experiment() {
        queue.validate = 0;
        queue.model.max_seq = 1024;  // room for 512-token prompts and their answers
        queue.kv_budget_mib = 64;    // a batch of 32 of them fits in blocks
    }

    void add_flags(Flags& flags) {
        queue.add_flags(flags);
        flags.add("chunk", chunk, 1, 1 << 20,
                  "chunked prefill: prompt tokens per step at most (the headline's)");
        flags.add("long-prompt", long_prompt, 1, 1 << 20, "the second workload's prompt length");
        flags.add("block-size", block_size, 1, 1 << 16, "positions per block (chapter 07)");
        flags.add("watermark", watermark, 0.0, 0.5, "share of the blocks admission keeps free");
        flags.add("engine-requests", engine_requests, 0, 10'000'000,
                  "requests of each queue the real engine runs too (0: the simulator only)");
        flags.add("rounds", rounds, 1, 100,
                  "calibration rounds per step shape (the fastest is kept)");
    }

    void check() const {
        queue.check();
        const Config& c = queue.model;
        const WorkloadOptions& w = queue.workload;
        if (!queue.calibration_file.empty() || !queue.save_calibration.empty())
            throw UsageError(
                "--calibration and --save-calibration are chapter 05's cost model; chapter 09 "
                "measures its own step cost (or counts it: --cost-model analytic)");
        if (std::int64_t(long_prompt) + w.answer_max - 1 > c.max_seq)
            throw UsageError("--long-prompt " + std::to_string(long_prompt) + " + --answer-max " +
                             std::to_string(w.answer_max) + " - 1 exceeds the model's --max-seq " +
                             std::to_string(c.max_seq));
        if (block_size > c.max_seq)
            throw UsageError("--block-size " + std::to_string(block_size) +
                             " is longer than the model's --max-seq " + std::to_string(c.max_seq));
        const std::uint64_t per_block = BlockPool::bytes_per_block(c, block_size);
        const std::uint64_t pool = (queue.kv_budget_mib << 20) / per_block;
        const int longest = std::max(long_prompt, w.prompt_max) + w.answer_max - 1;
        const std::uint64_t need = std::uint64_t((longest + block_size - 1) / block_size);
        if (pool < need || pool > std::uint64_t(std::numeric_limits<int>::max()))
            throw UsageError("--kv-budget-mib " + std::to_string(queue.kv_budget_mib) + " holds " +
                             std::to_string(pool) + " blocks of " + std::to_string(block_size) +
                             " positions; the longest request needs " + std::to_string(need));
        if (const std::string over = beyond_memory(double(queue.kv_budget_mib << 20), 0.5);
            !over.empty())
            throw UsageError("--kv-budget-mib " + std::to_string(queue.kv_budget_mib) +
                             " MiB of blocks would be " + over);
        if (queue.cost_model != "analytic")
            check_model(c,
                        step_calibration_positions(calibrated_batch(), c.max_seq - 1,
                                                   std::max(chunk, 512), block_size),
                        std::uint64_t(calibrated_batch() + std::max(chunk, 512)));
    }

    Results run() const {
        Results r;
        r.config = queue.model;
        r.work = queue.workload;
        r.work.seed = queue.seed;
        r.long_prompt = long_prompt;
        r.batch = queue.batch;
        r.block_size = block_size;
        r.kv_budget_mib = queue.kv_budget_mib;
        r.blocks =
            int((queue.kv_budget_mib << 20) / BlockPool::bytes_per_block(queue.model, block_size));
        r.chunk = chunk;
        Transformer model(queue.model, queue.seed);
        r.rules = {{kPrefillFirst, 0}, {kBatchedPrefill, 0}};
        std::vector<int> chunks = kChunks;
        if (std::find(chunks.begin(), chunks.end(), chunk) == chunks.end())
            chunks.insert(std::upper_bound(chunks.begin(), chunks.end(), chunk), chunk);
        for (int c : chunks) r.rules.push_back({chunked(c), c});

        WorkloadOptions long_work = r.work;
        long_work.prompt_min = long_work.prompt_max = long_prompt;
        const std::vector<NamedQueue> queues = {
            {kShortPrompts, make_workload(r.work)},
            {long_prompts(long_prompt), make_workload(long_work)}};
        // The short real queues that set each kind of step's level:
        // another sample of the long prompts (seed + 1), under the
        // headline's chunks and under prefill first.
        WorkloadOptions sample = long_work;
        sample.seed += 1;
        sample.requests = kLevelingRequests;
        const std::vector<Request> leveling_requests = make_workload(sample);
        const bool leveled = queue.cost_model != "analytic" && engine_requests > 0;
        std::vector<EngineQueue> engine =
            engine_queues(queues, r.rules, sides(),
                          leveled ? std::span(leveling_requests) : std::span<const Request>(),
                          {{chunked(chunk), chunk}, {kPrefillFirst, 0}});
        long done = 0;
        const long total = long(engine.size()) * kRealRuns;
        auto run_engine = [&](int runs) {
            // Its own line only while it runs: it runs between the
            // calibration's rounds, whose line waits meanwhile.
            Progress progress("the queues on the real engine, run");
            const PassesShown passes(model, progress);  // a long prompt's pass shows its layers
            for (int run = 0; run < runs; ++run)
                for (EngineQueue& e : engine) {
                    run_on_engine(e, model, r, {progress, done + 1, total});
                    progress.update(++done, total);
                }
        };
        price_the_steps(r, model, run_engine);
        // Each leveling queue's steps at their fastest, priced by the formula.
        r.levels = no_step_levels();
        for (EngineQueue& e : engine)
            if (e.workload == kLevelingQueue) {
                e.fastest.replay();
                StepLevelingExecutor leveling(e.fastest, r.cost, r.levels);
                run_queue(e.workload, e.rule, e.requests, true, leveling, r);
            }
        set_step_scales(r.cost, r.levels);
        for (const auto& [name, all] : queues)
            for (const StepRule& rule : r.rules)
                for (const auto& [on_engine, n] : sides()) {
                    if (!on_engine) {
                        r.runs.push_back(
                            simulate(name, rule, std::span(all).first(std::size_t(n)), r));
                        continue;
                    }
                    for (const EngineQueue& e : engine)
                        if (e.run.workload == name && e.run.rule.name == rule.name)
                            r.runs.push_back(e.run);
                }
        return r;
    }

  private:
    // The widest batch the calibration times (chapter 05's limit).
    int calibrated_batch() const { return std::clamp(queue.batch, 1, kMostCalibratedBatch); }

    // Counted, or measured now with run_engine(runs) between the rounds.
    void price_the_steps(Results& r, Transformer& model,
                         const std::function<void(int)>& run_engine) const {
        if (queue.cost_model == "analytic") {
            r.cost = analytic_step_cost(queue.model);
            run_engine(kRealRuns);
            return;
        }
        Progress progress("calibrating the step cost, round");
        const PassesShown passes(model, progress);  // a long pass shows its layers
        const StepCalibration cal = calibrate_step_cost(
            model, calibrated_batch(), queue.model.max_seq - 1, std::max(chunk, 512), block_size,
            rounds, [&](int done, int of) { progress.update(done, of); },
            [&](int round, int of) { run_engine(real_runs_after(round, of)); });
        r.cost = cal.cost;
        r.probes = cal.probes;
        r.calibration_seconds = cal.seconds;
    }

    // chapter 05's queue_sides (validation.h)
    std::vector<std::pair<bool, int>> sides() const {
        return queue_sides(queue.workload.requests, engine_requests);
    }

    // One queue in the simulator.
    QueueRun simulate(const std::string& name, const StepRule& rule,
                      std::span<const Request> requests, const Results& r) const {
        StepCostSimulator priced(r.cost);
        return run_queue(name, rule, requests, false, priced, r);
    }

    // One more run of a queue on the real engine, on a fresh pool.
    void run_on_engine(EngineQueue& e, Transformer& model, const Results& r,
                       const ch05::RunShown& shown) const {
        BlockPool pool(queue.model, block_size, r.blocks);
        PagedExecutor real(model, queue.seed, pool, Preemption::recompute, StepClock::thread_cpu);
        e.fastest.start_run(real);
        ch05::AnswersShown answers(e.fastest, shown, e.requests.size());
        e.run = run_queue(e.workload, e.rule, e.requests, true, answers, r);
        e.run.run_spread = e.fastest.run_spread();
    }

    QueueRun run_queue(const std::string& name, const StepRule& rule,
                       std::span<const Request> requests, bool engine, Executor& executor,
                       const Results& r) const {
        const Policy policy = book_policies(queue.batch)[kContinuousCache];
        const std::unique_ptr<StepComposition> steps = steps_for(rule);
        PagedMemory memory({.blocks = r.blocks,
                            .block_size = block_size,
                            .watermark = watermark,
                            .preemption = Preemption::recompute});
        QueueRun q;
        q.workload = name;
        q.rule = rule;
        q.engine = engine;
        q.requests = int(requests.size());
        CountingExecutor counting(executor);
        const Schedule s = run_schedule(requests, policy, memory, *steps, counting);
        q.mixed = counting.mixed;
        q.most_prompt = counting.most_prompt;
        q.summary = summarize(s);
        q.steps = s.decode_steps;
        return q;
    }
};

}  // namespace kv::ch09
