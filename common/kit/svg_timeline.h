// Bars on a time axis, written as an SVG file: chapter 05's queue under
// static and under continuous batching. A stack of panels on one time axis,
// each with a heading and rows of bars; each bar has a kind, whose colour
// and name the legend shows.
#pragma once

#include <string>
#include <vector>

namespace kv {

struct TimelineBar {
    double start = 0;       // on the time axis, from 0
    double end = 0;         // at or after start; a bar of no length is not drawn
    int kind = 0;           // SvgTimeline::add_kind's number: the bar's colour and legend entry
    std::string note = {};  // shown where the pointer rests on the bar (an SVG <title>)
};

struct TimelineRow {
    std::string label;              // left of the row
    std::vector<TimelineBar> bars;  // in any order; they may touch, and should not overlap
    std::string after = {};         // right of the row's last bar, e.g. its total
};

class SvgTimeline {
  public:
    SvgTimeline(std::string title, std::string time_label)
        : title_(std::move(title)), time_label_(std::move(time_label)) {}

    int add_kind(std::string name, std::string color);  // its number; color as "#1f77b4"
    void add_panel(std::string heading);                // rows added next go into it
    // Throws std::invalid_argument for a bar below 0, backwards, not finite,
    // or of a kind never added.
    void add_row(TimelineRow row);
    void add_caption(std::string line) { captions_.push_back(std::move(line)); }  // at the foot

    std::string svg() const;
    std::string write(const std::string& path) const;  // writes the file, returns its path

  private:
    struct Kind {
        std::string name, color;
    };
    struct Panel {
        std::string heading;
        std::vector<TimelineRow> rows;
    };
    std::string title_, time_label_;
    std::vector<Kind> kinds_;
    std::vector<Panel> panels_;
    std::vector<std::string> captions_;
};

}  // namespace kv
