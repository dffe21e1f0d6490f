// Chapter 03: the formula against the bytes a real cache holds.
//
// Two checks on the demo model. First, its KVCache after prefill and after
// decode steps: the bytes it reports must equal the formula exactly, since
// it stores nothing but keys and values. Second, the operating system's
// view: the process's resident memory grows when a cache is allocated and
// filled, by the formula's bytes rounded up to whole pages, plus the
// allocator's few bytes of bookkeeping per allocation (resident_bytes() in
// common/kit/machine.h reads it).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "../../common/core/cached_decoding.h"
#include "../../common/core/config.h"
#include "../../common/core/generation.h"
#include "../../common/core/kv_cache.h"
#include "../../common/core/memory_arithmetic.h"
#include "../../common/core/transformer.h"
#include "../../common/kit/machine.h"  // page_size, resident_bytes

namespace kv {

// ------------------------------------------- the KVCache against the formula

// The cache at one moment of an answer, priced three ways.
struct CacheReading {
    std::string moment;        // "after prefill", ...
    std::uint64_t tokens;      // positions the cache holds
    std::uint64_t formula;     // cache_bytes(cache_shape_of(config), tokens): this chapter
    std::uint64_t config_kv;   // Config::kv_bytes(tokens): the core's copy of the formula
    std::uint64_t cache_says;  // KVCache::bytes_used(), or bytes_allocated() for the last row

    bool agree() const { return formula == config_kv && formula == cache_says; }
};

// Prefills a prompt of `prompt_len` tokens, then runs `decode_steps` greedy
// decode steps, reading the cache after each phase; the last reading is the
// room the cache allocated up front (prompt_len + decode_steps positions).
inline std::vector<CacheReading> read_cache_while_decoding(const Config& config, int prompt_len,
                                                           int decode_steps, std::uint64_t seed) {
    Transformer model(config, seed);
    const std::vector<int> prompt = fixed_prompt(prompt_len, config.vocab_size, seed);
    KVCache cache(config, prompt_len + decode_steps);
    const CacheShape shape = cache_shape_of(config);
    std::vector<CacheReading> readings;
    auto read = [&](std::string moment, std::uint64_t tokens, std::uint64_t cache_says) {
        readings.push_back({std::move(moment), tokens, cache_bytes(shape, tokens),
                            config.kv_bytes(tokens), cache_says});
    };

    int token = argmax(prefill(model, prompt, cache));
    read("after prefill", std::uint64_t(cache.length()), cache.bytes_used());
    for (int step = 0; step < decode_steps; ++step)
        token = argmax(decode_step(model, token, cache));
    read("after " + std::to_string(decode_steps) + " decode steps", std::uint64_t(cache.length()),
         cache.bytes_used());
    read("allocated up front", std::uint64_t(cache.capacity()), cache.bytes_allocated());
    return readings;
}

// ------------------------------------------ resident memory of the process

struct ResidentGrowth {
    std::uint64_t tokens;                // positions of the cache
    std::uint64_t formula;               // cache_bytes(cache_shape_of(config), tokens)
    std::uint64_t allocated;             // KVCache::bytes_allocated()
    std::optional<std::int64_t> growth;  // resident bytes after filling minus before; may be off
                                         // by pages the program touched for other reasons
    std::uint64_t page_size;             // the unit resident memory is counted in
};

// Allocates a cache of `tokens` positions for `config`'s shape, writes every
// number of it, and measures how much the process's resident memory grew.
// Call it before the program allocates and frees much else: a fresh process
// gets fresh pages from the system, where a used one might recycle pages
// it already holds, and they would not show as growth.
inline ResidentGrowth measure_resident_growth(Config config, int tokens) {
    config.max_seq = std::max(config.max_seq, tokens);  // the room changes no per-token price
    ResidentGrowth result{std::uint64_t(tokens), cache_bytes(cache_shape_of(config), tokens), 0,
                          std::nullopt, page_size()};
    const std::optional<std::uint64_t> before = resident_bytes();
    auto cache = std::make_unique<KVCache>(config, tokens);
    // The constructor zeroes the cache; write it again, as decoding would, so
    // that every page has certainly been touched.
    for (int layer = 0; layer < config.n_layers; ++layer)
        for (int pos = 0; pos < tokens; ++pos)
            for (int i = 0; i < cache->kv_dim(); ++i) {
                cache->key(layer, pos)[i] = float(pos);
                cache->value(layer, pos)[i] = float(-pos);
            }
    const std::optional<std::uint64_t> after = resident_bytes();
    result.allocated = cache->bytes_allocated();
    if (before && after) result.growth = std::int64_t(*after) - std::int64_t(*before);
    return result;
}

}  // namespace kv
