// One sequence's KV cache in pages: a block table into a shared BlockPool.
//
// Position p lives in block table[p / B] at slot p % B. The table grows a
// block at a time, so a sequence holds at most B - 1 unused positions, and
// its blocks need not be next to each other. For attention the cache is a
// list of runs, one per block (kv_store.h): the same numbers in the same
// order as a contiguous cache. Blocks may be shared (fork(), chapter 08's
// prefix cache): before writing into a block another also holds, the
// sequence takes its own copy (copy-on-write).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "block_pool.h"
#include "config.h"
#include "kv_store.h"

namespace kv {

// A sequence's blocks copied out to host memory, whole blocks at a time, as
// a server does when it preempts a request by swapping instead of recomputing.
struct SwappedBlocks {
    int positions = 0;                    // the sequence's length when it left
    int blocks = 0;                       // blocks copied: positions / B rounded up
    std::vector<std::byte> keys, values;  // (block, layer, B) rows, as the pool stores them
    std::uint64_t bytes() const { return keys.size() + values.size(); }
};

class PagedKVCache final : public KVStore {
  public:
    // An empty sequence, blocks from `pool`, up to `capacity` positions.
    PagedKVCache(BlockPool& pool, int capacity);
    ~PagedKVCache() override;
    PagedKVCache(const PagedKVCache&) = delete;  // two owners of one table would free it twice
    PagedKVCache& operator=(const PagedKVCache&) = delete;
    PagedKVCache(PagedKVCache&& other) noexcept;

    // A second sequence with the same positions, sharing every block
    // (parallel sampling: n answers to one prompt). Costs no block.
    PagedKVCache fork() const;

    // Starts an empty sequence on the first `positions` positions of blocks
    // another filled (shared, not copied).
    void adopt(std::span<const int> blocks, int positions);

    // Preemption by swap: copies every block out and gives them back; later
    // copies them into new blocks, bit for bit, or throws std::length_error.
    SwappedBlocks swap_out();
    void swap_in(const SwappedBlocks& saved);

    int length() const override { return length_; }
    int capacity() const override { return capacity_; }
    int n_layers() const override { return pool_->n_layers(); }
    int kv_dim() const override { return pool_->kv_dim(); }
    RowFormat row_format() const override { return pool_->row_format(); }
    int block_size() const { return pool_->block_size(); }
    const std::vector<int>& block_table() const { return table_; }
    int blocks_for(int positions) const { return kv::blocks_for(positions, block_size()); }
    int copies_on_write() const { return copies_; }  // blocks copied because shared

    void check_room(int n) const override;
    // Takes the blocks n more positions need (and a private copy of a
    // shared last block), or throws std::length_error, taking none.
    void reserve(int n) override;
    // Gives back the new blocks but keeps a private copy reserve made: the
    // shared block it left may have been written by its other holder, or
    // evicted and handed on, in the same pass. The copy holds the same numbers.
    void unreserve() override { truncate(length_); }
    float* key(int layer, int pos) override;
    float* value(int layer, int pos) override;
    void write(int layer, int pos, const float* key, const float* value) override;
    void commit(int n) override;
    void truncate(int n) override;  // gives back every block positions 0..n-1 do not need
    void runs(int layer, int positions, std::vector<KVRun>& out) const override;

  private:
    int blocks_needed(int n) const;  // by reserve(n): new blocks, and a copy of a shared one
    bool last_block_shared() const;
    std::size_t slot_offset(int pos) const;  // where position pos sits in its block, in bytes
    void truncate_to_nothing();              // gives every block back

    BlockPool* pool_;
    int capacity_;
    int length_ = 0;
    int copies_ = 0;
    std::vector<int> table_;  // (blocks_for(length) or more) block id of positions b*B..b*B+B-1
};

}  // namespace kv
