// Chapter 08's experiment: its parameters, their check, and the run.
//
// The queue is the one every queue chapter shares (the model and queue
// flags), its prompts now sharing their start (shared_workload.h), served
// by continuous batching with the cache on blocks (chapter 07). Each queue
// runs in the simulator twice, without the prefix cache and with it:
//   at every length S of the system prompt in a sweep (the chapter's S
//     among them), with follow-ups that resend earlier prompts;
//   with n-sample requests: groups of n asking one prompt.
// The first requests of the queue at the chapter's S also run on the real
// engine with the cache, its blocks in a real pool, beside the simulator on
// the same requests. Apart from the queue, n answers to one prompt on the
// engine (1 to 8 of them), their blocks counted against the copy-on-write
// arithmetic and against copying the prompt's cache for each.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "../../common/core/block_pool.h"
#include "../../common/core/generation.h"
#include "../../common/core/transformer.h"
#include "../../common/kit/flags.h"
#include "../../common/kit/machine.h"
#include "../../common/kit/model_flags.h"
#include "../../common/kit/queue_flags.h"
#include "../../common/serving/metrics.h"
#include "../../common/serving/paged_memory.h"  // blocks_for
#include "../../common/serving/scheduler.h"
#include "parallel_samples.h"
#include "prefix_sharing_memory.h"
#include "shared_blocks_executor.h"
#include "shared_workload.h"

namespace kv::ch08 {

// The system prompt lengths the sweep tries (with the chapter's own).
inline const std::vector<int> kSystemPrompts = {0, 128, 256, 512};

inline const std::string kSystemPromptWorkload = "system prompt";
inline const std::string kSamplesWorkload = "n samples";

// One queue, run once on one side.
struct QueueRun {
    std::string workload;  // kSystemPromptWorkload or kSamplesWorkload
    int system_prompt = 0;
    bool share = false;   // with the prefix cache
    bool engine = false;  // the real engine, or the simulator
    int requests = 0;
    Summary summary;
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
    Config model;
    WorkloadOptions work;
    int batch = 0;
    std::uint64_t kv_budget_mib = 0;
    StepCalibration pricing;  // its .cost prices the simulator's steps
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

    // The simulator's run of the whole queue.
    const QueueRun& run(const std::string& workload, int s, bool share) const {
        for (const QueueRun& q : runs)
            if (q.workload == workload && q.system_prompt == s && q.share == share && !q.engine &&
                q.requests == work.requests)
                return q;
        throw std::logic_error("no queue run of " + workload + " at S = " + std::to_string(s));
    }
};

struct Experiment {
    Config model;              // --layers, --dim, ... (the model's shape)
    std::uint64_t seed = 1;    // of the weights, the prompts and the queue
    QueueOptions queue;        // --requests ... --calibrate (kit/queue_flags.h)
    SharingOptions sharing;    // S, follow-ups, look-back (shared_workload.h)
    int samples = 4;           // n of the n-sample queue
    int block_size = 16;       // positions per block (vLLM's default)
    double watermark = 0.05;   // share of the pool admission keeps free
    int engine_requests = 48;  // the queue's first requests on the engine; 0: none
    int max_samples = 8;       // parallel samples counted: n = 1 .. this

    Experiment() { model.max_seq = 1024; }  // room for a system prompt and a follow-up's history

    void add_flags(Flags& flags) {
        add_model_flags(flags, model, seed);
        add_queue_flags(flags, queue);
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
                  "requests of the queue the real engine runs beside the simulator (0: none)");
        flags.add("max-samples", max_samples, 1, 64, "parallel samples counted: n = 1 .. this");
    }

    void check() const {
        check_queue(model, queue);
        const WorkloadOptions& w = queue.workload;
        const std::int64_t longest =
            std::int64_t(sharing.system_prompt) + w.prompt_max + w.answer_max - 1;
        if (longest > model.max_seq)
            throw UsageError("--system-prompt " + std::to_string(sharing.system_prompt) +
                             " + --prompt-max " + std::to_string(w.prompt_max) +
                             " + --answer-max " + std::to_string(w.answer_max) +
                             " - 1 exceeds the model's --max-seq " + std::to_string(model.max_seq));
        if (block_size > model.max_seq)
            throw UsageError("--block-size " + std::to_string(block_size) +
                             " is longer than the model's --max-seq " +
                             std::to_string(model.max_seq));
        const std::uint64_t per_block = BlockPool::bytes_per_block(model, block_size);
        const std::uint64_t pool_blocks = (queue.kv_budget_mib << 20) / per_block;
        if (pool_blocks > std::uint64_t(std::numeric_limits<int>::max()))
            throw UsageError("--kv-budget-mib " + std::to_string(queue.kv_budget_mib) +
                             " makes more blocks than a block table can count");
        // The longest request alone, in whole blocks (a follow-up is never
        // longer than --max-seq allows: shared_workload.h).
        const std::uint64_t need = std::uint64_t(blocks_for(model.max_seq, block_size));
        if (pool_blocks < need)
            throw UsageError("--kv-budget-mib " + std::to_string(queue.kv_budget_mib) + " holds " +
                             std::to_string(pool_blocks) + " blocks of " +
                             std::to_string(block_size) + " positions; a request of --max-seq " +
                             std::to_string(model.max_seq) + " positions needs " +
                             std::to_string(need));
        if (const std::string over = beyond_memory(double(queue.kv_budget_mib << 20), 0.5);
            !over.empty())
            throw UsageError("--kv-budget-mib " + std::to_string(queue.kv_budget_mib) +
                             " MiB of blocks would be " + over);
    }

    int blocks() const {
        return int((queue.kv_budget_mib << 20) / BlockPool::bytes_per_block(model, block_size));
    }
    Policy continuous() const { return {"continuous, cache", queue.batch, true, true}; }
    // The queue at system prompt `s` (n = 1) or of n-sample groups (follow_ups 0, n).
    std::vector<Request> shared_queue(const SharingOptions& s) const {
        return make_shared_workload(workload_of(queue, seed), s, model.vocab_size, model.max_seq);
    }

    Results run() const {
        Results r;
        r.model = model;
        r.work = workload_of(queue, seed);
        r.batch = queue.batch;
        r.kv_budget_mib = queue.kv_budget_mib;
        r.pricing = price_steps(model, seed, queue);
        r.sharing = sharing;
        r.block_size = block_size;
        r.watermark = watermark;
        r.bytes_per_block = BlockPool::bytes_per_block(model, block_size);
        r.blocks = blocks();
        r.system_prompts = system_prompts();
        for (int s : r.system_prompts) {
            SharingOptions o = sharing;
            o.system_prompt = s;
            const std::vector<Request> requests = shared_queue(o);
            for (bool share : {false, true})
                r.runs.push_back(simulate(r, kSystemPromptWorkload, s, requests, share));
        }
        SharingOptions n_samples = sharing;
        n_samples.follow_ups = 0;
        n_samples.samples = samples;
        r.samples_per_prompt = samples;
        const std::vector<Request> grouped = shared_queue(n_samples);
        for (bool share : {false, true})
            r.runs.push_back(simulate(r, kSamplesWorkload, sharing.system_prompt, grouped, share));
        Transformer engine(model, seed);
        // The engine's shared blocks beside the simulator, on the same first requests.
        const std::vector<Request> all = shared_queue(sharing);
        const int n = std::min(engine_requests, int(all.size()));
        if (n > 0) {
            const std::span<const Request> first(all.data(), std::size_t(n));
            const int s = sharing.system_prompt;
            r.runs.push_back(simulate(r, kSystemPromptWorkload, s, first, true));
            r.runs.push_back(run_on_the_engine(kSystemPromptWorkload, s, first, engine));
        }
        count_parallel_samples(r, engine);
        return r;
    }

  private:
    // The sweep's lengths that fit the model, with the chapter's S.
    std::vector<int> system_prompts() const {
        const WorkloadOptions& w = queue.workload;
        std::vector<int> s;
        for (int len : kSystemPrompts)
            if (len + w.prompt_max + w.answer_max - 1 <= model.max_seq) s.push_back(len);
        if (std::find(s.begin(), s.end(), sharing.system_prompt) == s.end())
            s.insert(std::upper_bound(s.begin(), s.end(), sharing.system_prompt),
                     sharing.system_prompt);
        return s;
    }

    static QueueRun tally(const std::string& workload, int s, bool share, bool engine,
                          std::span<const Request> requests, const Schedule& schedule,
                          const PrefixSharingMemory& memory) {
        QueueRun q;
        q.workload = workload;
        q.system_prompt = s;
        q.share = share;
        q.engine = engine;
        q.requests = int(requests.size());
        q.summary = summarize(schedule);
        q.prompt_tokens = memory.prompt_tokens();
        q.prompt_from_cache = memory.prompt_tokens_from_cache();
        q.positions_admitted = memory.positions_admitted();
        q.positions_from_cache = memory.positions_from_cache();
        q.preemptions = schedule.preemptions;
        q.recomputed = memory.positions_recomputed();
        q.evictions = memory.prefix_cache() ? memory.prefix_cache()->evictions() : 0;
        q.mean_named = memory.mean_named_blocks();
        q.mean_held = memory.mean_held_blocks();
        return q;
    }

    // The block manager over a ledger alone: the same decisions, no numbers.
    QueueRun simulate(const Results& r, const std::string& workload, int s,
                      std::span<const Request> requests, bool share) const {
        BlockLedger ledger(block_size, r.blocks);
        PrefixSharingMemory memory(ledger, {.watermark = watermark, .share = share});
        SimulatedExecutor executor(r.pricing.cost);
        const Schedule schedule =
            run_schedule(requests, continuous(), memory, PrefillFirst{}, executor);
        return tally(workload, s, share, false, requests, schedule, memory);
    }

    // The same block manager over the engine's pool, whose blocks the
    // executor fills where the tables say.
    QueueRun run_on_the_engine(const std::string& workload, int s,
                               std::span<const Request> requests, Transformer& engine) const {
        BlockPool pool(model, block_size, blocks());
        PrefixSharingMemory memory(pool, {.watermark = watermark, .share = true});
        SharedBlocksExecutor executor(engine, seed, pool, memory, StepClock::thread_cpu);
        const Schedule schedule =
            run_schedule(requests, continuous(), memory, PrefillFirst{}, executor);
        return tally(workload, s, true, true, requests, schedule, memory);
    }

    // n answers to one prompt of the workload's mean length after S.
    void count_parallel_samples(Results& r, Transformer& engine) const {
        const WorkloadOptions& w = queue.workload;
        r.sample_prompt = sharing.system_prompt + (w.prompt_min + w.prompt_max) / 2;
        r.sample_answer = w.answer_len;
        const std::vector<int> prompt = fixed_prompt(r.sample_prompt, model.vocab_size, seed + 8);
        const int positions = r.sample_prompt + r.sample_answer - 1;
        for (int n = 1; n <= max_samples; ++n) {
            BlockPool pool(model, block_size,
                           int(blocks_copying_the_prompt(positions, n, block_size)));
            const ParallelSamples s = sample_in_parallel(engine, pool, prompt, r.sample_answer, n);
            r.samples.push_back(
                {n, s.blocks_used,
                 blocks_with_copy_on_write(r.sample_prompt, positions, n, block_size),
                 blocks_copying_the_prompt(positions, n, block_size), s.copies_on_write,
                 copies_on_write(r.sample_prompt, positions, n, block_size)});
        }
    }
};

}  // namespace kv::ch08
