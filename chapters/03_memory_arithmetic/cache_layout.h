// Chapter 03: where the cache's bytes sit, and so why one token's keys and
// values are not one piece of memory. KVCache (common/core/kv_cache.h)
// makes two allocations of the same shape, keys_ and values_, each
//
//     (layer, position, KV head, number of the head)
//
// with the layer outermost: a layer's block holds every position it can
// hold (its capacity, reserved up front). So number d of KV head h at
// position p of layer l is ((l x capacity + p) x KV heads + h) x head size
// + d numbers from the start of its array, and one token is 2 x layers
// pieces of KV heads x head size numbers: one in each layer's block of
// keys_, and the same in values_.
#pragma once

#include <cstdint>

#include "../../common/core/config.h"
#include "../../common/core/memory_arithmetic.h"

namespace kv {

struct CacheLayout {
    CacheShape shape;          // layers, KV heads, head size, bytes per number
    std::uint64_t capacity{};  // positions each layer's block reserves

    std::uint64_t head_bytes() const { return shape.head_size * shape.bytes_per_number; }
    std::uint64_t position_bytes() const { return shape.kv_heads * head_bytes(); }
    std::uint64_t layer_bytes() const { return capacity * position_bytes(); }
    std::uint64_t array_bytes() const { return shape.layers * layer_bytes(); }  // keys_, or values_
    std::uint64_t cache_bytes() const { return 2 * array_bytes(); }  // KVCache::bytes_allocated()
    std::uint64_t token_bytes() const {  // bytes_per_token(shape): 2 x layers pieces
        return 2 * shape.layers * position_bytes();
    }

    // Bytes from the start of keys_ (or values_, the same) to number d of
    // KV head h at position p of layer l.
    std::uint64_t offset(std::uint64_t l, std::uint64_t p, std::uint64_t h = 0,
                         std::uint64_t d = 0) const {
        return (((l * capacity + p) * shape.kv_heads + h) * shape.head_size + d) *
               shape.bytes_per_number;
    }
};

// The layout of a KVCache of `capacity` positions for `config`: float32.
inline CacheLayout cache_layout(const Config& config, int capacity) {
    return {cache_shape_of(config), std::uint64_t(capacity)};
}

}  // namespace kv
