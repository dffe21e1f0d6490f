// Chapter 08's checked queues for make validate: the chapter's queue of
// prompts that start with one system prompt (S = 256, follow-ups among
// them), on its first requests, by continuous batching with the cache on
// blocks of 16, with the prefix cache and without it. The options' model
// sets the context: a follow-up that would run past it is a new
// conversation (shared_workload.h).
//
// The block manager holds every table and decides: in the simulator over a
// ledger alone, on the engine over the engine's own pool, where the engine
// (PoolEngine) keeps it and the run takes it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "../../chapters/08_prefix_caching/experiment.h"
#include "../../common/core/block_pool.h"
#include "../../common/core/transformer.h"
#include "../../common/lab/side_by_side.h"  // paged_engine
#include "../../common/serving/prefix_sharing_memory.h"
#include "../../common/serving/scheduler.h"
#include "../../common/serving/shared_blocks_executor.h"
#include "options.h"
#include "validation.h"

namespace kv {

inline std::vector<CheckedQueue> ch08_checked_queues(const ValidateOptions& o) {
    const ch08::Experiment e = chapter_defaults<ch08::Experiment>(o);
    const Policy policy = e.continuous();
    const std::vector<Request> requests = e.shared_queue();
    const int block_size = e.block_size, blocks = e.blocks();
    auto checked = [&](bool share) {
        const SharingMemoryOptions sharing{.watermark = e.watermark, .share = share};
        CheckedQueue c;
        c.chapter = "08";
        c.name = std::string(share ? "prefix cache" : "no prefix cache") +
                 ", S = " + std::to_string(e.sharing.system_prompt) + ", " +
                 std::to_string(o.requests) + " requests";
        c.requests = requests;
        c.run = [=](Executor& executor, Executor* engine) {
            if (engine)  // made by c.engine below
                return run_schedule(requests, policy, *static_cast<PoolEngine*>(engine)->memory,
                                    PrefillFirst{}, executor);
            BlockLedger ledger(block_size, blocks);
            PrefixSharingMemory memory(ledger, sharing);
            return run_schedule(requests, policy, memory, PrefillFirst{}, executor);
        };
        const std::uint64_t seed = o.seed;
        c.engine = [=](Transformer& model) -> std::unique_ptr<Executor> {
            auto engine = std::make_unique<PoolEngine>(model.config(), block_size, blocks);
            auto memory = std::make_unique<PrefixSharingMemory>(engine->pool, sharing);
            engine->executor =
                std::make_unique<SharedBlocksExecutor>(model, seed, engine->pool, *memory);
            engine->memory = std::move(memory);
            return engine;
        };
        return c;
    };
    return {checked(false), checked(true)};
}

}  // namespace kv
