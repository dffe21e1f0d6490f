// Chapter 10: what a narrower cache buys in memory.
//
// Chapter 03 priced the cache at any width: 2 x layers x KV heads x head
// size x bytes per number, per token (int8 adds 2 bytes of scale per 32
// numbers of a head). The engine now holds each width, so the price is a
// measurement: the bytes a cache of each format holds, read off its buffers,
// and how many of the queue's conversations fit at once in a pool of blocks
// (chapter 07's count) of the same bytes at each width.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "../../common/core/block_pool.h"
#include "../../common/core/memory_arithmetic.h"
#include "../../common/core/narrow_kv_cache.h"
#include "../../common/core/number_format.h"
#include "../../common/core/paged_kv_cache.h"
#include "../../common/serving/workload.h"

namespace kv::ch10 {

struct FormatBytes {
    std::uint64_t formula;     // bytes_per_token(cache_shape_of(config, format)): chapter 03's
    std::uint64_t contiguous;  // a NarrowKVCache's bytes_allocated() / its positions
    std::uint64_t paged;       // a BlockPool's bytes_per_block() / its block size
};

inline FormatBytes bytes_at(const Config& config, NumberFormat format, int block_size) {
    const int positions = std::min(config.max_seq, 64);
    const NarrowKVCache cache(config, positions, format);
    const BlockPool pool(config, block_size, 1, format);
    return {bytes_per_token(cache_shape_of(config, format)),
            cache.bytes_allocated() / std::uint64_t(positions),
            pool.bytes_per_block() / std::uint64_t(block_size)};
}

// Conversations that fit at once in a real pool of `budget_bytes` of blocks
// at `format`, let in in arrival order, each at its last step (prompt +
// answer - 1 positions: the last token is produced, never fed back), until
// the next one does not fit. The caches are marked filled, not computed:
// the numbers in a block do not change how many blocks there are.
inline int conversations_in_pool(const Config& config, std::uint64_t budget_bytes, int block_size,
                                 NumberFormat format, std::span<const Request> requests) {
    const std::uint64_t per_block = BlockPool::bytes_per_block(config, block_size, format);
    const int blocks = int(std::min<std::uint64_t>(budget_bytes / per_block, 1u << 30));
    if (blocks == 0) return 0;
    BlockPool pool(config, block_size, blocks, format);
    std::vector<PagedKVCache> caches;
    caches.reserve(requests.size());
    for (const Request& r : requests) {
        const int n = r.prompt_len + r.answer_len - 1;
        PagedKVCache cache(pool, std::max(n, 1));
        if (blocks_for(n, block_size) > pool.free_blocks()) break;
        cache.reserve(n);
        cache.commit(n);
        caches.push_back(std::move(cache));
    }
    return int(caches.size());
}

}  // namespace kv::ch10
