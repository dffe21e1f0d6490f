#include "svg_plot.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>
#include <vector>

#include "files.h"
#include "svg_parts.h"

namespace kv {

void SvgPlot::add_series(std::string name, std::vector<double> x, std::vector<double> y) {
    if (x.size() != y.size()) throw std::invalid_argument("plot series: x and y differ in length");
    series_.push_back({std::move(name), std::move(x), std::move(y), {}});
}

void SvgPlot::add_cases(std::string name, std::vector<double> x, std::vector<double> y,
                        std::vector<std::string> labels) {
    if (x.size() != y.size() || x.size() != labels.size())
        throw std::invalid_argument("plot cases: x, y and labels differ in length");
    series_.push_back({std::move(name), std::move(x), std::move(y), std::move(labels)});
}

void SvgPlot::add_hline(std::string name, double y) {
    hlines_.emplace_back(std::move(name), y);
}

std::string SvgPlot::svg() const {
    const double W = 720, H = 440, left = 80, top = 40, pw = W - left - 190, ph = H - top - 60;
    // On a log axis a value's place is its exponent.
    auto tx = [&](double x) { return log2_x_ ? std::log2(x) : x; };
    auto ty = [&](double y) { return log2_y_ ? std::log2(y) : y; };
    double x0 = 1e300, x1 = -1e300, y0 = 1e300, y1 = -1e300;
    for (const Series& s : series_)
        for (std::size_t i = 0; i < s.x.size(); ++i) {
            x0 = std::min(x0, tx(s.x[i])), x1 = std::max(x1, tx(s.x[i]));
            y0 = std::min(y0, ty(s.y[i])), y1 = std::max(y1, ty(s.y[i]));
        }
    for (const auto& h : hlines_) y0 = std::min(y0, ty(h.second)), y1 = std::max(y1, ty(h.second));
    if (x0 > x1) x0 = 0, x1 = 1;
    if (x0 == x1) x1 = x0 + 1;
    double ystep = 1;
    if (log2_y_) {  // whole powers of two, at most about ten ticks
        y0 = y0 > y1 ? 0 : std::floor(y0);
        y1 = std::max(y0 + 1, std::ceil(y1));
        ystep = std::max(1.0, std::ceil((y1 - y0) / 10));
    } else {
        y0 = 0;  // every linear quantity the book plots starts from zero
        if (!(y1 > 0)) y1 = 1;
        ystep = svg_tick_step(y1);
        y1 = std::ceil(y1 / ystep) * ystep;
    }
    auto px = [&](double x) { return left + (tx(x) - x0) / (x1 - x0) * pw; };
    auto py_at = [&](double at) { return top + ph - (at - y0) / (y1 - y0) * ph; };  // at: ty(y)
    auto py = [&](double y) { return py_at(ty(y)); };
    auto power_label = [&](double e) {  // powers of two below 1 as fractions: 1/64
        const double v = std::pow(2.0, e);
        return v < 1 ? "1/" + svg_tick_label(1 / v) : svg_tick_label(v);
    };

    const std::string middle = " text-anchor=\"middle\"";
    std::string out = svg_open(W, H) + svg_text(W / 2, 22, title_, middle + " font-size=\"15\"");
    for (double y = y0; y <= y1 + ystep / 2; y += ystep)
        out += svg_line(left, left + pw, py_at(y), py_at(y), " stroke=\"#ddd\"") +
               svg_text(left - 6, py_at(y) + 4, log2_y_ ? power_label(y) : svg_tick_label(y),
                        " text-anchor=\"end\"");
    if (log2_x_) {  // a label per power of two, or per second or third when there are many
        const double stride = std::max(1.0, std::ceil((x1 - x0) / 12.0));
        for (double e = std::ceil(x0 / stride) * stride; e <= x1; e += stride)
            out += svg_text(px(std::pow(2.0, e)), top + ph + 18, power_label(e), middle);
    } else {
        const double xstep = svg_tick_step(x1 - x0);
        for (double x = std::ceil(x0 / xstep) * xstep; x <= x1 + xstep / 1e6; x += xstep)
            out += svg_text(px(x), top + ph + 18, svg_tick_label(x), middle);
    }
    out += "<rect x=\"" + svg_number(left) + "\" y=\"" + svg_number(top) + "\" width=\"" +
           svg_number(pw) + "\" height=\"" + svg_number(ph) +
           "\" fill=\"none\" stroke=\"#333\"/>\n" +
           svg_text(left + pw / 2, H - 15, x_label_, middle) + "<text transform=\"translate(18," +
           svg_number(top + ph / 2) + ") rotate(-90)\" text-anchor=\"middle\">" +
           svg_escape(y_label_) + "</text>\n";

    // The lines, dashed horizontal lines, and a legend entry for each.
    const char* colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                            "#9467bd", "#8c564b", "#e377c2"};
    double legend_y = top + 10;
    auto legend = [&](const std::string& name, const std::string& stroke) {
        out += svg_line(left + pw + 12, left + pw + 36, legend_y, legend_y, stroke) +
               svg_text(left + pw + 42, legend_y + 4, name);
        legend_y += 20;
    };
    std::vector<std::pair<double, double>> named;  // where cases' names went
    for (std::size_t s = 0; s < series_.size(); ++s) {
        const std::string color = colors[s % std::size(colors)];
        const Series& ser = series_[s];
        std::string points;
        for (std::size_t i = 0; i < ser.x.size(); ++i) {
            if (steps_ && i > 0)
                points += svg_number(px(ser.x[i])) + "," + svg_number(py(ser.y[i - 1])) + " ";
            points += svg_number(px(ser.x[i])) + "," + svg_number(py(ser.y[i])) + " ";
        }
        if (ser.labels.empty())
            out += "<polyline fill=\"none\" stroke=\"" + color + "\" stroke-width=\"2\" points=\"" +
                   points + "\"/>\n";
        for (std::size_t i = 0; i < ser.x.size() && ser.x.size() <= 40 && !steps_; ++i)
            out += "<circle cx=\"" + svg_number(px(ser.x[i])) + "\" cy=\"" +
                   svg_number(py(ser.y[i])) + "\" r=\"3\" fill=\"" + color + "\"/>\n";
        // A case's name beside its point (toward the plot's middle), in its
        // series' colour, moved down past names already there (bfloat16 and
        // float16 share their bytes; two series may share a point).
        for (std::size_t i = 0; i < ser.labels.size(); ++i) {
            const double x = px(ser.x[i]);
            double y = py(ser.y[i]) + 14;
            auto taken = [&] {
                for (const auto& [nx, ny] : named)
                    if (std::abs(nx - x) < 60 && std::abs(ny - y) < 13) return true;
                return false;
            };
            while (taken()) y += 14;
            named.emplace_back(x, y);
            const bool right = x > left + pw / 2;
            out += svg_text(
                right ? x - 6 : x + 6, y, ser.labels[i],
                std::string(right ? " text-anchor=\"end\"" : "") + " fill=\"" + color + "\"");
        }
        legend(ser.name, " stroke=\"" + color + "\" stroke-width=\"2\"");
    }
    const std::string dashed = " stroke=\"#555\" stroke-width=\"2\" stroke-dasharray=\"6 4\"";
    for (const auto& [name, y] : hlines_) {
        out += svg_line(left, left + pw, py(y), py(y), dashed);
        legend(name, dashed);
    }
    return out + "</svg>\n";
}

SvgPlot distribution_plot(std::string title, std::string x_label, std::string y_label,
                          const std::vector<std::string>& names,
                          const std::vector<std::vector<double>>& sorted_samples) {
    SvgPlot plot(std::move(title), std::move(x_label), std::move(y_label));
    plot.set_log2_x(true);
    plot.set_steps(true);
    double largest = 1e-9, smallest = 1e300;
    for (const std::vector<double>& sample : sorted_samples)
        for (double v : sample)
            if (v > 0) largest = std::max(largest, v), smallest = std::min(smallest, v);
    const double floor = std::max(smallest, largest / (1 << 20));
    for (std::size_t s = 0; s < names.size() && s < sorted_samples.size(); ++s) {
        const std::vector<double>& sample = sorted_samples[s];
        const std::size_t points = std::min<std::size_t>(sample.size(), 400);
        std::vector<double> x, y;
        for (std::size_t k = 0; k < points; ++k) {
            const std::size_t i = points == 1 ? 0 : k * (sample.size() - 1) / (points - 1);
            x.push_back(std::max(sample[i], floor));
            y.push_back(double(i + 1) / double(sample.size()));
        }
        plot.add_series(names[s], x, y);
    }
    return plot;
}

std::string SvgPlot::write(const std::string& path) const {
    write_file(path, svg(), "--plot-dir");
    return path;
}

}  // namespace kv
