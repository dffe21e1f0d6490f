// make bench's rules, apart from its timing: how a figure's samples give
// its value and its spread, which working-set sizes the read probe must
// measure, where a row's bytes come from, whether a row is a measurement,
// and whether a target is met. Pure functions of the figures,
// so that tests/bench_rules_test.cpp can hold each rule to its word.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "../../common/fast/memory_level.h"

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

// The sizes the read probe must measure: one buffer per distinct working
// set (a row's weights and the keys and values it reads) that fits in the
// reported last level, smallest first. A working set larger than that is
// read from DRAM and needs no probe of its own.
inline std::vector<std::uint64_t> last_level_probe_sizes(
    const std::vector<std::uint64_t>& row_bytes, std::uint64_t reported_last_level) {
    std::vector<std::uint64_t> sizes;
    for (std::uint64_t b : row_bytes)
        if (fits_reported_last_level(b, reported_last_level)) sizes.push_back(b);
    std::sort(sizes.begin(), sizes.end());
    sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
    return sizes;
}

// The read measured at `bytes` among the reads at `sizes` (rates[p] at
// sizes[p]), 0 if that size was not read (it does not fit the cache).
inline double read_at_size(std::uint64_t bytes, const std::vector<std::uint64_t>& sizes,
                           const std::vector<double>& rates) {
    for (std::size_t p = 0; p < sizes.size() && p < rates.size(); ++p)
        if (sizes[p] == bytes) return rates[p];
    return 0.0;
}

// One row's figures against the limits.
struct RowFractions {
    double of_peak = 0;            // FLOP rate / the multiply-then-add peak
    double of_roof = 0;            // byte rate / the roof of the level they come from
    bool from_last_level = false;  // that level: the last-level cache, or DRAM
};

// Whether a row is a measurement. No step runs faster than the machine's
// limits, so a row above 100 % of the peak or of its roof means the limit
// or the time was measured wrong: it is refused, not printed. There is no
// exception: a row's roof is always the fastest this machine was seen to
// read such a working set (a read of its own size, or DRAM's rate over the
// DRAM probe's buffer when that was faster; memory_roof in
// common/fast/memory_level.h), so a row above it has outrun every read.
inline bool valid_measurement(const RowFractions& row) {
    return row.of_peak <= 1.0 && row.of_roof <= 1.0;
}

// ------------------------------------------------------------- targets

// What a target holds a row to: its memory roof (the bandwidth of the level
// its bytes come from) or the multiply-then-add peak.
enum class Against { memory_roof, peak };

inline double target_fraction(const RowFractions& row, Against against) {
    return against == Against::peak ? row.of_peak : row.of_roof;
}

// A target is met only by a valid row at or above the goal.
inline bool target_met(const RowFractions& row, Against against, double goal) {
    return valid_measurement(row) && target_fraction(row, against) >= goal;
}

}  // namespace kv::bench
