// Timing, one way for the whole book: the thread's CPU time, the thread kept
// on the core it runs on, a warm-up, enough samples. `make bench`, chapter
// 02's decode step and chapter 04's batches all sample a step with
// sample_round, so one step on one shape gets one time in all three.
//
// The median of repeated runs, not the mean, where a reader's wait is the
// figure: a few runs slowed by other work do not move it. The fastest where
// a step is set against the machine's limits (a roof is the best the
// machine was seen to do, so its step is too).
#pragma once

#include <time.h>
#if defined(__linux__)
#include <sched.h>
#endif

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

// While it lives, this thread runs only on the core it was on (Linux's
// sched_setaffinity), then on the cores it had before. A thread the OS
// moves mid-step finds none of the step's weights in the new core's
// caches and reads them again: time that belongs to the move, not the step.
class KeptOnThisCore {
  public:
    KeptOnThisCore() {
#if defined(__linux__)
        const int core = sched_getcpu();
        if (core < 0 || sched_getaffinity(0, sizeof before_, &before_) != 0) return;
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(core, &one);
        if (sched_setaffinity(0, sizeof one, &one) == 0) core_ = core;
#endif
    }
    ~KeptOnThisCore() {
#if defined(__linux__)
        if (core_ >= 0) sched_setaffinity(0, sizeof before_, &before_);
#endif
    }
    KeptOnThisCore(const KeptOnThisCore&) = delete;
    KeptOnThisCore& operator=(const KeptOnThisCore&) = delete;

    int core() const {
        return core_;
    }  // -1: not kept (not Linux, or refused)

  private:
#if defined(__linux__)
    cpu_set_t before_{};
#endif
    int core_ = -1;
};

// Runs fn(false) once to warm caches and allocations, then fn(true)
// `repeats` times, and returns the thread CPU seconds of each of those,
// the thread kept on its core for each.
// after() (if given) runs untimed after each timed run.
template <class F, class After = void (*)()>
std::vector<double> timed_runs(
    int repeats, F&& fn, After&& after = [] {}) {
    std::vector<double> times;
    for (int run = 0; run <= repeats; ++run) {  // run 0 is the warm-up
        {
            const KeptOnThisCore kept;
            const double start = thread_cpu_seconds();
            fn(run > 0);
            if (run > 0) times.push_back(thread_cpu_seconds() - start);
        }
        if (run > 0) after();
    }
    return times;
}

// --------------------------------------------------------------- a step

// How a step is sampled: `rounds` rounds (taking turns with other work if
// the caller has any), each one untimed step and then `repeats` timed ones,
// fewer once they add up to `round_seconds` (at least one). The defaults
// are make bench's: 50 samples of a step that takes well under 20 ms.
struct StepSampling {
    int rounds = 5;
    int repeats = 10;
    double round_seconds = 1.0;
};

// Every timed run of one step, in thread CPU seconds.
struct StepSamples {
    std::vector<double> seconds;

    double fastest() const {
        return seconds.empty() ? 0.0 : *std::min_element(seconds.begin(), seconds.end());
    }
    double median() const { return kv::median(seconds); }
};

// One round: for each run, prepare() untimed (truncate the caches back, so
// every run is the same step), then step() timed; the thread is kept on
// its core for the round. Returns the round's fastest run.
template <class Prepare, class Step>
double sample_round(StepSamples& samples, int repeats, double round_seconds, Prepare&& prepare,
                    Step&& step) {
    const KeptOnThisCore kept;
    double timed = 0, fastest = 0;
    for (int run = 0; run <= repeats && (run < 2 || timed < round_seconds); ++run) {
        prepare();
        const double start = thread_cpu_seconds();
        step();
        const double seconds = thread_cpu_seconds() - start;
        if (run == 0) continue;  // the warm-up
        timed += seconds;
        samples.seconds.push_back(seconds);
        if (fastest == 0 || seconds < fastest) fastest = seconds;
    }
    return fastest;
}

}  // namespace kv
