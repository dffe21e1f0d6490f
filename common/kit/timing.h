// Wall-clock timing: warm up once, repeat, report the median.
//
// The median, not the mean: on a shared machine a few runs are slowed by
// other work, and the median ignores them.
#pragma once

#include <algorithm>
#include <chrono>
#include <vector>

namespace kv {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

inline double median(std::vector<double> values) {
    if (values.empty()) return 0.0;
    std::sort(values.begin(), values.end());
    const std::size_t n = values.size();
    return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// Runs fn once to warm caches and allocations, then `repeats` more times,
// and returns the median time of those in seconds.
template <class F>
double median_seconds(int repeats, F&& fn) {
    fn();
    std::vector<double> times;
    for (int i = 0; i < repeats; ++i) {
        const auto start = Clock::now();
        fn();
        times.push_back(seconds_since(start));
    }
    return median(times);
}

}  // namespace kv
