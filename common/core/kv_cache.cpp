#include "kv_cache.h"

#include <stdexcept>
#include <string>

namespace kv {

KVCache::KVCache(const Config& config, int capacity, NumberFormat format)
    : n_layers_(config.n_layers), kv_dim_(config.kv_dim()), capacity_(capacity) {
    if (capacity <= 0 || capacity > config.max_seq)
        throw std::invalid_argument("KV cache capacity must be in 1.." +
                                    std::to_string(config.max_seq) + ", got " +
                                    std::to_string(capacity));
    const std::size_t rows = std::size_t(n_layers_) * capacity_;
    keys_ = KVRows(row_format_of(config, format), rows);
    values_ = KVRows(row_format_of(config, format), rows);
}

// The allocation holds `capacity` positions alike; `length` of them are used.
std::uint64_t KVCache::bytes_used() const {
    return bytes_allocated() / std::uint64_t(capacity_) * std::uint64_t(length_);
}

std::uint64_t KVCache::bytes_allocated() const {
    return keys_.bytes_allocated() + values_.bytes_allocated();
}

void KVCache::write(int layer, int pos, const float* key, const float* value) {
    keys_.write(row(layer, pos), key);
    values_.write(row(layer, pos), value);
}

void KVCache::check_room(int n) const {
    if (n < 0 || n > remaining())
        throw std::length_error("KV cache full: " + std::to_string(length_) + " of " +
                                std::to_string(capacity_) + " positions used, " +
                                std::to_string(n) + " more do not fit");
}

void KVCache::runs(int layer, int positions, std::vector<KVRun>& out) const {
    out.clear();
    out.push_back({keys_.bytes(row(layer, 0)), values_.bytes(row(layer, 0)), positions});
}

void KVCache::truncate(int n) {
    if (n < 0 || n > length_)
        throw std::out_of_range("KV cache truncate to " + std::to_string(n) + " positions, but " +
                                std::to_string(length_) + " are filled");
    length_ = n;
}

void KVCache::commit(int n) {
    check_room(n);
    length_ += n;
}

}  // namespace kv
