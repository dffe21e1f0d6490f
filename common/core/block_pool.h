// The paged KV cache's memory: one pool of fixed-size blocks, allocated once.
//
// A block holds the keys and values of B consecutive positions of one
// sequence, in every layer. A sequence owns a list of blocks (its block
// table, paged_kv_cache.h) instead of one array sized for its longest
// context, as an operating system pages memory and as vLLM's PagedAttention
// (Kwon et al., SOSP 2023) stores the KV cache. The pool only hands blocks
// out and takes them back; who gets one is the block manager's business
// (chapter 07). A shared block (chapter 08) counts its owners.
#pragma once

#include <cstdint>
#include <vector>

#include "config.h"
#include "kv_rows.h"
#include "number_format.h"

namespace kv {

// Blocks of `block_size` positions that hold `positions` positions:
// ceil(positions / block_size), without the overflow of (n + B - 1) / B.
inline int blocks_for(int positions, int block_size) {
    return positions / block_size + (positions % block_size > 0);
}

// Blocks kept because someone may want their numbers again (chapter 08's
// prefix cache): when the pool has no free block, it asks for one back.
class BlockReclaimer {
  public:
    virtual ~BlockReclaimer() = default;
    virtual int reclaimable() const = 0;  // blocks it would give back if asked
    virtual bool reclaim_one() = 0;       // gives one back to the pool; false if none
};

// Who holds which block: the free list and each block's owner count. The
// engine's BlockPool is a ledger with the numbers beside it; a simulator
// that must decide as the engine does (chapter 08) keeps the ledger alone.
class BlockLedger {
  public:
    BlockLedger(int block_size, int blocks);  // all free
    virtual ~BlockLedger() = default;
    BlockLedger(const BlockLedger&) = delete;  // a copy would be a second truth
    BlockLedger& operator=(const BlockLedger&) = delete;

    int block_size() const { return block_size_; }
    int blocks() const { return blocks_; }
    int free_blocks() const { return static_cast<int>(free_.size()); }
    int used_blocks() const { return blocks_ - free_blocks(); }
    // Free now, or free as soon as the reclaimer gives its kept blocks back.
    int available_blocks() const {
        return free_blocks() + (reclaimer_ ? reclaimer_->reclaimable() : 0);
    }
    // Who gives blocks back when none is free (nullptr: nobody).
    void set_reclaimer(BlockReclaimer* reclaimer) { reclaimer_ = reclaimer; }

    // Takes a free block (one owner), asking the reclaimer when none is
    // free; throws std::length_error if there is still none.
    int allocate();
    void share(int block);    // one more owner of a block in use (chapter 08)
    void release(int block);  // one owner lets go; at zero the block is free
    int owners(int block) const { return owners_.at(std::size_t(block)); }

  private:
    void check_in_use(int block, const char* what) const;

    int block_size_;
    int blocks_;
    std::vector<int> owners_;  // (blocks) sequences holding each block; 0 = free
    std::vector<int> free_;    // free block ids; the next one handed out is at the back
    BlockReclaimer* reclaimer_ = nullptr;
};

// The ledger, and the keys and values its blocks hold, in one number
// format (float32 unless told another, number_format.h).
class BlockPool : public BlockLedger {
  public:
    // Allocated and zeroed now.
    BlockPool(const Config& config, int block_size, int blocks,
              NumberFormat format = NumberFormat::float32);

    int n_layers() const { return n_layers_; }
    int kv_dim() const { return kv_dim_; }
    const RowFormat& row_format() const { return keys_.format(); }
    std::uint64_t bytes_allocated() const;  // the whole pool
    std::uint64_t bytes_per_block() const;  // keys and values, every layer
    static std::uint64_t bytes_per_block(const Config& config, int block_size,
                                         NumberFormat format = NumberFormat::float32);

    // The first of a block's key (value) vectors of one layer, float32 only.
    float* keys(int block, int layer) { return keys_.floats(first_row(block, layer)); }
    float* values(int block, int layer) { return values_.floats(first_row(block, layer)); }
    // The same rows as stored, in any format: block_size x row_format().bytes().
    std::byte* key_bytes(int block, int layer) { return keys_.bytes(first_row(block, layer)); }
    std::byte* value_bytes(int block, int layer) { return values_.bytes(first_row(block, layer)); }

  private:
    std::size_t first_row(int block, int layer) const {
        return (std::size_t(block) * n_layers_ + layer) * std::size_t(block_size());
    }

    int n_layers_;
    int kv_dim_;
    KVRows keys_;    // (block, layer, block_size) rows of kv_dim numbers
    KVRows values_;  // (block, layer, block_size) rows of kv_dim numbers
};

}  // namespace kv
