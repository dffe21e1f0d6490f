#include "kv_cache.h"

#include <stdexcept>
#include <string>

namespace kv {

KVCache::KVCache(const Config& config, int capacity)
    : n_layers_(config.n_layers),
      n_kv_heads_(config.n_kv_heads),
      head_size_(config.head_size()),
      capacity_(capacity) {
    if (capacity <= 0 || capacity > config.max_seq)
        throw std::invalid_argument("KV cache capacity must be in 1.." +
                                    std::to_string(config.max_seq) + ", got " +
                                    std::to_string(capacity));
    key_cache_.assign(std::size_t(n_layers_) * capacity_ * kv_dim(), 0.0f);
    value_cache_.assign(key_cache_.size(), 0.0f);
}

void KVCache::check_room(int n) const {
    if (n < 0 || n > remaining())
        throw std::length_error("KV cache full: " + std::to_string(length_) + " of " +
                                std::to_string(capacity_) + " positions used, " +
                                std::to_string(n) + " more do not fit");
}

void KVCache::commit(int n) {
    check_room(n);
    length_ += n;
}

void KVCache::truncate(int n) {
    if (n < 0 || n > length_)
        throw std::out_of_range("KV cache truncate to " + std::to_string(n) + " positions, but " +
                                std::to_string(length_) + " are filled");
    length_ = n;
}

void KVCache::runs(int layer, int positions, std::vector<KVRun>& out) const {
    out.clear();
    out.emplace_back(&key_cache_[at(layer, 0)], &value_cache_[at(layer, 0)], positions);
}

}  // namespace kv
