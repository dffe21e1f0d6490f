// A paged sequence's block table as the tests read it from outside: the
// pool's block behind each of the sequence's runs (one run per block), in
// order, found by where the block's keys lie (float32 pools).
#pragma once

#include <vector>

#include "../common/core/block_pool.h"
#include "../common/core/kv_store.h"
#include "../common/core/paged_kv_cache.h"

namespace kv::test {

inline std::vector<int> block_table(BlockPool& pool, const PagedKVCache& seq) {
    std::vector<KVRun> runs;
    seq.runs(0, seq.length(), runs);
    std::vector<int> table;
    for (const KVRun& run : runs)
        for (int block = 0; block < pool.blocks(); ++block)
            if (pool.keys(block, 0) == run.keys) table.push_back(block);
    return table;
}

}  // namespace kv::test
