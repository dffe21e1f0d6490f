// Chapter 03's experiment: price the cache of any model shape (the flags
// describe the model priced, not one the program runs: their ranges are
// wide, the limit is whether the byte counts fit in 64 bits), and check the
// formula against the bytes the demo model's cache really holds: its
// KVCache after prefill and after decode steps must report exactly the
// formula's bytes; and the process's resident memory grows, when a cache is
// allocated and filled, by those bytes in whole pages, plus the allocator's
// bookkeeping.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "../../common/core/cached_decoding.h"
#include "../../common/core/config.h"
#include "../../common/core/generation.h"
#include "../../common/core/kv_cache.h"
#include "../../common/core/memory_arithmetic.h"
#include "../../common/core/transformer.h"
#include "../../common/kit/flags.h"
#include "../../common/kit/machine.h"  // beyond_memory
#include "../../common/kit/report.h"
#include "../../common/lab/resident_cache.h"

namespace kv {

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

struct ResidentGrowth {
    std::uint64_t tokens;                // positions of the cache
    std::uint64_t formula;               // cache_bytes(cache_shape_of(config), tokens)
    std::uint64_t allocated;             // KVCache::bytes_allocated()
    std::optional<std::int64_t> growth;  // resident bytes after filling minus before; may be off
                                         // by pages the program touched for other reasons
    std::uint64_t page_size;             // the unit resident memory is counted in
};

// Allocates a float32 cache of `tokens` positions for `config`'s shape,
// writes every number of it, and measures how much the process's resident
// memory grew (the lab's measure, common/lab/resident_cache.h). Called
// first: a fresh process gets fresh pages, where a used one might recycle
// pages it holds, which would not show as growth.
inline ResidentGrowth measure_resident_growth(const Config& config, int tokens) {
    const ResidentCache r = measure_resident_cache(config, tokens, NumberFormat::float32);
    return {std::uint64_t(tokens), r.formula, r.allocated, r.growth, r.page_size};
}

}  // namespace kv

namespace kv::ch03 {

struct PriceOptions {
    CacheShape shape;                  // the seed shape: 32 layers, 8 KV heads, 128, 16-bit
    std::uint64_t heads = 32;          // query heads: the KV heads of multi-head attention
    std::uint64_t context = 4096;      // positions a conversation may use, reserved up front
    std::uint64_t mean_tokens = 1024;  // tokens a conversation holds on average (an assumption)
    double budget_gib = 64;            // memory for the cache: about what an 80 GB accelerator
                                       // has left beside 16-bit 8B-parameter weights
};

// The priced shape with another layout's KV heads and another number width.
inline CacheShape with_layout(CacheShape s, std::uint64_t kv_heads, std::uint64_t bytes) {
    s.kv_heads = kv_heads;
    s.bytes_per_number = bytes;
    return s;
}

// Throws UsageError, naming the flags and values, for anything the program
// could not price: KV heads that do not divide the query heads, a mean
// longer than the context, a byte count of any layout or width past 64 bits.
inline void check_price_options(const PriceOptions& o) {
    auto n = [](std::uint64_t v) { return std::to_string(v); };
    if (o.heads % o.shape.kv_heads != 0)
        throw UsageError("--kv-heads " + n(o.shape.kv_heads) + " must divide --heads " +
                         n(o.heads) + ": each KV head serves a whole group of query heads");
    if (o.mean_tokens > o.context)
        throw UsageError("--mean-len " + n(o.mean_tokens) + " is longer than --context " +
                         n(o.context));
    for (const AttentionLayout& layout : attention_layouts(o.heads, o.shape.kv_heads))
        for (std::uint64_t bytes : number_widths(o.shape.bytes_per_number)) {
            try {
                cache_bytes(with_layout(o.shape, layout.kv_heads, bytes), o.context);
            } catch (const std::overflow_error& e) {
                throw UsageError(std::string(e.what()) + " (" + layout.name + ", " + n(8 * bytes) +
                                 "-bit): --layers " + n(o.shape.layers) + " --heads " + n(o.heads) +
                                 " --kv-heads " + n(o.shape.kv_heads) + " --head-size " +
                                 n(o.shape.head_size) + " --bytes " + n(o.shape.bytes_per_number) +
                                 " --context " + n(o.context));
            }
        }
}

struct Results {
    PriceOptions price;                  // the shape priced, its context and the budget
    Config demo;                         // the book's demo model
    std::vector<CacheReading> readings;  // its cache against the formula while decoding
    ResidentGrowth resident;             // the process's memory when a cache is filled
    int demo_capacity;                   // positions the decoding cache reserved

    bool all_agree() const { return std::ranges::all_of(readings, &CacheReading::agree); }
};

struct Experiment {
    PriceOptions price;          // the shape priced, its context and the budget
    int measure_tokens = 16384;  // positions of the cache whose resident memory is measured
    int prompt_len = 16;         // the demo answer of chapters 01-02: 16-token prompt...
    int decode_steps = 48;       // ...then one decode step per answer token

    void add_flags(Flags& flags) {
        const std::uint64_t most = UINT64_MAX;
        PriceOptions& o = price;
        flags.add("layers", o.shape.layers, 1, most, "layers of the model to price");
        flags.add("heads", o.heads, 1, most, "query heads (the KV heads of multi-head attention)");
        flags.add("kv-heads", o.shape.kv_heads, 1, most,
                  "KV heads per layer (must divide --heads)");
        flags.add("head-size", o.shape.head_size, 1, most, "numbers per head");
        flags.add("bytes", o.shape.bytes_per_number, 1, 8, "bytes per cached number (2 = 16-bit)");
        flags.add("context", o.context, 1, most, "tokens of context a conversation reserves");
        flags.add("mean-len", o.mean_tokens, 1, most, "tokens a conversation holds on average");
        flags.add("budget-gib", o.budget_gib, 0.001, 1e9, "memory for the KV cache, in GiB");
        flags.add("measure-tokens", measure_tokens, 1, 1 << 24,
                  "positions of the demo model's cache whose resident memory is measured");
    }

    void check() const {
        check_price_options(price);
        const std::uint64_t bytes = Config().kv_bytes(std::uint64_t(measure_tokens));
        if (const std::string beyond = beyond_memory(double(bytes), 0.25); !beyond.empty())
            throw UsageError("--measure-tokens " + std::to_string(measure_tokens) + " needs " +
                             format_bytes(bytes) + ", " + beyond);
    }

    Results run() const {
        const Config demo;  // the book's demo model (common/core/config.h)
        // Resident memory first, while the process is fresh.
        ResidentGrowth resident = measure_resident_growth(demo, measure_tokens);
        return {price, demo, read_cache_while_decoding(demo, prompt_len, decode_steps, 1), resident,
                prompt_len + decode_steps};
    }
};

}  // namespace kv::ch03
