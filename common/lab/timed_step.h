// The lab: one engine step on caches marked filled, timed in the thread's
// CPU time. A step costs the same whatever numbers its caches hold, so a
// probe marks them filled instead of computing a prefill, and truncates
// them back before each run so that every run writes the same positions.
#pragma once

#include <cstddef>
#include <span>

#include "../core/kv_store.h"
#include "../core/timing.h"
#include "../core/transformer.h"

namespace kv {

// Marks `store` as holding `positions` more positions.
inline void mark_filled(KVStore& store, int positions) {
    store.reserve(positions);
    store.commit(positions);
}

// One step of `inputs`, each store first truncated back to its `bases`
// entry; returns the thread CPU seconds it took.
inline double timed_step(Transformer& model, std::span<const SequenceInput> inputs,
                         std::span<const int> bases) {
    for (std::size_t i = 0; i < inputs.size(); ++i) inputs[i].cache->truncate(bases[i]);
    const double began = thread_cpu_seconds();
    model.forward(inputs);
    return thread_cpu_seconds() - began;
}

}  // namespace kv
