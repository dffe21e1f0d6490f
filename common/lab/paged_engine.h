// The lab: the real engine on a pool of blocks it owns, for one run of a
// queue (validation.h's checked queues, side_by_side.h's): a fresh pool
// every run, its caches empty.
#pragma once

#include <cstdint>
#include <memory>

#include "../core/block_pool.h"
#include "../core/transformer.h"
#include "../serving/memory_manager.h"
#include "../serving/paged_executor.h"
#include "../serving/paged_memory.h"

namespace kv {

// Members in the order they are made and the reverse of their end: the
// executor and the block manager hold references into the pool.
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

}  // namespace kv
