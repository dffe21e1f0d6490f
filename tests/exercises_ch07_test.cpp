// Chapter 07 exercises (see chapters/07_paged_kv_cache/EXERCISES.md).
// Skipped until you enable them:
//   ./build/book_tests -ts="exercises ch07" --no-skip
// (or remove * doctest::skip() from one case).
#include <doctest/doctest.h>

#include <vector>

#include "../chapters/07_paged_kv_cache/exercises.h"
#include "../common/serving/scheduler.h"
#include "../common/serving/step_cost.h"
#include "tiny_models.h"

using namespace kv;

TEST_SUITE("exercises ch07") {
    TEST_CASE("exercise 07.3 largest-first preemption" * doctest::skip()) {
        exercises::LargestFirstPagedMemory memory({.blocks = 100, .block_size = 4});
        std::vector<Request> r(4);
        const int prompts[] = {9, 30, 30, 5};  // 3, 8, 8 and 2 blocks
        for (int i = 0; i < 4; ++i) {
            r[std::size_t(i)].id = i;
            r[std::size_t(i)].prompt_len = prompts[i];
            r[std::size_t(i)].answer_cap = r[std::size_t(i)].answer_len = 10;
            r[std::size_t(i)].status = RequestStatus::decoding;
            memory.admit(r[std::size_t(i)]);
        }
        std::vector<Request*> batch = {&r[0], &r[1], &r[2], &r[3]};
        CHECK(memory.victim(batch) == 2);  // 8 blocks, and newer than request 1
        r[0].status = RequestStatus::finished;
        CHECK(memory.victim(batch) == 0);  // a padding row goes first
        r[0].status = RequestStatus::decoding;
        batch.pop_back();
        batch.erase(batch.begin() + 2);
        CHECK(memory.victim(batch) == 1);  // request 1 now holds the most

        // On a queue that runs out of memory it still finishes everyone,
        // and every block comes back.
        WorkloadOptions w;
        w.requests = 40, w.prompt_min = 3, w.prompt_max = 12, w.answer_len = 8, w.answer_max = 24;
        const std::vector<Request> queue = make_workload(w);
        exercises::LargestFirstPagedMemory tight({.blocks = 24, .block_size = 4});
        SimulatedExecutor executor(analytic_step_cost(test::tiny_config()));
        const PrefillFirst steps;
        const Schedule s =
            run_schedule(queue, {"continuous, cache", 6, true, true}, tight, steps, executor);
        CHECK(s.preemptions > 0);
        CHECK(tight.used_blocks() == 0);
        for (const Request& done : s.requests) CHECK(done.received == done.answer_len);
    }
}
