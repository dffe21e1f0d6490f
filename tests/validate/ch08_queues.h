// Chapter 08's checked queues for make validate: the chapter's queue of
// prompts that start with one system prompt (S = 256, follow-ups among
// them), on its first requests, by continuous batching with the cache on
// blocks of 16, with the prefix cache and without it. The options' model
// sets the context: a follow-up that would run past it is a new
// conversation (shared_workload.h).
//
// The block manager holds every table and decides, in the simulator over a
// ledger alone and on the engine over the engine's pool. So on the engine
// the block manager of a run is made with the engine (SharedBlocksEngine),
// and the run that follows takes it; every other run makes its own.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "../../chapters/08_prefix_caching/experiment.h"
#include "../../chapters/08_prefix_caching/prefix_sharing_memory.h"
#include "../../chapters/08_prefix_caching/shared_blocks_executor.h"
#include "../../common/core/block_pool.h"
#include "../../common/core/transformer.h"
#include "../../common/lab/validation.h"
#include "../../common/serving/scheduler.h"
#include "options.h"

namespace kv {

// The engine of one run: a fresh pool, the block manager over it, and the
// executor that fills the blocks its tables name. While it lives and no
// run has taken its block manager, `latest` points to it.
class SharedBlocksEngine : public Executor {
  public:
    SharedBlocksEngine(Transformer& model, std::uint64_t seed, int block_size, int blocks,
                       const SharingMemoryOptions& o, std::shared_ptr<SharedBlocksEngine*> latest)
        : pool_(model.config(), block_size, blocks),
          memory_(pool_, o),
          executor_(model, seed, pool_, memory_),
          latest_(std::move(latest)) {
        *latest_ = this;
    }
    ~SharedBlocksEngine() override {
        if (*latest_ == this) *latest_ = nullptr;
    }
    double run(const StepPlan& plan) override { return executor_.run(plan); }
    void release(const Request& r) override { executor_.release(r); }
    PrefixSharingMemory& memory() { return memory_; }

  private:
    BlockPool pool_;
    PrefixSharingMemory memory_;
    SharedBlocksExecutor executor_;
    std::shared_ptr<SharedBlocksEngine*> latest_;
};

inline std::vector<CheckedQueue> ch08_checked_queues(const ValidateOptions& o) {
    ch08::Experiment e;  // the chapter's defaults, on the options' model
    e.model = o.model;
    e.seed = o.seed;
    e.queue.workload.requests = o.requests;  // the queue's first requests: its draws go in order
    e.check();
    const Policy policy = e.continuous();
    const std::vector<Request> requests = e.shared_queue();
    const int block_size = e.block_size, blocks = e.blocks();
    auto checked = [&](bool share) {
        const SharingMemoryOptions sharing{.watermark = e.watermark, .share = share};
        const auto latest = std::make_shared<SharedBlocksEngine*>(nullptr);
        CheckedQueue c;
        c.chapter = "08";
        c.name = std::string(share ? "prefix cache" : "no prefix cache") +
                 ", S = " + std::to_string(e.sharing.system_prompt) + ", " +
                 std::to_string(o.requests) + " requests";
        c.requests = requests;
        c.run = [=](Executor& executor) {
            if (SharedBlocksEngine* engine = *latest) {  // a run on the engine just made
                *latest = nullptr;
                return run_schedule(requests, policy, engine->memory(), PrefillFirst{}, executor);
            }
            BlockLedger ledger(block_size, blocks);
            PrefixSharingMemory memory(ledger, sharing);
            return run_schedule(requests, policy, memory, PrefillFirst{}, executor);
        };
        const std::uint64_t seed = o.seed;
        c.engine = [=](Transformer& model) -> std::unique_ptr<Executor> {
            return std::make_unique<SharedBlocksEngine>(model, seed, block_size, blocks, sharing,
                                                        latest);
        };
        return c;
    };
    return {checked(false), checked(true)};
}

}  // namespace kv
