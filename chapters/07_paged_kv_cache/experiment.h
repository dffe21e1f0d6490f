// Chapter 07's experiment: its parameters, their check, and the run.
//
// The queue is chapter 05's: the same model, workload, batch, KV budget and
// cost model, set by the same flags (every chapter 05 flag applies). On it
// the run measures three things:
//   how many conversations fit, reserving the whole context against paging
//     at several block sizes, on a real block pool;
//   the price of the indirection: a decode step on paged caches against
//     contiguous ones, on the real engine, at several contexts;
//   the queue itself, continuous batching with the cache, under each way of
//     managing memory, in the simulator and on the real engine side by
//     side: at chapter 05's budget, and at a tight one where memory runs
//     out and preemption (by recompute or by swap, with or without an
//     admission watermark) decides who waits.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "../../common/core/block_pool.h"
#include "../../common/core/kv_cache.h"
#include "../../common/core/paged_kv_cache.h"
#include "../../common/core/transformer.h"
#include "../../common/kit/answer_timing.h"  // PassesShown
#include "../../common/kit/flags.h"
#include "../../common/kit/machine.h"
#include "../../common/kit/machine_probes.h"
#include "../../common/kit/program.h"
#include "../../common/kit/timing.h"
#include "../../common/serving/memory_manager.h"
#include "../../common/serving/metrics.h"
#include "../../common/serving/paged_executor.h"
#include "../../common/serving/paged_memory.h"
#include "../../common/serving/real_executor.h"
#include "../05_queue_simulation/experiment.h"
#include "conversations_that_fit.h"
#include "swap_priced_executor.h"

namespace kv::ch07 {

// The block sizes the fit table compares; vLLM's default is 16.
inline const std::vector<int> kFitBlockSizes = {1, 8, 16, 32, 128};

// One way of managing the KV memory, run on one side.
struct QueueRun {
    std::string memory;  // "reserve the whole context", "paged, recompute", ...
    std::uint64_t budget_mib = 0;
    bool engine = false;  // the real engine, or the simulator
    int requests = 0;
    Summary summary;
    std::vector<double> ttfts;  // sorted
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

struct Results {
    ch05::Results queue;  // chapter 05's queue, budget, cost model and six policies
    int block_size = 0;
    double watermark = 0;
    std::uint64_t tight_budget_mib = 0;
    FitCount reserved;            // reserving the whole context
    std::vector<FitCount> paged;  // (kFitBlockSizes) paging
    int indirection_batch = 0;
    std::vector<IndirectionRow> indirection;
    double swap_bytes_per_second = 0;  // the copy rate swaps are priced at
    std::vector<QueueRun> runs;        // simulator and engine, each memory manager, each budget

    const FitCount& paged_at(int block_size) const {
        for (const FitCount& f : paged)
            if (f.block_size == block_size) return f;
        throw std::logic_error("no fit counted at block size " + std::to_string(block_size));
    }
    // The headline's two runs: chapter 05's reservation and paging, at its budget.
    const QueueRun& run(const std::string& memory, std::uint64_t mib, bool engine) const {
        for (const QueueRun& q : runs)
            if (q.memory == memory && q.budget_mib == mib && q.engine == engine) return q;
        throw std::logic_error("no queue run of '" + memory + "' at " + std::to_string(mib) +
                               " MiB");
    }
};

inline const std::string kReserve = "reserve the whole context";
inline const std::string kPagedRecompute = "paged, recompute";
inline const std::string kPagedNoWatermark = "paged, recompute, no watermark";
inline const std::string kPagedSwap = "paged, swap";

struct Experiment {
    ch05::Experiment queue;              // chapter 05's queue, budget and cost model (its flags)
    int block_size = 16;                 // positions per block in the queue runs (vLLM's default)
    double watermark = 0.05;             // share of the pool admission keeps free
    std::uint64_t tight_budget_mib = 4;  // a budget where memory runs out
    int engine_requests = 200;  // the queue's first requests, on the real engine too; 0: none
    int indirection_batch = 8;  // sequences in the decode steps timed paged and contiguous
    int repeats = 15;           // timed decode steps per context and layout

    Experiment() { queue.validate = 0; }  // chapter 05's validation is its own chapter's business

    void add_flags(Flags& flags) {
        queue.add_flags(flags);
        flags.add("block-size", block_size, 1, 1 << 16, "positions per block in the queue runs");
        flags.add("watermark", watermark, 0.0, 0.5, "share of the blocks admission keeps free");
        flags.add("tight-budget-mib", tight_budget_mib, 1, 1 << 30,
                  "a second, smaller KV budget, where memory runs out");
        flags.add("engine-requests", engine_requests, 0, 10'000'000,
                  "requests of the queue the real engine runs too (0: the simulator only)");
        flags.add("indirection-batch", indirection_batch, 1, 256,
                  "sequences per decode step when timing paged against contiguous");
        flags.add("repeats", repeats, 1, 1000, "timed decode steps per context (median)");
    }

    void check() const {
        queue.check();
        const Config& c = queue.model;
        const int longest = queue.workload.prompt_max + queue.workload.answer_max - 1;
        if (block_size > c.max_seq)
            throw UsageError("--block-size " + std::to_string(block_size) +
                             " is longer than the model's --max-seq " + std::to_string(c.max_seq));
        // Each budget must hold the longest request alone, in whole blocks,
        // or it would wait forever.
        const std::uint64_t blocks = std::uint64_t((longest + block_size - 1) / block_size);
        const std::uint64_t need = blocks * BlockPool::bytes_per_block(c, block_size);
        if (tight_budget_mib >= queue.kv_budget_mib)
            throw UsageError("--tight-budget-mib " + std::to_string(tight_budget_mib) +
                             " must be below --kv-budget-mib " +
                             std::to_string(queue.kv_budget_mib));
        for (const auto& [flag, mib] : {std::pair{"--kv-budget-mib", queue.kv_budget_mib},
                                        std::pair{"--tight-budget-mib", tight_budget_mib}}) {
            // The pool is real memory, and its blocks are counted in an int.
            const std::uint64_t pool_blocks =
                (mib << 20) / BlockPool::bytes_per_block(c, block_size);
            if (pool_blocks > std::uint64_t(std::numeric_limits<int>::max()))
                throw UsageError(std::string(flag) + " " + std::to_string(mib) +
                                 " MiB makes more blocks than a block table can count");
            if (const std::string over = beyond_memory(double(mib << 20), 0.5); !over.empty())
                throw UsageError(std::string(flag) + " " + std::to_string(mib) +
                                 " MiB of blocks would be " + over);
            if ((mib << 20) < need)
                throw UsageError(std::string(flag) + " " + std::to_string(mib) +
                                 " cannot hold one request at its longest in blocks of " +
                                 std::to_string(block_size) + " (" + format_bytes(need) + ")");
        }
        check_model(c, std::uint64_t(indirection_batch) * std::uint64_t(c.max_seq) * 2);
    }

    Results run() const {
        Results r;
        r.queue = queue.run();
        r.block_size = block_size;
        r.watermark = watermark;
        r.tight_budget_mib = tight_budget_mib;
        count_what_fits(r);
        Transformer model(queue.model, queue.seed);
        time_the_indirection(r, model);
        r.swap_bytes_per_second =
            queue.cost_model == "analytic" ? kAnalyticBytesPerSecond : measure_swap_rate();
        Progress progress("the queue on the real engine, run");
        const PassesShown passes(model, progress);      // a long prompt's pass shows its layers
        const int total = engine_requests > 0 ? 6 : 0;  // engine runs: 2 at the budget, 4 tight
        int done = 0;
        for (const std::uint64_t mib : {queue.kv_budget_mib, tight_budget_mib}) {
            const bool tight = mib == tight_budget_mib;
            std::vector<std::pair<std::string, PagedMemoryOptions>> managers = {
                {kPagedRecompute, options(mib, watermark, Preemption::recompute)}};
            if (tight) {
                managers.push_back({kPagedNoWatermark, options(mib, 0, Preemption::recompute)});
                managers.push_back({kPagedSwap, options(mib, watermark, Preemption::swap)});
            }
            for (const auto& [engine, n] : sides()) {
                const std::span<const Request> requests(r.queue.queue.data(), std::size_t(n));
                r.runs.push_back(
                    run_reserving(requests, mib, engine, model, r, {progress, done + 1, total}));
                if (engine) progress.update(++done, total);
                for (const auto& [name, o] : managers) {
                    r.runs.push_back(run_paged(requests, name, mib, o, engine, model, r,
                                               {progress, done + 1, total}));
                    if (engine) progress.update(++done, total);
                }
            }
        }
        return r;
    }

  private:
    // chapter 05's queue_sides (validation.h)
    std::vector<std::pair<bool, int>> sides() const {
        return queue_sides(queue.workload.requests, engine_requests);
    }

    PagedMemoryOptions options(std::uint64_t mib, double share, Preemption mode) const {
        const std::uint64_t per_block = BlockPool::bytes_per_block(queue.model, block_size);
        return {.blocks = static_cast<int>((mib << 20) / per_block),
                .block_size = block_size,
                .watermark = share,
                .preemption = mode};
    }

    Policy continuous() const { return book_policies(queue.batch)[kContinuousCache]; }

    void count_what_fits(Results& r) const {
        const std::uint64_t bytes = queue.kv_budget_mib << 20;
        r.reserved = fit_reserving(r.queue.queue, bytes / queue.model.kv_bytes_per_token());
        std::vector<int> sizes = kFitBlockSizes;
        if (std::find(sizes.begin(), sizes.end(), block_size) == sizes.end())
            sizes.insert(std::upper_bound(sizes.begin(), sizes.end(), block_size), block_size);
        for (int b : sizes) r.paged.push_back(fit_paged(queue.model, bytes, b, r.queue.queue));
    }

    // Decode steps of the same batch, contiguous caches and paged ones, taking
    // turns so that a slower moment of the machine hits both alike.
    void time_the_indirection(Results& r, Transformer& model) const {
        r.indirection_batch = indirection_batch;
        const Config& c = queue.model;
        for (int context : {c.max_seq / 8, c.max_seq / 2, c.max_seq - 1}) {
            std::vector<KVCache> contiguous(std::size_t(indirection_batch), KVCache{c});
            BlockPool pool(c, block_size,
                           indirection_batch * ((c.max_seq + block_size - 1) / block_size));
            std::vector<PagedKVCache> paged;
            for (int i = 0; i < indirection_batch; ++i) paged.emplace_back(pool, c.max_seq);
            // The caches are marked filled (reserve, commit): a step costs the
            // same whatever numbers they hold. The paged ones grow a block at a
            // time, taking turns, so their blocks lie scattered through the
            // pool as on a busy server.
            std::vector<KVStore*> a, b;
            for (int i = 0; i < indirection_batch; ++i) {
                a.push_back(&contiguous[std::size_t(i)]);
                b.push_back(&paged[std::size_t(i)]);
                a.back()->reserve(context);
                a.back()->commit(context);
            }
            for (int filled = 0; filled < context; filled += block_size)
                for (KVStore* s : b) {
                    const int n = std::min(block_size, context - filled);
                    s->reserve(n);
                    s->commit(n);
                }
            const int token = 1;
            auto step_inputs = [&](const std::vector<KVStore*>& caches) {
                std::vector<SequenceInput> inputs;
                for (KVStore* s : caches) inputs.push_back({std::span(&token, 1), s});
                return inputs;
            };
            const std::vector<SequenceInput> on_a = step_inputs(a), on_b = step_inputs(b);
            std::vector<double> ta, tb;
            for (int rep = 0; rep <= repeats; ++rep)
                for (std::vector<KVStore*>* caches : {&a, &b}) {
                    for (KVStore* s : *caches) s->truncate(context);
                    const double start = thread_cpu_seconds();
                    model.forward(caches == &a ? on_a : on_b);  // one decode step, batched
                    const double seconds = thread_cpu_seconds() - start;
                    if (rep > 0) (caches == &a ? ta : tb).push_back(seconds);  // rep 0 warms up
                }
            r.indirection.push_back({context, median(ta), median(tb)});
        }
    }

    // The copy rate of a swap: blocks out to host memory and back, timed.
    double measure_swap_rate() const {
        const Config& c = queue.model;
        BlockPool pool(c, block_size, std::max(1, c.max_seq / block_size));
        PagedKVCache seq(pool, c.max_seq);
        seq.reserve(pool.blocks() * block_size);
        seq.commit(pool.blocks() * block_size);
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

    QueueRun finish(std::string memory, std::uint64_t mib, bool engine,
                    std::span<const Request> requests, const Schedule& s) const {
        QueueRun q;
        q.memory = std::move(memory);
        q.budget_mib = mib;
        q.engine = engine;
        q.requests = int(requests.size());
        q.summary = summarize(s);
        q.ttfts = sorted_ttfts(s);
        q.preemptions = s.preemptions;
        return q;
    }

    QueueRun run_reserving(std::span<const Request> requests, std::uint64_t mib, bool engine,
                           Transformer& model, const Results& r,
                           const ch05::RunShown& shown) const {
        const MemoryBudget budget = make_budget(queue.model, mib, Reservation::whole_context);
        if (engine) {
            RealExecutor executor(model, queue.seed, StepClock::thread_cpu);
            ch05::AnswersShown answers(executor, shown, requests.size());
            return finish(kReserve, mib, true, requests,
                          run_schedule(requests, continuous(), budget, answers));
        }
        SimulatedExecutor executor(r.queue.cost);
        return finish(kReserve, mib, false, requests,
                      run_schedule(requests, continuous(), budget, executor));
    }

    QueueRun run_paged(std::span<const Request> requests, const std::string& name,
                       std::uint64_t mib, const PagedMemoryOptions& o, bool engine,
                       Transformer& model, const Results& r, const ch05::RunShown& shown) const {
        PagedMemory memory(o);
        const PrefillFirst steps;
        const std::uint64_t per_block = BlockPool::bytes_per_block(queue.model, o.block_size);
        QueueRun q;
        if (engine) {
            BlockPool pool(queue.model, o.block_size, o.blocks);
            PagedExecutor executor(model, queue.seed, pool, o.preemption, StepClock::thread_cpu);
            ch05::AnswersShown answers(executor, shown, requests.size());
            q = finish(name, mib, true, requests,
                       run_schedule(requests, continuous(), memory, steps, answers));
            q.bytes_swapped = executor.bytes_swapped();
        } else {
            SwapPricedExecutor executor(r.queue.cost, memory, per_block, r.swap_bytes_per_second);
            q = finish(name, mib, false, requests,
                       run_schedule(requests, continuous(), memory, steps, executor));
            q.bytes_swapped =
                std::uint64_t(memory.blocks_swapped_out() + memory.blocks_swapped_in()) * per_block;
        }
        q.positions_recomputed = memory.positions_recomputed();
        return q;
    }
};

}  // namespace kv::ch07
