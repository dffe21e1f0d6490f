// The lab: the real engine on a pool of blocks it owns, for one run of a
// checked queue (validation.h): a fresh pool every run, its caches empty.
#pragma once

#include <cstdint>

#include "../core/block_pool.h"
#include "../core/transformer.h"
#include "../serving/paged_executor.h"
#include "../serving/paged_memory.h"

namespace kv {

class PagedEngine : public Executor {
  public:
    PagedEngine(Transformer& model, std::uint64_t seed, const PagedMemoryOptions& o)
        : pool_(model.config(), o.block_size, o.blocks),
          executor_(model, seed, pool_, o.preemption) {}
    double run(const StepPlan& plan) override { return executor_.run(plan); }
    void release(const Request& r) override { executor_.release(r); }

  private:
    BlockPool pool_;  // declared before executor_, which holds a reference to it
    PagedExecutor executor_;
};

}  // namespace kv
