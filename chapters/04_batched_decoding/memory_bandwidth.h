// How fast one core can read from main memory: the ceiling of a decode
// step whose weights do not stay in the CPU's caches.
//
// Measured, not looked up: a plain sum over a buffer far larger than any
// cache, so every byte comes from memory. The sum keeps 64 running totals
// (four vector registers' worth), which the compiler vectorises without
// reordering any addition; one running total would wait on each add
// before the next, and measure the adder instead of the memory.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "../../common/kit/timing.h"

namespace kv {

// Bytes per second a sum streams through a buffer of `bytes`: the median
// of `repeats` passes after one warm-up pass (which also makes the
// operating system map every page).
inline double streaming_bytes_per_second(std::uint64_t bytes, int repeats) {
    constexpr int kTotals = 64;
    const std::size_t n = bytes / sizeof(float) / kTotals * kTotals;
    std::vector<float> buffer(n, 1.0f);
    volatile float sink = 0;  // keeps the sums from being optimised away
    const double seconds = median_seconds(repeats, [&] {
        float totals[kTotals] = {};
        for (std::size_t i = 0; i < n; i += kTotals)
            for (int j = 0; j < kTotals; ++j) totals[j] += buffer[i + j];
        float sum = 0;  // every total, or the compiler could skip loading some
        for (float t : totals) sum += t;
        sink = sink + sum;
    });
    return double(n) * sizeof(float) / seconds;
}

// A buffer eight times the largest cache (at least 256 MiB, at most 1 GiB):
// too big for any of it to be still cached from the pass before.
inline std::uint64_t streaming_buffer_bytes(std::uint64_t cache_bytes) {
    const std::uint64_t MiB = 1 << 20;
    return std::clamp<std::uint64_t>(8 * cache_bytes, 256 * MiB, 1024 * MiB);
}

}  // namespace kv
