// The lab: a real queue run several times keeps each step's fastest time,
// refuses a run that ran other steps, and replays what it kept; a checked
// queue's engine against the simulator gives the errors a known engine has.
#include <doctest/doctest.h>

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <vector>

#include "tiny_models.h"
#include "validate/real_queue.h"
#include "validate/validation.h"

using namespace kv;

namespace {

// Prices every step with the analytic step cost, times a scripted factor
// that depends on the run and the step: a stand-in for a noisy machine.
class ScriptedExecutor : public Executor {
  public:
    ScriptedExecutor(const StepCost& cost, std::vector<double> factors)
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
    StepCost cost = analytic_step_cost(c);
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
    CHECK(fastest.run_totals().size() == 3);
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
        if (fastest.run_totals().size() == 1)
            CHECK(fastest.run_spread() == 0);  // one run: nothing to spread
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

// ------------------------------------------- a checked queue's errors

TEST_CASE_FIXTURE(ScriptedQueue,
                  "an engine 10 percent slower than the simulator shows -9.1 percent") {
    // The "engine" prices each step by the same step cost, times 1.10: the
    // simulator then says 1 / 1.1 - 1 = -9.1 % on every measure.
    Transformer model(c, 5);  // the fake engine never runs it
    CheckedQueue q;
    q.chapter = "05";
    q.name = "continuous, cache, 6 requests";
    q.operating_point = true;
    q.requests = queue;
    q.run = [this](Executor& executor, Executor*) { return run_queue(executor); };
    int engines = 0;
    q.engine = [&](Transformer&) -> std::unique_ptr<Executor> {
        ++engines;
        return std::make_unique<ScriptedExecutor>(cost, std::vector<double>{1.10});
    };
    std::vector<int> runs;
    const CheckedRow row =
        check_queue_against_engine(q, model, cost, 3, [&](int run) { runs.push_back(run); });
    CHECK(engines == 3);  // a fresh engine each run
    CHECK(runs == std::vector<int>{1, 2, 3});
    CHECK(row.chapter == "05");
    CHECK(row.name == q.name);
    CHECK(row.operating_point);
    CHECK(row.same_order);
    CHECK(row.run_spread == doctest::Approx(0).epsilon(1e-12));
    for (const Measure& m : kMeasures) {
        INFO(m.name);
        CHECK(row.real.*m.value > 0);
        CHECK(relative_error(row.simulated.*m.value, row.real.*m.value) ==
              doctest::Approx(1 / 1.1 - 1).epsilon(1e-9));
    }
    CHECK(!within_target(row));

    // The same engine at the simulator's own prices: no error at all.
    q.engine = [&](Transformer&) -> std::unique_ptr<Executor> {
        return std::make_unique<ScriptedExecutor>(cost, std::vector<double>{1.0});
    };
    const CheckedRow exact = check_queue_against_engine(q, model, cost, 1);
    for (const Measure& m : kMeasures)
        CHECK(exact.simulated.*m.value == doctest::Approx(exact.real.*m.value).epsilon(1e-12));
    CHECK(within_target(exact));
}

TEST_CASE("within the target means within 5 percent as the report prints it") {
    REQUIRE(kTarget == 0.05);
    CHECK(within_target(0.0));
    CHECK(within_target(0.05));
    CHECK(within_target(-0.05));
    CHECK(within_target(0.0504));  // printed +5.0 %
    CHECK(within_target(-0.0504));
    CHECK(!within_target(0.0506));  // printed +5.1 %
    CHECK(!within_target(-0.0506));
    CHECK(!within_target(0.2));

    // A row is within only if every measure is.
    CheckedRow row;
    for (const Measure& m : kMeasures) row.real.*m.value = row.simulated.*m.value = 1.0;
    CHECK(within_target(row));
    for (const Measure& m : kMeasures) {
        INFO(m.name);
        CheckedRow one = row;
        one.simulated.*m.value = 1.0504;
        CHECK(within_target(one));
        one.simulated.*m.value = 0.9494;
        CHECK(!within_target(one));
    }
}

TEST_CASE("an engine that answers in another order than the simulator is caught") {
    const Config c = test::tiny_config();
    Transformer model(c, 5);
    const std::vector<Request> queue = small_queue(4);
    const StepCost cost = analytic_step_cost(c);
    // Request 0's prefill is slow on this "engine": serially it still
    // answers first, so the order holds; the times do not.
    CheckedQueue q;
    q.requests = queue;
    q.run = [&](Executor& executor, Executor*) {
        return run_schedule(queue, book_policies(1)[kSerialCache], roomy_budget(c), executor);
    };
    q.engine = [&](Transformer&) -> std::unique_ptr<Executor> {
        return std::make_unique<ScriptedExecutor>(cost, std::vector<double>{5.0, 1.0});
    };
    CHECK(check_queue_against_engine(q, model, cost, 1).same_order);
    // A queue whose engine runs another schedule (here: the simulator runs
    // the requests in reverse) disagrees on the order of finishing.
    q.run = [&](Executor& executor, Executor*) {
        Policy last_first = book_policies(1)[kSerialCache];
        if (dynamic_cast<SimulatedExecutor*>(&executor))
            last_first.priority = [](const Request& r) { return -double(r.id); };
        return run_schedule(queue, last_first, roomy_budget(c), executor);
    };
    CHECK(!check_queue_against_engine(q, model, cost, 1).same_order);
}

// Under continuous batching with every request there at once, the first
// tokens come in request order whatever happens after: a check of that
// order could only say yes. A planted fault that leaves it intact (the
// engine's side runs two answers' lengths swapped) changes who finishes
// first, and the check says no.
TEST_CASE(
    "an engine that finishes the requests in another order is caught though its first "
    "tokens are in order") {
    const Config c = test::tiny_config();
    Transformer model(c, 5);
    const StepCost cost = analytic_step_cost(c);
    const std::vector<Request> queue = small_queue(6);
    // Two requests whose answers differ in length.
    std::size_t a = 0, b = 1;
    while (b < queue.size() && queue[b].answer_len == queue[a].answer_len) ++b;
    REQUIRE(b < queue.size());
    std::vector<Request> planted = queue;
    std::swap(planted[a].answer_len, planted[b].answer_len);
    const Policy policy = book_policies(3)[kContinuousCache];
    CheckedQueue q;
    q.requests = queue;
    q.run = [&](Executor& executor, Executor*) {
        const bool engine = !dynamic_cast<SimulatedExecutor*>(&executor);
        return run_schedule(engine ? planted : queue, policy, roomy_budget(c), executor);
    };
    q.engine = [&](Transformer&) -> std::unique_ptr<Executor> {
        return std::make_unique<ScriptedExecutor>(cost, std::vector<double>{1.0});
    };
    SimulatedExecutor priced(cost);
    const Schedule honest = run_schedule(queue, policy, roomy_budget(c), priced);
    const Schedule wrong = run_schedule(planted, policy, roomy_budget(c), priced);
    REQUIRE(first_token_order(honest) == first_token_order(wrong));
    REQUIRE(finish_order(honest) != finish_order(wrong));
    CHECK(!check_queue_against_engine(q, model, cost, 1).same_order);
    // Without the fault, the same queue agrees.
    q.run = [&](Executor& executor, Executor*) {
        return run_schedule(queue, policy, roomy_budget(c), executor);
    };
    CHECK(check_queue_against_engine(q, model, cost, 1).same_order);
}
