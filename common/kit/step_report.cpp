#include "step_report.h"

#include <algorithm>

namespace kv {

Table step_table(int prompt_len, const std::vector<StepTimes>& methods) {
    std::vector<std::string> columns = {"step", "sequence length"};
    for (const StepTimes& m : methods) columns.push_back(m.column);
    for (const StepTimes& m : methods) columns.push_back(m.column + " (ms)");
    Table table(columns);
    const int steps = static_cast<int>(methods.front().seconds.size());
    const int stride = std::max(1, steps / 6);
    for (int s = 0; s < steps; ++s) {
        if (s % stride != 0 && s != steps - 1) continue;
        std::vector<Cell> row = {s, prompt_len + s};
        for (const StepTimes& m : methods) row.push_back(format_duration(m.seconds[s]));
        for (const StepTimes& m : methods) row.push_back(Cell(m.seconds[s] * 1e3, 3));
        table.add_row(row);
    }
    return table;
}

SvgPlot step_plot(const std::string& title, int prompt_len, const std::vector<StepTimes>& methods) {
    SvgPlot plot(title, "sequence length (tokens)", "time per step (ms)");
    for (const StepTimes& m : methods) {
        std::vector<double> xs, ms;
        for (std::size_t s = 0; s < m.seconds.size(); ++s) {
            xs.push_back(prompt_len + double(s));
            ms.push_back(m.seconds[s] * 1e3);
        }
        plot.add_series(m.legend, xs, ms);
    }
    return plot;
}

}  // namespace kv
