// Chapter 09's checked queues (tests/validate/ch09_queues.h): the operating
// point and its two neighbours, the same steps on the simulator and on the
// real engine, and the same tokens under every rule.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "../common/serving/step_cost.h"
#include "tiny_models.h"
#include "validate/ch09_queues.h"
#include "validate/validation.h"

using namespace kv;

namespace {

ValidateOptions tiny_lab(int requests) {
    ValidateOptions o;
    o.model = test::tiny_config();  // max_seq 64: chapter 09's queues need their own context
    o.seed = 3;
    o.requests = requests;
    return o;
}

// Each step's rows as (request, first, tokens), step after step.
class StepLog : public Executor {
  public:
    explicit StepLog(Executor& inner) : inner_(inner) {}
    double run(const StepPlan& plan) override {
        for (const StepRow& row : plan.rows)
            rows.push_back({row.request->id, row.first, row.tokens});
        rows.push_back({-1, 0, 0});  // the step's end
        return inner_.run(plan);
    }
    void release(const Request& r) override { inner_.release(r); }
    std::vector<std::vector<int>> rows;

  private:
    Executor& inner_;
};

}  // namespace

TEST_CASE("chapter 09 checks its operating point and prefill first and batched prefill beside it") {
    const std::vector<CheckedQueue> queues = ch09_checked_queues(tiny_lab(128));
    REQUIRE(queues.size() == 3);
    int points = 0;
    for (const CheckedQueue& q : queues) {
        CAPTURE(q.name);
        CHECK(q.chapter == "09");
        CHECK(q.requests.size() == 48);  // at most 48, whatever the lab's count
        for (const Request& r : q.requests) CHECK(r.prompt_len == 512);
        CHECK(q.name.find("512-token prompts") == 0);
        CHECK(q.name.find("max-seq 1024") != std::string::npos);
        points += q.operating_point;
        if (q.operating_point) CHECK(q.name.find("chunked 64, 48 requests") != std::string::npos);
    }
    CHECK(points == 1);
    CHECK(queues[1].name.find("prefill first") != std::string::npos);
    CHECK(queues[2].name.find("batched prefill") != std::string::npos);
    // Fewer requests when the lab asks for fewer.
    CHECK(ch09_checked_queues(tiny_lab(5))[0].requests.size() == 5);
}

TEST_CASE("chapter 09's checked queues run the same steps on the engine as in the simulator") {
    const ValidateOptions o = tiny_lab(3);
    Transformer lab(o.model, o.seed);
    std::vector<std::vector<std::vector<int>>> tokens;  // (queues, requests)
    for (const CheckedQueue& q : ch09_checked_queues(o)) {
        CAPTURE(q.name);
        SimulatedExecutor simulated(analytic_step_cost(ch09::chapter_model(o.model)));
        StepLog simulated_steps(simulated);
        q.run(simulated_steps, nullptr);
        // Twice on the engine: each run on a fresh pool, the same steps and tokens.
        std::vector<std::vector<int>> first;
        for (int run = 0; run < 2; ++run) {
            const std::unique_ptr<Executor> engine = q.engine(lab);
            StepLog engine_steps(*engine);
            const Schedule s = q.run(engine_steps, engine.get());
            CHECK(engine_steps.rows == simulated_steps.rows);
            std::vector<std::vector<int>> t;
            for (const Request& r : s.requests) {
                CHECK(int(r.token_ids.size()) == r.prompt_len + r.answer_len);
                t.push_back(r.token_ids);
            }
            if (run == 0) first = t;
            CHECK(t == first);
        }
        tokens.push_back(first);
    }
    // Chunked, prefill first and batched prefill: the same tokens, bit for bit.
    REQUIRE(tokens.size() == 3);
    CHECK(tokens[1] == tokens[0]);
    CHECK(tokens[2] == tokens[0]);
}

TEST_CASE("the lab checks chapter 09's operating point against the engine") {
    const ValidateOptions o = tiny_lab(2);
    Transformer lab(o.model, o.seed);
    const std::vector<CheckedQueue> queues = ch09_checked_queues(o);
    const CheckedRow row = check_queue_against_engine(
        queues[0], lab, analytic_step_cost(ch09::chapter_model(o.model)), 2);
    CHECK(row.operating_point);
    CHECK(row.same_order);
    CHECK(row.real.answer_tokens == row.simulated.answer_tokens);
    CHECK(row.real.total_s > 0);
}
