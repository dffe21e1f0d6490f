// Chapter 07's checked queues for make validate: the chapter's queue,
// continuous batching with the cache on paged memory (blocks of 16, a
// watermark of 5%), on its first requests: at the budget (16 MiB), and at
// the tight budget (4 MiB) where memory runs out, preempting by recompute
// and by swap. On the engine every request's cache is a block table into a
// real pool of the budget's blocks. The simulator prices each step as the
// chapter does (SwapPricedExecutor): the step cost, and a swap's copies at
// this machine's copy rate.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "../../chapters/07_paged_kv_cache/experiment.h"
#include "../../chapters/07_paged_kv_cache/swap_priced_executor.h"
#include "../../common/core/block_pool.h"
#include "../../common/core/transformer.h"
#include "../../common/lab/side_by_side.h"  // paged_engine
#include "../../common/serving/paged_memory.h"
#include "../../common/serving/scheduler.h"
#include "options.h"
#include "validation.h"

namespace kv {

inline std::vector<CheckedQueue> ch07_checked_queues(const ValidateOptions& o) {
    const ch07::Experiment e = chapter_defaults<ch07::Experiment>(o);
    const Policy policy = e.continuous();
    const std::vector<Request> requests = make_workload(workload_of(e.queue, e.seed));
    const std::uint64_t per_block = BlockPool::bytes_per_block(e.model, e.block_size);
    const double swap_rate = e.measure_swap_rate();
    auto checked = [&](const std::string& name, std::uint64_t mib, Preemption mode) {
        const PagedMemoryOptions memory = e.paged(mib, e.watermark, mode);
        CheckedQueue c;
        c.chapter = "07";
        c.name =
            name + ", " + std::to_string(mib) + " MiB, " + std::to_string(o.requests) + " requests";
        c.requests = requests;
        c.run = [requests, policy, memory](Executor& executor, Executor*) {
            PagedMemory fresh(memory);
            return run_schedule(requests, policy, fresh, PrefillFirst{}, executor);
        };
        c.simulate = [=](const StepCost& cost) {
            PagedMemory fresh(memory);
            SwapPricedExecutor priced(cost, fresh, per_block, swap_rate);
            return run_schedule(requests, policy, fresh, PrefillFirst{}, priced);
        };
        const std::uint64_t seed = o.seed;
        c.engine = [seed, memory](Transformer& model) -> std::unique_ptr<Executor> {
            return paged_engine(model, seed, memory);
        };
        return c;
    };
    return {checked(ch07::kPagedRecompute, e.queue.kv_budget_mib, Preemption::recompute),
            checked(ch07::kPagedRecompute, e.tight_budget_mib, Preemption::recompute),
            checked(ch07::kPagedSwap, e.tight_budget_mib, Preemption::swap)};
}

}  // namespace kv
