// The kit's SVG pieces: escaped text, and the timeline's bars where their
// times say (start and length to scale, one axis or one per panel).
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "../common/kit/svg_parts.h"
#include "../common/kit/svg_plot.h"
#include "../common/kit/svg_timeline.h"
#include "svg_check.h"

using namespace kv;

TEST_CASE("svg_escape makes text and attribute values safe") {
    CHECK(svg_escape("a<b & \"c\" > 'd'") == "a&lt;b &amp; &quot;c&quot; &gt; &#39;d&#39;");
    CHECK(svg_escape(std::string("bell\x07 tab\t")) == "bell? tab\t");
    CHECK(test::svg_problem("<svg a=\"1\"><text>" + svg_escape("<&>\"") + "</text></svg>\n") == "");
}

TEST_CASE("the SVG check catches what a careless writer leaves") {
    CHECK(test::svg_problem("<svg x=\"1\"><text>a < b</text></svg>") != "");
    CHECK(test::svg_problem("<svg x=\"1\"><text>a & b</text></svg>") != "");
    CHECK(test::svg_problem("<svg x=\"1\"><text>a</svg>") != "");
    CHECK(test::svg_problem("<svg x=\"1\"><g></text></svg>") != "");
    CHECK(test::svg_problem("<svg x=1></svg>") != "");
    CHECK(test::svg_problem("<svg x=\"1\"><rect/></svg>\n") == "");
}

TEST_CASE("a timeline draws each bar from its start for its length") {
    SvgTimeline t("title", "time (s)");
    const int a = t.add_kind("a", "#111111"), b = t.add_kind("b", "#222222");
    t.add_row({"row", {{0, 1, a, "first"}, {1, 3, b, ""}, {3, 3, a, "empty"}}, "3 s"});
    t.add_panel("later");
    t.add_row({"other", {{0, 0.5, a}}});
    const std::string svg = t.svg();
    CHECK(test::svg_problem(svg) == "");
    const std::vector<test::DrawnBar> bars = test::drawn_bars(svg);
    REQUIRE(bars.size() == 3);  // the bar of no length is not drawn
    // One second is as wide in every bar and every panel (one axis), and
    // the second bar starts where the first ends.
    CHECK(bars[1].width == doctest::Approx(2 * bars[0].width).epsilon(0.002));
    CHECK(bars[2].width == doctest::Approx(bars[0].width / 2).epsilon(0.004));
    CHECK(bars[1].x == doctest::Approx(bars[0].x + bars[0].width).epsilon(0.001));
    CHECK(bars[2].x == doctest::Approx(bars[0].x).epsilon(0.001));
    CHECK(bars[0].y == bars[1].y);  // one row
    CHECK(bars[2].y > bars[1].y);   // the next panel, below
    CHECK(svg.find("<title>first</title>") != std::string::npos);
    CHECK(svg.find(">3 s</text>") != std::string::npos);
    CHECK(svg.find("#222222") != std::string::npos);
}

TEST_CASE("a timeline escapes its text and refuses bars it cannot draw") {
    SvgTimeline t("a <title> & \"quotes\"", "x < y");
    const int k = t.add_kind("kind & co", "#123456");
    t.add_panel("panel <1>");
    t.add_row({"row \"1\"", {{0, 1, k, "note <b>"}}, "after & more"});
    const std::string svg = t.svg();
    CHECK(test::svg_problem(svg) == "");
    CHECK(svg.find("a &lt;title&gt; &amp; &quot;quotes&quot;") != std::string::npos);
    CHECK(svg.find("<title>note &lt;b&gt;</title>") != std::string::npos);

    const double nan = std::numeric_limits<double>::quiet_NaN();
    CHECK_THROWS_AS(t.add_row({"r", {{2, 1, k}}}), std::invalid_argument);   // ends first
    CHECK_THROWS_AS(t.add_row({"r", {{-1, 1, k}}}), std::invalid_argument);  // before 0
    CHECK_THROWS_AS(t.add_row({"r", {{0, nan, k}}}), std::invalid_argument);
    CHECK_THROWS_AS(t.add_row({"r", {{0, 1, 7}}}), std::invalid_argument);  // no such kind
}

TEST_CASE("the line chart's text is escaped too") {
    SvgPlot plot("p < q & r", "x", "y");
    plot.add_series("s \"1\"", {1, 2}, {1, 2});
    const std::string svg = plot.svg();
    CHECK(test::svg_problem(svg) == "");
    CHECK(svg.find("p &lt; q &amp; r") != std::string::npos);
}

TEST_CASE("cases are named points with no line between them; names on one spot do not overlap") {
    SvgPlot plot("formats", "bytes", "agreement");
    plot.add_cases("first", {4, 2, 2, 1}, {100, 90, 90, 50},
                   {"float32", "bfloat16", "float16", "int8"});
    plot.add_series("a series", {1, 4}, {50, 100});
    const std::string svg = plot.svg();
    CHECK(test::svg_problem(svg) == "");
    auto count = [&](const std::string& what) {
        int n = 0;
        for (std::size_t at = svg.find(what); at != std::string::npos; at = svg.find(what, at + 1))
            ++n;
        return n;
    };
    CHECK(count("<polyline") == 1);  // the series' line only
    for (const char* name : {">float32<", ">bfloat16<", ">float16<", ">int8<"})
        CHECK(count(name) == 1);
    // bfloat16 and float16 share a point: their names sit on different lines.
    auto y_of = [&](const std::string& name) {
        const std::size_t end = svg.find(name), at = svg.rfind(" y=\"", end) + 4;
        return std::stod(svg.substr(at, svg.find('"', at) - at));
    };
    CHECK(std::abs(y_of(">bfloat16<") - y_of(">float16<")) >= 13);
    CHECK_THROWS_AS(plot.add_cases("bad", {1}, {1}, {}), std::invalid_argument);
}

TEST_CASE("an SVG coordinate keeps every digit, however large") {
    CHECK(svg_number(12.25) == "12.2");  // one decimal, rounded to even as printf does
    const std::string huge = svg_number(1e300);
    CHECK(huge.size() == 303);  // 301 digits, the point and one decimal
    CHECK(huge.substr(0, 4) == "1000");
    CHECK(huge.ends_with(".0"));
}
