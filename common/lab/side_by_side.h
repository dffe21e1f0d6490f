// The lab: one queue on a pool of blocks, run through the same scheduler
// twice, side by side: by the simulator, each step priced by the step
// cost, and on the real engine, its blocks in a real pool, each step timed
// once by the thread's CPU time (make validate runs a queue several times
// and keeps each step's fastest run; this is one run, as a chapter shows it).
//
// With every request there at the start, who runs when is decided by
// counts alone, never by how long a step took, so the two must give the
// requests their first tokens in the same order.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <numeric>
#include <span>
#include <vector>

#include "../core/number_format.h"
#include "../core/transformer.h"
#include "../serving/paged_memory.h"
#include "../serving/scheduler.h"
#include "../serving/step_cost.h"
#include "paged_engine.h"

namespace kv {

// The requests in the order they got their first token (ties by id).
inline std::vector<int> first_token_order(const Schedule& s) {
    std::vector<int> order(s.requests.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        return s.requests[std::size_t(a)].first_token_s < s.requests[std::size_t(b)].first_token_s;
    });
    return order;
}

struct SideBySide {
    Schedule simulated, engine;
    bool same_order() const { return first_token_order(simulated) == first_token_order(engine); }
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
