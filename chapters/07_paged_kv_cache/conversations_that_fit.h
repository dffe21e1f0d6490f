// Chapter 07: how many conversations fit, reserving the whole context
// against paging.
//
// Take the queue and its KV budget, and let requests in, in arrival order,
// until the next one does not fit; count them, each at its largest, its
// last step (prompt + answer - 1 positions: the last answer token is
// produced, never fed back). Reserving the whole context charges
// each request prompt + answer cap - 1 positions, most of which it never
// fills. Paging charges the blocks its tokens need: at most B - 1 positions
// of its last block stay empty (internal fragmentation), whatever the cap.
// The paged count is measured on the engine's real block pool: each
// conversation takes its blocks from a BlockPool of the budget's size, and
// the pool itself says how many it handed out.
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

// Positions a request's cache holds at its last step, and the longest
// context it may reach (what a whole-context reservation charges).
inline int positions_at_last_step(const Request& r) {
    return r.prompt_len + r.answer_len - 1;
}
inline int longest_context_of(const Request& r) {
    return r.prompt_len + r.answer_cap - 1;
}

// Reserving the whole context: a budget of `positions`, each request
// charged its longest context from the start.
inline FitCount fit_reserving(std::span<const Request> requests, std::uint64_t positions) {
    FitCount f;
    f.positions_budget = positions;
    for (const Request& r : requests) {
        const std::uint64_t charge = std::uint64_t(longest_context_of(r));
        if (f.positions_charged + charge > positions) break;
        f.positions_charged += charge;
        f.positions_filled += std::uint64_t(positions_at_last_step(r));
        ++f.conversations;
    }
    return f;
}

// Paging: a real pool of as many blocks of `block_size` positions as
// `budget_bytes` holds, and one block table per conversation. The caches
// are marked filled (reserve, then commit) rather than computed: which
// numbers the blocks hold does not change how many blocks there are.
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
