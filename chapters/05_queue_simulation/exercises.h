// Chapter 05 exercises: stubs for you to fill in (see EXERCISES.md). The
// tests in tests/exercises_ch05_test.cpp are skipped until you enable them.
#pragma once

#include <span>
#include <stdexcept>
#include <vector>

#include "../../common/serving/scheduler.h"
#include "../../common/serving/step_cost.h"
#include "../../common/serving/workload.h"

namespace kv::exercises {

// Exercise 5: a Policy::priority that serves the shortest prompt first
// (lowest value goes first).
inline double shortest_prompt_first(const Request& r) {
    (void)r;
    throw std::logic_error("exercise 05.5: shortest_prompt_first is not implemented yet");
}

// Exercise 6: every request's time to first token when one server with the
// cache serves the queue serially, first come first served, everyone
// queued at time 0: computed by hand from the step cost, no scheduler.
inline std::vector<double> serial_ttft_by_hand(const StepCost& cost,
                                               std::span<const Request> requests) {
    (void)cost, (void)requests;
    throw std::logic_error("exercise 05.6: serial_ttft_by_hand is not implemented yet");
}

}  // namespace kv::exercises
