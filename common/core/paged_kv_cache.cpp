#include "paged_kv_cache.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace kv {

PagedKVCache::PagedKVCache(BlockPool& pool, int capacity) : pool_(&pool), capacity_(capacity) {
    if (capacity < 1)
        throw std::invalid_argument("paged KV cache capacity must be at least 1, got " +
                                    std::to_string(capacity));
}

PagedKVCache::~PagedKVCache() {
    if (pool_ != nullptr) truncate_to_nothing();
}

PagedKVCache::PagedKVCache(PagedKVCache&& other) noexcept
    : pool_(other.pool_),
      capacity_(other.capacity_),
      length_(other.length_),
      copies_(other.copies_),
      table_(std::move(other.table_)) {
    other.pool_ = nullptr;  // the moved-from cache owns nothing
    other.table_.clear();
    other.length_ = 0;
}

void PagedKVCache::truncate_to_nothing() {
    for (int block : table_) pool_->release(block);
    table_.clear();
    length_ = 0;
}

PagedKVCache PagedKVCache::fork() const {
    PagedKVCache twin(*pool_, capacity_);
    twin.adopt(std::span(table_.data(), std::size_t(blocks_for(length_))), length_);
    return twin;
}

void PagedKVCache::adopt(std::span<const int> blocks, int positions) {
    if (length_ != 0 || !table_.empty())
        throw std::logic_error("adopt: the sequence already holds positions");
    if (positions < 0 || positions > capacity_ ||
        static_cast<int>(blocks.size()) != blocks_for(positions))
        throw std::invalid_argument("adopt: " + std::to_string(blocks.size()) +
                                    " blocks do not hold exactly " + std::to_string(positions) +
                                    " positions");
    for (int block : blocks) pool_->share(block);  // checks each is in use
    table_.assign(blocks.begin(), blocks.end());
    length_ = positions;
}

SwappedBlocks PagedKVCache::swap_out() {
    SwappedBlocks saved;
    saved.positions = length_;
    saved.blocks = blocks_for(length_);
    const std::size_t per_layer = std::size_t(block_size()) * row_format().bytes();
    for (int b = 0; b < saved.blocks; ++b)
        for (int l = 0; l < n_layers(); ++l) {
            const std::byte* k = pool_->key_bytes(table_[std::size_t(b)], l);
            const std::byte* v = pool_->value_bytes(table_[std::size_t(b)], l);
            saved.keys.insert(saved.keys.end(), k, k + per_layer);
            saved.values.insert(saved.values.end(), v, v + per_layer);
        }
    truncate(0);
    return saved;
}

void PagedKVCache::swap_in(const SwappedBlocks& saved) {
    if (length_ != 0 || !table_.empty())
        throw std::logic_error("swap_in: the sequence already holds positions");
    if (saved.blocks > pool_->available_blocks())
        throw std::length_error("block pool full: swapping in needs " +
                                std::to_string(saved.blocks) + " blocks, " +
                                std::to_string(pool_->available_blocks()) + " are free");
    const std::size_t per_layer = std::size_t(block_size()) * row_format().bytes();
    const std::size_t bytes = std::size_t(saved.blocks) * std::size_t(n_layers()) * per_layer;
    if (saved.keys.size() != bytes || saved.values.size() != bytes ||
        blocks_for(saved.positions) != saved.blocks)
        throw std::invalid_argument("swap_in: the saved blocks were made for another pool shape");
    std::size_t at = 0;
    for (int b = 0; b < saved.blocks; ++b) {
        const int block = pool_->allocate();
        table_.push_back(block);
        for (int l = 0; l < n_layers(); ++l, at += per_layer) {
            std::copy_n(saved.keys.data() + at, per_layer, pool_->key_bytes(block, l));
            std::copy_n(saved.values.data() + at, per_layer, pool_->value_bytes(block, l));
        }
    }
    length_ = saved.positions;
}

bool PagedKVCache::last_block_shared() const {
    return length_ % block_size() != 0 &&
           pool_->owners(table_[std::size_t(length_ / block_size())]) > 1;
}

int PagedKVCache::blocks_needed(int n) const {
    const int more = std::max(0, blocks_for(length_ + n) - static_cast<int>(table_.size()));
    return more + (n > 0 && last_block_shared() ? 1 : 0);
}

void PagedKVCache::check_room(int n) const {
    if (n < 0 || n > capacity_ - length_)
        throw std::length_error("KV cache full: " + std::to_string(length_) + " of " +
                                std::to_string(capacity_) + " positions used, " +
                                std::to_string(n) + " more do not fit");
    const int need = blocks_needed(n);
    if (need > pool_->available_blocks())
        throw std::length_error("block pool full: " + std::to_string(n) + " more positions need " +
                                std::to_string(need) + " blocks, " +
                                std::to_string(pool_->available_blocks()) + " are free");
}

void PagedKVCache::reserve(int n) {
    check_room(n);  // after this, every allocate below succeeds
    if (n > 0 && last_block_shared()) {
        // Copy-on-write: the positions already in the shared block are
        // copied into a block of our own, and the new ones go there.
        const std::size_t slot = std::size_t(length_ / block_size());
        const int shared = table_[slot];
        const int own = pool_->allocate();
        const std::size_t bytes = slot_offset(length_);  // the positions before length_
        for (int l = 0; l < n_layers(); ++l) {
            std::memcpy(pool_->key_bytes(own, l), pool_->key_bytes(shared, l), bytes);
            std::memcpy(pool_->value_bytes(own, l), pool_->value_bytes(shared, l), bytes);
        }
        pool_->release(shared);  // still held by the others: it was shared
        table_[slot] = own;
        ++copies_;
    }
    while (static_cast<int>(table_.size()) < blocks_for(length_ + n))
        table_.push_back(pool_->allocate());
}

float* PagedKVCache::key(int layer, int pos) {
    return pool_->keys(table_.at(std::size_t(pos / block_size())), layer) +
           std::size_t(pos % block_size()) * kv_dim();
}

float* PagedKVCache::value(int layer, int pos) {
    return pool_->values(table_.at(std::size_t(pos / block_size())), layer) +
           std::size_t(pos % block_size()) * kv_dim();
}

std::size_t PagedKVCache::slot_offset(int pos) const {
    return std::size_t(pos % block_size()) * row_format().bytes();
}

void PagedKVCache::write(int layer, int pos, const float* key, const float* value) {
    if (row_format().format == NumberFormat::float32) return KVStore::write(layer, pos, key, value);
    const int block = table_.at(std::size_t(pos / block_size()));
    narrow_row(row_format(), key, pool_->key_bytes(block, layer) + slot_offset(pos));
    narrow_row(row_format(), value, pool_->value_bytes(block, layer) + slot_offset(pos));
}

void PagedKVCache::commit(int n) {
    if (n < 0 || blocks_for(length_ + n) > static_cast<int>(table_.size()) ||
        length_ + n > capacity_)
        throw std::length_error("commit: " + std::to_string(n) + " positions were not reserved");
    length_ += n;
}

void PagedKVCache::truncate(int n) {
    if (n < 0 || n > length_)
        throw std::out_of_range("KV cache truncate to " + std::to_string(n) + " positions, but " +
                                std::to_string(length_) + " are filled");
    while (static_cast<int>(table_.size()) > blocks_for(n)) {
        pool_->release(table_.back());
        table_.pop_back();
    }
    length_ = n;
}

void PagedKVCache::runs(int layer, int positions, std::vector<KVRun>& out) const {
    out.clear();
    const int B = block_size();
    for (int first = 0, b = 0; first < positions; first += B, ++b) {
        const int block = table_.at(std::size_t(b));
        out.push_back({pool_->key_bytes(block, layer), pool_->value_bytes(block, layer),
                       std::min(B, positions - first)});
    }
}

}  // namespace kv
