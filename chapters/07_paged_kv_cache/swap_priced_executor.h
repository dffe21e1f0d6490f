// Chapter 07: the simulator, with swaps priced by the bytes they move.
//
// A swap adds work the step cost never sees: the victim's blocks go out to
// host memory and come back. Each block moved costs its bytes at the copy
// rate, charged to the step in which it moves.
#pragma once

#include <cstdint>

#include "../../common/serving/paged_memory.h"
#include "../../common/serving/scheduler.h"
#include "../../common/serving/step_cost.h"

namespace kv {

class SwapPricedExecutor : public SimulatedExecutor {
  public:
    SwapPricedExecutor(const StepCost& cost, const PagedMemory& memory,
                       std::uint64_t bytes_per_block, double copy_bytes_per_second)
        : SimulatedExecutor(cost),
          memory_(memory),
          bytes_per_block_(bytes_per_block),
          rate_(copy_bytes_per_second) {}

    double run(const StepPlan& plan) override {
        // Blocks moved since the last step: out when a victim left, in for this one.
        const std::int64_t moved = memory_.blocks_swapped_out() + memory_.blocks_swapped_in();
        const double swap_seconds = double(moved - priced_) * double(bytes_per_block_) / rate_;
        priced_ = moved;
        return SimulatedExecutor::run(plan) + swap_seconds;
    }

  private:
    const PagedMemory& memory_;
    std::uint64_t bytes_per_block_;
    double rate_;              // bytes copied per second, one way
    std::int64_t priced_ = 0;  // blocks already charged to a step
};

}  // namespace kv
