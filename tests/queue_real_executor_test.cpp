// Chapter 05: the real executor and the simulated one drive the same
// scheduler to the same schedule, and the real engine's answers are the
// answers chapter 02 gives: batching, padding and preemption change when
// tokens come out, never which tokens.
#include <doctest/doctest.h>

#include <vector>

#include "../common/core/cached_decoding.h"
#include "../common/serving/real_executor.h"
#include "../common/serving/scheduler.h"
#include "tiny_models.h"

using namespace kv;

namespace {

struct Step {
    ScheduleEvent::Kind kind;
    int request;
    int running;
    bool operator==(const Step&) const = default;
};

std::vector<Step> trace(std::span<const Request> queue, const Policy& policy,
                        const MemoryBudget& budget, Executor& executor, Schedule* out = nullptr) {
    std::vector<Step> steps;
    Schedule s = run_schedule(queue, policy, budget, executor, [&](const ScheduleEvent& e) {
        steps.push_back({e.kind, e.request, e.running});
    });
    if (out) *out = std::move(s);
    return steps;
}

void check_same_schedule_and_tokens(const WorkloadOptions& w, std::uint64_t budget_tokens,
                                    bool expect_preemption) {
    const Config c = test::tiny_config();
    Transformer model(c, 5);
    const std::vector<Request> queue = make_workload(w);
    const StepCost cost = analytic_step_cost(c);
    const std::uint64_t seed = 11;

    for (Reservation reserve : {Reservation::whole_context, Reservation::tokens_held}) {
        MemoryBudget budget;
        budget.bytes_per_token = c.kv_bytes_per_token();
        budget.tokens = budget_tokens;
        budget.bytes = budget.tokens * budget.bytes_per_token;
        budget.reserve = reserve;
        bool preempted = false;
        for (const Policy& policy : book_policies(3)) {
            RealExecutor real(model, seed);
            SimulatedExecutor simulated(cost);
            Schedule served;
            const std::vector<Step> real_steps = trace(queue, policy, budget, real, &served);
            const std::vector<Step> sim_steps = trace(queue, policy, budget, simulated);
            INFO(policy.name << (reserve == Reservation::tokens_held ? ", held" : ", full"));
            CHECK(real_steps == sim_steps);
            for (const Step& s : sim_steps)
                preempted = preempted || s.kind == ScheduleEvent::preempt;
            for (const Request& r : queue) {
                const std::vector<int> prompt = request_prompt(r, c.vocab_size, seed);
                const std::vector<int> expected = generate_cached(model, prompt, r.answer_len);
                const std::vector<int>& all = served.requests[std::size_t(r.id)].token_ids;
                REQUIRE(all.size() == prompt.size() + expected.size());
                CHECK(std::vector<int>(all.begin(), all.begin() + long(prompt.size())) == prompt);
                CHECK(std::vector<int>(all.begin() + long(prompt.size()), all.end()) == expected);
            }
        }
        if (reserve == Reservation::tokens_held) CHECK(preempted == expect_preemption);
    }
}

}  // namespace

TEST_CASE("real and simulated executors make the same schedule and the engine the same tokens") {
    const WorkloadOptions w{.requests = 10,
                            .prompt_min = 2,
                            .prompt_max = 9,
                            .answer_len = 8,
                            .answer_max = 20,
                            .seed = 5};
    // Tight: with `held`, requests get sent back and prefilled again.
    check_same_schedule_and_tokens(w, 28, true);
}

TEST_CASE("answers that reach the cap and the longest context run on the real engine") {
    // Prompt + cap - 1 reaches the tiny model's max_seq of 64, and many
    // answers stop at the cap: static batching's padding rows then sit in
    // full caches.
    WorkloadOptions w;  // eight requests, prompts of 50 to 58 tokens, answers around 6 capped at 7
    w.requests = 8, w.seed = 3;
    w.prompt_min = 50, w.prompt_max = 58;
    w.answer_len = 6, w.answer_max = 7;
    check_same_schedule_and_tokens(w, 200, false);  // three fit at their longest
    check_same_schedule_and_tokens(w, 112, true);   // one at its longest; held: two, sent back
}
