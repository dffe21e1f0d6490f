// Chapter 11: what the second tier adds to a step's time.
//
// The simulator: every block written to the tier or read back since the
// last step costs its bytes at the bandwidth this run measured, charged to
// the step about to run (blocks move at admission and when the pool makes
// room, before the step that needs them). The engine: a step is timed by
// the thread's processor time (chapter 05), which leaves out the moments a
// read waits for the disk; the tier file measures those, and they are added.
#pragma once

#include <cstdint>

#include "../../common/core/block_pool.h"
#include "../../common/core/transformer.h"
#include "../../common/serving/prefix_cache.h"
#include "../../common/serving/prefix_sharing_memory.h"
#include "../../common/serving/scheduler.h"
#include "../../common/serving/shared_blocks_executor.h"
#include "../../common/serving/step_cost.h"
#include "../../common/serving/tier_file.h"

namespace kv {

struct TierBandwidth {
    double read = 0, write = 0;  // bytes per second
};

class TierPricedExecutor : public SimulatedExecutor {
  public:
    // `memory` keeps the tier; each block moves `slot_bytes`.
    TierPricedExecutor(const StepCost& cost, const PrefixSharingMemory& memory,
                       std::uint64_t slot_bytes, TierBandwidth bandwidth)
        : SimulatedExecutor(cost), memory_(memory), bytes_(double(slot_bytes)), bw_(bandwidth) {}

    double run(const StepPlan& plan) override {
        const PrefixCache::TierCounts& t = memory_.prefix_cache()->tier();
        const double seconds = double(t.reloaded - read_) * bytes_ / bw_.read +
                               double(t.kept - written_) * bytes_ / bw_.write;
        read_ = t.reloaded;
        written_ = t.kept;
        return SimulatedExecutor::run(plan) + seconds;
    }

  private:
    const PrefixSharingMemory& memory_;
    double bytes_;
    TierBandwidth bw_;
    std::int64_t read_ = 0, written_ = 0;  // blocks already charged to a step
};

class TieredExecutor : public SharedBlocksExecutor {
  public:
    // `file`: the tier's, or nullptr without one.
    TieredExecutor(Transformer& model, std::uint64_t seed, BlockPool& pool,
                   const PrefixSharingMemory& memory, const TierFile* file)
        : SharedBlocksExecutor(model, seed, pool, memory), file_(file) {}

    double run(const StepPlan& plan) override {
        const double waited = file_ ? file_->counts().waited_seconds : 0;
        const double seconds = SharedBlocksExecutor::run(plan) + (waited - waited_);
        waited_ = waited;
        return seconds;
    }

  private:
    const TierFile* file_;  // the tier's file, or none
    double waited_ = 0;     // already added to a step
};

}  // namespace kv
