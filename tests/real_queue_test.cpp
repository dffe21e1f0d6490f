// Chapter 05: a real queue run several times keeps each step's fastest
// time, refuses a run that ran other steps, and replays what it kept; the
// calibration's rounds leave room for the real runs between them.
#include <doctest/doctest.h>

#include <cstddef>
#include <stdexcept>
#include <vector>

#include "../common/lab/calibration.h"
#include "../common/lab/real_queue.h"
#include "../common/lab/validation.h"
#include "tiny_models.h"

using namespace kv;

namespace {

// Prices every step with the analytic model, times a scripted factor that
// depends on the run and the step: a stand-in for a noisy machine.
class ScriptedExecutor : public Executor {
  public:
    ScriptedExecutor(const CostModel& cost, std::vector<double> factors)
        : priced_(cost), factors_(std::move(factors)) {}
    double run(const StepPlan& plan) override {
        const double f = factors_[step_++ % factors_.size()];
        return priced_.run(plan) * f;
    }
    std::size_t steps() const { return step_; }

  private:
    SimulatedExecutor priced_;
    std::vector<double> factors_;
    std::size_t step_ = 0;
};

MemoryBudget roomy_budget(const Config& c) {
    MemoryBudget b;
    b.bytes_per_token = c.kv_bytes_per_token();
    b.tokens = 4096;
    b.bytes = b.tokens * b.bytes_per_token;
    return b;
}

std::vector<Request> small_queue(int requests) {
    WorkloadOptions w;
    w.requests = requests;
    w.prompt_min = 3;
    w.prompt_max = 9;
    w.answer_len = 4;
    w.answer_max = 8;
    w.seed = 3;
    return make_workload(w);
}

// Six small requests under continuous batching, priced by the analytic
// model: the queue the scripted runs below replay.
struct ScriptedQueue {
    Config c = test::tiny_config();
    CostModel cost = analytic_cost_model(c);
    MemoryBudget budget = roomy_budget(c);
    std::vector<Request> queue = small_queue(6);
    Policy policy = book_policies(3)[kContinuousCache];

    Schedule run_queue(Executor& executor, const Policy& p) const {
        return run_schedule(queue, p, budget, executor);
    }
    Schedule run_queue(Executor& executor) const { return run_queue(executor, policy); }
};

}  // namespace

TEST_CASE_FIXTURE(ScriptedQueue, "FastestOfRuns keeps each step's fastest run and replays it") {
    // The noiseless schedule: every step at factor 1.
    ScriptedExecutor exact(cost, {1.0});
    const Schedule truth = run_queue(exact);

    // Three runs, each slowing a different third of the steps by 2x or
    // 3x: the fastest of each step is the exact price, so the last run's
    // schedule is the noiseless one to the last bit.
    FastestOfRuns fastest;
    std::vector<ScriptedExecutor> runs = {ScriptedExecutor(cost, {2.0, 1.0, 1.0}),
                                          ScriptedExecutor(cost, {1.0, 3.0, 1.0}),
                                          ScriptedExecutor(cost, {1.0, 1.0, 2.0})};
    Schedule last;
    for (ScriptedExecutor& run : runs) {
        fastest.start_run(run);
        last = run_queue(fastest);
    }
    CHECK(fastest.runs() == 3);
    REQUIRE(last.requests.size() == truth.requests.size());
    CHECK(last.end_s == truth.end_s);
    for (std::size_t i = 0; i < truth.requests.size(); ++i) {
        CHECK(last.requests[i].first_token_s == truth.requests[i].first_token_s);
        CHECK(last.requests[i].last_token_s == truth.requests[i].last_token_s);
    }
    // A single slow run alone would not have given it.
    FastestOfRuns once;
    ScriptedExecutor slow(cost, {2.0, 1.0, 1.0});
    once.start_run(slow);
    CHECK(run_queue(once).end_s > truth.end_s);

    // The replay runs no engine and gives the same times again.
    fastest.replay();
    const Schedule replayed = run_queue(fastest);
    CHECK(replayed.end_s == truth.end_s);
}

TEST_CASE_FIXTURE(ScriptedQueue,
                  "FastestOfRuns keeps each run's own time and how far the runs spread") {
    ScriptedExecutor exact(cost, {1.0});
    const double truth = run_queue(exact).end_s;

    // Runs on a machine 1.0x, 1.25x and 1.1x as slow: each run's time is
    // its own sum, and the spread is the slowest against the fastest.
    FastestOfRuns fastest;
    CHECK(fastest.run_spread() == 0);  // no runs yet
    std::vector<ScriptedExecutor> runs = {ScriptedExecutor(cost, {1.0}),
                                          ScriptedExecutor(cost, {1.25}),
                                          ScriptedExecutor(cost, {1.1})};
    for (ScriptedExecutor& run : runs) {
        fastest.start_run(run);
        run_queue(fastest);
        if (fastest.runs() == 1) CHECK(fastest.run_spread() == 0);  // one run: nothing to spread
    }
    REQUIRE(fastest.run_totals().size() == 3);
    CHECK(fastest.run_totals()[0] == doctest::Approx(truth).epsilon(1e-12));
    CHECK(fastest.run_totals()[1] == doctest::Approx(1.25 * truth).epsilon(1e-12));
    CHECK(fastest.run_totals()[2] == doctest::Approx(1.1 * truth).epsilon(1e-12));
    CHECK(fastest.run_spread() == doctest::Approx(0.25).epsilon(1e-12));
    // A replay runs no engine and adds no run.
    fastest.replay();
    run_queue(fastest);
    CHECK(fastest.run_totals().size() == 3);
}

TEST_CASE_FIXTURE(ScriptedQueue,
                  "FastestOfRuns refuses a run that ran other steps than the first") {
    FastestOfRuns fastest;
    ScriptedExecutor first(cost, {1.0}), second(cost, {1.0});
    fastest.start_run(first);
    run_queue(fastest);
    fastest.start_run(second);
    CHECK_THROWS_AS(run_queue(fastest, book_policies(3)[kStaticCache]), std::logic_error);
    // That run stopped short: nothing may build on it, another run or a replay.
    ScriptedExecutor third(cost, {1.0});
    CHECK_THROWS_AS(fastest.start_run(third), std::logic_error);
    CHECK_THROWS_AS(fastest.replay(), std::logic_error);

    // A replay of other steps than the runs ran is refused too.
    FastestOfRuns whole;
    whole.start_run(first);
    run_queue(whole);
    whole.replay();
    CHECK_THROWS_AS(run_queue(whole, book_policies(2)[kContinuousCache]), std::logic_error);
}

TEST_CASE_FIXTURE(ScriptedQueue, "the validation's rows carry each real queue's runs spread") {
    RealQueue q(policy, queue);
    ScriptedExecutor quick(cost, {1.0}), slow(cost, {1.5});
    for (ScriptedExecutor* run : {&quick, &slow}) {
        q.fastest.start_run(*run);
        q.schedule = run_schedule(q.requests, q.policy, budget, q.fastest);
    }
    const std::vector<ValidationRow> rows = compare_with_simulator(std::span(&q, 1), budget, cost);
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].run_spread == doctest::Approx(0.5).epsilon(1e-12));
    CHECK(rows[0].real.total_s == doctest::Approx(rows[0].simulated.total_s).epsilon(1e-12));
}

TEST_CASE("a real queue run again gives the same tokens and admits in the same order") {
    const Config c = test::tiny_config();
    Transformer model(c, 5);
    const MemoryBudget budget = roomy_budget(c);
    RealQueue q(book_policies(3)[kContinuousCache], small_queue(5));
    q.run_once(model, budget, 7);
    const std::vector<int> order = q.order;
    std::vector<std::vector<int>> tokens;
    for (const Request& r : q.schedule.requests) tokens.push_back(r.token_ids);
    q.run_once(model, budget, 7);
    CHECK(q.fastest.runs() == 2);
    CHECK(q.order == order);
    REQUIRE(q.schedule.requests.size() == tokens.size());
    for (std::size_t i = 0; i < tokens.size(); ++i)
        CHECK(q.schedule.requests[i].token_ids == tokens[i]);
}

TEST_CASE("calibrate leaves a turn after every round in order") {
    const Config c = test::tiny_config();
    Transformer model(c, 5);
    std::vector<int> after;
    calibrate(model, 20, 4, {}, [&](int round, int rounds) {
        CHECK(rounds == 5);
        after.push_back(round);
    });
    CHECK(after == std::vector<int>{1, 2, 3, 4, 5});
}

TEST_CASE("the real runs are spread over the calibration's rounds; kRealRuns in all") {
    for (int rounds : {1, 2, 3, 5, 9, 100}) {
        int total = 0;
        for (int round = 1; round <= rounds; ++round) total += real_runs_after(round, rounds);
        CHECK(total == kRealRuns);
        CHECK(real_runs_after(1, rounds) >= 1);       // from the first round
        CHECK(real_runs_after(rounds, rounds) >= 1);  // to the last
    }
    // The book's 5 runs (chapters 05 and 09 say so) and 5 rounds: one
    // after each round; with 9 rounds, one after every other.
    REQUIRE(kRealRuns == 5);
    for (int round = 1; round <= 5; ++round) CHECK(real_runs_after(round, 5) == 1);
    CHECK(real_runs_after(3, 9) == 1);
    CHECK(real_runs_after(2, 9) == 0);
}

TEST_CASE("each leveling queue runs just before the validated queue of its policy") {
    const std::vector<Policy> p = book_policies(4);
    const std::vector<Request> none;
    std::vector<RealQueue> leveling, validated;
    leveling.emplace_back(p[kSerialCache], none);
    leveling.emplace_back(p[kContinuousCache], none);
    leveling.emplace_back(p[1], none);  // static, no cache: no validated queue of its policy
    for (int k : {kSerialNoCache, kSerialCache, kStaticCache, kContinuousCache})
        validated.emplace_back(p[std::size_t(k)], none);
    const std::vector<RealQueue*> order = leveling_beside(leveling, validated);
    const std::vector<RealQueue*> expected = {&validated[0], &leveling[0], &validated[1],
                                              &validated[2], &leveling[1], &validated[3],
                                              &leveling[2]};
    CHECK(order == expected);
    std::vector<RealQueue> no_leveling;
    const std::vector<RealQueue*> alone = {&validated[0], &validated[1], &validated[2],
                                           &validated[3]};
    CHECK(leveling_beside(no_leveling, validated) == alone);
}
