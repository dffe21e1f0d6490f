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
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "../../common/core/block_pool.h"
#include "../../common/core/transformer.h"
#include "../../common/kit/flags.h"
#include "../../common/kit/machine.h"
#include "../../common/kit/model_flags.h"
#include "../../common/kit/program.h"
#include "../05_queue_simulation/experiment.h"
#include "../05_queue_simulation/metrics.h"
#include "../05_queue_simulation/real_executor.h"
#include "../07_paged_kv_cache/paged_executor.h"
#include "../07_paged_kv_cache/paged_memory.h"
#include "step_calibration.h"
#include "step_cost.h"
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

struct Experiment {
    ch05::Experiment queue;  // chapter 05's model, queue, batch and KV budget (its flags)
    int chunk = 64;          // the headline's chunk size: prompt tokens per step at most
    int long_prompt = 512;   // the second workload's prompt length
    int block_size = 16;     // chapter 07's blocks
    double watermark = 0.05;
    int engine_requests = 48;  // each queue's first requests on the real engine too; 0: none
    int rounds = 5;            // calibration rounds (the median is kept)

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
        flags.add("rounds", rounds, 1, 100, "calibration rounds per step shape (median)");
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
        price_the_steps(r, model);
        r.rules = {{kPrefillFirst, 0}, {kBatchedPrefill, 0}};
        std::vector<int> chunks = kChunks;
        if (std::find(chunks.begin(), chunks.end(), chunk) == chunks.end())
            chunks.insert(std::upper_bound(chunks.begin(), chunks.end(), chunk), chunk);
        for (int c : chunks) r.rules.push_back({chunked(c), c});

        WorkloadOptions long_work = r.work;
        long_work.prompt_min = long_work.prompt_max = long_prompt;
        const std::vector<std::pair<std::string, std::vector<Request>>> queues = {
            {kShortPrompts, make_workload(r.work)},
            {long_prompts(long_prompt), make_workload(long_work)}};
        Progress progress("the queues on the real engine, run");
        const int total = engine_requests > 0 ? int(queues.size() * r.rules.size()) : 0;
        int done = 0;
        for (const auto& [name, all] : queues)
            for (const StepRule& rule : r.rules)
                for (const auto& [engine, n] : sides()) {
                    r.runs.push_back(run_queue(name, rule, std::span(all).first(std::size_t(n)),
                                               engine, model, r));
                    if (engine) progress.update(++done, total);
                }
        return r;
    }

  private:
    // The widest batch the calibration times (chapter 05's limit).
    int calibrated_batch() const { return std::clamp(queue.batch, 1, kMostCalibratedBatch); }

    void price_the_steps(Results& r, Transformer& model) const {
        if (queue.cost_model == "analytic") {
            r.cost = analytic_step_cost(queue.model);
            return;
        }
        Progress progress("calibrating the step cost, round");
        const StepCalibration cal = calibrate_step_cost(
            model, calibrated_batch(), queue.model.max_seq - 1, std::max(chunk, 512), block_size,
            rounds, [&](int done, int of) { progress.update(done, of); });
        r.cost = cal.cost;
        r.probes = cal.probes;
        r.calibration_seconds = cal.seconds;
    }

    // chapter 05's queue_sides (validation.h)
    std::vector<std::pair<bool, int>> sides() const {
        return queue_sides(queue.workload.requests, engine_requests);
    }

    QueueRun run_queue(const std::string& name, const StepRule& rule,
                       std::span<const Request> requests, bool engine, Transformer& model,
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
        Schedule s;
        if (engine) {
            BlockPool pool(queue.model, block_size, r.blocks);
            PagedExecutor inner(model, queue.seed, pool, Preemption::recompute,
                                StepClock::thread_cpu);
            CountingExecutor counting(inner);
            s = run_schedule(requests, policy, memory, *steps, counting);
            q.mixed = counting.mixed;
            q.most_prompt = counting.most_prompt;
        } else {
            StepCostSimulator inner(r.cost);
            CountingExecutor counting(inner);
            s = run_schedule(requests, policy, memory, *steps, counting);
            q.mixed = counting.mixed;
            q.most_prompt = counting.most_prompt;
        }
        q.summary = summarize(s);
        q.steps = s.decode_steps;
        return q;
    }
};

}  // namespace kv::ch09
