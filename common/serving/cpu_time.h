// Chapter 05: the thread's CPU time, a clock that other work cannot stretch.
//
// The wall clock counts every moment the thread waits for the processor
// while other programs run; on a loaded machine a step can take twice its
// time on the wall. The thread's CPU time counts only the moments it ran,
// so a calibration and a real run timed with it can be compared even when
// they were made at different loads. (It still counts the slower running
// that shared caches cause; nothing in a program can remove that.)
#pragma once

#include <time.h>

namespace kv {

// Seconds of CPU time this thread has used so far.
inline double thread_cpu_seconds() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

// Which clock a real run reads.
enum class StepClock {
    wall,        // the wall clock: what a user waits
    thread_cpu,  // the thread's CPU time: what the engine's work took
};

}  // namespace kv
