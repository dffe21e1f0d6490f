// The small pieces every SVG writer of the book shares (svg_plot.h,
// svg_timeline.h): text made safe to place in a file, coordinates and
// elements written the same way everywhere, and a tick step a person reads
// easily.
#pragma once

#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>

namespace kv {

// `text` as SVG (XML) character data or an attribute value: & < > " and '
// become entities, and control characters other than tab and newline,
// which XML 1.0 does not allow, become '?'.
inline std::string svg_escape(std::string_view text) {
    static constexpr std::pair<char, const char*> kEntities[] = {
        {'&', "&amp;"}, {'<', "&lt;"}, {'>', "&gt;"}, {'"', "&quot;"}, {'\'', "&#39;"}};
    std::string out;
    out.reserve(text.size());
    for (char c : text) {
        const char* entity = nullptr;
        for (const auto& [plain, written] : kEntities)
            if (c == plain) entity = written;
        if (entity != nullptr)
            out += entity;
        else
            out += (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n') ? '?' : c;
    }
    return out;
}

// A coordinate with one decimal: "12.5".
inline std::string svg_number(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", v);
    return buf;
}

// The opening of a picture: the <svg> element and its white background.
inline std::string svg_open(double width, double height) {
    return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + svg_number(width) +
           "\" height=\"" + svg_number(height) +
           "\" font-family=\"sans-serif\" font-size=\"12\">\n"
           "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
}

// <text x y `attributes`>text</text>, the text escaped.
inline std::string svg_text(double x, double y, std::string_view text,
                            std::string_view attributes = "") {
    return "<text x=\"" + svg_number(x) + "\" y=\"" + svg_number(y) + "\"" +
           std::string(attributes) + ">" + svg_escape(text) + "</text>\n";
}

// <line x1 x2 y1 y2 `attributes`/>
inline std::string svg_line(double x1, double x2, double y1, double y2,
                            std::string_view attributes) {
    return "<line x1=\"" + svg_number(x1) + "\" x2=\"" + svg_number(x2) + "\" y1=\"" +
           svg_number(y1) + "\" y2=\"" + svg_number(y2) + "\"" + std::string(attributes) + "/>\n";
}

// A "nice" step between ticks (1, 2 or 5 times a power of ten) giving
// about five of them over `span` (> 0).
inline double svg_tick_step(double span) {
    const double raw = span / 5.0;
    const double power = std::pow(10.0, std::floor(std::log10(raw)));
    for (double m : {1.0, 2.0, 5.0})
        if (m * power >= raw) return m * power;
    return 10.0 * power;
}

// A tick's label: "%g" (0.25, 40, 1500), or "1e+06" style beyond 1e5 and
// below 1e-2.
inline std::string svg_tick_label(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf,
                  v != 0 && (std::fabs(v) >= 1e5 || std::fabs(v) < 1e-2) ? "%.0e" : "%g", v);
    return buf;
}

}  // namespace kv
