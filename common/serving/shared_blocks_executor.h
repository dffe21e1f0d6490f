// Chapter 08: the real engine on blocks the block manager hands out.
//
// The block manager (prefix_sharing_memory.h) holds every table, shared
// prompt blocks among them; the engine only fills blocks where a table says,
// as vLLM's workers fill the block ids its scheduler sends. A request's
// cache is a view of its table, written from r.cached on.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "../core/block_pool.h"
#include "../core/kv_store.h"
#include "prefix_sharing_memory.h"
#include "real_executor.h"

namespace kv {

// One request's KV cache: the blocks its table in the block manager names.
// It never takes or gives back a block; the manager does, before the step.
class BlockTableView final : public KVStore {
  public:
    BlockTableView(BlockPool& pool, const PrefixSharingMemory& memory, const Request& r)
        : pool_(pool),
          memory_(memory),
          id_(r.id),
          length_(r.cached),
          capacity_(int(longest_context(r))) {}

    int length() const override { return length_; }
    int capacity() const override { return capacity_; }
    int n_layers() const override { return pool_.n_layers(); }
    int kv_dim() const override { return pool_.kv_dim(); }
    RowFormat row_format() const override { return pool_.row_format(); }

    // The manager gave the blocks at grow(); a step beyond them is a bug,
    // and so is a write into a block another request's table names.
    void check_room(int n) const override {
        const std::size_t need = std::size_t(blocks_for(length_ + n, B()));
        const std::span<const int> table = memory_.table(id_);
        if (n < 0 || length_ + n > capacity_ || table.size() < need)
            throw std::logic_error("request " + std::to_string(id_) + ": " + std::to_string(n) +
                                   " more positions after " + std::to_string(length_) +
                                   " are beyond the blocks its table holds");
        for (std::size_t b = std::size_t(length_ / B()); b < need && n > 0; ++b)
            if (memory_.tables_naming(table[b]) != 1)
                throw std::logic_error("request " + std::to_string(id_) +
                                       " would write into block " + std::to_string(table[b]) +
                                       ", which another request holds");
    }
    void reserve(int n) override { check_room(n); }
    void unreserve() override {}
    float* key(int layer, int pos) override { return pool_.keys(block(pos), layer) + slot(pos); }
    float* value(int layer, int pos) override {
        return pool_.values(block(pos), layer) + slot(pos);
    }
    // In the pool's number format (chapter 10), rounded once here.
    void write(int layer, int pos, const float* key, const float* value) override {
        const std::size_t at = std::size_t(pos % B()) * row_format().bytes();
        narrow_row(row_format(), key, pool_.key_bytes(block(pos), layer) + at);
        narrow_row(row_format(), value, pool_.value_bytes(block(pos), layer) + at);
    }
    void commit(int n) override { length_ += n; }
    void truncate(int n) override { length_ = std::min(length_, n); }
    void runs(int layer, int positions, std::vector<KVRun>& out) const override {
        out.clear();
        for (int first = 0; first < positions; first += B()) {
            const int b = memory_.table(id_)[std::size_t(first / B())];
            out.push_back({pool_.key_bytes(b, layer), pool_.value_bytes(b, layer),
                           std::min(B(), positions - first)});
        }
    }

  private:
    int B() const { return pool_.block_size(); }
    int block(int pos) const { return memory_.table(id_)[std::size_t(pos / B())]; }
    std::size_t slot(int pos) const { return std::size_t(pos % B()) * std::size_t(kv_dim()); }

    BlockPool& pool_;
    const PrefixSharingMemory& memory_;
    int id_;
    int length_;
    int capacity_;
};

class SharedBlocksExecutor : public RealExecutor {
  public:
    // `memory` must keep its tables in `pool` (it was made on it).
    SharedBlocksExecutor(Transformer& model, std::uint64_t seed, BlockPool& pool,
                         const PrefixSharingMemory& memory)
        : RealExecutor(model, seed), pool_(pool), memory_(memory) {
        if (&memory.ledger() != &pool)
            throw std::invalid_argument(
                "SharedBlocksExecutor: the block manager keeps another pool");
    }

  protected:
    std::unique_ptr<KVStore> make_cache(const Request& r) override {
        return std::make_unique<BlockTableView>(pool_, memory_, r);
    }

  private:
    BlockPool& pool_;
    const PrefixSharingMemory& memory_;
};

}  // namespace kv
