// Chapter 08's experiment: the queue, its prompts now sharing their start,
// on blocks: in the simulator without and with the prefix cache, and its
// first requests on the real engine's blocks; and n answers to one prompt
// on the engine, their blocks counted against the copy-on-write arithmetic.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "../../common/core/block_pool.h"
#include "../../common/core/generation.h"
#include "../../common/core/transformer.h"
#include "../../common/kit/flags.h"
#include "../../common/kit/model_flags.h"
#include "../../common/kit/program.h"  // Progress
#include "../../common/lab/queue_flags.h"
#include "../../common/serving/metrics.h"
#include "../../common/serving/prefix_sharing_memory.h"
#include "../../common/serving/scheduler.h"
#include "../../common/serving/shared_blocks_executor.h"
#include "parallel_samples.h"
#include "shared_workload.h"

namespace kv::ch08 {

// One queue, run once on one side.
struct QueueRun {
    bool share = false;   // with the prefix cache
    bool engine = false;  // the real engine, or the simulator
    int requests = 0;
    Summary summary;
    std::int64_t prompt_tokens = 0, prompt_from_cache = 0;  // the prompts as they arrived
    std::int64_t prefilled = 0;                             // positions prefills computed
    std::int64_t preemptions = 0, evictions = 0;
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
    int copies_engine = 0;
};

// The chapter's parameters (its flags) and their check.
struct Setup {
    Config model;              // --layers, --dim, ... (the model's shape)
    std::uint64_t seed = 1;    // of the weights, the prompts and the queue
    QueueOptions queue;        // --requests ... --calibrate (lab/queue_flags.h)
    SharingOptions sharing;    // S, follow-ups, look-back, n (shared_workload.h)
    int block_size = 16;       // positions per block (vLLM's default)
    double watermark = 0.05;   // share of the pool admission keeps free (chapter 07 varies it)
    int engine_requests = 48;  // the queue's first requests on the engine; 0: none

    Setup() { model.max_seq = 1024; }  // room for a system prompt and a follow-up's history

    void add_flags(Flags& flags) {
        add_model_flags(flags, model, seed);
        add_queue_flags(flags, queue);
        flags.add("system-prompt", sharing.system_prompt, 0, 1 << 20,
                  "S: tokens of the system prompt every request starts with");
        flags.add("follow-ups", sharing.follow_ups, 0.0, 1.0,
                  "share of requests that continue an earlier conversation");
        flags.add("look-back", sharing.look_back, 1, 1 << 20,
                  "a follow-up continues one of the previous this-many requests");
        flags.add("samples", sharing.samples, 1, 64, "n: requests in a row asking the same prompt");
        flags.add("block-size", block_size, 1, 1 << 16, "positions per block");
        flags.add("engine-requests", engine_requests, 0, 10'000'000,
                  "requests of the queue the real engine runs beside the simulator (0: none)");
    }

    void check() const {
        check_queue(model, queue);
        const WorkloadOptions& w = queue.workload;
        if (std::int64_t(sharing.system_prompt) + w.prompt_max + w.answer_max - 1 > model.max_seq)
            throw UsageError("--system-prompt " + std::to_string(sharing.system_prompt) +
                             " + --prompt-max " + std::to_string(w.prompt_max) +
                             " + --answer-max " + std::to_string(w.answer_max) +
                             " - 1 exceeds the model's --max-seq " + std::to_string(model.max_seq));
        // A follow-up never runs past --max-seq.
        check_blocks(model, "--kv-budget-mib", queue.kv_budget_mib, block_size, model.max_seq,
                     true);
        // The real engine runs whatever the cost model: the parallel samples
        // always, the queue's first requests unless --engine-requests 0. One
        // at a time, each with the model's weights and its widest pass.
        const std::uint64_t queue_positions =
            engine_requests ? std::uint64_t(blocks()) * std::uint64_t(block_size) : 0;
        try {
            check_model(model, std::max(queue_positions, sample_positions()),
                        std::uint64_t(sharing.system_prompt) + std::uint64_t(w.prompt_max));
        } catch (const UsageError& e) {
            throw UsageError("--system-prompt " + std::to_string(sharing.system_prompt) + ": " +
                             std::to_string(kMaxSamples) + " parallel samples of " +
                             std::to_string(sample_prompt()) +
                             " prompt positions each: " + e.what());
        }
        // Every prompt's tokens are kept: a follow-up's grows up to --max-seq.
        if (sharing.follow_ups > 0)
            check_prompt_tokens(
                w, std::uint64_t(model.max_seq),
                "--max-seq " + std::to_string(model.max_seq) + ", as far as a follow-up grows");
        else
            check_prompt_tokens(w,
                                std::uint64_t(sharing.system_prompt) + std::uint64_t(w.prompt_max),
                                "--system-prompt + --prompt-max");
    }

    // The parallel samples' prompt (S and the workload's mean prompt), and
    // the positions their pool holds: each of kMaxSamples its own copy.
    int sample_prompt() const {
        const WorkloadOptions& w = queue.workload;
        return sharing.system_prompt + (w.prompt_min + w.prompt_max) / 2;
    }
    std::uint64_t sample_positions() const {
        const int positions = sample_prompt() + queue.workload.answer_len - 1;
        return std::uint64_t(blocks_copying_the_prompt(positions, kMaxSamples, block_size)) *
               std::uint64_t(block_size);
    }
    static constexpr int kMaxSamples = 8;  // parallel samples counted: n = 1 .. this

    int blocks() const {
        return int((queue.kv_budget_mib << 20) / BlockPool::bytes_per_block(model, block_size));
    }
    Policy continuous() const { return {"continuous, cache", queue.batch, true, true}; }
    std::vector<Request> shared_queue() const {
        return make_shared_workload(workload_of(queue, seed), sharing, model.vocab_size,
                                    model.max_seq);
    }
};

struct Results {
    Setup setup;              // what ran
    StepCalibration pricing;  // its .cost prices the simulator's steps
    int blocks = 0;           // in the budget
    std::uint64_t bytes_per_block = 0;
    QueueRun without, with;                    // the whole queue in the simulator
    std::vector<QueueRun> first;               // its first requests: simulator, engine
    int sample_prompt = 0, sample_answer = 0;  // the parallel samples' lengths
    std::vector<SampleRow> samples;            // n = 1 .. kMaxSamples
};

struct Experiment : Setup {
    static constexpr bool draws_plots = false;  // its tables say it all: no --plot-dir

    Results run() const {
        Results r;
        r.setup = *this;
        r.pricing = price_steps(model, seed, queue);
        r.blocks = blocks();
        r.bytes_per_block = BlockPool::bytes_per_block(model, block_size);
        const std::vector<Request> all = shared_queue();
        Progress progress("chapter 08:");  // long work shows, from outside, that it runs
        progress.update(1, 4, "the queue in the simulator, without sharing");
        r.without = simulate(r, all, false);
        progress.update(2, 4, "with sharing");
        r.with = simulate(r, all, true);
        Transformer engine(model, seed);
        if (const int n = std::min(engine_requests, int(all.size())); n > 0) {
            progress.update(3, 4, "the queue's first requests on the engine");
            const std::span<const Request> first(all.data(), std::size_t(n));
            r.first = {simulate(r, first, true), run_on_the_engine(first, engine)};
        }
        progress.update(4, 4, "parallel samples on the engine");
        count_parallel_samples(r, engine);
        return r;
    }

  private:
    static QueueRun tally(bool share, bool engine, std::span<const Request> requests,
                          const Schedule& s, const PrefixSharingMemory& memory) {
        const PrefixCache* cache = memory.prefix_cache();
        return {share,
                engine,
                int(requests.size()),
                summarize(s),
                memory.prompt_tokens(),
                memory.prompt_tokens_from_cache(),
                memory.positions_admitted() - memory.positions_from_cache(),
                s.preemptions,
                cache ? cache->evictions() : 0,
                memory.mean_named_blocks(),
                memory.mean_held_blocks()};
    }

    // The block manager over a ledger alone: the same decisions, no numbers.
    QueueRun simulate(const Results& r, std::span<const Request> requests, bool share) const {
        BlockLedger ledger(block_size, r.blocks);
        PrefixSharingMemory memory(ledger, {.watermark = watermark, .share = share});
        SimulatedExecutor executor(r.pricing.cost);
        const Schedule s = run_schedule(requests, continuous(), memory, PrefillFirst{}, executor);
        return tally(share, false, requests, s, memory);
    }

    // The same block manager over the engine's pool, which the executor fills.
    QueueRun run_on_the_engine(std::span<const Request> requests, Transformer& engine) const {
        BlockPool pool(model, block_size, blocks());
        PrefixSharingMemory memory(pool, {.watermark = watermark, .share = true});
        SharedBlocksExecutor executor(engine, seed, pool, memory);
        const Schedule s = run_schedule(requests, continuous(), memory, PrefillFirst{}, executor);
        return tally(true, true, requests, s, memory);
    }

    // n answers to one prompt of the workload's mean length after S.
    void count_parallel_samples(Results& r, Transformer& engine) const {
        const WorkloadOptions& w = queue.workload;
        r.sample_prompt = sample_prompt();
        r.sample_answer = w.answer_len;
        const std::vector<int> prompt = fixed_prompt(r.sample_prompt, model.vocab_size, seed + 8);
        const int positions = r.sample_prompt + r.sample_answer - 1;
        for (int n = 1; n <= std::min(kMaxSamples, model.vocab_size); ++n) {
            const std::int64_t copying = blocks_copying_the_prompt(positions, n, block_size);
            BlockPool pool(model, block_size, int(copying));
            const ParallelSamples s = sample_in_parallel(engine, pool, prompt, r.sample_answer, n);
            r.samples.push_back(
                {n, s.blocks_used,
                 blocks_with_copy_on_write(r.sample_prompt, positions, n, block_size), copying,
                 s.copies_on_write});
        }
    }
};

}  // namespace kv::ch08
