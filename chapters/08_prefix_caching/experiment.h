// Chapter 08's experiment: its parameters, their check, and the run.
//
// The queue is chapter 05's (the same flags: model, workload lengths,
// batch, KV budget, cost model), its prompts now sharing their start
// (shared_workload.h), served by continuous batching with the cache on
// blocks of chapter 07. Each queue runs twice, with the prefix cache and
// without it, in the simulator and on the real engine side by side:
//   at every length S of the system prompt in a sweep (the chapter's S
//     among them), with follow-ups that resend earlier prompts;
//   with n-sample requests: groups of n asking one prompt.
// Apart from the queue, n answers to one prompt on the engine (1 to 8 of
// them), their blocks counted against the copy-on-write arithmetic and
// against copying the prompt's cache for each.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "../../common/core/block_pool.h"
#include "../../common/core/generation.h"
#include "../../common/core/transformer.h"
#include "../../common/kit/answer_timing.h"  // PassesShown
#include "../../common/kit/flags.h"
#include "../../common/kit/machine.h"
#include "../../common/kit/program.h"
#include "../../common/serving/metrics.h"
#include "../05_queue_simulation/experiment.h"
#include "parallel_samples.h"
#include "prefix_sharing_memory.h"
#include "shared_blocks_executor.h"
#include "shared_workload.h"

namespace kv::ch08 {

// The system prompt lengths the sweep tries (with the chapter's own).
inline const std::vector<int> kSystemPrompts = {0, 128, 256, 512};

// One queue, run once on one side.
struct QueueRun {
    std::string workload;  // "system prompt" or "n samples"
    int system_prompt = 0;
    bool share = false;   // with the prefix cache
    bool engine = false;  // the real engine, or the simulator
    int requests = 0;
    Summary summary;
    std::vector<double> ttfts;  // sorted
    std::int64_t prompt_tokens = 0, prompt_from_cache = 0;
    std::int64_t positions_admitted = 0, positions_from_cache = 0;  // every admission
    std::int64_t preemptions = 0, recomputed = 0, evictions = 0;
    double mean_named = 0, mean_held = 0;  // blocks the tables name, and hold, per step
    double from_cache_share() const {
        return prompt_tokens ? double(prompt_from_cache) / double(prompt_tokens) : 0;
    }
};

// n answers to one prompt, on the engine and counted.
struct SampleRow {
    int n = 0;
    int blocks_engine = 0;            // the pool's blocks in use at the end
    std::int64_t blocks_counted = 0;  // blocks_with_copy_on_write
    std::int64_t blocks_copying = 0;  // each sample its own copy of the prompt
    int copies_engine = 0, copies_counted = 0;
};

struct Results {
    ch05::Results queue;  // chapter 05's model, queue lengths, budget and cost model
    SharingOptions sharing;
    int block_size = 0;
    int blocks = 0;  // in the budget
    double watermark = 0;
    std::uint64_t bytes_per_block = 0;
    std::vector<int> system_prompts;  // the sweep's lengths
    int samples_per_prompt = 0;       // n of the n-sample queue
    std::vector<QueueRun> runs;
    int sample_prompt = 0, sample_answer = 0;  // the parallel samples' lengths
    std::vector<SampleRow> samples;            // n = 1, 2, ...

    const QueueRun& run(const std::string& workload, int s, bool share, bool engine,
                        int requests) const {
        for (const QueueRun& q : runs)
            if (q.workload == workload && q.system_prompt == s && q.share == share &&
                q.engine == engine && q.requests == requests)
                return q;
        throw std::logic_error("no queue run of " + workload + " at S = " + std::to_string(s));
    }
    bool engine_ran_all() const {
        return std::any_of(runs.begin(), runs.end(), [&](const QueueRun& q) {
            return q.engine && q.requests == int(queue.queue.size());
        });
    }
};

inline const std::string kSystemPromptWorkload = "system prompt";
inline const std::string kSamplesWorkload = "n samples";

struct Experiment {
    ch05::Experiment queue;     // chapter 05's queue, budget and cost model (its flags)
    SharingOptions sharing;     // S, follow-ups, n (shared_workload.h)
    int samples = 4;            // n of the n-sample queue
    int block_size = 16;        // positions per block (vLLM's default)
    double watermark = 0.05;    // share of the pool admission keeps free
    int engine_requests = 100;  // the queue's first requests, on the real engine too; 0: none
    int max_samples = 8;        // parallel samples counted: n = 1 .. this

    Experiment() {
        queue.validate = 0;          // chapter 05's validation is its own chapter's business
        queue.model.max_seq = 1024;  // room for a system prompt and a follow-up's history
    }

    void add_flags(Flags& flags) {
        queue.add_flags(flags);
        flags.add("system-prompt", sharing.system_prompt, 0, 1 << 20,
                  "S: tokens of the system prompt every request starts with");
        flags.add("follow-ups", sharing.follow_ups, 0.0, 1.0,
                  "share of requests that continue an earlier conversation");
        flags.add("look-back", sharing.look_back, 1, 1 << 20,
                  "a follow-up continues one of the previous this-many requests");
        flags.add("samples", samples, 1, 64, "n: requests in a row asking the same prompt");
        flags.add("block-size", block_size, 1, 1 << 16, "positions per block");
        flags.add("watermark", watermark, 0.0, 0.5, "share of the blocks admission keeps free");
        flags.add("engine-requests", engine_requests, 0, 10'000'000,
                  "requests of each queue the real engine runs too (0: the simulator only)");
        flags.add("max-samples", max_samples, 1, 64, "parallel samples counted: n = 1 .. this");
    }

    void check() const {
        queue.check();
        const Config& c = queue.model;
        const WorkloadOptions& w = queue.workload;
        const std::int64_t longest =
            std::int64_t(sharing.system_prompt) + w.prompt_max + w.answer_max - 1;
        if (longest > c.max_seq)
            throw UsageError("--system-prompt " + std::to_string(sharing.system_prompt) +
                             " + --prompt-max " + std::to_string(w.prompt_max) +
                             " + --answer-max " + std::to_string(w.answer_max) +
                             " - 1 exceeds the model's --max-seq " + std::to_string(c.max_seq));
        if (block_size > c.max_seq)
            throw UsageError("--block-size " + std::to_string(block_size) +
                             " is longer than the model's --max-seq " + std::to_string(c.max_seq));
        // Each parallel sample starts with its own token (parallel_samples.h).
        if (max_samples > c.vocab_size)
            throw UsageError("--max-samples " + std::to_string(max_samples) +
                             " is more than the --vocab " + std::to_string(c.vocab_size) +
                             " first tokens the samples can differ by");
        const std::uint64_t per_block = BlockPool::bytes_per_block(c, block_size);
        const std::uint64_t pool_blocks = (queue.kv_budget_mib << 20) / per_block;
        if (pool_blocks > std::uint64_t(std::numeric_limits<int>::max()))
            throw UsageError("--kv-budget-mib " + std::to_string(queue.kv_budget_mib) +
                             " makes more blocks than a block table can count");
        // The longest request alone, in whole blocks (a follow-up is never
        // longer than --max-seq allows: shared_workload.h).
        const std::uint64_t need = std::uint64_t((c.max_seq + block_size - 1) / block_size);
        if (pool_blocks < need)
            throw UsageError("--kv-budget-mib " + std::to_string(queue.kv_budget_mib) + " holds " +
                             std::to_string(pool_blocks) + " blocks of " +
                             std::to_string(block_size) + " positions; a request of --max-seq " +
                             std::to_string(c.max_seq) + " positions needs " +
                             std::to_string(need));
        if (const std::string over = beyond_memory(double(queue.kv_budget_mib << 20), 0.5);
            !over.empty())
            throw UsageError("--kv-budget-mib " + std::to_string(queue.kv_budget_mib) +
                             " MiB of blocks would be " + over);
    }

    Results run() const {
        Results r;
        ch05::Experiment q = queue;
        q.calibration_context = queue.model.max_seq - 1;  // the longest follow-up may reach it
        r.queue = q.run();
        r.sharing = sharing;
        r.block_size = block_size;
        r.watermark = watermark;
        r.bytes_per_block = BlockPool::bytes_per_block(queue.model, block_size);
        r.blocks = int((queue.kv_budget_mib << 20) / r.bytes_per_block);
        Transformer model(queue.model, queue.seed);
        r.system_prompts = system_prompts();
        Progress progress("the queues on the real engine, run");
        const PassesShown passes(model, progress);  // a long prompt's pass shows its layers
        const int total = engine_requests > 0 ? 2 * int(r.system_prompts.size() + 1) : 0;
        int done = 0;
        auto both = [&](const std::string& name, const SharingOptions& s) {
            const std::vector<Request> all =
                make_shared_workload(r.queue.work, s, queue.model.vocab_size, queue.model.max_seq);
            for (const auto& [engine, n] : sides())
                for (bool share : {false, true}) {
                    const std::span<const Request> requests(all.data(), std::size_t(n));
                    r.runs.push_back(run_queue(name, s.system_prompt, requests, share, engine,
                                               model, r, {progress, done + 1, total}));
                    if (engine) progress.update(++done, total);
                }
        };
        for (int s : r.system_prompts) {
            SharingOptions o = sharing;
            o.system_prompt = s;
            both(kSystemPromptWorkload, o);
        }
        SharingOptions n_samples = sharing;
        n_samples.follow_ups = 0;
        n_samples.samples = samples;
        r.samples_per_prompt = samples;
        both(kSamplesWorkload, n_samples);
        count_parallel_samples(r, model);
        return r;
    }

  private:
    // The sweep's lengths that fit the model, with the chapter's S.
    std::vector<int> system_prompts() const {
        const WorkloadOptions& w = queue.workload;
        std::vector<int> s;
        for (int len : kSystemPrompts)
            if (len + w.prompt_max + w.answer_max - 1 <= queue.model.max_seq) s.push_back(len);
        if (std::find(s.begin(), s.end(), sharing.system_prompt) == s.end())
            s.insert(std::upper_bound(s.begin(), s.end(), sharing.system_prompt),
                     sharing.system_prompt);
        return s;
    }

    // chapter 05's queue_sides (validation.h)
    std::vector<std::pair<bool, int>> sides() const {
        return queue_sides(queue.workload.requests, engine_requests);
    }

    Policy continuous() const { return book_policies(queue.batch)[kContinuousCache]; }

    QueueRun run_queue(const std::string& name, int s, std::span<const Request> requests,
                       bool share, bool engine, Transformer& model, const Results& r,
                       const ch05::RunShown& shown) const {
        const SharingMemoryOptions o{.watermark = watermark, .share = share};
        const PrefillFirst steps;
        QueueRun q;
        q.workload = name;
        q.system_prompt = s;
        q.share = share;
        q.engine = engine;
        q.requests = int(requests.size());
        auto finish = [&](const Schedule& schedule, const PrefixSharingMemory& memory) {
            q.summary = summarize(schedule);
            q.ttfts = sorted_ttfts(schedule);
            q.prompt_tokens = memory.prompt_tokens();
            q.prompt_from_cache = memory.prompt_tokens_from_cache();
            q.positions_admitted = memory.positions_admitted();
            q.positions_from_cache = memory.positions_from_cache();
            q.preemptions = schedule.preemptions;
            q.recomputed = memory.positions_recomputed();
            q.evictions = memory.prefix_cache() ? memory.prefix_cache()->evictions() : 0;
            q.mean_named = memory.mean_named_blocks();
            q.mean_held = memory.mean_held_blocks();
        };
        if (engine) {
            BlockPool pool(queue.model, block_size, r.blocks);
            PrefixSharingMemory memory(pool, o);
            SharedBlocksExecutor executor(model, queue.seed, pool, memory, StepClock::thread_cpu);
            ch05::AnswersShown answers(executor, shown, requests.size());
            finish(run_schedule(requests, continuous(), memory, steps, answers), memory);
        } else {
            BlockLedger ledger(block_size, r.blocks);
            PrefixSharingMemory memory(ledger, o);
            SimulatedExecutor executor(r.queue.cost);
            finish(run_schedule(requests, continuous(), memory, steps, executor), memory);
        }
        return q;
    }

    // n answers to one prompt of the workload's mean length after S.
    void count_parallel_samples(Results& r, Transformer& model) const {
        const WorkloadOptions& w = queue.workload;
        r.sample_prompt = sharing.system_prompt + (w.prompt_min + w.prompt_max) / 2;
        r.sample_answer = w.answer_len;
        const std::vector<int> prompt =
            fixed_prompt(r.sample_prompt, queue.model.vocab_size, queue.seed + 8);
        const int positions = r.sample_prompt + r.sample_answer - 1;
        for (int n = 1; n <= max_samples; ++n) {
            BlockPool pool(queue.model, block_size,
                           int(blocks_copying_the_prompt(positions, n, block_size)));
            const ParallelSamples s = sample_in_parallel(model, pool, prompt, r.sample_answer, n);
            r.samples.push_back(
                {n, s.blocks_used,
                 blocks_with_copy_on_write(r.sample_prompt, positions, n, block_size),
                 blocks_copying_the_prompt(positions, n, block_size), s.copies_on_write,
                 copies_on_write(r.sample_prompt, positions, n, block_size)});
        }
    }
};

}  // namespace kv::ch08
