// Chapter 05 exercises (see chapters/05_queue_simulation/EXERCISES.md).
// Skipped until you enable them: ./build/book_tests -ts="exercises ch05" --no-skip
// (or remove * doctest::skip() from one case).
#include <doctest/doctest.h>

#include <algorithm>
#include <span>
#include <vector>

#include "../chapters/05_queue_simulation/exercises.h"
#include "../common/serving/memory_budget.h"
#include "../common/serving/metrics.h"
#include "../common/serving/scheduler.h"

using namespace kv;

namespace {

Summary simulate(std::span<const Request> queue, const Policy& policy, const MemoryBudget& budget,
                 const StepCost& cost) {
    SimulatedExecutor executor(cost);
    return summarize(run_schedule(queue, policy, budget, executor));
}

// Prompts from 8 to 256 tokens, short answers: prefill is most of the work,
// so the order of prompts matters.
WorkloadOptions prompt_heavy(double rate) {
    return {.requests = 400,
            .prompt_min = 8,
            .prompt_max = 256,
            .answer_len = 16,
            .answer_max = 64,
            .rate = rate};
}

}  // namespace

TEST_SUITE("exercises ch05") {
    TEST_CASE("exercise 05.5 shortest prompt first" * doctest::skip()) {
        const Config config;
        const StepCost cost = analytic_step_cost(config);
        const MemoryBudget budget = make_budget(config, 64, Reservation::whole_context);
        const Policy fcfs{"serial, cache", 1, false, true};
        Policy shortest = fcfs;
        shortest.priority = exercises::shortest_prompt_first;

        // Arrivals at the rate the server can just keep up with.
        const std::vector<Request> at_once = make_workload(prompt_heavy(0));
        const double capacity =
            double(at_once.size()) / simulate(at_once, fcfs, budget, cost).total_s;
        const std::vector<Request> queue = make_workload(prompt_heavy(capacity));
        const Summary first_come = simulate(queue, fcfs, budget, cost);
        const Summary shortest_first = simulate(queue, shortest, budget, cost);
        MESSAGE("median wait: first come first served " << first_come.ttft_median
                                                        << " s, shortest prompt first "
                                                        << shortest_first.ttft_median << " s");
        MESSAGE("longest wait: first come first served "
                << first_come.ttft_max << " s, shortest prompt first " << shortest_first.ttft_max
                << " s");
        CHECK(shortest_first.ttft_median < first_come.ttft_median / 2);  // most people win
        CHECK(shortest_first.ttft_max > 3 * first_come.ttft_max);        // the long prompts starve
    }

    TEST_CASE("exercise 05.6 serial queue by hand" * doctest::skip()) {
        const Config config;
        const StepCost cost = analytic_step_cost(config);
        WorkloadOptions w;
        w.requests = 50;
        const std::vector<Request> queue = make_workload(w);
        const std::vector<double> by_hand = exercises::serial_ttft_by_hand(cost, queue);
        SimulatedExecutor executor(cost);
        const Schedule s =
            run_schedule(queue, Policy{"serial, cache", 1, false, true},
                         make_budget(config, 16, Reservation::whole_context), executor);
        REQUIRE(by_hand.size() == queue.size());
        for (const Request& r : queue)
            CHECK(by_hand[std::size_t(r.id)] ==
                  doctest::Approx(s.requests[std::size_t(r.id)].first_token_s - r.arrival_s));
    }
}
