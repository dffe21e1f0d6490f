// Chapter 07: how many conversations fit, reserving the whole context
// against paging.
//
// Requests are let in, in arrival order, until the next one does not fit,
// each counted at its last step (prompt + answer - 1 positions). Reserving
// charges each prompt + answer cap - 1 positions, most of them never filled;
// paging charges the blocks its tokens need, counted by a real BlockPool of
// the budget's size: at most B - 1 positions of a last block stay empty.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "../../common/core/block_pool.h"
#include "../../common/core/config.h"
#include "../../common/core/paged_kv_cache.h"
#include "../../common/serving/workload.h"

namespace kv {

struct FitCount {
    int block_size = 0;                   // positions per block; 0 for reserving the whole context
    int conversations = 0;                // requests that fit at once, in arrival order
    std::uint64_t positions_filled = 0;   // positions their tokens fill
    std::uint64_t positions_charged = 0;  // positions of memory they hold
    std::uint64_t positions_budget = 0;   // positions the budget holds (whole blocks when paged)

    std::uint64_t unused() const { return positions_charged - positions_filled; }
    double unused_fraction() const {
        return positions_charged ? double(unused()) / double(positions_charged) : 0.0;
    }
    // Paged: no conversation leaves more than B - 1 positions of its last block empty.
    std::uint64_t unused_bound() const {
        return block_size ? std::uint64_t(conversations) * std::uint64_t(block_size - 1) : 0;
    }
};

// Positions a request's cache holds at its last step.
inline int positions_at_last_step(const Request& r) {
    return r.prompt_len + r.answer_len - 1;
}

// Reserving the whole context: a budget of `positions`, each request
// charged its longest context from the start.
inline FitCount fit_reserving(std::span<const Request> requests, std::uint64_t positions) {
    FitCount f;
    f.positions_budget = positions;
    for (const Request& r : requests) {
        if (f.positions_charged + longest_context(r) > positions) break;
        f.positions_charged += longest_context(r);
        f.positions_filled += std::uint64_t(positions_at_last_step(r));
        ++f.conversations;
    }
    return f;
}

// Paging: a real pool of the blocks `budget_bytes` holds, one block table
// per conversation, marked filled rather than computed.
inline FitCount fit_paged(const Config& config, std::uint64_t budget_bytes, int block_size,
                          std::span<const Request> requests) {
    const std::uint64_t per_block = BlockPool::bytes_per_block(config, block_size);
    const int blocks =
        static_cast<int>(std::min<std::uint64_t>(budget_bytes / per_block, 1u << 30));
    FitCount f;
    f.block_size = block_size;
    f.positions_budget = std::uint64_t(blocks) * std::uint64_t(block_size);
    if (blocks == 0) return f;
    BlockPool pool(config, block_size, blocks);
    std::vector<PagedKVCache> caches;
    caches.reserve(requests.size());
    for (const Request& r : requests) {
        const int n = positions_at_last_step(r);
        PagedKVCache cache(pool, std::max(n, 1));
        if (cache.blocks_for(n) > pool.free_blocks()) break;  // the first that does not fit
        cache.reserve(n);
        cache.commit(n);
        f.positions_filled += std::uint64_t(n);
        caches.push_back(std::move(cache));
        ++f.conversations;
    }
    f.positions_charged = std::uint64_t(pool.used_blocks()) * std::uint64_t(block_size);
    return f;
}

}  // namespace kv
