// Chapter 04's roofline plot (plots/04_roofline.svg): what it draws comes
// from the run's numbers (the peak, each width's batch-1 roof named by its
// level, DRAM's roof, one point per batch size at the table's FLOPs/byte
// and GFLOP/s, none for a batch whose probe failed), and the drawing is
// log-log: points whose rate doubles with their intensity are evenly
// spaced, each memory roof has slope 1 and meets the peak at its ridge, and
// a step exactly on a roof is drawn on it.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "../chapters/04_batched_decoding/report.h"
#include "svg_check.h"
#include "tiny_models.h"

using namespace kv;

namespace {

BatchTiming step(int batch, double seconds, double weight_bytes, double weight_flops,
                 double attention_flops, double kv_bytes) {
    return {batch, seconds, {weight_bytes, weight_flops, attention_flops, kv_bytes}};
}

// Each batch of `w` against `roof` (the same for all, as a test may set it).
void priced(ch04::WidthResult& w, double roof, const std::string& level, double peak = 100e9) {
    w.roofs.clear();
    for (const BatchTiming& t : w.timings) {
        ch04::BatchRoof& r = w.roofs.emplace_back();
        r.bytes = std::uint64_t(t.arithmetic.bytes());
        r.roof = r.read_at_size = roof;
        r.level = level;
        r.memory = share_of(t.arithmetic.bytes() / t.step_seconds, roof);
        r.arithmetic = share_of(t.arithmetic.flops() / t.step_seconds, peak);
    }
}

// A run of two widths. The demo width: batches 1, 2 and 4 at B/2 FLOPs per
// byte and 5, 10, 20 GFLOP/s (batch 1 exactly on the 10 GB/s DRAM roof),
// its weights read from the cache at `demo_roof` if that is set. The wide
// width reads keys and values too: its intensity counts them.
std::vector<ch04::WidthResult> two_widths(double demo_roof) {
    std::vector<ch04::WidthResult> widths(2);
    widths[0].config = test::tiny_config();
    for (int b : {1, 2, 4}) widths[0].timings.push_back(step(b, 0.1, 1e9, 0.5e9 * b, 0, 0));
    priced(widths[0], demo_roof > 0 ? demo_roof : 10e9, demo_roof > 0 ? "L3" : "DRAM");
    widths[1].config = test::tiny_config();
    widths[1].config.dim = 48;
    widths[1].timings.push_back(step(1, 1.0, 4e9, 2e9, 1e9, 2e9));  // 3 GFLOP / 6 GB
    widths[1].timings.push_back(step(2, 1.2, 4e9, 4e9, 2e9, 4e9));  // 6 GFLOP / 8 GB
    priced(widths[1], 10e9, "DRAM");
    return widths;
}

Roofline machine(double peak = 100e9) {
    Roofline roofs;
    roofs.peak_flops = peak;
    roofs.dram_bytes_per_second = 10e9;
    return roofs;
}

struct Point {
    double x, y;
};

// The points of every polyline, in drawing order (the roofs, then the widths).
std::vector<std::vector<Point>> polylines(const std::string& svg) {
    std::vector<std::vector<Point>> found;
    for (std::size_t at = svg.find("<polyline"); at != std::string::npos;
         at = svg.find("<polyline", at + 1)) {
        const std::size_t from = svg.find("points=\"", at) + 8;
        std::istringstream points(svg.substr(from, svg.find('"', from) - from));
        std::vector<Point>& line = found.emplace_back();
        Point p;
        char comma;
        while (points >> p.x >> comma >> p.y) line.push_back(p);
    }
    return found;
}

// The y of the first dashed line: the peak.
double peak_y(const std::string& svg) {
    const std::size_t at = svg.rfind("<line", svg.find("stroke-dasharray"));
    return test::svg_attribute(svg.substr(at, svg.find('>', at) - at), "y1");
}

bool labelled(const std::string& svg, const std::string& label) {
    return svg.find(">" + label + "</text>") != std::string::npos;
}

}  // namespace

TEST_CASE("the roofline plot takes its roofs and points from the run's numbers") {
    std::string svg = ch04::roofline_plot(two_widths(25e9), machine()).svg();
    CHECK(test::svg_problem(svg) == "");
    for (const char* label :
         {"peak: 100.0 GFLOP/s", "dim 24 roof (L3): 25.0 GB/s", "dim 48 roof (DRAM): 10.0 GB/s",
          "DRAM: 10.0 GB/s", "dim 24, attained", "dim 48, attained"}) {
        INFO(label);
        CHECK(labelled(svg, label));
    }
    const std::vector<std::vector<Point>> lines = polylines(svg);
    REQUIRE(lines.size() == 5);  // each width's roof, DRAM's, then the two widths
    CHECK(lines[3].size() == 3);
    CHECK(lines[4].size() == 2);
    // Weights read from DRAM: the width's roof is named so.
    svg = ch04::roofline_plot(two_widths(0), machine()).svg();
    CHECK_FALSE(labelled(svg, "dim 24 roof (L3): 25.0 GB/s"));
    CHECK(labelled(svg, "dim 24 roof (DRAM): 10.0 GB/s"));
    CHECK(polylines(svg).size() == 5);
}

TEST_CASE("the roofline plot draws no point for a step above its roof") {
    // The demo's batch 1 reads 10 GB/s: above a 9 GB/s roof, a probe
    // failure, so it is left out and only batches 2 and 4 are drawn.
    std::vector<ch04::WidthResult> widths = two_widths(0);
    ch04::BatchRoof& one = widths[0].roofs[0];
    one.roof = 9e9;
    one.level = "measured at its size";
    one.memory = share_of(1e9 / 0.1, one.roof);
    REQUIRE(widths[0].roofs[0].memory.probe_failed());
    REQUIRE_FALSE(widths[0].roofs[1].memory.probe_failed());
    const std::string svg = ch04::roofline_plot(widths, machine()).svg();
    CHECK(labelled(svg, "dim 24 roof (measured at its size): 9.0 GB/s"));
    const std::vector<std::vector<Point>> lines = polylines(svg);
    REQUIRE(lines.size() == 5);
    CHECK(lines[3].size() == 2);
}

TEST_CASE("the roofline plot is log-log and every memory roof meets the peak at its ridge") {
    const std::string svg = ch04::roofline_plot(two_widths(25e9), machine()).svg();
    const std::vector<std::vector<Point>> lines = polylines(svg);
    REQUIRE(lines.size() == 5);
    const std::vector<Point>& demo = lines[3];
    // The demo width's intensities and rates both double from point to
    // point: on log axes the points are evenly spaced (on linear ones the
    // second gap would be twice the first).
    const double octave_x = demo[1].x - demo[0].x, octave_y = demo[0].y - demo[1].y;
    CHECK(octave_x > 10);
    CHECK(octave_y > 10);
    CHECK(demo[2].x - demo[1].x == doctest::Approx(octave_x).epsilon(0.01));
    CHECK(demo[1].y - demo[2].y == doctest::Approx(octave_y).epsilon(0.01));
    // The wide width's batch 1 is at the demo's batch-1 intensity (its keys
    // and values count: 3 GFLOP over 6 GB), and its 3 GFLOP/s is log2(5/3)
    // octaves below the demo's 5.
    const std::vector<Point>& wide = lines[4];
    CHECK(wide[0].x == doctest::Approx(demo[0].x).epsilon(0.001));
    CHECK(wide[0].y - demo[0].y == doctest::Approx(octave_y * std::log2(5.0 / 3)).epsilon(0.02));
    // 100 GFLOP/s is log2(100/20) octaves above the demo's batch 4.
    const double peak = peak_y(svg);
    CHECK(demo[2].y - peak == doctest::Approx(octave_y * std::log2(5.0)).epsilon(0.01));
    for (const std::vector<Point>& roof : {lines[0], lines[1], lines[2]}) {
        REQUIRE(roof.size() == 2);
        CHECK(roof[1].y == doctest::Approx(peak).epsilon(0.001));  // it stops at the peak
        // Slope 1 on log-log axes: an octave of intensity, an octave of rate.
        CHECK((roof[0].y - roof[1].y) / (roof[1].x - roof[0].x) ==
              doctest::Approx(octave_y / octave_x).epsilon(0.01));
    }
    // Ridges at 100/25 = 4 and 100/10 = 10 FLOPs per byte: log2(2.5) octaves apart.
    CHECK(lines[2][1].x - lines[0][1].x ==
          doctest::Approx(octave_x * std::log2(2.5)).epsilon(0.01));
    // The demo's batch 1, 0.5 FLOPs per byte at 5 GFLOP/s, is exactly on
    // the 10 GB/s DRAM roof, which starts there.
    CHECK(lines[2][0].x == doctest::Approx(demo[0].x).epsilon(0.001));
    CHECK(lines[2][0].y == doctest::Approx(demo[0].y).epsilon(0.001));
}

TEST_CASE("the roofline plot's frame holds every point and every ridge") {
    // A peak far above the points puts DRAM's ridge at 1000 FLOPs per
    // byte, far right of the last point (2): the axis reaches it anyway.
    const std::string svg = ch04::roofline_plot(two_widths(25e9), machine(10e12)).svg();
    CHECK(test::svg_problem(svg) == "");
    const std::size_t at = svg.find("<rect x=");
    const std::string frame = svg.substr(at, svg.find('>', at) - at);
    const double left = test::svg_attribute(frame, "x"), top = test::svg_attribute(frame, "y");
    const double right = left + test::svg_attribute(frame, "width");
    const double bottom = top + test::svg_attribute(frame, "height");
    for (const std::vector<Point>& line : polylines(svg))
        for (const Point& p : line) {
            CHECK(p.x >= left - 0.05);
            CHECK(p.x <= right + 0.05);
            CHECK(p.y >= top - 0.05);
            CHECK(p.y <= bottom + 0.05);
        }
    CHECK(peak_y(svg) >= top - 0.05);
}
