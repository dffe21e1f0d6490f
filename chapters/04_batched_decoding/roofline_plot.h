// Chapter 04's roofline as a picture (plots/04_roofline.svg), on log-log
// axes: arithmetic intensity (FLOPs per byte a step reads) across, GFLOP/s
// up. On such axes every roof is a straight line: the peak arithmetic a
// horizontal one, and each memory roof, bandwidth x intensity, a line of
// slope 1 that stops where it meets the peak, at its ridge. Each width's
// decode steps are points, one per batch size, joined by a line: what these
// kernels attain, under the roofs the machine allows.
//
// report.h decides what is drawn, from the run's numbers (roofline_figure);
// this file only draws a RooflineFigure.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numbers>
#include <string>
#include <vector>

#include "../../common/kit/svg_parts.h"

namespace kv::ch04 {

// A memory roof: the fastest FLOP/s at intensity I is bandwidth x I.
struct MemoryRoofLine {
    std::string label;            // where the bytes come from and how fast: "DRAM: 12.2 GB/s"
    double bytes_per_second = 0;  // the measured read rate
};

// One decode step as it ran.
struct AchievedPoint {
    int batch = 0;                // sequences in the step
    double flops_per_byte = 0;    // the table's FLOPs/byte (weights, keys and values read)
    double flops_per_second = 0;  // the table's GFLOP/s, in FLOP/s
};

// One model width's steps, batch 1, 2, 4, ..., joined by a line.
struct AchievedLine {
    std::string label;  // the legend's first line: "dim 256: what these kernels attain"
    std::string note;   // its second line: its best rate and the batch that reached it
    std::vector<AchievedPoint> points;
};

struct RooflineFigure {
    double peak_flops = 0;                     // the arithmetic roof, FLOP/s
    std::string peak_label;                    // its label, with the measured rate
    std::vector<MemoryRoofLine> memory_roofs;  // slanted, each up to the peak
    std::vector<AchievedLine> achieved;        // one per model width
};

// ------------------------------------------------------------ drawing

namespace roofline_detail {

inline bool drawable(double v) {
    return v > 0 && std::isfinite(v);
}

// Powers of two from 2^low to 2^high (whole exponents) over `pixels`.
struct LogAxis {
    double low = 0, high = 1;  // exponents of two at the two ends
    double start = 0, pixels = 1;
    bool upward = false;  // y: larger values higher on the page

    double at(double v) const {
        const double t = (std::log2(v) - low) / (high - low);
        return upward ? start + pixels - t * pixels : start + t * pixels;
    }
};

// The exponents that hold every value of `values`, whole powers of two, at
// least one octave apart; `fallback` if none is drawable.
inline LogAxis axis_over(const std::vector<double>& values, double fallback_low,
                         double fallback_high) {
    double lo = 0, hi = 0;
    bool any = false;
    for (double v : values)
        if (drawable(v)) {
            lo = any ? std::min(lo, v) : v;
            hi = any ? std::max(hi, v) : v;
            any = true;
        }
    LogAxis axis;
    if (!any) {
        axis.low = fallback_low, axis.high = fallback_high;
        return axis;
    }
    axis.low = std::floor(std::log2(lo));
    axis.high = std::ceil(std::log2(hi));
    if (axis.high <= axis.low) axis.high = axis.low + 1;
    return axis;
}

// A tick label for 2^e: 1/4, 1/2, 1, 2, ... 128, 256 (fractions below 1).
inline std::string power_label(double e) {
    const double v = std::pow(2.0, e);
    return v < 1 ? "1/" + svg_tick_label(1 / v) : svg_tick_label(v);
}

inline const char* color(std::size_t i) {
    static const char* colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd"};
    return colors[i % (sizeof colors / sizeof colors[0])];
}

}  // namespace roofline_detail

// The figure as an SVG document. The axes run over whole powers of two
// that hold every point, the peak, and each memory roof's ridge (peak /
// bandwidth), so every roof is seen to meet the peak. Elements the tests
// look for carry a class: "peak", "memory-roof", "achieved".
inline std::string roofline_svg(const RooflineFigure& f) {
    using namespace roofline_detail;
    const double W = 840, H = 480, left = 70, right = 310, top = 44, bottom = 56;
    const double pw = W - left - right, ph = H - top - bottom;
    const double peak = f.peak_flops / 1e9;  // the y axis counts GFLOP/s

    // The ranges: intensities of the points and the ridges; the rates of
    // the points, the peak, and each memory roof where the x axis starts.
    std::vector<double> xs, ys{peak};
    for (const MemoryRoofLine& m : f.memory_roofs)
        if (drawable(m.bytes_per_second)) xs.push_back(f.peak_flops / m.bytes_per_second);
    for (const AchievedLine& line : f.achieved)
        for (const AchievedPoint& p : line.points) {
            xs.push_back(p.flops_per_byte);
            ys.push_back(p.flops_per_second / 1e9);
        }
    LogAxis x = axis_over(xs, -1, 6);
    x.start = left, x.pixels = pw;
    for (const MemoryRoofLine& m : f.memory_roofs)
        ys.push_back(m.bytes_per_second * std::pow(2.0, x.low) / 1e9);
    LogAxis y = axis_over(ys, 0, 7);
    if (drawable(peak) && std::log2(peak) > y.high - 0.35) y.high += 1;  // room for its label
    y.start = top, y.pixels = ph, y.upward = true;

    std::string out = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + svg_number(W) +
                      "\" height=\"" + svg_number(H) +
                      "\" font-family=\"sans-serif\" font-size=\"12\">\n"
                      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
    auto text = [&](double tx, double ty, const std::string& s, const std::string& attributes) {
        out += "<text x=\"" + svg_number(tx) + "\" y=\"" + svg_number(ty) + "\"" + attributes +
               ">" + svg_escape(s) + "</text>\n";
    };
    auto line = [&](const std::string& cls, double x1, double y1, double x2, double y2,
                    const std::string& style) {
        out += "<line" + (cls.empty() ? std::string() : " class=\"" + cls + "\"") + " x1=\"" +
               svg_number(x1) + "\" y1=\"" + svg_number(y1) + "\" x2=\"" + svg_number(x2) +
               "\" y2=\"" + svg_number(y2) + "\" " + style + "/>\n";
    };
    text(W / 2, 24, "Roofline: one decode step against this machine's roofs",
         " text-anchor=\"middle\" font-size=\"15\"");

    // Grid and ticks, one per power of two (every second or more when the
    // axis spans many).
    const double x_stride = std::max(1.0, std::ceil((x.high - x.low) / 10));
    for (double e = x.low; e <= x.high; e += x_stride) {
        const double px = x.at(std::pow(2.0, e));
        line("", px, top, px, top + ph, "stroke=\"#e4e4e4\"");
        text(px, top + ph + 18, power_label(e), " text-anchor=\"middle\"");
    }
    const double y_stride = std::max(1.0, std::ceil((y.high - y.low) / 10));
    for (double e = y.low; e <= y.high; e += y_stride) {
        const double py = y.at(std::pow(2.0, e));
        line("", left, py, left + pw, py, "stroke=\"#e4e4e4\"");
        text(left - 6, py + 4, power_label(e), " text-anchor=\"end\"");
    }
    out += "<rect x=\"" + svg_number(left) + "\" y=\"" + svg_number(top) + "\" width=\"" +
           svg_number(pw) + "\" height=\"" + svg_number(ph) +
           "\" fill=\"none\" stroke=\"#333\"/>\n";
    text(left + pw / 2, H - 16, "arithmetic intensity (FLOPs per byte read, log scale)",
         " text-anchor=\"middle\"");
    out += "<text transform=\"translate(20," + svg_number(top + ph / 2) +
           ") rotate(-90)\" text-anchor=\"middle\">GFLOP/s (log scale)</text>\n";

    // The machine's roofs: the peak across, each memory roof up to it.
    const std::string roof_style = "stroke=\"#444\" stroke-width=\"2.5\"";
    if (drawable(peak)) {
        line("peak", left, y.at(peak), left + pw, y.at(peak), roof_style);
        text(left + pw - 6, y.at(peak) - 7, f.peak_label, " text-anchor=\"end\" fill=\"#333\"");
    }
    for (const MemoryRoofLine& m : f.memory_roofs) {
        if (!drawable(m.bytes_per_second) || !drawable(peak)) continue;
        const double from = std::pow(2.0, x.low), ridge = f.peak_flops / m.bytes_per_second;
        const double x1 = x.at(from), y1 = y.at(m.bytes_per_second * from / 1e9);
        const double x2 = x.at(ridge), y2 = y.at(peak);
        line("memory-roof", x1, y1, x2, y2, roof_style);
        // The label along the line, above it, halfway up.
        const double mx = (x1 + x2) / 2, my = (y1 + y2) / 2;
        const double degrees = std::atan2(y2 - y1, x2 - x1) * 180 / std::numbers::pi;
        text(mx, my - 6, m.label,
             " text-anchor=\"middle\" fill=\"#333\" transform=\"rotate(" + svg_number(degrees) +
                 " " + svg_number(mx) + " " + svg_number(my) + ")\"");
    }

    // Each width's steps: points joined by a line, the batch beside each.
    for (std::size_t i = 0; i < f.achieved.size(); ++i) {
        const AchievedLine& a = f.achieved[i];
        std::string points;
        for (const AchievedPoint& p : a.points)
            if (drawable(p.flops_per_byte) && drawable(p.flops_per_second))
                points += svg_number(x.at(p.flops_per_byte)) + "," +
                          svg_number(y.at(p.flops_per_second / 1e9)) + " ";
        out += "<polyline class=\"achieved\" fill=\"none\" stroke=\"" + std::string(color(i)) +
               "\" stroke-width=\"1.5\" points=\"" + points + "\"/>\n";
        for (const AchievedPoint& p : a.points) {
            if (!drawable(p.flops_per_byte) || !drawable(p.flops_per_second)) continue;
            const double px = x.at(p.flops_per_byte), py = y.at(p.flops_per_second / 1e9);
            out += "<circle class=\"achieved\" cx=\"" + svg_number(px) + "\" cy=\"" +
                   svg_number(py) + "\" r=\"3.5\" fill=\"" + color(i) + "\"/>\n";
            // Below the point: the first width's batch to its right, the
            // others' to its left, so that two widths' points at one place
            // keep their labels apart; turned inward at the frame's edges.
            const bool right_side = i % 2 == 0 ? px + 20 <= left + pw : px - 20 < left;
            text(right_side ? px + 5 : px - 5, py + 13, std::to_string(p.batch),
                 std::string(right_side ? "" : " text-anchor=\"end\"") +
                     " font-size=\"10\" fill=\"" + color(i) + "\"");
        }
        // The legend, right of the frame: the label, then its note.
        const double ly = top + 12 + 44 * double(i), lx = left + pw + 14;
        line("", lx, ly, lx + 24, ly,
             "stroke=\"" + std::string(color(i)) + "\" stroke-width=\"1.5\"");
        out += "<circle cx=\"" + svg_number(lx + 12) + "\" cy=\"" + svg_number(ly) +
               "\" r=\"3.5\" fill=\"" + color(i) + "\"/>\n";
        text(lx + 30, ly + 4, a.label, "");
        text(lx + 30, ly + 20, a.note, " font-size=\"11\" fill=\"#555\"");
    }
    const double ny = top + 12 + 44 * double(f.achieved.size());
    const double nx = left + pw + 14;
    line("", nx, ny, nx + 24, ny, roof_style);
    text(nx + 30, ny + 4, "this machine's roofs, measured", "");
    text(nx + 30, ny + 20, "beside each point: its batch size", " font-size=\"11\" fill=\"#555\"");
    return out + "</svg>\n";
}

}  // namespace kv::ch04
