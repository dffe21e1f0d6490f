// The lab: one queue on a pool of blocks, run through the same scheduler
// twice, side by side: by the simulator, each step priced by the step
// cost, and on the real engine, its blocks in a real pool, each step timed
// once by the thread's CPU time (make validate keeps each step's fastest of several runs).
//
// With every request there at the start, who runs when is decided by
// counts alone, never by how long a step took, so the two must finish the
// requests in the same order. (Not their first tokens: first come, first
// served, with the newest preempted first, gives first tokens in request
// order on either side, so that order could only agree. The order of
// finishing depends on every answer's length and every preemption.)
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <numeric>
#include <span>
#include <vector>

#include "../core/block_pool.h"
#include "../core/number_format.h"
#include "../core/transformer.h"
#include "../serving/memory_manager.h"
#include "../serving/paged_executor.h"
#include "../serving/paged_memory.h"
#include "../serving/scheduler.h"
#include "../serving/step_cost.h"

namespace kv {

// The real engine on a pool of blocks it owns, for one run of a queue: a
// fresh pool every run, its caches empty. Members in the order they are
// made and the reverse of their end: the executor and the block manager
// hold references into the pool.
struct PoolEngine : Executor {
    PoolEngine(const Config& c, int block_size, int blocks,
               NumberFormat format = NumberFormat::float32)
        : pool(c, block_size, blocks, format) {}
    double run(const StepPlan& plan) override { return executor->run(plan); }
    void release(const Request& r) override { executor->release(r); }

    BlockPool pool;
    std::unique_ptr<MemoryManager> memory;  // set when the manager's tables name the pool's
                                            // blocks (chapter 08): the run must use this one
    std::unique_ptr<Executor> executor;     // the engine on the pool
};

// Chapter 07's engine: a block table per request, blocks taken from the pool.
// The pool stores its keys and values in `format` (chapter 10).
inline std::unique_ptr<PoolEngine> paged_engine(Transformer& model, std::uint64_t seed,
                                                const PagedMemoryOptions& o,
                                                NumberFormat format = NumberFormat::float32) {
    auto engine = std::make_unique<PoolEngine>(model.config(), o.block_size, o.blocks, format);
    engine->executor = std::make_unique<PagedExecutor>(model, seed, engine->pool, o.preemption);
    return engine;
}

// The requests in the order of one of their times (ties by id).
inline std::vector<int> order_by(const Schedule& s, double Request::*time) {
    std::vector<int> order(s.requests.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        return s.requests[std::size_t(a)].*time < s.requests[std::size_t(b)].*time;
    });
    return order;
}
inline std::vector<int> first_token_order(const Schedule& s) {
    return order_by(s, &Request::first_token_s);
}
inline std::vector<int> finish_order(const Schedule& s) {
    return order_by(s, &Request::finished_s);
}

struct SideBySide {
    Schedule simulated, engine;
    bool same_order() const { return finish_order(simulated) == finish_order(engine); }
};

// `requests` under `policy`, prefill first, with the block manager of `o`:
// priced by `cost`, and on `model` with a pool that stores its keys and
// values in `format`.
inline SideBySide run_side_by_side(Transformer& model, std::uint64_t seed,
                                   std::span<const Request> requests, const Policy& policy,
                                   const PagedMemoryOptions& o, const StepCost& cost,
                                   NumberFormat format = NumberFormat::float32) {
    SideBySide r;
    PagedMemory simulated_memory(o), engine_memory(o);
    SimulatedExecutor simulated(cost);
    r.simulated = run_schedule(requests, policy, simulated_memory, PrefillFirst{}, simulated);
    const std::unique_ptr<PoolEngine> engine = paged_engine(model, seed, o, format);
    r.engine = run_schedule(requests, policy, engine_memory, PrefillFirst{}, *engine);
    return r;
}

}  // namespace kv
