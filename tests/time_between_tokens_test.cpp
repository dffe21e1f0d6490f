// The time between tokens, by hand: a newcomer's prefill stalls the
// answers already streaming (chapter 05's prefill-first steps).
#include <doctest/doctest.h>

#include <vector>

#include "../common/serving/metrics.h"
#include "../common/serving/scheduler.h"

using namespace kv;

namespace {

// A prefill step takes 1 s, a decode step 0.25 s.
class FixedTimes : public Executor {
  public:
    double run(const StepPlan& plan) override {
        for (const StepRow& row : plan.rows)
            if (row.request->status == RequestStatus::prefilling) return 1.0;
        return 0.25;
    }
};

}  // namespace

TEST_CASE("time between tokens by hand: a prefill stalls the answer streaming beside it") {
    // A wants 3 tokens, B 2; both arrive at 0, continuous batching of 2.
    std::vector<Request> q(2);
    q[0].answer_len = 3, q[1].answer_len = 2;
    for (int i = 0; i < 2; ++i) {
        q[std::size_t(i)].id = i;
        q[std::size_t(i)].prompt_len = 4;
        q[std::size_t(i)].answer_cap = 3;
    }
    FixedTimes executor;
    const MemoryBudget budget{.bytes = 1 << 20, .bytes_per_token = 1, .tokens = 1 << 20};
    const Schedule s = run_schedule(q, {"continuous, cache", 2, true, true}, budget, executor);
    // t = 1: A's prefill, its first token. t = 2: B's prefill, its first
    // token; A waited. t = 2.25: one decode step for both: A's second token
    // (1.25 s after its first), B's second (0.25 s). t = 2.5: A's third.
    CHECK(s.requests[0].first_token_s == 1.0);
    CHECK(s.requests[1].first_token_s == 2.0);
    CHECK(s.token_gaps == std::vector<double>{1.25, 0.25, 0.25});
    const Summary m = summarize(s);
    CHECK(m.tbt_median == 0.25);
    CHECK(m.tbt_p99 == 1.25);
    CHECK(m.tbt_max == 1.25);
    CHECK(m.tbt_p90 == 1.25);
}
