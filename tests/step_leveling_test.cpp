// Chapter 09: each step is priced at its kind's level (prompt tokens only,
// decode rows only, or both), and the levels are what a queue's steps
// measured over what the formula said.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "../chapters/09_chunked_prefill/experiment.h"
#include "../chapters/09_chunked_prefill/step_policies.h"
#include "../common/lab/real_queue.h"
#include "../common/lab/step_calibration.h"
#include "../common/serving/paged_memory.h"
#include "../common/serving/scheduler.h"
#include "../common/serving/step_cost.h"
#include "tiny_models.h"

using namespace kv;

namespace {

std::vector<Request> small_queue(int n) {
    WorkloadOptions w;
    w.requests = n;
    w.prompt_min = 20;
    w.prompt_max = 40;
    w.answer_len = 5;
    w.answer_max = 12;
    w.seed = 4;
    return make_workload(w);
}

// Prices each step at a different multiple of the formula per kind: a
// stand-in for an engine whose mixed steps run slower than the probes said.
class KindScaledExecutor : public Executor {
  public:
    explicit KindScaledExecutor(const StepCost& cost) : cost_(cost) {}
    double run(const StepPlan& plan) override {
        const double f[] = {1.5, 0.8, 2.0};  // prompt, decode, mixed
        return cost_.seconds(work_of(plan)) * f[std::size_t(kind_of(plan))];
    }

  private:
    const StepCost& cost_;
};

Schedule run_chunked(std::span<const Request> queue, Executor& executor) {
    PagedMemory memory(
        {.blocks = 256, .block_size = 4, .watermark = 0.0, .preemption = Preemption::recompute});
    return run_schedule(queue, book_policies(4)[kContinuousCache], memory, ChunkedPrefill(16),
                        executor);
}

}  // namespace

TEST_CASE("kind_of tells prompt-only and decode-only and mixed steps apart") {
    std::vector<Request> r(2);
    r[0].status = RequestStatus::prefilling;
    r[1].status = RequestStatus::decoding;
    StepPlan prompt, decode, mixed;
    prompt.rows = {{&r[0], 0, 8}};
    decode.rows = {{&r[1], 9, 1}};
    mixed.rows = {{&r[1], 9, 1}, {&r[0], 0, 8}};
    CHECK(kind_of(prompt) == StepKind::prompt);
    CHECK(kind_of(decode) == StepKind::decode);
    CHECK(kind_of(mixed) == StepKind::mixed);

    StepCost cost = analytic_step_cost(test::tiny_config());
    cost.prompt_scale = 2;
    cost.decode_scale = 3;
    cost.mixed_scale = 5;
    for (const auto& [plan, scale] :
         {std::pair{&prompt, 2.0}, std::pair{&decode, 3.0}, std::pair{&mixed, 5.0}})
        CHECK(cost.seconds(*plan) == cost.seconds(work_of(*plan)) * scale);
}

TEST_CASE("the levels of a queue's steps give the simulator that queue's times") {
    const std::vector<Request> queue = small_queue(10);
    const StepCost formula = analytic_step_cost(test::tiny_config());

    // The "engine": every kind of step at its own multiple, run twice and
    // kept at the fastest (the same times both runs here).
    FastestOfRuns fastest;
    Schedule measured;
    for (int run = 0; run < 2; ++run) {
        KindScaledExecutor engine(formula);
        fastest.start_run(engine);
        measured = run_chunked(queue, fastest);
    }
    std::vector<StepLevel> levels = no_step_levels();
    fastest.replay();
    StepLevelingExecutor leveling(fastest, formula, levels);
    run_chunked(queue, leveling);
    for (const StepLevel& l : levels) CHECK(l.steps > 0);  // the queue ran every kind

    StepCost leveled = formula;
    set_step_scales(leveled, levels);
    CHECK(std::fabs(leveled.prompt_scale - 1.5) < 1e-12);
    CHECK(std::fabs(leveled.decode_scale - 0.8) < 1e-12);
    CHECK(std::fabs(leveled.mixed_scale - 2.0) < 1e-12);

    // Priced at those levels, the simulator replays the queue's times;
    // at the formula alone it does not.
    StepCostSimulator at_levels(leveled), formula_alone(formula);
    CHECK(std::fabs(run_chunked(queue, at_levels).end_s / measured.end_s - 1) < 1e-9);
    CHECK(std::fabs(run_chunked(queue, formula_alone).end_s / measured.end_s - 1) > 0.05);
}

TEST_CASE("chapter 09's leveling queues run just before the long prompts' queue of their rule") {
    const std::vector<Request> some = small_queue(4), sample = small_queue(3);
    const std::vector<ch09::NamedQueue> queues = {{ch09::kShortPrompts, some},
                                                  {ch09::long_prompts(512), some}};
    const std::vector<ch09::StepRule> rules = {
        {ch09::kPrefillFirst, 0}, {ch09::kBatchedPrefill, 0}, {ch09::chunked(64), 64}};
    const std::vector<std::pair<bool, int>> sides = {{false, 4}, {true, 2}};
    const std::vector<ch09::StepRule> levels = {{ch09::chunked(64), 64}, {ch09::kPrefillFirst, 0}};
    auto order = [](const std::vector<ch09::EngineQueue>& engine) {
        std::vector<std::string> names;
        for (const ch09::EngineQueue& e : engine) {
            names.push_back(e.workload + ", " + e.rule.name);
            CHECK(e.requests.size() == (e.workload == ch09::kLevelingQueue ? 3u : 2u));
        }
        return names;
    };
    const std::vector<std::string> expected = {"short prompts, prefill first",
                                               "short prompts, batched prefill",
                                               "short prompts, chunked 64",
                                               "leveling, prefill first",
                                               "512-token prompts, prefill first",
                                               "512-token prompts, batched prefill",
                                               "leveling, chunked 64",
                                               "512-token prompts, chunked 64"};
    CHECK(order(ch09::engine_queues(queues, rules, sides, sample, levels)) == expected);

    std::vector<std::string> unleveled = expected;  // nothing to level: the queues alone
    std::erase_if(unleveled, [](const std::string& n) { return n.starts_with("leveling"); });
    CHECK(order(ch09::engine_queues(queues, rules, sides, {}, levels)) == unleveled);
}
