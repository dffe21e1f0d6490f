// The plain peer's step timed as the engine's is: the model's own weights
// (borrowed from a TimedWorkload, so both multiply by the same numbers), a
// cache of `context` positions, one token at position `context`.
#pragma once

#include <vector>

#include "../../common/core/config.h"
#include "../../common/core/kernels.h"
#include "../../common/core/weights.h"
#include "plain_peer.h"

namespace kv::bench {

class PeerStep {
  public:
    // `weights` must outlive the step.
    PeerStep(const Config& config, const Weights& weights, int context);
    // The fastest of `repeats` timed steps, in this thread's CPU seconds,
    // after one untimed step; fewer once they have taken `budget_seconds`.
    double best_step_seconds(int repeats, double budget_seconds);

  private:
    Config config_;
    int context_;
    RopeTable rope_;
    std::vector<PeerLayer> layers_;
    PeerModel model_;
    std::vector<float> buffers_;  // every array of the run state, back to back
    PeerState state_;
};

}  // namespace kv::bench
