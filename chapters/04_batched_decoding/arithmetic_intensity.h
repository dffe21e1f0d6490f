// What one decode step reads and what it computes: arithmetic intensity.
//
// A processor can do far more arithmetic per second than it can fetch bytes
// from memory. Whether a step is limited by one or the other depends on its
// arithmetic intensity, FLOPs per byte read. The weight products of a decode
// step read every weight matrix once, whatever the batch size B, and do 2
// FLOPs (a multiply and an add) per weight per sequence: 2 x P x B FLOPs
// for 4 x P bytes, B/2 FLOPs per byte. Batching raises the intensity of the
// weight products B-fold. Attention does not share: each sequence reads its
// own keys and values, so its intensity stays the same at any B.
#pragma once

#include <cstdint>
#include <span>

#include "../../common/core/checked.h"
#include "../../common/core/config.h"
#include "../../common/core/kv_cache.h"

namespace kv {

// Weights a token is multiplied by in one step (Config::multiplied_parameters:
// the matrices, not the embedding lookup nor the RMSNorm scales, a rounding
// error next to the matrices).
inline std::uint64_t multiplied_parameters(const Config& c) {
    return c.multiplied_parameters();
}

// Bytes of float32 weights one decode step must read, at any batch size.
inline std::uint64_t weight_bytes_per_step(const Config& c) {
    return checked_mul(multiplied_parameters(c), sizeof(float), "weight bytes per step");
}

// The work of one decode step over a batch whose caches are `caches`
// (before the step: each sequence attends to its cached positions plus the
// new one).
struct StepArithmetic {
    double weight_bytes = 0;     // every multiplied weight, read once
    double weight_flops = 0;     // 2 x multiplied parameters x B
    double attention_flops = 0;  // per layer and attended position: 2 x dim (q.k) + 2 x dim (p.v)
    double kv_bytes = 0;         // keys and values attention reads, every sequence its own

    double flops() const { return weight_flops + attention_flops; }
    double bytes() const { return weight_bytes + kv_bytes; }
    double flops_per_byte() const { return flops() / bytes(); }
};

inline StepArithmetic step_arithmetic(const Config& c, std::span<const KVCache* const> caches) {
    StepArithmetic a;
    a.weight_bytes = double(weight_bytes_per_step(c));
    a.weight_flops = 2.0 * double(multiplied_parameters(c)) * double(caches.size());
    for (const KVCache* cache : caches) {
        const double attended = double(cache->length()) + 1;
        a.attention_flops += 4.0 * c.n_layers * c.dim * attended;
        a.kv_bytes += double(c.kv_bytes(std::uint64_t(attended)));  // chapter 03's formula
    }
    return a;
}

}  // namespace kv
