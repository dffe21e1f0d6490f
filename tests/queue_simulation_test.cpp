// Chapter 05: the scheduler's promises, checked with the analytic step
// cost, which makes every time exact and the same on every machine.
#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "../chapters/05_queue_simulation/experiment.h"
#include "../common/kit/digest.h"
#include "../common/serving/metrics.h"
#include "../common/serving/scheduler.h"
#include "../common/serving/workload.h"
#include "decode_steps.h"

using namespace kv;

namespace {

const Config kDemo;  // the book's demo model: the analytic step cost prices its shape

MemoryBudget budget_of(std::uint64_t tokens, Reservation reserve) {
    MemoryBudget b;
    b.bytes_per_token = kDemo.kv_bytes_per_token();
    b.bytes = tokens * b.bytes_per_token;
    b.tokens = tokens;
    b.reserve = reserve;
    return b;
}

WorkloadOptions small_workload(int requests, double rate = 0) {
    return {.requests = requests,
            .prompt_min = 4,
            .prompt_max = 40,
            .answer_len = 12,
            .answer_max = 48,
            .rate = rate};
}

Schedule simulate_with(std::span<const Request> requests, const Policy& policy,
                       const MemoryBudget& budget, const ScheduleObserver& observe = {}) {
    SimulatedExecutor executor(analytic_step_cost(kDemo));
    return run_schedule(requests, policy, budget, executor, observe);
}

const MemoryBudget kRoomy = budget_of(1 << 20, Reservation::whole_context);

}  // namespace

TEST_CASE("one request waits exactly its prefill for its first token") {
    const StepCost cost = analytic_step_cost(kDemo);
    for (const Policy& policy : book_policies(4))
        for (int prompt : {1, 7, 100}) {
            Request r;
            r.prompt_len = prompt;
            r.answer_len = 5;
            r.answer_cap = 5;
            const std::vector<Request> one = {r};
            const Schedule s = simulate_with(one, policy, kRoomy);
            INFO(policy.name << ", prompt " << prompt);
            CHECK(s.requests[0].first_token_s == cost.prefill_seconds(prompt));
            CHECK(s.requests[0].admitted_s == 0);
        }
}

TEST_CASE("serial first come first served waits for the service times before it") {
    const StepCost cost = analytic_step_cost(kDemo);
    const std::vector<Request> queue = make_workload(small_workload(30));
    for (bool cache : {true, false}) {
        const Policy serial{"serial", 1, false, cache};
        const Schedule s = simulate_with(queue, serial, kRoomy);
        // The clock by hand: each request's prefill, then its decode steps,
        // one after another, in arrival order.
        double clock = 0;
        for (const Request& r : queue) {
            CHECK(s.requests[r.id].admitted_s == clock);  // it waited for everyone before it
            clock += cost.prefill_seconds(r.prompt_len);
            CHECK(s.requests[r.id].first_token_s == clock);
            for (int made = 1; made < r.answer_len; ++made) {
                const int held = r.prompt_len + made - 1;  // positions cached before this step
                clock += cache ? cost.decode_seconds(1, held)
                               : cost.prefill_seconds(held + 1);  // the sequence from position 0
            }
            CHECK(s.requests[r.id].finished_s == clock);
        }
        CHECK(s.end_s == clock);
    }
}

TEST_CASE("every request finishes exactly once with exactly its answer length") {
    const std::vector<Request> queue = make_workload(small_workload(120, 40.0));
    const int answer_total =
        std::accumulate(queue.begin(), queue.end(), 0,
                        [](int sum, const Request& r) { return sum + r.answer_len; });
    for (Reservation reserve : {Reservation::whole_context, Reservation::tokens_held})
        for (const Policy& policy : book_policies(8)) {
            std::vector<int> finished(queue.size(), 0);
            const Schedule s =
                simulate_with(queue, policy, budget_of(300, reserve), [&](const ScheduleEvent& e) {
                    if (e.kind == ScheduleEvent::finish) ++finished[std::size_t(e.request)];
                });
            INFO(policy.name);
            int tokens = 0;
            for (const Request& r : queue) {
                CHECK(finished[std::size_t(r.id)] == 1);
                CHECK(s.requests[r.id].received == r.answer_len);
                CHECK(s.requests[r.id].first_token_s >= r.arrival_s);
                CHECK(s.requests[r.id].finished_s >= s.requests[r.id].first_token_s);
                tokens += s.requests[r.id].received;
            }
            // Every answer token came from a prefill (one each, counting
            // prefills again after a preemption) or a decode row.
            CHECK(tokens == answer_total);
            CHECK(s.prefills + s.decode_rows == answer_total);
            CHECK(s.prefills == std::int64_t(queue.size()) + s.preemptions);
        }
}

TEST_CASE("the memory budget is never exceeded at any step") {
    const std::vector<Request> queue = make_workload(small_workload(150));
    const std::uint64_t budget_tokens = 200;  // room for 2 or 3 requests at their longest
    for (Reservation reserve : {Reservation::whole_context, Reservation::tokens_held})
        for (const Policy& policy : book_policies(16)) {
            const MemoryBudget budget = budget_of(budget_tokens, reserve);
            std::uint64_t worst = 0;
            const Schedule s = simulate_with(queue, policy, budget, [&](const ScheduleEvent& e) {
                worst = std::max({worst, e.held, e.charged});
                if (reserve == Reservation::whole_context) CHECK(e.held <= e.charged);
            });
            INFO(policy.name << (reserve == Reservation::tokens_held ? ", held" : ", full"));
            CHECK(worst <= budget_tokens);
            if (reserve == Reservation::whole_context) CHECK(s.preemptions == 0);
        }
    // Charging only what is held lets more in, so caches outgrow the budget
    // and the newest are sent back: the preemption path really runs.
    const Policy continuous{"continuous", 16, true, true};
    CHECK(simulate_with(queue, continuous, budget_of(budget_tokens, Reservation::tokens_held))
              .preemptions > 0);
}

TEST_CASE("no request starves: first come first served joins in arrival order") {
    const std::vector<Request> queue = make_workload(small_workload(200, 30.0));
    for (Reservation reserve : {Reservation::whole_context, Reservation::tokens_held})
        for (const Policy& policy : book_policies(8)) {
            std::vector<int> first_joins;
            std::vector<bool> joined(queue.size(), false);
            simulate_with(queue, policy, budget_of(150, reserve), [&](const ScheduleEvent& e) {
                if (e.kind == ScheduleEvent::admit && !joined[std::size_t(e.request)]) {
                    joined[std::size_t(e.request)] = true;
                    first_joins.push_back(e.request);
                }
            });
            INFO(policy.name);
            CHECK(std::is_sorted(first_joins.begin(), first_joins.end()));
            CHECK(first_joins.size() == queue.size());
        }
}

TEST_CASE("static batching starts together and runs until its longest answer is done") {
    const std::vector<Request> queue = make_workload(small_workload(40));
    const int B = 4;
    std::vector<ScheduleEvent> events;
    const Schedule s = simulate_with(queue, Policy{"static", B, false, true}, kRoomy,
                                     [&](const ScheduleEvent& e) { events.push_back(e); });
    // Everyone arrived at time 0, so batch k holds requests 4k .. 4k+3. It
    // joins only once the batch before it has left, and it takes exactly
    // as many decode steps as its longest answer needs.
    int steps_in_batch = 0, batch_index = 0;
    auto batch_done = [&] {
        int longest = 0;
        for (int i = batch_index * B; i < std::min<int>((batch_index + 1) * B, int(queue.size()));
             ++i)
            longest = std::max(longest, queue[std::size_t(i)].answer_len);
        CHECK(steps_in_batch == longest - 1);
        steps_in_batch = 0;
        ++batch_index;
    };
    for (const ScheduleEvent& e : events) {
        if (e.kind == ScheduleEvent::admit && e.request % B == 0 && e.request > 0) batch_done();
        if (e.kind == ScheduleEvent::admit) CHECK(e.request / B == batch_index);
        if (e.kind == ScheduleEvent::decode) ++steps_in_batch;
    }
    batch_done();
    CHECK(s.padding_rows > 0);  // answered rows kept computing
}

TEST_CASE("continuous batching refills a freed slot before the next decode step") {
    const std::vector<Request> queue = make_workload(small_workload(60));
    std::vector<ScheduleEvent> events;
    const Schedule s = simulate_with(queue, Policy{"continuous", 5, true, true}, kRoomy,
                                     [&](const ScheduleEvent& e) { events.push_back(e); });
    int admitted = 0, freed = 0;
    for (const ScheduleEvent& e : events) {
        if (e.kind == ScheduleEvent::admit) {
            ++admitted;
            freed = std::max(0, freed - 1);
        }
        if (e.kind == ScheduleEvent::finish) ++freed;
        // A decode step never runs with a free slot while someone waits.
        if (e.kind == ScheduleEvent::decode && admitted < int(queue.size())) {
            CHECK(freed == 0);
            CHECK(e.running == 5);
        }
    }
    CHECK(s.padding_rows == 0);
}

TEST_CASE("on the default workload the cache and continuous batching shorten the wait") {
    const Config config;
    const WorkloadOptions defaults;
    const std::vector<Request> queue = make_workload(defaults);
    const MemoryBudget budget = make_budget(config, 16, Reservation::whole_context);
    std::vector<double> median;
    for (const Policy& p : book_policies(32))
        median.push_back(summarize(simulate_with(queue, p, budget)).ttft_median);
    // 0..2: serial, static, continuous without the cache; 3..5: with it.
    MESSAGE("median time to first token (s): serial no cache "
            << median[0] << ", serial cache " << median[3] << ", static cache " << median[4]
            << ", continuous cache " << median[5]);
    CHECK(median[3] < median[0] / 5);  // the cache
    CHECK(median[5] < median[3]);      // continuous batching beats serial
    CHECK(median[5] < median[4]);      // and static batching
    CHECK(median[2] < median[1]);      // also without the cache
}

TEST_CASE("the same seed gives the same per-request times") {
    WorkloadOptions w = small_workload(80, 25.0);
    auto times = [&](std::uint64_t seed) {
        w.seed = seed;
        const std::vector<Request> queue = make_workload(w);
        std::vector<double> t;
        for (const Policy& p : book_policies(6)) {
            const Schedule s = simulate_with(queue, p, budget_of(250, Reservation::tokens_held));
            for (const Request& r : s.requests) {
                t.push_back(r.first_token_s);
                t.push_back(r.finished_s);
            }
        }
        return t;
    };
    CHECK(times(7) == times(7));
    CHECK(times(7) != times(8));
}

TEST_CASE("a priority changes who goes first") {
    // All at time 0, serial with the cache: shortest prompt first serves
    // the queue in order of prompt length.
    const std::vector<Request> queue = make_workload(small_workload(40));
    Policy shortest{"shortest prompt first", 1, false, true};
    shortest.priority = [](const Request& r) { return double(r.prompt_len); };
    std::vector<int> order;
    simulate_with(queue, shortest, kRoomy, [&](const ScheduleEvent& e) {
        if (e.kind == ScheduleEvent::admit)
            order.push_back(queue[std::size_t(e.request)].prompt_len);
    });
    CHECK(order.size() == queue.size());
    CHECK(std::is_sorted(order.begin(), order.end()));
}

TEST_CASE("bad inputs are clear errors") {
    // The scheduler refuses a call it cannot serve...
    const std::vector<Request> queue = make_workload(small_workload(5));
    CHECK_THROWS_AS(simulate_with(queue, Policy{"none", 0, true, true}, kRoomy),
                    std::invalid_argument);
    CHECK_THROWS_AS(simulate_with(std::vector<Request>{}, Policy{"serial", 1, false, true}, kRoomy),
                    std::invalid_argument);
    // ... and a request whose longest context cannot fit even alone, which
    // would wait forever: refused at the door.
    const std::uint64_t shortest_longest = 4 + 48 - 1;  // shortest prompt + answer cap - 1
    for (Reservation reserve : {Reservation::whole_context, Reservation::tokens_held})
        CHECK_THROWS_AS(simulate_with(queue, Policy{"serial", 1, false, true},
                                      budget_of(shortest_longest - 1, reserve)),
                        std::invalid_argument);
    CHECK(first_that_never_fits(queue, make_budget(kDemo, 0, Reservation::tokens_held)) ==
          &queue[0]);
    CHECK(first_that_never_fits(
              queue, budget_of(shortest_longest + 100, Reservation::tokens_held)) == nullptr);
    // The experiment turns the same values into errors naming the flag.
    auto error_of = [](auto change) -> std::string {
        ch05::Experiment e;
        change(e);
        try {
            e.check();
        } catch (const UsageError& error) {
            return error.what();
        }
        return "";
    };
    CHECK(error_of([](ch05::Experiment& e) { e.queue.workload.requests = 0; }) ==
          "--requests must be at least 1, got 0");
    CHECK(error_of([](ch05::Experiment& e) { e.queue.batch = 0; }) ==
          "--batch must be at least 1, got 0");
    const std::string too_small = error_of([](ch05::Experiment& e) {
        e.queue.kv_budget_mib = 1;
        e.queue.workload.prompt_max = 100;
        e.queue.workload.answer_max = 400;
    });
    CHECK(too_small.find("--kv-budget-mib 1 holds 341 positions") == 0);
    CHECK(error_of([](ch05::Experiment&) {}).empty());
}

TEST_CASE("bad follow-ups are refused") {
    // A request may follow only an earlier one: itself, a later one or a
    // made-up id could never arrive, or would wait for itself.
    std::vector<Request> queue = make_workload(small_workload(5));
    for (int after : {-2, 3, 4, 5}) {
        queue[3].after = after;
        CAPTURE(after);
        CHECK_THROWS_WITH_AS(simulate_with(queue, Policy{"serial", 1, false, true}, kRoomy),
                             ("run_schedule: request 3 follows request " + std::to_string(after) +
                              ", not an earlier one")
                                 .c_str(),
                             std::invalid_argument);
    }
    queue[3].after = 2;
    CHECK_NOTHROW(simulate_with(queue, Policy{"serial", 1, false, true}, kRoomy));
}

TEST_CASE("a request that follows another arrives when that one has finished") {
    // 0 and 2 arrive at once; 1 follows 0, so it waits for 0's last token,
    // though a slot is free, and its wait counts from then.
    std::vector<Request> queue(3);
    for (int i = 0; i < 3; ++i) queue[std::size_t(i)].id = i;
    queue[0].prompt_len = 10, queue[0].answer_len = queue[0].answer_cap = 5;
    queue[1].prompt_len = 20, queue[1].answer_len = queue[1].answer_cap = 3;
    queue[2].prompt_len = 5, queue[2].answer_len = queue[2].answer_cap = 12;
    queue[1].after = 0;
    const Schedule s = simulate_with(queue, Policy{"continuous", 4, true, true}, kRoomy);
    const Request &first = s.requests[0], &next = s.requests[1];
    CHECK(next.arrival_s == first.finished_s);
    CHECK(next.admitted_s == first.finished_s);          // at once: the batch had room
    CHECK(s.requests[2].finished_s > first.finished_s);  // 2 ran meanwhile
    // Its time to first token: its own prefill, counted from its arrival.
    CHECK(next.first_token_s - next.arrival_s == analytic_step_cost(kDemo).prefill_seconds(20));

    // A follow-up drawn to arrive later than that still arrives at its own time.
    queue[1].arrival_s = 10 * first.finished_s;
    queue[2].arrival_s = 10 * first.finished_s;
    const Schedule later = simulate_with(queue, Policy{"continuous", 4, true, true}, kRoomy);
    CHECK(later.requests[1].arrival_s == 10 * first.finished_s);
    CHECK(later.requests[1].admitted_s == 10 * first.finished_s);
}

TEST_CASE("follow-ups waiting together go in the order they arrived not by id") {
    // A batch of 2. 0 and 1 run; 1 is short, so 4 (its follow-up) arrives
    // first and waits behind 2, which came at the start. 2 is long, so when
    // 0 finishes, 3 (its follow-up) arrives and the one free slot is 4's:
    // it arrived earlier, though its id is higher.
    std::vector<Request> queue(5);
    const int answers[] = {10, 2, 30, 3, 3};
    for (int i = 0; i < 5; ++i) {
        Request& r = queue[std::size_t(i)];
        r.id = i;
        r.prompt_len = 8;
        r.answer_len = r.answer_cap = answers[i];
    }
    queue[3].after = 0;
    queue[4].after = 1;
    const Schedule s = simulate_with(queue, Policy{"continuous", 2, true, true}, kRoomy);
    const Request &three = s.requests[3], &four = s.requests[4];
    REQUIRE(four.arrival_s < three.arrival_s);  // both waiting once 0 finishes
    REQUIRE(s.requests[2].admitted_s < three.arrival_s);
    REQUIRE(s.requests[2].finished_s > three.arrival_s);
    CHECK(four.admitted_s == s.requests[0].finished_s);
    CHECK(three.admitted_s > four.admitted_s);
}

TEST_CASE("no follow-up is admitted before the request it follows has finished") {
    // Chains of requests (i follows i - 5) under every policy, with
    // preemptions, all at once and as a stream: each waits for the one it
    // follows, and still every request finishes once.
    for (double rate : {0.0, 40.0}) {
        std::vector<Request> queue = make_workload(small_workload(60, rate));
        for (std::size_t i = 5; i < queue.size(); ++i) queue[i].after = int(i) - 5;
        for (const Policy& policy : book_policies(8)) {
            CAPTURE(rate);
            INFO(policy.name);
            std::vector<int> finished(queue.size(), 0);
            const Schedule s =
                simulate_with(queue, policy, budget_of(200, Reservation::tokens_held),
                              [&](const ScheduleEvent& e) {
                                  if (e.kind == ScheduleEvent::finish)
                                      ++finished[std::size_t(e.request)];
                              });
            int held_back = 0;
            for (const Request& r : s.requests) {
                CHECK(finished[std::size_t(r.id)] == 1);
                CHECK(r.first_token_s >= r.arrival_s);
                if (r.after < 0) continue;
                const Request& before = s.requests[std::size_t(r.after)];
                CHECK(r.arrival_s >= before.finished_s);
                CHECK(r.admitted_s >= before.finished_s);
                held_back += r.arrival_s > queue[std::size_t(r.id)].arrival_s;
            }
            CHECK(held_back > 0);  // the rule really held someone back
        }
    }
}

TEST_CASE("without follow-ups the scheduler decides first come, first served by arrival") {
    // The decisions (every admission, step, finish and preemption, with the
    // batch and the memory after it) of every book policy on two queues,
    // one at once and one as a stream, with preemptions, as a pinned digest:
    // waiting requests go by arrival, then id. Integers only: the same on
    // every machine.
    Fnv1a64 digest;
    auto add = [&](std::uint64_t v) {
        for (int shift = 0; shift < 64; shift += 8) digest.add_byte(std::uint8_t(v >> shift));
    };
    for (double rate : {0.0, 40.0}) {
        const std::vector<Request> queue = make_workload(small_workload(120, rate));
        for (Reservation reserve : {Reservation::whole_context, Reservation::tokens_held})
            for (const Policy& policy : book_policies(8)) {
                const Schedule s = simulate_with(queue, policy, budget_of(200, reserve),
                                                 [&](const ScheduleEvent& e) {
                                                     add(std::uint64_t(e.kind));
                                                     add(std::uint64_t(std::int64_t(e.request)));
                                                     add(std::uint64_t(e.running));
                                                     add(e.held);
                                                     add(e.charged);
                                                 });
                add(std::uint64_t(s.preemptions));
            }
    }
    CHECK(digest.hex() == "a5153e9f13283267");
}

TEST_CASE("preemption sends back the newest request and readmits it first") {
    // The rules of `held`: when caches outgrow the budget, the request that
    // joined last goes back (never the only one left), and it goes to the
    // head of the queue, so it is the next to join again.
    const std::vector<Request> queue = make_workload(small_workload(150));
    const Policy continuous{"continuous", 16, true, true};
    std::vector<int> running;    // in join order
    std::vector<int> sent_back;  // preempted, not yet readmitted
    int preemptions = 0;
    ScheduleEvent::Kind last = ScheduleEvent::decode;
    simulate_with(
        queue, continuous, budget_of(200, Reservation::tokens_held), [&](const ScheduleEvent& e) {
            if (e.kind == ScheduleEvent::admit) {
                if (!sent_back.empty()) {
                    const auto first = std::min_element(sent_back.begin(), sent_back.end());
                    CHECK(e.request == *first);
                    sent_back.erase(first);
                }
                running.push_back(e.request);
            } else if (e.kind == ScheduleEvent::finish) {
                std::erase(running, e.request);
            } else if (e.kind == ScheduleEvent::preempt) {
                ++preemptions;
                CHECK(last != ScheduleEvent::admit);  // admission leaves room to grow
                REQUIRE(running.size() > 1);
                CHECK(e.request == running.back());
                running.pop_back();
                sent_back.push_back(e.request);
            }
            last = e.kind;
        });
    CHECK(preemptions > 0);  // the rules above were really exercised
    CHECK(sent_back.empty());
}

namespace {

// Prices nothing; records what each decode step was asked to compute.
struct StepRecorder : Executor {
    struct Row {
        int request, first, tokens;
        bool padding;
    };
    std::vector<std::vector<Row>> steps;  // decode steps only
    const StepCost cost = analytic_step_cost(kDemo);
    double run(const StepPlan& plan) override {
        if (test::is_decode_step(plan)) {
            std::vector<Row> rows;
            double context = 0;
            for (const StepRow& row : plan.rows) {
                rows.push_back({row.request->id, row.first, row.tokens,
                                row.request->status == RequestStatus::finished});
                context += row.first;
            }
            steps.push_back(rows);
            // The simulator prices every row, padding included.
            SimulatedExecutor simulated(cost);
            CHECK(simulated.run(plan) == cost.decode_seconds(int(rows.size()), context));
        }
        return 1e-3;
    }
};

}  // namespace

TEST_CASE("static batching pays for its padding rows") {
    // An answered request's row keeps running until the whole batch is done:
    // each decode step carries every row, padding included, each feeding one
    // token after the positions its cache holds.
    const std::vector<Request> queue = make_workload(small_workload(24));
    StepRecorder recorder;
    const Schedule s = run_schedule(queue, Policy{"static", 6, false, true}, kRoomy, recorder);
    std::int64_t padding_rows = 0;
    for (const std::vector<StepRecorder::Row>& rows : recorder.steps) {
        CHECK(rows.size() == 6);  // 24 requests at time 0 fill every batch
        for (const StepRecorder::Row& row : rows) {
            const Request& r = queue[std::size_t(row.request)];
            CHECK(row.tokens == 1);
            CHECK(row.first >= r.prompt_len);
            CHECK(row.first <= r.prompt_len + r.answer_len - 1);
            if (row.padding) CHECK(row.first == r.prompt_len + r.answer_len - 1);
            padding_rows += row.padding;
        }
    }
    CHECK(padding_rows > 0);
    CHECK(padding_rows == s.padding_rows);
}

TEST_CASE("percentiles are the nearest rank") {
    const std::vector<double> sorted = {1, 2, 3, 4};
    CHECK(percentile(sorted, 0.5) == 2);  // rank ceil(0.5 * 4) = 2
    CHECK(percentile(sorted, 0.75) == 3);
    CHECK(percentile(sorted, 0.9) == 4);
    CHECK(percentile(sorted, 0.99) == 4);
    CHECK(percentile(sorted, 0.0) == 1);
    CHECK(percentile(std::vector<double>{}, 0.5) == 0);
}
