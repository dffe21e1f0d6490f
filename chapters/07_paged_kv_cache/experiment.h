// Chapter 07's experiment, on the queue every queue chapter shares: how
// many conversations fit, reserving the whole context against paging; the
// price of the block table on the engine; the queue in the simulator under
// each way of managing memory, at the budget and at a tight one; and the
// tight queue's first requests on the engine's pool.
#pragma once

#include <algorithm>
#include <cstdint>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "../../common/core/block_pool.h"
#include "../../common/core/kv_cache.h"
#include "../../common/core/paged_kv_cache.h"
#include "../../common/core/timing.h"
#include "../../common/core/transformer.h"
#include "../../common/kit/flags.h"
#include "../../common/kit/machine.h"
#include "../../common/kit/model_flags.h"
#include "../../common/kit/program.h"  // Progress
#include "../../common/kit/report.h"   // format_bytes
#include "../../common/lab/queue_flags.h"
#include "../../common/lab/timed_step.h"
#include "../../common/serving/memory_budget.h"
#include "../../common/serving/metrics.h"
#include "../../common/serving/paged_executor.h"
#include "../../common/serving/paged_memory.h"
#include "../../common/serving/scheduler.h"
#include "conversations_that_fit.h"
#include "swap_priced_executor.h"

namespace kv::ch07 {

// The block sizes the fit table compares (with --block-size); vLLM's default is 16.
inline const std::vector<int> kFitBlockSizes = {1, 8, 16, 32, 128};

inline const std::string kReserve = "reserve the whole context";
inline const std::string kPagedRecompute = "paged, recompute";
inline const std::string kPagedNoWatermark = "paged, recompute, no watermark";
inline const std::string kPagedSwap = "paged, swap";

// One way of managing the KV memory, run on one side.
struct QueueRun {
    std::string memory;  // kReserve, kPagedRecompute, ...
    std::uint64_t budget_mib = 0;
    bool engine = false;  // the real engine, or the simulator
    int requests = 0;
    Summary summary;
    std::int64_t preemptions = 0;
    std::int64_t positions_recomputed = 0;
    std::uint64_t bytes_swapped = 0;  // out and back in
};

// A decode step for `batch` sequences of `context` cached positions.
struct IndirectionRow {
    int context = 0;
    double contiguous_s = 0;  // median, thread CPU time
    double paged_s = 0;
    double ratio() const { return paged_s / contiguous_s; }
};

// The chapter's parameters (its flags) and their check.
struct Setup {
    Config model;                        // --layers, --dim, ... (the model's shape)
    std::uint64_t seed = 1;              // of the weights, the prompts and the queue
    QueueOptions queue;                  // --requests ... --calibrate (lab/queue_flags.h)
    int block_size = 16;                 // positions per block in the queue (vLLM's default)
    double watermark = 0.05;             // share of the pool admission keeps free
    std::uint64_t tight_budget_mib = 4;  // a budget where memory runs out
    int engine_requests = 48;            // the queue's first requests on the engine; 0: none
    int indirection_batch = 8;           // sequences in the decode steps timed both ways
    static constexpr int kRepeats = 15;  // timed decode steps per context and layout

    void add_flags(Flags& flags) {
        add_model_flags(flags, model, seed);
        add_queue_flags(flags, queue);
        flags.add("block-size", block_size, 1, 1 << 16, "positions per block in the queue");
        flags.add("watermark", watermark, 0.0, 0.5, "share of the blocks admission keeps free");
        flags.add("tight-budget-mib", tight_budget_mib, 1, 1 << 30,
                  "a second, smaller KV budget, where memory runs out");
        flags.add("engine-requests", engine_requests, 0, 10'000'000,
                  "requests of the tight queue the real engine runs beside the simulator "
                  "(0: none)");
        flags.add("indirection-batch", indirection_batch, 1, 256,
                  "sequences per decode step timed paged against contiguous");
    }

    void check() const {
        check_queue(model, queue);
        if (tight_budget_mib >= queue.kv_budget_mib)
            throw UsageError("--tight-budget-mib " + std::to_string(tight_budget_mib) +
                             " must be below --kv-budget-mib " +
                             std::to_string(queue.kv_budget_mib));
        const int longest = queue.workload.prompt_max + queue.workload.answer_max - 1;
        check_blocks(model, "--kv-budget-mib", queue.kv_budget_mib, block_size, longest, true);
        check_blocks(model, "--tight-budget-mib", tight_budget_mib, block_size, longest, true);
        check_model(model, std::uint64_t(indirection_batch) * std::uint64_t(model.max_seq) * 2);
    }

    // The block manager's options for a budget of `mib`.
    PagedMemoryOptions paged(std::uint64_t mib, double share, Preemption mode) const {
        const std::uint64_t per_block = BlockPool::bytes_per_block(model, block_size);
        return {.blocks = static_cast<int>((mib << 20) / per_block),
                .block_size = block_size,
                .watermark = share,
                .preemption = mode};
    }
    Policy continuous() const { return {"continuous, cache", queue.batch, true, true}; }
};

struct Results {
    Setup setup;  // what ran
    std::vector<Request> queue;
    MemoryBudget budget;          // the positions the budget holds, reserving
    StepCalibration pricing;      // its .cost prices the simulator's steps
    FitCount reserved;            // reserving the whole context
    std::vector<FitCount> paged;  // (kFitBlockSizes and --block-size) paging
    std::vector<IndirectionRow> indirection;
    double swap_bytes_per_second = 0;  // the copy rate swaps are priced at
    std::vector<QueueRun> runs;        // the simulator's, then the engine's

    const FitCount& paged_at(int b) const {
        for (const FitCount& f : paged)
            if (f.block_size == b) return f;
        throw std::logic_error("no fit counted at block size " + std::to_string(b));
    }
    const QueueRun& run(const std::string& memory, std::uint64_t mib) const {
        for (const QueueRun& q : runs)
            if (q.memory == memory && q.budget_mib == mib && !q.engine) return q;
        throw std::logic_error("no simulated run of '" + memory + "' at " + std::to_string(mib) +
                               " MiB");
    }
};

struct Experiment : Setup {
    static constexpr bool draws_plots = false;  // its tables say it all: no --plot-dir

    Results run() const {
        Results r;
        r.setup = *this;
        // The prices first: a calibration shows its own progress line.
        r.pricing = price_steps(model, seed, queue);
        r.queue = make_workload(workload_of(queue, seed));
        const Preemption recompute = Preemption::recompute, swap = Preemption::swap;
        struct Way {
            const std::string& name;
            std::uint64_t mib;
            double share;
            Preemption mode;
        };
        std::vector<Way> ways;  // the queue's runs in the simulator
        for (const std::uint64_t mib : {queue.kv_budget_mib, tight_budget_mib}) {
            ways.push_back({kReserve, mib, 0, recompute});
            ways.push_back({kPagedRecompute, mib, watermark, recompute});
            if (mib != tight_budget_mib) continue;
            ways.push_back({kPagedNoWatermark, mib, 0, recompute});
            ways.push_back({kPagedSwap, mib, watermark, swap});
        }
        const int n = std::min(engine_requests, int(r.queue.size()));
        const int parts = 2 + int(ways.size()) + (n > 0 ? 1 : 0);
        Progress progress("chapter 07:");  // long work shows, from outside, that it runs
        progress.update(1, parts, "the conversations that fit");
        r.budget = make_budget(model, queue.kv_budget_mib, Reservation::whole_context);
        r.reserved = fit_reserving(r.queue, r.budget.tokens);
        std::set<int> sizes(kFitBlockSizes.begin(), kFitBlockSizes.end());
        sizes.insert(block_size);
        for (int b : sizes) r.paged.push_back(fit_paged(model, r.budget.bytes, b, r.queue));
        Transformer engine(model, seed);
        progress.update(2, parts, "the block table's price on the engine");
        time_the_indirection(r, engine);
        r.swap_bytes_per_second =
            queue.cost_model == "analytic" ? kAnalyticBytesPerSecond : measure_swap_rate();
        for (const Way& w : ways) {
            progress.update(
                int(r.runs.size()) + 3, parts,
                "the queue in the simulator: " + w.name + ", " + std::to_string(w.mib) + " MiB");
            r.runs.push_back(simulate(r, r.queue, w.name, w.mib, w.share, w.mode));
        }
        // The engine's pool beside the simulator, on the same first requests.
        if (n > 0) {
            progress.update(parts, parts, "the queue's first requests on the engine");
            const std::span<const Request> first(r.queue.data(), std::size_t(n));
            r.runs.push_back(
                simulate(r, first, kPagedRecompute, tight_budget_mib, watermark, recompute));
            r.runs.push_back(run_on_the_engine(first, engine));
        }
        return r;
    }

    // The copy rate of a swap: one sequence's blocks out to host memory and back.
    double measure_swap_rate() const {
        BlockPool pool(model, block_size, std::max(1, model.max_seq / block_size));
        PagedKVCache seq(pool, model.max_seq);
        mark_filled(seq, pool.blocks() * block_size);
        std::vector<double> rates;
        for (int rep = 0; rep < 5; ++rep) {
            const double start = thread_cpu_seconds();
            const SwappedBlocks saved = seq.swap_out();
            seq.swap_in(saved);
            const double seconds = thread_cpu_seconds() - start;
            if (seconds > 0) rates.push_back(2.0 * double(saved.bytes()) / seconds);
        }
        return rates.empty() ? kAnalyticBytesPerSecond : median(rates);
    }

  private:
    // Decode steps of the same batch on contiguous caches and on paged ones,
    // taking turns so that a slower moment of the machine hits both alike.
    void time_the_indirection(Results& r, Transformer& engine) const {
        const std::size_t n = std::size_t(indirection_batch);
        for (int context : {model.max_seq / 8, model.max_seq / 2, model.max_seq - 1}) {
            std::vector<KVCache> contiguous(n, KVCache{model});
            BlockPool pool(model, block_size,
                           indirection_batch * blocks_for(model.max_seq, block_size));
            std::vector<PagedKVCache> paged;
            for (std::size_t i = 0; i < n; ++i) paged.emplace_back(pool, model.max_seq);
            // The paged caches grow a block at a time, taking turns, so that
            // their blocks lie scattered as on a busy server.
            for (KVCache& c : contiguous) mark_filled(c, context);
            for (int filled = 0; filled < context; filled += block_size)
                for (PagedKVCache& c : paged)
                    mark_filled(c, std::min(block_size, context - filled));
            const int token = 1;
            const std::vector<int> bases(n, context);
            std::vector<SequenceInput> inputs[2];
            for (std::size_t i = 0; i < n; ++i) {
                inputs[0].push_back({std::span(&token, 1), &contiguous[i]});
                inputs[1].push_back({std::span(&token, 1), &paged[i]});
            }
            std::vector<double> times[2];
            for (int rep = 0; rep <= kRepeats; ++rep)
                for (int layout : {0, 1}) {
                    const double took = timed_step(engine, inputs[layout], bases);
                    if (rep > 0) times[layout].push_back(took);
                }
            r.indirection.push_back({context, median(times[0]), median(times[1])});
        }
    }

    QueueRun tally(const std::string& memory, std::uint64_t mib, bool engine,
                   std::span<const Request> requests, const Schedule& s) const {
        return {memory, mib, engine, int(requests.size()), summarize(s), s.preemptions};
    }

    // In the simulator: reserving the whole context, or the block manager.
    QueueRun simulate(const Results& r, std::span<const Request> requests, const std::string& name,
                      std::uint64_t mib, double share, Preemption mode) const {
        if (name == kReserve) {
            const MemoryBudget budget = make_budget(model, mib, Reservation::whole_context);
            SimulatedExecutor executor(r.pricing.cost);
            return tally(name, mib, false, requests,
                         run_schedule(requests, continuous(), budget, executor));
        }
        PagedMemory memory(paged(mib, share, mode));
        const std::uint64_t per_block = BlockPool::bytes_per_block(model, block_size);
        SwapPricedExecutor executor(r.pricing.cost, memory, per_block, r.swap_bytes_per_second);
        QueueRun q = tally(name, mib, false, requests,
                           run_schedule(requests, continuous(), memory, PrefillFirst{}, executor));
        q.positions_recomputed = memory.positions_recomputed();
        q.bytes_swapped =
            std::uint64_t(memory.blocks_swapped_out() + memory.blocks_swapped_in()) * per_block;
        return q;
    }

    // The same block manager on the real engine, its blocks in a real pool.
    QueueRun run_on_the_engine(std::span<const Request> requests, Transformer& engine) const {
        const PagedMemoryOptions o = paged(tight_budget_mib, watermark, Preemption::recompute);
        PagedMemory memory(o);
        BlockPool pool(model, o.block_size, o.blocks);
        PagedExecutor executor(engine, seed, pool, o.preemption);
        const Schedule s = run_schedule(requests, continuous(), memory, PrefillFirst{}, executor);
        QueueRun q = tally(kPagedRecompute, tight_budget_mib, true, requests, s);
        q.positions_recomputed = memory.positions_recomputed();
        return q;
    }
};

}  // namespace kv::ch07
