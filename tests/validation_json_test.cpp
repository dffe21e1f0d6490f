// Chapters 05 and 09 save how their real queues' runs spread as numbers,
// not only as table text: a program reading the JSON gets each figure.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "../chapters/05_queue_simulation/report.h"
#include "../chapters/09_chunked_prefill/report.h"

using namespace kv;

TEST_CASE("chapter 05's validation rows carry every figure as a number") {
    ValidationRow r;
    r.policy = "continuous, cache";
    r.real_requests = 128;
    r.batch = 32;
    r.real.ttft_median = 2.0;
    r.simulated.ttft_median = 2.5;
    r.real.total_s = 4.0;
    r.simulated.total_s = 3.0;
    r.same_order = false;
    r.run_spread = 0.25;
    const std::vector<Json> rows = ch05::validation_json({r});
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].str() ==
          "{\"policy\": \"continuous, cache\", \"requests\": 128, \"batch\": 32, "
          "\"real_ttft_median_s\": 2, \"simulated_ttft_median_s\": 2.5, "
          "\"error_ttft_median\": 0.25, \"real_total_s\": 4, \"simulated_total_s\": 3, "
          "\"error_total\": -0.25, \"same_order\": false, \"run_spread\": 0.25}");
}

TEST_CASE("chapter 09's engine queues carry their runs spread; the simulator's have none") {
    ch09::QueueRun q;
    q.workload = "512-token prompts";
    q.rule = {"chunked 64", 64};
    q.engine = true;
    q.requests = 48;
    q.run_spread = 0.375;
    const std::string engine = ch09::run_json(q).str();
    CHECK(engine.find("\"side\": \"engine\"") != std::string::npos);
    CHECK(engine.find("\"run_spread\": 0.375") != std::string::npos);

    q.engine = false;
    const std::string simulator = ch09::run_json(q).str();
    CHECK(simulator.find("\"side\": \"simulator\"") != std::string::npos);
    CHECK(simulator.find("run_spread") == std::string::npos);
}
