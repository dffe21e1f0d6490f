// Chapter 07: the real engine on a paged KV cache.
//
// Chapter 05's real executor, each request's cache a block table into one
// BlockPool: blocks are taken as a sequence grows and given back when it
// leaves. A request preempted by swap has its blocks copied out to host
// memory (swap_out) and back into fresh blocks when it runs again
// (swap_in); the copies' time is in the step's, like any other work.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

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
        PagedKVCache* cache = paged(r);
        if (cache && r.status != RequestStatus::finished && preemption_ == Preemption::swap) {
            if (swapped_.size() <= std::size_t(r.id)) swapped_.resize(std::size_t(r.id) + 1);
            swapped_[std::size_t(r.id)] = cache->swap_out();
            bytes_swapped_ += swapped_[std::size_t(r.id)].bytes();
        }
        if (std::size_t(r.id) < paged_.size()) paged_[std::size_t(r.id)] = nullptr;
        RealExecutor::release(r);  // frees the cache, and with it any block still held
    }

  protected:
    // A block table for the request's longest context; back from a swap,
    // its blocks are copied in first.
    std::unique_ptr<KVStore> make_cache(const Request& r) override {
        auto cache = std::make_unique<PagedKVCache>(pool_, r.prompt_len + r.answer_cap - 1);
        if (std::size_t(r.id) < swapped_.size() && swapped_[std::size_t(r.id)].positions > 0) {
            SwappedBlocks& saved = swapped_[std::size_t(r.id)];
            cache->swap_in(saved);
            bytes_swapped_ += saved.bytes();
            saved = SwappedBlocks{};
        }
        if (paged_.size() <= std::size_t(r.id)) paged_.resize(std::size_t(r.id) + 1, nullptr);
        paged_[std::size_t(r.id)] = cache.get();
        return cache;
    }

  private:
    BlockPool& pool_;
    Preemption preemption_;
    // The request's block table, which the base class owns as a KVStore.
    PagedKVCache* paged(const Request& r) const {
        return std::size_t(r.id) < paged_.size() ? paged_[std::size_t(r.id)] : nullptr;
    }

    std::vector<PagedKVCache*> paged_;    // (requests) each running request's block table
    std::vector<SwappedBlocks> swapped_;  // (requests) blocks waiting in host memory
    std::uint64_t bytes_swapped_ = 0;
};

}  // namespace kv
