// A line chart written as an SVG file: enough for the book's pictures
// (time per step, cache bytes, tokens per second, waiting-time CDFs), with
// no plotting library.
#pragma once

#include <string>
#include <vector>

namespace kv {

class SvgPlot {
  public:
    SvgPlot(std::string title, std::string x_label, std::string y_label)
        : title_(std::move(title)), x_label_(std::move(x_label)), y_label_(std::move(y_label)) {}

    // A named line through the points (x[i], y[i]).
    void add_series(std::string name, std::vector<double> x, std::vector<double> y);
    // A dashed horizontal line, e.g. a memory budget.
    void add_hline(std::string name, double y);
    // Base-2 logarithmic x axis (batch sizes 1, 2, 4, ...). Requires x > 0.
    void set_log2_x(bool on) { log2_x_ = on; }
    // Base-2 logarithmic y axis (a roofline's rates). Requires y > 0.
    void set_log2_y(bool on) { log2_y_ = on; }
    // Step-shaped lines, for distributions (CDFs).
    void set_steps(bool on) { steps_ = on; }

    std::string svg() const;
    // Writes the file and returns its path.
    std::string write(const std::string& path) const;

  private:
    struct Series {
        std::string name;
        std::vector<double> x, y;
    };
    std::string title_, x_label_, y_label_;
    std::vector<Series> series_;
    std::vector<std::pair<std::string, double>> hlines_;
    bool log2_x_ = false;
    bool log2_y_ = false;
    bool steps_ = false;
};

}  // namespace kv
