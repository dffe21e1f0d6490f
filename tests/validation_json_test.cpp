// Chapter 05 saves how its real queues' runs spread as numbers,
// not only as table text: a program reading the JSON gets each figure.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "../chapters/05_queue_simulation/report.h"

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
