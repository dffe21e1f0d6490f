// Chapter 07: the real engine on a paged KV cache.
//
// Chapter 05's real executor, each request's cache a block table into one
// BlockPool: blocks are taken as a sequence grows and given back when it
// leaves. A request preempted by swap has its blocks copied out to host
// memory (swap_out) and back into fresh blocks when it runs again
// (swap_in); the copies' time is in the step's, like any other work.
#pragma once

#include <cstdint>
#include <map>
#include <memory>

#include "../core/block_pool.h"
#include "../core/paged_kv_cache.h"
#include "paged_memory.h"
#include "real_executor.h"

namespace kv {

class PagedExecutor : public RealExecutor {
  public:
    PagedExecutor(Transformer& model, std::uint64_t seed, BlockPool& pool, Preemption preemption)
        : RealExecutor(model, seed), pool_(pool), preemption_(preemption) {}

    std::uint64_t bytes_swapped() const { return bytes_swapped_; }  // out and back in

    // Preempted by swap: the blocks go to host memory, then back to the pool.
    void release(const Request& r) override {
        auto* cache = static_cast<PagedKVCache*>(cache_of(r));  // make_cache made it
        if (cache && r.status != RequestStatus::finished && preemption_ == Preemption::swap)
            bytes_swapped_ += (swapped_[r.id] = cache->swap_out()).bytes();
        RealExecutor::release(r);  // frees the cache, and with it any block still held
    }

  protected:
    // A block table for the request's longest context; back from a swap,
    // its blocks are copied in first.
    std::unique_ptr<KVStore> make_cache(const Request& r) override {
        auto cache = std::make_unique<PagedKVCache>(pool_, int(longest_context(r)));
        if (const auto saved = swapped_.find(r.id); saved != swapped_.end()) {
            cache->swap_in(saved->second);
            bytes_swapped_ += saved->second.bytes();
            swapped_.erase(saved);
        }
        return cache;
    }

  private:
    BlockPool& pool_;
    Preemption preemption_;
    std::map<int, SwappedBlocks> swapped_;  // (request id) blocks waiting in host memory
    std::uint64_t bytes_swapped_ = 0;
};

}  // namespace kv
