// Chapter 09's experiment: chapter 05's queue on chapter 07's paged
// memory, its steps filled by each rule of step_policies.h, with chapter
// 05's short prompts and with 512-token prompts, in the simulator
// (`make validate` runs them on the engine too).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "../../common/core/block_pool.h"
#include "../../common/core/config.h"
#include "../../common/kit/flags.h"
#include "../../common/kit/model_flags.h"
#include "../../common/kit/program.h"  // Progress
#include "../../common/lab/queue_flags.h"
#include "../../common/serving/metrics.h"
#include "../../common/serving/paged_memory.h"
#include "../../common/serving/scheduler.h"
#include "step_policies.h"

namespace kv::ch09 {

// The chunk sizes every run tries (with the headline's own).
inline const std::vector<int> kChunks = {16, 32, 64, 128, 256, 512};

// How steps are filled: chapter 05's rule, batched prefill, or chunks.
struct StepRule {
    std::string name;                              // "prefill first", "chunked 64", ...
    int chunk = 0;                                 // chunked prefill's chunk size; 0 for the others
    std::shared_ptr<const StepComposition> steps;  // the rule itself (step_policies.h)
};
inline const StepRule kPrefillFirst{"prefill first", 0, std::make_shared<PrefillFirst>()};
inline const StepRule kBatchedPrefill{"batched prefill", 0, std::make_shared<BatchedPrefill>()};
inline StepRule chunked(int chunk) {
    return {"chunked " + std::to_string(chunk), chunk, std::make_shared<ChunkedPrefill>(chunk)};
}

// The chapter's model: `c` with room for a 512-token prompt and its answer.
inline Config chapter_model(Config c = {}) {
    c.max_seq = 1024;
    return c;
}

// How every queue is served: continuous batching with the cache, on blocks.
struct Server {
    int batch = 32;             // most requests running at once
    PagedMemoryOptions memory;  // the pool's blocks, their size, the watermark
    // One run of `requests` under `rule` through `executor`, on fresh memory.
    Schedule serve(std::span<const Request> requests, const StepRule& rule,
                   Executor& executor) const {
        PagedMemory paged(memory);
        return run_schedule(requests, book_policies(batch)[kContinuousCache], paged, *rule.steps,
                            executor);
    }
};

// Counts what the steps carry, around the executor that runs them.
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
    std::int64_t mixed = 0;        // steps with decode rows and prompt tokens both
    std::int64_t most_prompt = 0;  // the most prompt tokens one step carried

  private:
    Executor& inner_;
};

struct QueueRun {
    std::string workload;  // "short prompts" or "512-token prompts"
    StepRule rule;
    Summary summary;
    std::int64_t steps = 0;  // decode steps (every step with a decode row)
    std::int64_t mixed = 0, most_prompt = 0;
};

inline const std::string kShortPrompts = "short prompts";
inline std::string long_prompts(int n) {
    return std::to_string(n) + "-token prompts";
}

// The chapter's parameters (its flags) and their check.
struct Setup {
    Config model = chapter_model();  // 512-token prompts need a longer context than chapter 05's
    std::uint64_t seed = 1;          // seed of the weights and the workload
    QueueOptions queue;              // --requests ... --calibrate (lab/queue_flags.h)
    int chunk = 64;                  // the headline's chunk size: prompt tokens per step at most
    int long_prompt = 512;           // the second workload's prompt length
    int block_size = 16;             // chapter 07's blocks
    double watermark = 0.05;         // share of the blocks admission keeps free

    Setup() { queue.kv_budget_mib = 64; }  // a batch of 32 of the 512-token prompts fits

    void add_flags(Flags& flags) {
        add_model_flags(flags, model, seed);
        add_queue_flags(flags, queue);
        flags.add("chunk", chunk, 1, 1 << 20,
                  "chunked prefill: prompt tokens per step at most (the headline's)");
        flags.add("long-prompt", long_prompt, 1, 1 << 20, "the second workload's prompt length");
        flags.add("block-size", block_size, 1, 1 << 16, "positions per block (chapter 07)");
        flags.add("watermark", watermark, 0.0, 0.5, "share of the blocks admission keeps free");
    }

    std::uint64_t pool_blocks() const {
        return (queue.kv_budget_mib << 20) / BlockPool::bytes_per_block(model, block_size);
    }

    void check() const {
        check_queue(model, queue);
        const WorkloadOptions& w = queue.workload;
        if (std::int64_t(long_prompt) + w.answer_max - 1 > model.max_seq)
            throw UsageError("--long-prompt " + std::to_string(long_prompt) + " + --answer-max " +
                             std::to_string(w.answer_max) + " - 1 exceeds the model's --max-seq " +
                             std::to_string(model.max_seq));
        // The simulator's pool is counted, not allocated.
        check_blocks(model, "--kv-budget-mib", queue.kv_budget_mib, block_size,
                     std::max(long_prompt, w.prompt_max) + w.answer_max - 1, false);
    }

    Server server() const {
        return {queue.batch,
                {.blocks = int(pool_blocks()),
                 .block_size = block_size,
                 .watermark = watermark,
                 .preemption = Preemption::recompute}};
    }
};

struct Results {
    Setup setup;             // what ran
    WorkloadOptions work;    // the short prompts; the long ones differ only in length
    int blocks = 0;          // in the KV budget
    StepCalibration prices;  // the step cost, and where it came from
    std::vector<StepRule> rules;
    std::vector<QueueRun> runs;  // (workloads, rules)

    const QueueRun& run(const std::string& workload, const std::string& rule) const {
        for (const QueueRun& q : runs)
            if (q.workload == workload && q.rule.name == rule) return q;
        throw std::logic_error("no run of " + rule + " on " + workload);
    }
};

struct Experiment : Setup {
    Results run() const {
        Results r;
        r.setup = *this;
        r.work = workload_of(queue, seed);
        r.blocks = int(pool_blocks());
        r.prices = price_steps(model, seed, queue);
        r.rules = {kPrefillFirst, kBatchedPrefill};
        std::set<int> chunks(kChunks.begin(), kChunks.end());
        chunks.insert(chunk);
        for (int c : chunks) r.rules.push_back(chunked(c));

        WorkloadOptions long_work = r.work;
        long_work.prompt_min = long_work.prompt_max = long_prompt;
        const Server s = server();
        // Long work shows, from outside, that it runs.
        Progress progress("chapter 09:");
        const int parts = 2 * int(r.rules.size());
        for (const auto& [name, requests] :
             {std::pair{kShortPrompts, make_workload(r.work)},
              std::pair{long_prompts(long_prompt), make_workload(long_work)}})
            for (const StepRule& rule : r.rules) {
                progress.update(int(r.runs.size()) + 1, parts,
                                "the queue in the simulator: " + name + ", " + rule.name);
                SimulatedExecutor priced(r.prices.cost);
                CountingExecutor counting(priced);
                const Schedule done = s.serve(requests, rule, counting);
                r.runs.push_back({name, rule, summarize(done), done.decode_steps, counting.mixed,
                                  counting.most_prompt});
            }
        return r;
    }
};

}  // namespace kv::ch09
