// The lab: what a cache costs the operating system. A cache is allocated,
// every position of every layer written as decoding would write it, and the
// process's resident memory read before and after (kit/machine.h). Run it
// while the process is fresh: a used process may recycle pages it already
// holds, and they would not show as growth (chapter 03).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "../core/config.h"
#include "../core/memory_arithmetic.h"
#include "../core/narrow_kv_cache.h"
#include "../core/number_format.h"
#include "../kit/machine.h"  // page_size, resident_bytes

namespace kv {

struct ResidentCache {
    std::uint64_t formula;               // cache_bytes(cache_shape_of(config, format), positions)
    std::uint64_t allocated;             // NarrowKVCache::bytes_allocated()
    std::optional<std::int64_t> growth;  // resident bytes after writing minus before
    std::uint64_t page_size;             // the unit resident memory is counted in
};

// A cache of `positions` for `config`'s shape in `format`.
inline ResidentCache measure_resident_cache(Config config, int positions, NumberFormat format) {
    config.max_seq = std::max(config.max_seq, positions);  // the room changes no per-token price
    ResidentCache r{cache_bytes(cache_shape_of(config, format), std::uint64_t(positions)), 0,
                    std::nullopt, page_size()};
    const std::optional<std::uint64_t> before = resident_bytes();
    auto cache = std::make_unique<NarrowKVCache>(config, positions, format);
    std::vector<float> key(std::size_t(config.kv_dim()), 0.5f), value(key.size(), -0.25f);
    for (int layer = 0; layer < config.n_layers; ++layer)
        for (int pos = 0; pos < positions; ++pos)
            cache->write(layer, pos, key.data(), value.data());
    const std::optional<std::uint64_t> after = resident_bytes();
    r.allocated = cache->bytes_allocated();
    if (before && after) r.growth = std::int64_t(*after) - std::int64_t(*before);
    return r;
}

}  // namespace kv
