// Chapter 04's roofline plot (plots/04_roofline.svg): what it draws comes
// from the run's numbers (the peak, a last-level cache roof only where a
// width's weights were read from that cache, DRAM's roof always, one point
// per batch size at the table's FLOPs/byte and GFLOP/s), and the drawing is
// log-log: points whose rate doubles with their intensity are evenly
// spaced, each memory roof has slope 1 and meets the peak at its ridge, and
// a step exactly on a roof is drawn on it.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "../chapters/04_batched_decoding/report.h"
#include "../chapters/04_batched_decoding/roofline_plot.h"
#include "svg_check.h"
#include "tiny_models.h"

using namespace kv;

namespace {

BatchTiming step(int batch, double seconds, double weight_bytes, double weight_flops,
                 double attention_flops, double kv_bytes) {
    BatchTiming t;
    t.batch = batch;
    t.step_seconds = seconds;
    t.arithmetic.weight_bytes = weight_bytes;
    t.arithmetic.weight_flops = weight_flops;
    t.arithmetic.attention_flops = attention_flops;
    t.arithmetic.kv_bytes = kv_bytes;
    return t;
}

Config wide_config() {
    Config c = test::tiny_config();
    c.dim = 48;
    c.ffn_dim = 144;
    return c;
}

// A run of two widths. The demo width: batches 1, 2 and 4 at B/2 FLOPs per
// byte and 5, 10, 20 GFLOP/s (batch 1 exactly on the 10 GB/s DRAM roof).
// The wide width reads keys and values too: its intensity counts them.
std::vector<ch04::WidthResult> two_widths(double demo_read, double wide_read) {
    std::vector<ch04::WidthResult> widths(2);
    widths[0].config = test::tiny_config();
    widths[0].read_at_weights = demo_read;
    for (int b : {1, 2, 4}) widths[0].timings.push_back(step(b, 0.1, 1e9, 0.5e9 * b, 0, 0));
    widths[1].config = wide_config();
    widths[1].read_at_weights = wide_read;
    widths[1].timings.push_back(step(1, 1.0, 4e9, 2e9, 1e9, 2e9));  // 3 GFLOP / 6 GB
    widths[1].timings.push_back(step(2, 1.2, 4e9, 4e9, 2e9, 4e9));  // 6 GFLOP / 8 GB
    return widths;
}

Roofline machine() {
    Roofline roofs;
    roofs.peak_flops = 100e9;
    roofs.dram_bytes_per_second = 10e9;
    return roofs;
}

struct Segment {
    double x1, y1, x2, y2;
};

// Every tag that starts with `start`, whole up to its '>'.
std::vector<std::string> tags(const std::string& svg, const std::string& start) {
    std::vector<std::string> found;
    for (std::size_t at = svg.find(start); at != std::string::npos; at = svg.find(start, at + 1))
        found.push_back(svg.substr(at, svg.find('>', at) - at));
    return found;
}

std::vector<Segment> lines(const std::string& svg, const std::string& cls) {
    std::vector<Segment> found;
    for (const std::string& t : tags(svg, "<line class=\"" + cls + "\""))
        found.push_back({test::svg_attribute(t, "x1"), test::svg_attribute(t, "y1"),
                         test::svg_attribute(t, "x2"), test::svg_attribute(t, "y2")});
    return found;
}

struct Dot {
    double x, y;
};

std::vector<Dot> points(const std::string& svg) {
    std::vector<Dot> found;
    for (const std::string& t : tags(svg, "<circle class=\"achieved\""))
        found.push_back({test::svg_attribute(t, "cx"), test::svg_attribute(t, "cy")});
    return found;
}

}  // namespace

TEST_CASE("the roofline figure takes its roofs and points from the run's numbers") {
    const Roofline roofs = machine();
    const std::uint64_t demo_bytes = weight_bytes_per_step(test::tiny_config());
    // The demo width's weights fit the reported last level and a read of
    // their size ran at 25 GB/s, 2.5 x DRAM's: a cache roof at 25 GB/s. The
    // wide width's do not fit: DRAM's.
    const ch04::RooflineFigure f = ch04::roofline_figure(two_widths(25e9, 0), roofs, demo_bytes);
    CHECK(f.peak_flops == 100e9);
    CHECK(f.peak_label == "peak, multiply then add: 100.0 GFLOP/s");
    REQUIRE(f.memory_roofs.size() == 2);
    CHECK(f.memory_roofs[0].bytes_per_second == 25e9);
    CHECK(f.memory_roofs[0].label == "last-level cache: 25.0 GB/s");
    CHECK(f.memory_roofs[1].bytes_per_second == 10e9);
    CHECK(f.memory_roofs[1].label == "DRAM: 10.0 GB/s");

    REQUIRE(f.achieved.size() == 2);
    const ch04::AchievedLine& demo = f.achieved[0];
    CHECK(demo.label == "dim 24: what these kernels attain");
    CHECK(demo.note == "at most 20.0 GFLOP/s, at batch 4");
    REQUIRE(demo.points.size() == 3);
    const double intensity[] = {0.5, 1.0, 2.0}, rate[] = {5e9, 10e9, 20e9};
    for (int i = 0; i < 3; ++i) {
        CHECK(demo.points[i].batch == 1 << i);
        CHECK(demo.points[i].flops_per_byte == doctest::Approx(intensity[i]));
        CHECK(demo.points[i].flops_per_second == doctest::Approx(rate[i]));
    }
    // The wide width's intensity counts every byte the step reads, keys and
    // values too (the table's FLOPs/byte): 3 GFLOP over 6 GB, not over the
    // 4 GB of weights alone.
    const ch04::AchievedLine& wide = f.achieved[1];
    CHECK(wide.label == "dim 48: what these kernels attain");
    CHECK(wide.note == "at most 5.0 GFLOP/s, at batch 2");
    REQUIRE(wide.points.size() == 2);
    CHECK(wide.points[0].flops_per_byte == doctest::Approx(0.5));
    CHECK(wide.points[0].flops_per_second == doctest::Approx(3e9));
    CHECK(wide.points[1].flops_per_byte == doctest::Approx(0.75));
    CHECK(wide.points[1].flops_per_second == doctest::Approx(5e9));
}

TEST_CASE("the roofline figure has a cache roof only where a width's weights came from the cache") {
    const Roofline roofs = machine();
    const std::uint64_t demo_bytes = weight_bytes_per_step(test::tiny_config());
    // The read at the demo width's size ran no more than 1.2 x DRAM's: not
    // the cache (common/kit/memory_level.h). DRAM's roof alone.
    ch04::RooflineFigure f = ch04::roofline_figure(two_widths(12e9, 0), roofs, demo_bytes);
    REQUIRE(f.memory_roofs.size() == 1);
    CHECK(f.memory_roofs[0].label == "DRAM: 10.0 GB/s");
    // No last-level cache reported: DRAM's alone, whatever a read measured.
    f = ch04::roofline_figure(two_widths(25e9, 0), roofs, 0);
    REQUIRE(f.memory_roofs.size() == 1);
    CHECK(f.memory_roofs[0].bytes_per_second == 10e9);
    // Both widths' weights read from the cache, at different rates: a roof
    // each, named by its width, then DRAM's.
    const std::uint64_t wide_bytes = weight_bytes_per_step(wide_config());
    f = ch04::roofline_figure(two_widths(25e9, 15e9), roofs, wide_bytes);
    REQUIRE(f.memory_roofs.size() == 3);
    CHECK(f.memory_roofs[0].label == "last-level cache (dim 24): 25.0 GB/s");
    CHECK(f.memory_roofs[1].label == "last-level cache (dim 48): 15.0 GB/s");
    CHECK(f.memory_roofs[2].label == "DRAM: 10.0 GB/s");
}

TEST_CASE("the roofline plot is log-log and every memory roof meets the peak at its ridge") {
    const std::uint64_t demo_bytes = weight_bytes_per_step(test::tiny_config());
    const std::string svg =
        ch04::roofline_svg(ch04::roofline_figure(two_widths(25e9, 0), machine(), demo_bytes));
    CHECK(test::svg_problem(svg) == "");
    for (const char* label :
         {"peak, multiply then add: 100.0 GFLOP/s", "last-level cache: 25.0 GB/s",
          "DRAM: 10.0 GB/s", "dim 24: what these kernels attain",
          "dim 48: what these kernels attain"}) {
        INFO(label);
        std::string element = ">";  // the label as a text element's whole content
        element.append(label).append("</text>");
        CHECK(svg.find(element) != std::string::npos);
    }
    CHECK(tags(svg, "<polyline class=\"achieved\"").size() == 2);
    const std::vector<Dot> dots = points(svg);
    REQUIRE(dots.size() == 5);  // the demo width's 3, then the wide width's 2
    // Each point's batch size beside it, in its width's colour.
    const std::vector<std::string> batches = tags(svg, "<text x=");
    int blue = 0, red = 0;
    for (const std::string& t : batches) {
        if (t.find("font-size=\"10\" fill=\"#1f77b4\"") != std::string::npos) ++blue;
        if (t.find("font-size=\"10\" fill=\"#d62728\"") != std::string::npos) ++red;
    }
    CHECK(blue == 3);
    CHECK(red == 2);
    CHECK(svg.find("fill=\"#1f77b4\">4</text>") != std::string::npos);

    // The demo width's intensities and rates both double from point to
    // point: on log axes the points are evenly spaced (on linear ones the
    // second gap would be twice the first).
    const double octave_x = dots[1].x - dots[0].x, octave_y = dots[0].y - dots[1].y;
    CHECK(octave_x > 10);
    CHECK(octave_y > 10);
    CHECK(dots[2].x - dots[1].x == doctest::Approx(octave_x).epsilon(0.01));
    CHECK(dots[1].y - dots[2].y == doctest::Approx(octave_y).epsilon(0.01));
    // The wide width's batch 1 is at the demo's batch-1 intensity, and its
    // 3 GFLOP/s is log2(5/3) octaves below the demo's 5.
    CHECK(dots[3].x == doctest::Approx(dots[0].x).epsilon(0.001));
    CHECK(dots[3].y - dots[0].y == doctest::Approx(octave_y * std::log2(5.0 / 3)).epsilon(0.02));

    const std::vector<Segment> peak = lines(svg, "peak");
    const std::vector<Segment> roofs = lines(svg, "memory-roof");
    REQUIRE(peak.size() == 1);
    REQUIRE(roofs.size() == 2);  // the cache's, then DRAM's
    CHECK(peak[0].y1 == peak[0].y2);
    // 100 GFLOP/s is log2(100/20) octaves above the demo's batch 4.
    CHECK(dots[2].y - peak[0].y1 == doctest::Approx(octave_y * std::log2(5.0)).epsilon(0.01));
    for (const Segment& r : roofs) {
        CHECK(r.y2 == doctest::Approx(peak[0].y1).epsilon(0.001));  // it stops at the peak
        // Slope 1 on log-log axes: an octave of intensity, an octave of rate.
        CHECK((r.y1 - r.y2) / (r.x2 - r.x1) == doctest::Approx(octave_y / octave_x).epsilon(0.01));
    }
    // Ridges at 100/25 = 4 and 100/10 = 10 FLOPs per byte: log2(2.5)
    // octaves apart; the cache's roof is log2(2.5) octaves above DRAM's.
    CHECK(roofs[1].x2 - roofs[0].x2 == doctest::Approx(octave_x * std::log2(2.5)).epsilon(0.01));
    CHECK(roofs[0].x1 == roofs[1].x1);
    CHECK(roofs[1].y1 - roofs[0].y1 == doctest::Approx(octave_y * std::log2(2.5)).epsilon(0.01));
    // The demo's batch 1, 0.5 FLOPs per byte at 5 GFLOP/s, is exactly on
    // the 10 GB/s DRAM roof: drawn on its line.
    const Segment& dram = roofs[1];
    const double t = (dots[0].x - dram.x1) / (dram.x2 - dram.x1);
    CHECK(dram.y1 + t * (dram.y2 - dram.y1) == doctest::Approx(dots[0].y).epsilon(0.002));
}

TEST_CASE("the roofline plot's frame holds every point and every ridge") {
    // A peak far above the points puts DRAM's ridge at 1000 FLOPs per
    // byte, far right of the last point (2): the axis reaches it anyway.
    Roofline roofs = machine();
    roofs.peak_flops = 10e12;
    const std::uint64_t demo_bytes = weight_bytes_per_step(test::tiny_config());
    const std::string svg =
        ch04::roofline_svg(ch04::roofline_figure(two_widths(25e9, 0), roofs, demo_bytes));
    CHECK(test::svg_problem(svg) == "");
    const std::vector<std::string> frame = tags(svg, "<rect x=");
    REQUIRE(frame.size() == 1);
    const double left = test::svg_attribute(frame[0], "x"),
                 top = test::svg_attribute(frame[0], "y");
    const double right = left + test::svg_attribute(frame[0], "width");
    const double bottom = top + test::svg_attribute(frame[0], "height");
    auto inside = [&](double x, double y) {
        return x >= left - 0.05 && x <= right + 0.05 && y >= top - 0.05 && y <= bottom + 0.05;
    };
    for (const Dot& d : points(svg)) CHECK(inside(d.x, d.y));
    const std::vector<Segment> memory = lines(svg, "memory-roof");
    REQUIRE(memory.size() == 2);
    for (const Segment& s : memory) {
        CHECK(inside(s.x1, s.y1));
        CHECK(inside(s.x2, s.y2));
    }
    const std::vector<Segment> peak = lines(svg, "peak");
    REQUIRE(peak.size() == 1);
    CHECK(inside(peak[0].x1, peak[0].y1));
    CHECK(peak[0].y1 > top);  // the peak is below the frame's top, room for its label
}
