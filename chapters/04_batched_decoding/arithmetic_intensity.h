// What one decode step reads and what it computes, and what the machine
// allows: arithmetic intensity and the roofline.
//
// Whether a step is limited by arithmetic or by fetching bytes depends on
// its arithmetic intensity, FLOPs per byte read. The weight products of a
// decode step read every weight once, whatever the batch size B, and do 2
// FLOPs per weight per sequence: 2 x P x B FLOPs for 4 x P bytes, B/2 FLOPs
// per byte. Batching raises it B-fold; attention does not share (each
// sequence reads its own keys and values), so its intensity stays the same.
//
// The roofline model (Williams, Waterman and Patterson, 2009): a step runs
// at most at the lower of two roofs, the peak arithmetic and the memory
// bandwidth times its intensity. A CPU has more than one memory roof: the
// last-level cache is faster than DRAM (common/fast/memory_level.h says
// which one a working set is read from).
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>

#include "../../common/core/checked.h"
#include "../../common/core/config.h"
#include "../../common/core/kv_cache.h"

namespace kv {

// Bytes of float32 weights one decode step reads, at any batch size: the
// matrices (Config::multiplied_parameters), not the embedding nor the norms.
inline std::uint64_t weight_bytes_per_step(const Config& c) {
    return checked_mul(c.multiplied_parameters(), sizeof(float), "weight bytes per step");
}

// The work of one decode step over a batch whose caches are `caches`, each
// sequence attending to its cached positions and the new one.
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
    a.weight_flops = 2.0 * double(c.multiplied_parameters()) * double(caches.size());
    for (const KVCache* cache : caches) {
        const double attended = double(cache->length()) + 1;
        a.attention_flops += 4.0 * c.n_layers * c.dim * attended;
        a.kv_bytes += double(c.kv_bytes(std::uint64_t(attended)));  // chapter 03's formula
    }
    return a;
}

// This thread's roofs, measured by the kit's probes (machine_probes.h).
struct Roofline {
    double peak_flops = 0;             // FLOP/s, a multiply then an add (the kernels do not fuse)
    double dram_bytes_per_second = 0;  // reading from DRAM

    // The fastest FLOP/s at `flops_per_byte`, with the bytes read at `bytes_per_second`.
    double attainable(double flops_per_byte, double bytes_per_second) const {
        return std::min(peak_flops, flops_per_byte * bytes_per_second);
    }
    // The intensity where the memory roof meets the arithmetic roof.
    double ridge(double bytes_per_second) const { return peak_flops / bytes_per_second; }
};

// The batch at which the weight products reach `flops_per_byte`: 2 B /
// bytes_per_weight FLOPs per byte (B/2 with float32 weights, B with 16-bit).
inline double batch_at_intensity(double flops_per_byte, double bytes_per_weight) {
    return flops_per_byte * bytes_per_weight / 2;
}

}  // namespace kv
