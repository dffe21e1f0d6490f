#include "svg_timeline.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "files.h"
#include "svg_parts.h"

namespace kv {

int SvgTimeline::add_kind(std::string name, std::string color) {
    kinds_.push_back({std::move(name), std::move(color)});
    return int(kinds_.size()) - 1;
}

void SvgTimeline::add_panel(std::string heading) {
    panels_.push_back({std::move(heading), {}});
}

void SvgTimeline::add_row(TimelineRow row) {
    for (const TimelineBar& bar : row.bars)
        if (!std::isfinite(bar.start) || !std::isfinite(bar.end) || bar.start < 0 ||
            bar.end < bar.start || bar.kind < 0 || bar.kind >= int(kinds_.size()))
            throw std::invalid_argument(
                "timeline row '" + row.label + "': a bar from " + std::to_string(bar.start) +
                " to " + std::to_string(bar.end) + " of kind " + std::to_string(bar.kind));
    if (panels_.empty()) add_panel("");
    panels_.back().rows.push_back(std::move(row));
}

std::string SvgTimeline::svg() const {
    // Row labels on the left (as wide as the widest needs, at about 7 pixels
    // a character), each row's `after` text on the right, the bars between.
    const double page = 960, right = 100, row_height = 18;
    double widest = 0, end = 0;
    for (const Panel& p : panels_)
        for (const TimelineRow& row : p.rows) {
            widest = std::max(widest, 7.0 * double(row.label.size()));
            for (const TimelineBar& bar : row.bars) end = std::max(end, bar.end);
        }
    const double left = std::clamp(24 + widest, 120.0, page / 2), width = page - left - right;
    const double step = svg_tick_step(end > 0 ? end : 1);
    end = end > 0 ? std::ceil(end / step - 1e-9) * step : 1;  // the first tick at or past the end
    auto x_at = [&](double t) { return left + t / end * width; };
    const std::string middle = " text-anchor=\"middle\"";

    std::string body = svg_text(page / 2, 24, title_, middle + " font-size=\"15\"");
    double y = 46, x = left;  // the legend: a swatch and a name per kind, in lines
    for (const Kind& k : kinds_) {
        const double room = 36 + 7.0 * double(k.name.size());
        if (x > left && x + room > page - 10) x = left, y += 18;
        body += "<rect x=\"" + svg_number(x) + "\" y=\"" + svg_number(y - 10) +
                "\" width=\"12\" height=\"12\" fill=\"" + svg_escape(k.color) + "\"/>\n" +
                svg_text(x + 18, y, k.name);
        x += room;
    }
    y += 16;
    for (const Panel& panel : panels_) {
        if (!panel.heading.empty())
            body += svg_text(14, y += 16, panel.heading, " font-weight=\"bold\" font-size=\"13\"");
        const double top = y += 8, bottom = top + row_height * double(panel.rows.size());
        for (double t = 0; t <= end * (1 + 1e-9); t += step)
            body += svg_line(x_at(t), x_at(t), top, bottom + 4, " stroke=\"#e4e4e4\"") +
                    svg_text(x_at(t), bottom + 17, svg_tick_label(t), middle);
        body += svg_line(left, left + width, bottom, bottom, " stroke=\"#333\"");
        for (std::size_t r = 0; r < panel.rows.size(); ++r) {
            const TimelineRow& row = panel.rows[r];
            const double row_y = top + row_height * double(r);
            body += svg_text(left - 8, row_y + 13, row.label, " text-anchor=\"end\"");
            double row_end = 0;
            for (const TimelineBar& bar : row.bars) {
                if (!(bar.end > bar.start)) continue;
                row_end = std::max(row_end, bar.end);
                // Too short to see: half a pixel wide; wide enough: parted by a thin white line.
                const double w = std::max(0.5, x_at(bar.end) - x_at(bar.start));
                body += "<rect class=\"bar\" x=\"" + svg_number(x_at(bar.start)) + "\" y=\"" +
                        svg_number(row_y + 3) + "\" width=\"" + svg_number(w) +
                        "\" height=\"12\" fill=\"" +
                        svg_escape(kinds_[std::size_t(bar.kind)].color) +
                        (w >= 4 ? "\" stroke=\"#fff\" stroke-width=\"0.5" : "") + "\"><title>" +
                        svg_escape(bar.note) + "</title></rect>\n";
            }
            if (!row.after.empty()) body += svg_text(x_at(row_end) + 6, row_y + 13, row.after);
        }
        body += svg_text(left + width / 2, y = bottom + 32, time_label_, middle);
        y += 6;
    }
    for (const std::string& line : captions_) body += svg_text(14, y += 16, line);
    return svg_open(page, y + 14) + body + "</svg>\n";
}

std::string SvgTimeline::write(const std::string& path) const {
    write_file(path, svg(), "--plot-dir");
    return path;
}

}  // namespace kv
