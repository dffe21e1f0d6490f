// make validate's report (tests/validate/validate.h): every figure as a
// number in the JSON, each operating point within the target or a warning
// naming each miss, and an order of first tokens that differs is an error.
#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

#include "validate/ch05_queues.h"
#include "validate/validate.h"

using namespace kv;

namespace {

// A row whose simulated measures are the real ones times (1 + error).
CheckedRow row_of(const std::string& chapter, const std::string& name, bool operating_point,
                  double ttft_error, double tbt_error, double p99_error, double total_error) {
    CheckedRow r;
    r.chapter = chapter;
    r.name = name;
    r.operating_point = operating_point;
    r.real.ttft_median = 2.0;
    r.real.tbt_median = 0.004;
    r.real.tbt_p99 = 0.02;
    r.real.total_s = 10.0;
    r.simulated.ttft_median = 2.0 * (1 + ttft_error);
    r.simulated.tbt_median = 0.004 * (1 + tbt_error);
    r.simulated.tbt_p99 = 0.02 * (1 + p99_error);
    r.simulated.total_s = 10.0 * (1 + total_error);
    r.run_spread = 0.25;
    return r;
}

}  // namespace

TEST_CASE("make validate's rows carry every figure as a number") {
    const CheckedRow r = row_of("05", "continuous, cache, 128 requests", true, 0.25, 0, 0, -0.25);
    CHECK(row_json(r).str() ==
          "{\"chapter\": \"05\", \"name\": \"continuous, cache, 128 requests\", "
          "\"operating_point\": true, "
          "\"real\": {\"ttft_p50_s\": 2, \"tbt_p50_s\": 0.004, \"tbt_p99_s\": 0.02, "
          "\"total_s\": 10}, "
          "\"simulated\": {\"ttft_p50_s\": 2.5, \"tbt_p50_s\": 0.004, \"tbt_p99_s\": 0.02, "
          "\"total_s\": 7.5}, "
          "\"error\": {\"ttft_p50\": 0.25, \"tbt_p50\": 0, \"tbt_p99\": 0, \"total\": -0.25}, "
          "\"run_spread\": 0.25, \"same_order\": true, \"within_target\": false}");
}

TEST_CASE("each operating point is within 5 percent on all four or a warning names each miss") {
    // Queues that are not an operating point never count.
    std::vector<CheckedRow> rows = {
        row_of("05", "serial, no cache, 8 requests", false, 0.5, 0.5, 0.5, 0.5),
        row_of("05", "serial, cache, 128 requests", true, 0.01, -0.02, 0.03, 0.0504),
        row_of("09", "512-token prompts, chunked 64", true, 0, 0, 0, 0)};
    CHECK(operating_point_lines(rows) ==
          std::vector<std::string>{
              "chapter 05's operating point (1 queue): within 5.0% on all four",
              "chapter 09's operating point (1 queue): within 5.0% on all four"});
    // Each miss named with its sign, queue by queue.
    rows.push_back(row_of("05", "static, cache, 128 requests", true, 0.10, 0, -0.06, 0));
    rows[1].simulated.total_s = 10.0 * 1.0506;
    CHECK(misses(rows[1]) == std::vector<std::string>{"total +5.1%"});
    CHECK(misses(rows[3]) == std::vector<std::string>{"ttft p50 +10.0%", "tbt p99 -6.0%"});
    CHECK(operating_point_lines(rows)[0] ==
          "warning: chapter 05's operating point (2 queues) is more than 5.0% off the engine: "
          "serial, cache, 128 requests: total +5.1%; static, cache, 128 requests: ttft p50 "
          "+10.0%, tbt p99 -6.0%");
    CHECK(operating_point_lines(rows)[1].starts_with("chapter 09's operating point"));
    ValidateResults results;
    results.rows = rows;
    const std::string json = validate_json(results).str();
    CHECK(json.find("\"within_target\": false},{\"line\": \"chapter 09") != std::string::npos);
}

TEST_CASE("a queue whose orders of finishing differ makes make validate exit 1") {
    ValidateResults r;
    r.runs = 5;
    r.rows = {row_of("05", "serial, cache, 128 requests", true, 0.2, 0.2, 0.2, 0.2)};
    OutputOptions quiet;
    quiet.json = true;
    std::ostringstream captured;
    std::streambuf* old = std::cout.rdbuf(captured.rdbuf());
    const int missed = validate_report(r, quiet);  // a missed target: still 0
    r.rows[0].same_order = false;
    const int disordered = validate_report(r, quiet);
    std::cout.rdbuf(old);
    CHECK(missed == 0);
    CHECK(disordered == 1);
    CHECK(order_errors(r.rows) ==
          std::vector<std::string>{"error: chapter 05, serial, cache, 128 requests: the engine "
                                   "and the simulator finished the requests in different "
                                   "orders"});
    CHECK(captured.str().find("\"order_errors\": [{\"error\": \"error: chapter 05") !=
          std::string::npos);
}

TEST_CASE("chapter 05's checked queues are its operating point and the queues without the cache") {
    ValidateOptions o;
    const std::vector<CheckedQueue> queues = ch05_checked_queues(o);
    REQUIRE(queues.size() == 6);
    // The first 128 requests of chapter 05's default queue, at its batch.
    WorkloadOptions w;
    w.seed = o.seed;
    const std::vector<Request> chapter = make_workload(w);
    for (int i = 0; i < 3; ++i) {
        const CheckedQueue& q = queues[std::size_t(i)];
        CHECK(q.chapter == "05");
        CHECK(q.operating_point);
        REQUIRE(q.requests.size() == 128);
        for (std::size_t k = 0; k < q.requests.size(); ++k) {
            CHECK(q.requests[k].prompt_len == chapter[k].prompt_len);
            CHECK(q.requests[k].answer_len == chapter[k].answer_len);
        }
    }
    CHECK(queues[0].name == "serial, cache, 128 requests");
    CHECK(queues[1].name == "static, cache, batch 32, 128 requests");
    CHECK(queues[2].name == "continuous, cache, batch 32, 128 requests");
    // Without the cache: 8 requests in batches of 2.
    CHECK(queues[3].name == "serial, no cache, 8 requests");
    CHECK(queues[4].name == "static, no cache, batch 2, 8 requests");
    CHECK(queues[5].name == "continuous, no cache, batch 2, 8 requests");
    for (int i = 3; i < 6; ++i) CHECK(!queues[std::size_t(i)].operating_point);
    // Each runs the whole queue through the executor it is given.
    SimulatedExecutor simulated(analytic_step_cost(o.model));
    const Schedule s = queues[2].run(simulated, nullptr);
    for (const Request& r : s.requests) CHECK(r.status == RequestStatus::finished);
    CHECK(workload_file_name(queues[1]) == "05-static-cache-batch-32-128-requests.jsonl");
    // Fewer requests asked for: fewer everywhere.
    o.requests = 4;
    const std::vector<CheckedQueue> few = ch05_checked_queues(o);
    CHECK(few[0].requests.size() == 4);
    CHECK(few[3].requests.size() == 4);
    CHECK(few[4].name == "static, no cache, 4 requests");  // a batch of 1
}
