// The small pieces the book's SVG writers share (svg_plot.h,
// svg_timeline.h): text made safe to place in a file, elements written the
// same way everywhere, and ticks a person reads easily.
#pragma once

#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>

#include "report.h"  // fixed

namespace kv {

// `text` as XML character data or an attribute value: & < > " ' as
// entities, and control characters XML 1.0 does not allow as '?'.
inline std::string svg_escape(std::string_view text) {
    std::string out;
    for (char c : text) {
        const std::string_view plain = "&<>\"'";
        const char* entities[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&#39;"};
        if (const std::size_t k = plain.find(c); k != std::string_view::npos)
            out += entities[k];
        else
            out += (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n') ? '?' : c;
    }
    return out;
}

// A coordinate with one decimal: "12.5", every digit (report.h's fixed).
inline std::string svg_number(double v) {
    return fixed(v, 1);
}

// The <svg> element and its white background.
inline std::string svg_open(double width, double height) {
    return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + svg_number(width) +
           "\" height=\"" + svg_number(height) +
           "\" font-family=\"sans-serif\" font-size=\"12\">\n"
           "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
}

inline std::string svg_text(double x, double y, std::string_view text,
                            std::string_view attributes = "") {
    return "<text x=\"" + svg_number(x) + "\" y=\"" + svg_number(y) + "\"" +
           std::string(attributes) + ">" + svg_escape(text) + "</text>\n";
}

inline std::string svg_line(double x1, double x2, double y1, double y2,
                            std::string_view attributes) {
    return "<line x1=\"" + svg_number(x1) + "\" x2=\"" + svg_number(x2) + "\" y1=\"" +
           svg_number(y1) + "\" y2=\"" + svg_number(y2) + "\"" + std::string(attributes) + "/>\n";
}

// A step between ticks, 1, 2 or 5 times a power of ten, giving about five
// of them over `span` (> 0).
inline double svg_tick_step(double span) {
    const double power = std::pow(10.0, std::floor(std::log10(span / 5)));
    for (double m : {1.0, 2.0, 5.0})
        if (m * power >= span / 5) return m * power;
    return 10 * power;
}

// A tick's label: 0.25, 40, 1500; "1e+06" beyond 1e5 and below 1e-2.
inline std::string svg_tick_label(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf,
                  v != 0 && (std::fabs(v) >= 1e5 || std::fabs(v) < 1e-2) ? "%.0e" : "%g", v);
    return buf;
}

}  // namespace kv
