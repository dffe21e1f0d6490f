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

// Seconds of CPU time this thread has used: unlike the wall clock, not the
// moments it waits while other programs run, so steps timed at different
// loads compare (the slowing that shared caches cause is still in it).
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

// Runs fn(false) once to warm caches and allocations, then fn(true)
// `repeats` times, and returns the seconds of each of those.
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
