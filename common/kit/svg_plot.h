// A line chart written as an SVG file: enough for the book's pictures
// (time per step, cache bytes, tokens per second, waiting-time CDFs), with
// no plotting library.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace kv {

class SvgPlot {
  public:
    SvgPlot(std::string title, std::string x_label, std::string y_label)
        : title_(std::move(title)), x_label_(std::move(x_label)), y_label_(std::move(y_label)) {}

    // A named line through the points (x[i], y[i]).
    void add_series(std::string name, std::vector<double> x, std::vector<double> y);
    // Cases, not a series: each point (x[i], y[i]) marked and named
    // labels[i] (a number format, a policy), and no line between them.
    void add_cases(std::string name, std::vector<double> x, std::vector<double> y,
                   std::vector<std::string> labels);
    void add_hline(std::string name, double y);  // dashed, e.g. a memory budget
    void set_log2_x(bool on) { log2_x_ = on; }   // batch sizes 1, 2, 4, ...; x > 0
    void set_log2_y(bool on) { log2_y_ = on; }   // a roofline's rates; y > 0
    void set_steps(bool on) { steps_ = on; }     // step-shaped lines, for distributions

    std::string svg() const;
    std::string write(const std::string& path) const;  // writes the file, returns its path

  private:
    struct Series {
        std::string name;
        std::vector<double> x, y;
        std::vector<std::string> labels;  // cases: one name a point, no line
    };
    std::string title_, x_label_, y_label_;
    std::vector<Series> series_;
    std::vector<std::pair<std::string, double>> hlines_;
    bool log2_x_ = false, log2_y_ = false, steps_ = false;
};

// Distributions as step lines, one per sample (each sorted, ascending): the
// share of the sample at or below each value, at most 400 points a line, on
// a log2 x axis (the samples may differ forty-fold) that starts at the
// smallest value but never below a millionth of the largest.
SvgPlot distribution_plot(std::string title, std::string x_label, std::string y_label,
                          const std::vector<std::string>& names,
                          const std::vector<std::vector<double>>& sorted_samples);

}  // namespace kv
