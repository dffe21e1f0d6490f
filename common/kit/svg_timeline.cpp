#include "svg_timeline.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "files.h"
#include "svg_parts.h"

namespace kv {

namespace {

// The page, in pixels: row labels on the left (as wide as the longest
// needs), each row's `after` text on the right, the bars between.
constexpr double kWidth = 960, kRight = 100, kRowHeight = 18, kBarHeight = 12;

// A rough width of text at font size 12 (a little over most fonts' average).
double text_width(const std::string& s) {
    return 7.0 * double(s.size());
}

double last_end(const std::vector<TimelineRow>& rows) {
    double end = 0;
    for (const TimelineRow& row : rows)
        for (const TimelineBar& bar : row.bars) end = std::max(end, bar.end);
    return end;
}

}  // namespace

int SvgTimeline::add_kind(std::string name, std::string color) {
    kinds_.push_back({std::move(name), std::move(color)});
    return int(kinds_.size()) - 1;
}

void SvgTimeline::add_panel(std::string heading) {
    panels_.push_back({std::move(heading), {}});
}

void SvgTimeline::add_row(TimelineRow row) {
    for (const TimelineBar& bar : row.bars) {
        if (!std::isfinite(bar.start) || !std::isfinite(bar.end) || bar.start < 0 ||
            bar.end < bar.start)
            throw std::invalid_argument("timeline row '" + row.label + "': a bar from " +
                                        std::to_string(bar.start) + " to " +
                                        std::to_string(bar.end));
        if (bar.kind < 0 || bar.kind >= int(kinds_.size()))
            throw std::invalid_argument("timeline row '" + row.label + "': bar kind " +
                                        std::to_string(bar.kind) + " was never added");
    }
    if (panels_.empty()) add_panel("");
    panels_.back().rows.push_back(std::move(row));
}

double SvgTimeline::axis_end(std::size_t panel) const {
    double end = 0;
    if (shared_axis_)
        for (const Panel& p : panels_) end = std::max(end, last_end(p.rows));
    else
        end = last_end(panels_.at(panel).rows);
    if (!(end > 0)) return 1;
    const double step = svg_tick_step(end);
    return std::ceil(end / step - 1e-9) * step;  // the last tick at or after the last bar
}

double SvgTimeline::left() const {
    double widest = 0;
    for (const Panel& p : panels_)
        for (const TimelineRow& row : p.rows) widest = std::max(widest, text_width(row.label));
    return std::clamp(14 + widest + 10, 120.0, kWidth / 2);
}

double SvgTimeline::x_of(std::size_t panel, double t) const {
    return left() + t / axis_end(panel) * (kWidth - left() - kRight);
}

std::string SvgTimeline::svg() const {
    const double kLeft = left(), kPlotWidth = kWidth - kLeft - kRight;
    std::string body;
    body += svg_text(kWidth / 2, 24, title_, " text-anchor=\"middle\" font-size=\"15\"");

    // The legend: one swatch and name per kind, on as many lines as it needs.
    double y = 46, x = kLeft;
    for (const Kind& k : kinds_) {
        const double width = 18 + text_width(k.name) + 18;
        if (x > kLeft && x + width > kWidth - 10) x = kLeft, y += 18;
        body += "<rect x=\"" + svg_number(x) + "\" y=\"" + svg_number(y - 10) +
                "\" width=\"12\" height=\"12\" fill=\"" + svg_escape(k.color) + "\"/>\n";
        body += svg_text(x + 18, y, k.name);
        x += width;
    }
    y += 16;

    for (std::size_t p = 0; p < panels_.size(); ++p) {
        const Panel& panel = panels_[p];
        if (!panel.heading.empty()) {
            y += 16;
            body += svg_text(14, y, panel.heading, " font-weight=\"bold\" font-size=\"13\"");
        }
        y += 8;
        const double top = y, bottom = y + kRowHeight * double(panel.rows.size());
        const double end = axis_end(p), step = svg_tick_step(end);
        auto x_at = [&](double t) { return kLeft + t / end * kPlotWidth; };  // x_of(p, t)
        // Grid lines and the axis's ticks.
        for (int i = 0; i * step <= end * (1 + 1e-9); ++i) {
            const double t = i * step;
            body += svg_line(x_at(t), x_at(t), top, bottom + 4, " stroke=\"#e4e4e4\"");
            body += svg_text(x_at(t), bottom + 17, svg_tick_label(t), " text-anchor=\"middle\"");
        }
        body += svg_line(kLeft, kLeft + kPlotWidth, bottom, bottom, " stroke=\"#333\"");
        for (std::size_t r = 0; r < panel.rows.size(); ++r) {
            const TimelineRow& row = panel.rows[r];
            const double row_y = top + kRowHeight * double(r);
            body += svg_text(kLeft - 8, row_y + 13, row.label, " text-anchor=\"end\"");
            double row_end = 0;
            for (const TimelineBar& bar : row.bars) {
                if (!(bar.end > bar.start)) continue;
                row_end = std::max(row_end, bar.end);
                const double x0 = x_at(bar.start);
                // A bar too short to see is drawn half a pixel wide.
                const double width = std::max(0.5, x_at(bar.end) - x0);
                body += "<rect class=\"bar\" x=\"" + svg_number(x0) + "\" y=\"" +
                        svg_number(row_y + (kRowHeight - kBarHeight) / 2) + "\" width=\"" +
                        svg_number(width) + "\" height=\"" + svg_number(kBarHeight) + "\" fill=\"" +
                        svg_escape(kinds_[std::size_t(bar.kind)].color) + "\"";
                // Bars wide enough to show it are parted by a thin white line.
                if (width >= 4) body += " stroke=\"#fff\" stroke-width=\"0.5\"";
                if (bar.note.empty())
                    body += "/>\n";
                else
                    body += "><title>" + svg_escape(bar.note) + "</title></rect>\n";
            }
            if (!row.after.empty()) body += svg_text(x_at(row_end) + 6, row_y + 13, row.after);
        }
        y = bottom + 32;
        body += svg_text(kLeft + kPlotWidth / 2, y, time_label_, " text-anchor=\"middle\"");
        y += 6;
    }
    for (const std::string& line : captions_) {
        y += 16;
        body += svg_text(14, y, line);
    }
    y += 14;

    return svg_open(kWidth, y) + body + "</svg>\n";
}

std::string SvgTimeline::write(const std::string& path) const {
    write_file(path, svg(), "--plot-dir");
    return path;
}

}  // namespace kv
