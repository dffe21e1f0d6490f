// Chapter 05: the memory budget, how many requests fit at once.
//
// Every running request holds its KV cache, chapter 03's bytes_per_token
// for every position. A server gives the caches a fixed budget and admits a
// request only if its cache will fit, charged its longest context (full,
// whole_context) or what its cache holds (held, tokens_held):
// memory_manager.h keeps the accounts.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>

#include "../core/checked.h"
#include "../core/config.h"
#include "../core/memory_arithmetic.h"
#include "workload.h"

namespace kv {

struct MemoryBudget {
    std::uint64_t bytes = 0;            // the budget for all KV caches together
    std::uint64_t bytes_per_token = 0;  // chapter 03: one position of keys and values, all layers
    std::uint64_t tokens = 0;           // positions the budget holds, all caches together
    Reservation reserve = Reservation::whole_context;
};

inline MemoryBudget make_budget(const Config& config, std::uint64_t mib, Reservation reserve) {
    const CacheShape shape = cache_shape_of(config);  // float32, as KVCache stores it
    MemoryBudget b;
    b.bytes = checked_mul(mib, std::uint64_t(1) << 20, "the KV budget in bytes");
    b.bytes_per_token = bytes_per_token(shape);
    b.tokens = tokens_that_fit(b.bytes, shape);
    b.reserve = reserve;
    return b;
}

// A request whose longest context cannot fit even alone would wait
// forever: the first such request, or none.
inline const Request* first_that_never_fits(std::span<const Request> requests,
                                            const MemoryBudget& b) {
    for (const Request& r : requests)
        if (longest_context(r) > b.tokens) return &r;
    return nullptr;
}

// How many requests fit at once.
struct Concurrency {
    std::uint64_t fewest = 0;  // full: budget / the longest context of any request
    double average = 0;        // full: budget / the mean longest context
    double average_held = 0;   // held: budget / the mean of prompt + answer - 1
};

inline Concurrency concurrency(std::span<const Request> requests, const MemoryBudget& b) {
    std::uint64_t longest = 1;
    double sum = 0, sum_held = 0;
    for (const Request& r : requests) {
        longest = std::max(longest, longest_context(r));
        sum += double(longest_context(r));
        sum_held += double(r.prompt_len + r.answer_len - 1);
    }
    const double n = double(std::max<std::size_t>(requests.size(), 1));
    return {conversations_that_fit(b.bytes, checked_mul(longest, b.bytes_per_token, "bytes")),
            double(b.tokens) / (sum / n), double(b.tokens) / (sum_held / n)};
}

}  // namespace kv
