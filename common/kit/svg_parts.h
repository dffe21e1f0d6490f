// The small pieces every SVG writer of the book shares (svg_plot.h,
// svg_timeline.h, chapter 03's memory layout): text made safe to place in
// a file, coordinates written the same way everywhere, and a tick step a
// person reads easily.
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

// A "nice" step between ticks (1, 2 or 5 times a power of ten) giving
// about five of them over `span` (> 0).
double svg_tick_step(double span);

// A tick's label: "%g" (0.25, 40, 1500), or "1e+06" style beyond 1e5 and
// below 1e-2.
std::string svg_tick_label(double v);

}  // namespace kv
