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

BlockPool::BlockPool(const Config& config, int block_size, int blocks, NumberFormat format)
    : BlockLedger(block_size, blocks), n_layers_(config.n_layers), kv_dim_(config.kv_dim()) {
    const RowFormat rows_format = row_format_of(config, format);
    const std::uint64_t rows =
        checked_mul(std::uint64_t(blocks), std::uint64_t(n_layers_) * std::uint64_t(block_size),
                    "block pool size");
    checked_mul(rows, rows_format.bytes(), "block pool size");  // its bytes fit in 64 bits
    keys_ = KVRows(rows_format, std::size_t(rows));
    values_ = KVRows(rows_format, std::size_t(rows));
}

std::uint64_t BlockPool::bytes_per_block(const Config& config, int block_size,
                                         NumberFormat format) {
    return checked_mul(kv_bytes_per_token(config, format), std::uint64_t(block_size),
                       "bytes per block");
}

std::uint64_t BlockPool::bytes_per_block() const {
    return bytes_allocated() / std::uint64_t(blocks());
}

std::uint64_t BlockPool::bytes_allocated() const {
    return keys_.bytes_allocated() + values_.bytes_allocated();
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
