#include "svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "program.h"
#include "svg_parts.h"

namespace kv {

void SvgPlot::add_series(std::string name, std::vector<double> x, std::vector<double> y) {
    if (x.size() != y.size()) throw std::invalid_argument("plot series: x and y differ in length");
    series_.push_back({std::move(name), std::move(x), std::move(y)});
}

void SvgPlot::add_hline(std::string name, double y) {
    hlines_.emplace_back(std::move(name), y);
}

namespace {

const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                         "#9467bd", "#8c564b", "#e377c2"};

// The shared pieces (svg_parts.h), under short names.
auto& num = svg_number;
auto& label = svg_tick_label;
auto& escape = svg_escape;
auto& tick_step = svg_tick_step;

}  // namespace

std::string SvgPlot::svg() const {
    const double W = 720, H = 440, left = 80, right = 190, top = 40, bottom = 60;
    const double pw = W - left - right, ph = H - top - bottom;

    auto tx = [&](double x) { return log2_x_ ? std::log2(x) : x; };
    auto ty = [&](double y) { return log2_y_ ? std::log2(y) : y; };
    double x0 = 1e300, x1 = -1e300, y0 = 1e300, y1 = -1e300;
    for (const Series& s : series_)
        for (std::size_t i = 0; i < s.x.size(); ++i) {
            x0 = std::min(x0, tx(s.x[i]));
            x1 = std::max(x1, tx(s.x[i]));
            y0 = std::min(y0, ty(s.y[i]));
            y1 = std::max(y1, ty(s.y[i]));
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
        ystep = tick_step(y1 - y0);
        y1 = std::ceil(y1 / ystep) * ystep;
    }

    auto px = [&](double x) { return left + (tx(x) - x0) / (x1 - x0) * pw; };
    // On a log axis, `at` is already an exponent (the ticks' loop counts them).
    auto py_at = [&](double at) { return top + ph - (at - y0) / (y1 - y0) * ph; };
    auto py = [&](double y) { return py_at(ty(y)); };
    // Powers of two below 1 read best as fractions: 1/64, not 0.015625.
    auto power_label = [&](double e) {
        const double v = std::pow(2.0, e);
        return v < 1 ? "1/" + label(1 / v) : label(v);
    };

    std::string out = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(W) +
                      "\" height=\"" + num(H) + "\" font-family=\"sans-serif\" font-size=\"12\">\n";
    out += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
    out += "<text x=\"" + num(W / 2) + "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">" +
           escape(title_) + "</text>\n";

    // Grid and ticks.
    for (double y = y0; y <= y1 + ystep / 2; y += ystep) {
        out += "<line x1=\"" + num(left) + "\" x2=\"" + num(left + pw) + "\" y1=\"" +
               num(py_at(y)) + "\" y2=\"" + num(py_at(y)) + "\" stroke=\"#ddd\"/>\n";
        out += "<text x=\"" + num(left - 6) + "\" y=\"" + num(py_at(y) + 4) +
               "\" text-anchor=\"end\">" + (log2_y_ ? power_label(y) : label(y)) + "</text>\n";
    }
    if (log2_x_) {
        // One label per power of two, or per second or third power when
        // the axis spans many, so that labels never overlap.
        const double stride = std::max(1.0, std::ceil((x1 - x0) / 12.0));
        for (double e = std::ceil(x0 / stride) * stride; e <= x1; e += stride) {
            out += "<text x=\"" + num(px(std::pow(2.0, e))) + "\" y=\"" + num(top + ph + 18) +
                   "\" text-anchor=\"middle\">" + power_label(e) + "</text>\n";
        }
    } else {
        const double xstep = tick_step(x1 - x0);
        for (double x = std::ceil(x0 / xstep) * xstep; x <= x1 + xstep / 1e6; x += xstep)
            out += "<text x=\"" + num(px(x)) + "\" y=\"" + num(top + ph + 18) +
                   "\" text-anchor=\"middle\">" + label(x) + "</text>\n";
    }
    out += "<rect x=\"" + num(left) + "\" y=\"" + num(top) + "\" width=\"" + num(pw) +
           "\" height=\"" + num(ph) + "\" fill=\"none\" stroke=\"#333\"/>\n";
    out += "<text x=\"" + num(left + pw / 2) + "\" y=\"" + num(H - 15) +
           "\" text-anchor=\"middle\">" + escape(x_label_) + "</text>\n";
    out += "<text transform=\"translate(18," + num(top + ph / 2) +
           ") rotate(-90)\" text-anchor=\"middle\">" + escape(y_label_) + "</text>\n";

    // Series, horizontal lines and the legend.
    int k = 0;
    auto legend = [&](const std::string& name, const char* color, bool dashed) {
        const double ly = top + 10 + 20 * k;
        out += "<line x1=\"" + num(left + pw + 12) + "\" x2=\"" + num(left + pw + 36) + "\" y1=\"" +
               num(ly) + "\" y2=\"" + num(ly) + "\" stroke=\"" + color + "\" stroke-width=\"2\"" +
               (dashed ? " stroke-dasharray=\"6 4\"" : "") + "/>\n";
        out += "<text x=\"" + num(left + pw + 42) + "\" y=\"" + num(ly + 4) + "\">" + escape(name) +
               "</text>\n";
        ++k;
    };
    for (std::size_t s = 0; s < series_.size(); ++s) {
        const char* color = kColors[s % std::size(kColors)];
        std::string points;
        const Series& ser = series_[s];
        for (std::size_t i = 0; i < ser.x.size(); ++i) {
            if (steps_ && i > 0) points += num(px(ser.x[i])) + "," + num(py(ser.y[i - 1])) + " ";
            points += num(px(ser.x[i])) + "," + num(py(ser.y[i])) + " ";
        }
        out += "<polyline fill=\"none\" stroke=\"" + std::string(color) +
               "\" stroke-width=\"2\" points=\"" + points + "\"/>\n";
        if (ser.x.size() <= 40 && !steps_)
            for (std::size_t i = 0; i < ser.x.size(); ++i)
                out += "<circle cx=\"" + num(px(ser.x[i])) + "\" cy=\"" + num(py(ser.y[i])) +
                       "\" r=\"3\" fill=\"" + color + "\"/>\n";
        legend(ser.name, color, false);
    }
    for (const auto& [name, y] : hlines_) {
        out += "<line x1=\"" + num(left) + "\" x2=\"" + num(left + pw) + "\" y1=\"" + num(py(y)) +
               "\" y2=\"" + num(py(y)) +
               "\" stroke=\"#555\" stroke-width=\"2\" stroke-dasharray=\"6 4\"/>\n";
        legend(name, "#555", true);
    }
    return out + "</svg>\n";
}

std::string SvgPlot::write(const std::string& path) const {
    write_file(path, svg(), "--plot-dir");
    return path;
}

}  // namespace kv
