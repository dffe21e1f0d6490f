// What make bench times, and the arithmetic that turns times into fractions
// of the machine's limits.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../../common/core/config.h"

namespace kv::bench {

struct Limits {
    double peak_fma;               // FLOP/s
    double peak_mul_add;           // FLOP/s
    double dram_bytes_per_second;  // streaming read
    std::uint64_t l3_bytes;        // weights larger than this come from DRAM
};

struct BenchShape {
    std::string name;
    Config config;
};

// demo: the book's default model; cache-resident: weights well inside the
// L3 cache; large: weights many times larger than it.
std::vector<BenchShape> bench_shapes();

struct Measurement {
    std::string what;  // "decode, batch 1", "decode, batch 16", "prefill, 128 tokens"
    double tokens_per_second = 0;
    double flops_per_second = 0;         // matrix products and attention, counted exactly
    double weight_bytes_per_second = 0;  // weight bytes the step must read, per second
    bool memory_bound = false;           // the bandwidth bound is the larger of the two bounds
};

struct ShapeResults {
    std::uint64_t weight_bytes = 0;
    std::vector<Measurement> rows;  // decode batch 1, decode batch 16, prefill
    std::string to_json() const;
};

ShapeResults measure_shape(const BenchShape& shape, int repeats, const Limits& limits);

// FLOPs of one forward pass over `rows` new tokens at positions start..,
// with `logit_rows` of them projected to the vocabulary: 2 per weight per
// row for the matrix products, and 4 * dim per attended position per layer
// (scores q.k, then the weighted sum of values).
double forward_flops(const Config& c, int rows, int start, int logit_rows);

// Bytes of weights one forward pass reads: every matrix once, whatever the
// number of rows (the embedding table only a row per token, ignored).
double weight_bytes_read(const Config& c);

}  // namespace kv::bench
