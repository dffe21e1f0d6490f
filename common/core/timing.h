// Timing: warm up once, repeat, report the median; and the thread's CPU time.
//
// The median, not the mean: on a shared machine a few runs are slowed by
// other work, and the median ignores them.
#pragma once

#include <time.h>

#include <algorithm>
#include <chrono>
#include <vector>

namespace kv {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

// Seconds of CPU time this thread has used so far. Unlike the wall clock,
// it does not count the moments the thread waits while other programs run,
// so steps timed at different loads can be compared (the slower running
// that shared caches cause is still in it).
inline double thread_cpu_seconds() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

inline double median(std::vector<double> values) {
    if (values.empty()) return 0.0;
    std::sort(values.begin(), values.end());
    const std::size_t n = values.size();
    return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// Runs fn once to warm caches and allocations, then `repeats` more times,
// and returns the time of each of those in seconds. fn is told whether the
// run counts (false for the warm-up).
template <class F>
std::vector<double> timed_runs(int repeats, F&& fn) {
    std::vector<double> times;
    for (int run = 0; run <= repeats; ++run) {  // run 0 is the warm-up
        const auto start = Clock::now();
        fn(run > 0);
        if (run > 0) times.push_back(seconds_since(start));
    }
    return times;
}

}  // namespace kv
