// Chapter 03: what the KV cache costs in memory, and what that caps.
//
// A conversation's cache keeps, for every token it holds, one key vector and
// one value vector per KV head in every layer. So its price per token is
//
//     2 (a key and a value) x layers x KV heads x head size x bytes per number
//
// and a conversation costs that times its tokens. Nothing else about the
// model enters the price: not its width, its query heads or its vocabulary.
// Divide a memory budget by the price of one conversation and you have the
// most conversations a server can hold at once: the cap on batching. Every
// byte count is 64-bit and checked (checked.h): it throws, never wraps.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "checked.h"
#include "config.h"
#include "number_format.h"

namespace kv {

// ------------------------------------------------------------ the price

// The four numbers that set a cache's price, for any model. The defaults
// are the shape of several public 7-8B models: 32 layers, 8 KV heads, head
// size 128, 16-bit.
struct CacheShape {
    std::uint64_t layers = 32;           // transformer blocks, each with its own keys and values
    std::uint64_t kv_heads = 8;          // key/value heads per layer
    std::uint64_t head_size = 128;       // numbers in one head's key (and in its value)
    std::uint64_t bytes_per_number = 2;  // 4 = 32-bit, 2 = 16-bit, 1 = 8-bit
    // An 8-bit cache's scales (chapter 10): bytes_per_scale bytes for every
    // numbers_per_scale numbers of a head (the last block may be shorter).
    std::uint64_t numbers_per_scale = 0;  // 0: no scales
    std::uint64_t bytes_per_scale = 0;
};

// The cache shape of a model the book runs, float32 unless told otherwise.
inline CacheShape cache_shape_of(const Config& config,
                                 std::uint64_t bytes_per_number = sizeof(float)) {
    return {std::uint64_t(config.n_layers), std::uint64_t(config.n_kv_heads),
            std::uint64_t(config.head_size()), bytes_per_number};
}

inline CacheShape cache_shape_of(const Config& config, NumberFormat format) {
    const RowFormat row = row_format_of(config, format);
    CacheShape s = cache_shape_of(config, std::uint64_t(row.bytes_per_number()));
    if (row.scales() > 0) {
        s.numbers_per_scale = kInt8Block;
        s.bytes_per_scale = 2;  // a float16
    }
    return s;
}

// Bytes of cache one token costs. A zero anywhere in the shape is refused.
inline std::uint64_t bytes_per_token(const CacheShape& s) {
    if (s.layers == 0 || s.kv_heads == 0 || s.head_size == 0 || s.bytes_per_number == 0)
        throw std::invalid_argument(
            "a cache shape needs layers, KV heads, head size and bytes "
            "per number all at least 1");
    const char* what = "bytes of KV cache per token";
    std::uint64_t bytes = checked_mul(2, s.layers, what);  // a key and a value, in every layer
    bytes = checked_mul(bytes, s.kv_heads, what);
    // One head's key (or value): its numbers, then its scales if it has any.
    std::uint64_t head = checked_mul(s.head_size, s.bytes_per_number, what);
    if (s.numbers_per_scale > 0) {
        const std::uint64_t scales =
            s.head_size / s.numbers_per_scale + (s.head_size % s.numbers_per_scale != 0 ? 1 : 0);
        head = checked_add(head, checked_mul(scales, s.bytes_per_scale, what), what);
    }
    return checked_mul(bytes, head, what);
}

// Bytes of cache `tokens` tokens cost.
inline std::uint64_t cache_bytes(const CacheShape& s, std::uint64_t tokens) {
    return checked_mul(bytes_per_token(s), tokens, "bytes of KV cache per conversation");
}

// One step of the derivation, for the program to print.
struct PriceFactor {
    std::uint64_t factor;   // what this step multiplies by
    std::string meaning;    // what the factor counts
    std::uint64_t product;  // the product so far
    std::string unit;       // what the product counts: "vectors", "numbers" or "bytes"
};

// bytes_per_token(), one factor at a time; the last step equals it for a
// shape without scales (scales are added, not multiplied).
inline std::vector<PriceFactor> price_factors(const CacheShape& s) {
    bytes_per_token(s);  // refuses zeros and overflow before we start
    std::vector<PriceFactor> steps;
    std::uint64_t bytes = 1;
    auto times = [&](std::uint64_t factor, const char* meaning, const char* unit) {
        bytes *= factor;  // cannot wrap: the whole product was checked above
        steps.push_back({factor, meaning, bytes, unit});
    };
    times(2, "a key and a value", "vectors");
    times(s.layers, s.layers == 1 ? "layer" : "layers", "vectors");
    times(s.kv_heads, s.kv_heads == 1 ? "KV head" : "KV heads", "vectors");
    times(s.head_size, "numbers per head", "numbers");
    times(s.bytes_per_number, s.bytes_per_number == 1 ? "byte per number" : "bytes per number",
          "bytes");
    return steps;
}

// ------------------------------------------------ what moves the price

// Attention layouts differ only in how many KV heads they keep per layer.
struct AttentionLayout {
    std::string name;
    std::uint64_t kv_heads;
};

// Multi-head attention keeps a key and value per query head; grouped-query
// shares each KV head among several query heads; multi-query keeps one.
// A shape already multi-head or multi-query gets no grouped-query row.
inline std::vector<AttentionLayout> attention_layouts(std::uint64_t query_heads,
                                                      std::uint64_t kv_heads) {
    std::vector<AttentionLayout> layouts = {{"multi-head", query_heads}};
    if (kv_heads > 1 && kv_heads < query_heads) layouts.push_back({"grouped-query", kv_heads});
    if (query_heads > 1) layouts.push_back({"multi-query", 1});
    return layouts;
}

// Bytes per number to compare: 32-bit, 16-bit and 8-bit, plus `chosen` if it
// is none of those; widest first.
inline std::vector<std::uint64_t> number_widths(std::uint64_t chosen) {
    std::vector<std::uint64_t> widths = {4, 2, 1};
    if (std::find(widths.begin(), widths.end(), chosen) == widths.end()) widths.push_back(chosen);
    std::sort(widths.rbegin(), widths.rend());
    return widths;
}

// ------------------------------------------------------- what it caps

// GiB (2^30 bytes) to bytes, rounded down to a whole byte.
inline std::uint64_t gib_to_bytes(double gib) {
    if (!std::isfinite(gib) || gib < 0)
        throw std::invalid_argument("a memory budget must be a finite number of GiB, at least 0");
    const double bytes = std::floor(gib * 1073741824.0);
    if (bytes >= 18446744073709551616.0)  // 2^64
        throw std::overflow_error("a budget of " + std::to_string(gib) +
                                  " GiB does not fit in 64 bits of bytes");
    return static_cast<std::uint64_t>(bytes);
}

// Whole conversations of `bytes_per_conversation` each that a budget holds.
inline std::uint64_t conversations_that_fit(std::uint64_t budget_bytes,
                                            std::uint64_t bytes_per_conversation) {
    if (bytes_per_conversation == 0)
        throw std::invalid_argument("conversations_that_fit: a conversation of 0 bytes");
    return budget_bytes / bytes_per_conversation;
}

// Tokens, counted over every conversation together, that a budget holds.
inline std::uint64_t tokens_that_fit(std::uint64_t budget_bytes, const CacheShape& s) {
    return budget_bytes / bytes_per_token(s);
}

// How a server sets memory aside for a conversation it admits.
enum class Reservation {
    whole_context,  // room for every position it may ever use, up front (a KVCache does this)
    tokens_held,    // only the tokens it holds now, growing as it goes
};

// What a budget holds of one shape under both policies.
struct BudgetFit {
    std::uint64_t reserved_bytes;  // one conversation reserving its whole context
    std::uint64_t held_bytes;      // one conversation holding its mean tokens
    std::uint64_t fit_reserving;   // conversations the budget holds, each reserving
    std::uint64_t fit_holding;     // conversations the budget holds, each holding only its tokens
    double waste_percent;          // share of a reservation that holds no token
};

inline BudgetFit fit_budget(const CacheShape& s, std::uint64_t budget_bytes, std::uint64_t context,
                            std::uint64_t mean_tokens) {
    if (mean_tokens == 0 || mean_tokens > context)
        throw std::invalid_argument("a conversation's mean length must be 1 to its context, not " +
                                    std::to_string(mean_tokens));
    BudgetFit fit;
    fit.reserved_bytes = cache_bytes(s, context);
    fit.held_bytes = cache_bytes(s, mean_tokens);
    fit.fit_reserving = conversations_that_fit(budget_bytes, fit.reserved_bytes);
    fit.fit_holding = conversations_that_fit(budget_bytes, fit.held_bytes);
    fit.waste_percent =
        100.0 * double(fit.reserved_bytes - fit.held_bytes) / double(fit.reserved_bytes);
    return fit;
}

}  // namespace kv
