// Bars on a time axis, written as an SVG file: chapter 05's queue under
// static and under continuous batching, with no plotting library. A stack
// of panels, each with a heading, rows of bars and a time axis at its foot
// (shared by every panel unless set otherwise); each bar has a kind, whose
// colour and name the legend shows.
#pragma once

#include <cstddef>
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

    // A kind of bar, its legend entry and colour ("#1f77b4"); returns its number.
    int add_kind(std::string name, std::string color);
    void add_panel(std::string heading);  // rows added next go into it
    // A row in the newest panel (opened without a heading if none). Throws
    // std::invalid_argument for a bar below 0, backwards, not finite, or of
    // a kind never added.
    void add_row(TimelineRow row);
    // false: each panel on its own axis, from 0 to its own last bar.
    void set_shared_axis(bool on) { shared_axis_ = on; }
    void add_caption(std::string line) {
        captions_.push_back(std::move(line));
    }  // under the panels

    std::string svg() const;
    std::string write(const std::string& path) const;  // writes the file, returns its path

    // For the tests: the time at the right end of a panel's axis, and the x
    // (pixels) of time t in that panel.
    double axis_end(std::size_t panel) const;
    double x_of(std::size_t panel, double t) const;
    std::size_t panel_count() const { return panels_.size(); }
    const std::vector<TimelineRow>& rows(std::size_t panel) const { return panels_.at(panel).rows; }

  private:
    double left() const;  // where the bars begin: right of the widest row label

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
    bool shared_axis_ = true;
};

}  // namespace kv
