// make bench's rules, apart from its timing: how a figure's samples give
// its value and its spread, which working-set sizes the read probe must
// measure, whether a row is a measurement, and whether a target is met. Pure functions of the
// figures, so that tests/bench_rules_test.cpp can hold each rule to its word.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
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

// The sizes the read probe must measure: one per distinct working set (a
// row's weights and the keys and values it reads), smallest first. Every
// row gets a read of its own size, whatever the OS reports of its caches.
inline std::vector<std::uint64_t> probe_sizes(const std::vector<std::uint64_t>& row_bytes) {
    std::vector<std::uint64_t> sizes = row_bytes;
    std::sort(sizes.begin(), sizes.end());
    sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
    return sizes;
}

// The read measured at `bytes` among the reads at `sizes` (rates[p] at
// sizes[p]), 0 if that size was not read.
inline double read_at_size(std::uint64_t bytes, const std::vector<std::uint64_t>& sizes,
                           const std::vector<double>& rates) {
    for (std::size_t p = 0; p < sizes.size() && p < rates.size(); ++p)
        if (sizes[p] == bytes) return rates[p];
    return 0.0;
}

// One row's figures against the limits (common/fast/memory_level.h).
struct RowFractions {
    Share of_peak;      // FLOP rate / the multiply-then-add peak
    Share of_roof;      // byte rate / the roof measured at the row's working set
    std::string level;  // where those bytes come from, as the reader is told
};

// Whether a row is a measurement. No step runs faster than the machine's
// limits, and each limit is the fastest this run saw the machine go (the
// roof: a read of the row's own size or of a larger buffer; memory_level.h),
// so a row above one, even after measuring the limit again, says the probe
// failed: the row is shown as a probe failure, its share never printed.
inline bool valid_measurement(const RowFractions& row) {
    return !row.of_peak.probe_failed() && !row.of_roof.probe_failed();
}

// ------------------------------------------------------------- targets

// What a target holds a row to: its memory roof (the bandwidth of the level
// its bytes come from) or the multiply-then-add peak.
enum class Against { memory_roof, peak };

inline double target_fraction(const RowFractions& row, Against against) {
    return (against == Against::peak ? row.of_peak : row.of_roof).share();
}

// A target is met only by a valid row at or above the goal.
inline bool target_met(const RowFractions& row, Against against, double goal) {
    return valid_measurement(row) && target_fraction(row, against) >= goal;
}

}  // namespace kv::bench
