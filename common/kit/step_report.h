// The step table and the step plot of chapters 01 and 02: how long each
// generated token took, against the length of the sequence at that step.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "report.h"
#include "svg_plot.h"

namespace kv {

// One way of decoding, timed step by step.
struct StepTimes {
    std::string column;                  // its columns in the table: "naive", "naive (ms)"
    std::string legend;                  // its line in the plot
    const std::vector<double>& seconds;  // (answer_len) the time of each step
};

// About six rows and the last: each step's sequence length, then every
// method's time as a person reads it, then in ms.
inline Table step_table(int prompt_len, const std::vector<StepTimes>& methods) {
    std::vector<std::string> columns = {"step", "sequence length"};
    for (const StepTimes& m : methods) columns.push_back(m.column);
    for (const StepTimes& m : methods) columns.push_back(m.column + " (ms)");
    Table table(columns);
    const int steps = int(methods.front().seconds.size());
    for (int s = 0; s < steps; ++s) {
        if (s % std::max(1, steps / 6) != 0 && s != steps - 1) continue;
        std::vector<Cell> row = {s, prompt_len + s};
        for (const StepTimes& m : methods) row.push_back(format_duration(m.seconds[s]));
        for (const StepTimes& m : methods) row.push_back(Cell(m.seconds[s] * 1e3, 3));
        table.add_row(row);
    }
    return table;
}

// Time per step (ms) against sequence length, one line per method.
inline SvgPlot step_plot(const std::string& title, int prompt_len,
                         const std::vector<StepTimes>& methods) {
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
