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

TEST_CASE("chapter 09 says whether the operating point is within 5 percent on all four") {
    ch09::Results r;
    r.long_prompt = 512;
    r.chunk = 64;
    auto run = [](const std::string& workload, const std::string& rule, bool engine, double wait,
                  double gap, double p99, double total) {
        ch09::QueueRun q;
        q.workload = workload;
        q.rule = {rule, 64};
        q.engine = engine;
        q.requests = 48;
        q.summary.ttft_median = wait;
        q.summary.tbt_median = gap;
        q.summary.tbt_p99 = p99;
        q.summary.total_s = total;
        return q;
    };
    const std::string longer = "512-token prompts", shorter = "short prompts";
    CHECK(ch09::operating_point_check(r).empty());  // no engine run: nothing to say
    CHECK(ch09::operating_point_json(r).str() == "{}");
    // Another rule's miss and another workload's miss come first, as in the
    // program's runs, and do not count: only the long prompts at chunk 64 are
    // the operating point.
    r.runs = {run(shorter, "chunked 64", false, 3.0, 0.03, 0.03, 30.0),
              run(shorter, "chunked 64", true, 2.0, 0.02, 0.02, 20.0),
              run(longer, "chunked 32", false, 3.0, 0.03, 0.03, 30.0),
              run(longer, "chunked 32", true, 2.0, 0.02, 0.02, 20.0),
              run(longer, "chunked 64", false, 2.08, 0.0104, 0.0200, 10.4),
              run(longer, "chunked 64", true, 2.0, 0.0100, 0.0200, 10.0)};
    ch09::QueueRun& sim = r.runs[4];
    CHECK(ch09::operating_point_check(r) ==
          "at the operating point (512-token prompts, chunked 64, 48 requests) the simulator is "
          "within 5.0% of the engine on all four");
    CHECK(ch09::operating_point_json(r).str().find("\"within_target\": true") != std::string::npos);
    // Each of the four measures, alone, names itself.
    const ch09::QueueRun good = sim;
    sim.summary.ttft_median = 2.2;  // +10 %
    CHECK(ch09::operating_point_check(r) ==
          "warning: at the operating point (512-token prompts, chunked 64, 48 requests) the "
          "simulator is more than 5.0% off the engine: median wait +10.0%");
    CHECK(ch09::operating_point_json(r).str().find("\"within_target\": false") !=
          std::string::npos);
    sim = good;
    sim.summary.tbt_median = 0.0090;  // -10 %
    CHECK(ch09::operating_point_check(r).ends_with("off the engine: median gap -10.0%"));
    sim = good;
    sim.summary.tbt_p99 = 0.0188;  // -6 %
    sim.summary.total_s = 10.6;    // +6 %
    CHECK(ch09::operating_point_check(r).ends_with("off the engine: p99 gap -6.0%, total +6.0%"));
    // What the table prints as 5.0 % is within: 5.04 % rounds to it, 5.06 % does not.
    sim = good;
    sim.summary.total_s = 10.504;
    CHECK(ch09::operating_point_check(r).starts_with("at the operating point"));
    sim.summary.total_s = 10.506;
    CHECK(ch09::operating_point_check(r).ends_with("off the engine: total +5.1%"));
}
