// Chapter 10: what a narrower cache buys in time.
//
// A decode step reads every weight once (float32 at every width: the format
// is the cache's, not the model's) and every position of every sequence's
// cache, keys and values, in every layer. At long contexts and in batches
// the cache is most of those bytes, and the step is bound by reading them:
// attention reads the cache where it lies and widens each number in
// registers (common/fast/widen.h), so half the bytes per number is close to
// half the cache's share of the step. Where widening and arithmetic cost
// more than the reading they save, the step stops shrinking: the kernels'
// own rate on rows already in the core's caches against the rate memory
// delivers says which of the two sets the pace.
#pragma once

#include <cstdint>

#include "../../common/core/config.h"
#include "../../common/core/memory_arithmetic.h"
#include "../../common/core/number_format.h"

namespace kv::ch10 {

// The bytes one decode step reads: `batch` sequences, each attending to
// `positions` positions (its new one included).
struct StepReads {
    std::uint64_t weights = 0;  // every weight a pass multiplies by
    std::uint64_t cache = 0;    // every sequence's keys and values, every layer
    std::uint64_t total() const { return weights + cache; }
};

inline StepReads decode_step_reads(const Config& config, NumberFormat format, int positions,
                                   int batch) {
    return {config.weight_bytes_read_per_pass(),
            std::uint64_t(batch) *
                cache_bytes(cache_shape_of(config, format), std::uint64_t(positions))};
}

// What the book expects of a narrower format's step against float32's at
// the long context: alone, never slower; in a batch, where the cache is
// most of the bytes, close to the bytes' own ratio (16-bit at most 0.70 x,
// int8 at most 0.55 x), the rest being weights, softmax and widening.
inline double target_ratio(NumberFormat format, int batch) {
    if (batch == 1 || format == NumberFormat::float32) return 1.0;
    return format == NumberFormat::int8 ? 0.55 : 0.70;
}

// What sets the pace of a step that reads `reads`: the longer of two
// floors, the whole step's bytes at the rate memory delivers them, and the
// cache's bytes at the rate attention's kernels consume them with the rows
// already near the core (reading, widening and the arithmetic per number).
enum class Limit { reads, kernels };
inline Limit limit_of(const StepReads& reads, double kernel_bytes_per_second,
                      double read_bytes_per_second) {
    const double kernels = double(reads.cache) / kernel_bytes_per_second;
    return kernels > double(reads.total()) / read_bytes_per_second ? Limit::kernels : Limit::reads;
}
inline const char* limit_name(Limit l) {
    return l == Limit::reads ? "reads" : "kernels";
}

}  // namespace kv::ch10
