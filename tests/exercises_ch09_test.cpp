// Chapter 09 exercises (see chapters/09_chunked_prefill/EXERCISES.md).
// Skipped until you enable them:
//   ./build/book_tests -ts="exercises ch09" --no-skip
// (or remove * doctest::skip() from one case).
#include <doctest/doctest.h>

#include <vector>

#include "../chapters/09_chunked_prefill/exercises.h"
#include "../common/serving/scheduler.h"
#include "../common/serving/step_cost.h"
#include "tiny_models.h"

using namespace kv;

namespace {

// Checks every step against the budget, then runs it in the simulator.
class BudgetChecker : public Executor {
  public:
    BudgetChecker(int budget, Executor& inner) : budget_(budget), inner_(inner) {}
    double run(const StepPlan& plan) override {
        int tokens = 0;
        for (const StepRow& row : plan.rows) tokens += row.tokens;
        CHECK(tokens <= budget_);
        CHECK(tokens >= 1);
        full += tokens == budget_;
        return inner_.run(plan);
    }
    int full = 0;

  private:
    int budget_;
    Executor& inner_;
};

}  // namespace

TEST_SUITE("exercises ch09") {
    TEST_CASE("exercise 09.3 a token budget that counts decode rows too" * doctest::skip()) {
        WorkloadOptions w;
        w.requests = 30, w.prompt_min = 3, w.prompt_max = 40, w.answer_len = 6, w.answer_max = 16;
        const std::vector<Request> queue = make_workload(w);
        for (int budget : {4, 8, 32}) {  // below, at and above the batch of 8
            CAPTURE(budget);
            SimulatedExecutor priced(analytic_step_cost(test::tiny_config()));
            BudgetChecker checked(budget, priced);
            TokensHeld memory(1 << 20);
            const exercises::TokenBudget steps(budget);
            const Schedule s =
                run_schedule(queue, {"continuous, cache", 8, true, true}, memory, steps, checked);
            for (const Request& r : s.requests) CHECK(r.received == r.answer_len);
            CHECK(checked.full > 0);  // the budget is really filled, not a smaller cap
        }
        // Decode rows first: three answering, two prompts of 9 waiting; a
        // budget of 5 gives the three their tokens and the older prompt 2.
        std::vector<Request> r(5);
        for (int i = 0; i < 5; ++i) {
            r[std::size_t(i)].id = i;
            r[std::size_t(i)].prompt_len = 9;
            r[std::size_t(i)].answer_len = r[std::size_t(i)].answer_cap = 4;
            r[std::size_t(i)].status = i % 2 ? RequestStatus::prefilling : RequestStatus::decoding;
            if (i % 2 == 0) r[std::size_t(i)].cached = 9, r[std::size_t(i)].received = 1;
        }
        std::vector<Request*> batch = {&r[1], &r[0], &r[3], &r[2], &r[4]};
        StepPlan plan;
        exercises::TokenBudget(5).compose(batch, true, plan);
        int decodes = 0, prompt_of_1 = 0, prompt_of_3 = 0;
        for (const StepRow& row : plan.rows) {
            if (row.request->status == RequestStatus::decoding) ++decodes;
            if (row.request == &r[1]) prompt_of_1 += row.tokens;
            if (row.request == &r[3]) prompt_of_3 += row.tokens;
        }
        CHECK(decodes == 3);
        CHECK(prompt_of_1 == 2);  // the oldest prompt, though it joined before the decodes
        CHECK(prompt_of_3 == 0);
    }
}
