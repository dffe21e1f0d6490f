// Chapter 02's timeline (plots/02_timeline.svg): one answer's measured
// steps laid end to end, the prefill first, for both methods.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "../chapters/02_kv_cache/report.h"
#include "svg_check.h"

using namespace kv;

TEST_CASE("chapter 02's timeline lays each method's steps end to end from the prefill") {
    AnswerTiming naive, cached;
    naive.step_seconds = {0.004, 0.010, 0.012};  // prompt, then the whole sequence twice
    naive.answer_seconds = 0.027;
    cached.step_seconds = {0.004, 0.001, 0.002};  // prefill, then two decode steps
    cached.answer_seconds = 0.0071;
    const SvgTimeline t = ch02::answer_timeline(16, naive, cached, 5);
    REQUIRE(t.panel_count() == 2);
    REQUIRE(t.rows(0).size() == 2);
    REQUIRE(t.rows(1).size() == 1);

    struct Want {
        double start, end;  // ms
    };
    auto check_row = [](const TimelineRow& row, const std::vector<Want>& want, int first_kind,
                        int later_kind) {
        REQUIRE(row.bars.size() == want.size());
        for (std::size_t i = 0; i < want.size(); ++i) {
            CHECK(row.bars[i].start == doctest::Approx(want[i].start));
            CHECK(row.bars[i].end == doctest::Approx(want[i].end));
            CHECK(row.bars[i].kind == (i == 0 ? first_kind : later_kind));
        }
    };
    // Kinds as added: 0 prefill, 1 decode with the cache, 2 a step without it.
    check_row(t.rows(0)[0], {{0, 4}, {4, 14}, {14, 26}}, 0, 2);
    check_row(t.rows(0)[1], {{0, 4}, {4, 5}, {5, 7}}, 0, 1);
    check_row(t.rows(1)[0], {{0, 4}, {4, 5}, {5, 7}}, 0, 1);
    CHECK(t.rows(0)[0].after == format_duration(0.026));  // the sum of the steps drawn
    CHECK(t.rows(0)[1].after == format_duration(0.007));
    CHECK(t.rows(0)[0].bars[2].note.find("sequence of 18 tokens") != std::string::npos);
    // The first panel puts both on the slower one's axis; the second has its own.
    CHECK(t.axis_end(0) >= 26);
    CHECK(t.axis_end(1) < 26);
    CHECK(test::svg_problem(t.svg()) == "");
}
