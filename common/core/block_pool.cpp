#include "block_pool.h"

#include <stdexcept>
#include <string>

#include "checked.h"

namespace kv {

BlockLedger::BlockLedger(int block_size, int blocks) : block_size_(block_size), blocks_(blocks) {
    if (block_size < 1)
        throw std::invalid_argument("block size must be at least 1, got " +
                                    std::to_string(block_size));
    if (blocks < 1)
        throw std::invalid_argument("a block pool needs at least 1 block, got " +
                                    std::to_string(blocks));
    owners_.assign(std::size_t(blocks), 0);
    // Handed out from the back: block 0 first, then 1, 2, ... while none
    // has come back, which keeps a fresh pool's tables easy to read.
    for (int b = blocks - 1; b >= 0; --b) free_.push_back(b);
}

BlockPool::BlockPool(const Config& config, int block_size, int blocks)
    : BlockLedger(block_size, blocks), n_layers_(config.n_layers), kv_dim_(config.kv_dim()) {
    const std::uint64_t numbers =
        checked_mul(std::uint64_t(blocks),
                    checked_mul(std::uint64_t(n_layers_) * std::uint64_t(block_size),
                                std::uint64_t(kv_dim_), "block pool size"),
                    "block pool size");
    keys_.assign(std::size_t(numbers), 0.0f);
    values_.assign(std::size_t(numbers), 0.0f);
}

std::uint64_t BlockPool::bytes_per_block(const Config& config, int block_size) {
    return config.kv_bytes(std::uint64_t(block_size));
}

std::uint64_t BlockPool::bytes_per_block() const {
    return (keys_.size() + values_.size()) / std::size_t(blocks()) * sizeof(float);
}

std::uint64_t BlockPool::bytes_allocated() const {
    return (keys_.size() + values_.size()) * sizeof(float);
}

int BlockLedger::allocate() {
    if (free_.empty() && reclaimer_) reclaimer_->reclaim_one();
    if (free_.empty())
        throw std::length_error("block pool full: all " + std::to_string(blocks_) + " blocks of " +
                                std::to_string(block_size_) + " positions are in use");
    const int block = free_.back();
    free_.pop_back();
    owners_[std::size_t(block)] = 1;
    return block;
}

void BlockLedger::check_in_use(int block, const char* what) const {
    if (block < 0 || block >= blocks_)
        throw std::out_of_range(std::string(what) + ": block " + std::to_string(block) +
                                " is not in the pool of " + std::to_string(blocks_));
    if (owners_[std::size_t(block)] == 0)
        throw std::logic_error(std::string(what) + ": block " + std::to_string(block) + " is free");
}

void BlockLedger::share(int block) {
    check_in_use(block, "share");
    ++owners_[std::size_t(block)];
}

void BlockLedger::release(int block) {
    check_in_use(block, "release");
    if (--owners_[std::size_t(block)] == 0) free_.push_back(block);
}

}  // namespace kv
