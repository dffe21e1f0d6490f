// make bench's rules, apart from its timing: how a figure's samples give
// its value and its spread, where a row's bytes come from, whether the
// last-level probe read from the cache at all, whether a row is a
// measurement, and whether a target is met. Pure functions of the figures,
// so that tests/bench_rules_test.cpp can hold each rule to its word.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "../../common/kit/memory_level.h"

namespace kv::bench {

// ------------------------------------------------------------- samples

// The samples of one figure, each its own timed run: the best is the figure.
struct Samples {
    bool higher_is_better = true;  // a rate (FLOP/s, bytes/s); false for a time
    std::vector<double> values;

    double best() const {
        if (values.empty()) return 0;
        return higher_is_better ? *std::max_element(values.begin(), values.end())
                                : *std::min_element(values.begin(), values.end());
    }

    // How much longer the slowest sample took than the fastest: slowest /
    // fastest - 1, for times and rates alike (a rate's samples each time the
    // same work, so the ratio of its times is highest / lowest rate). The
    // definition of chapter 05's runs spread. 0 for fewer than two samples;
    // infinite if a sample is not positive (no time was measured).
    double spread() const {
        if (values.size() < 2) return 0;
        const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
        if (*lo <= 0) return std::numeric_limits<double>::infinity();
        return *hi / *lo - 1;
    }
};

// ---------------------------------------------------------------- rows

// Where a row's bytes (weights and the keys and values attention reads)
// come from: the last-level cache if they fit in the share of it the book
// counts on, else DRAM. The book's one rule (common/kit/memory_level.h).
inline bool bytes_from_last_level(std::uint64_t bytes, std::uint64_t reported_last_level) {
    return fits_in_last_level(bytes, reported_last_level);
}

// Whether the last-level probe's buffer was cache-resident: only if it read
// clearly faster than DRAM (by more than a fifth). If not, the roof it
// gives is DRAM's under another name and means nothing.
inline bool last_level_probe_resident(double last_level_rate, double dram_rate) {
    return last_level_rate > 1.2 * dram_rate;
}

// One row's figures against the limits.
struct RowFractions {
    double of_peak = 0;            // FLOP rate / the multiply-then-add peak
    double of_roof = 0;            // byte rate / the roof of the level they come from
    bool from_last_level = false;  // that level: the last-level cache, or DRAM
};

// Whether a row is a measurement. No step runs faster than the machine's
// limits, so a row above 100 % of the peak or of its roof means the limit
// or the time was measured wrong: it is refused, not printed. One row above
// its roof is kept: one whose bytes come from the last-level cache when the
// probe was not resident, because then that roof was no roof (its target
// is not met, below).
inline bool valid_measurement(const RowFractions& row, bool last_level_resident) {
    if (row.of_peak > 1.0) return false;
    return row.of_roof <= 1.0 || (row.from_last_level && !last_level_resident);
}

// ------------------------------------------------------------- targets

// What a target holds a row to: its memory roof (the bandwidth of the level
// its bytes come from) or the multiply-then-add peak.
enum class Against { memory_roof, peak };

inline double target_fraction(const RowFractions& row, Against against) {
    return against == Against::peak ? row.of_peak : row.of_roof;
}

// A target is met only by a valid row at or above the goal, and one against
// the last-level cache's roof only if the last-level probe was resident.
inline bool target_met(const RowFractions& row, Against against, double goal,
                       bool last_level_resident) {
    if (!valid_measurement(row, last_level_resident)) return false;
    if (against == Against::memory_roof && row.from_last_level && !last_level_resident)
        return false;
    return target_fraction(row, against) >= goal;
}

}  // namespace kv::bench
