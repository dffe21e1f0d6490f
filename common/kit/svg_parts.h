// The small pieces every SVG writer of the book shares (svg_plot.h,
// svg_timeline.h): text made safe to place in a file, coordinates and
// elements written the same way everywhere, and a tick step a person reads
// easily.
#pragma once

#include <string>
#include <string_view>

namespace kv {

// `text` as SVG (XML) character data or an attribute value: & < > " and '
// become entities, and control characters other than tab and newline,
// which XML 1.0 does not allow, become '?'.
std::string svg_escape(std::string_view text);

// A coordinate with one decimal: "12.5".
std::string svg_number(double v);

// The opening of a picture: the <svg> element and its white background.
std::string svg_open(double width, double height);
// <text x y `attributes`>text</text>, the text escaped.
std::string svg_text(double x, double y, std::string_view text, std::string_view attributes = "");
// <line x1 x2 y1 y2 `attributes`/>
std::string svg_line(double x1, double x2, double y1, double y2, std::string_view attributes);

// A "nice" step between ticks (1, 2 or 5 times a power of ten) giving
// about five of them over `span` (> 0).
double svg_tick_step(double span);

// A tick's label: "%g" (0.25, 40, 1500), or "1e+06" style beyond 1e5 and
// below 1e-2.
std::string svg_tick_label(double v);

}  // namespace kv
