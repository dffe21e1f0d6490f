// The step table and the step plot of chapters 01 and 02: how long each
// generated token took, against the length of the sequence at that step.
#pragma once

#include <string>
#include <vector>

#include "report.h"
#include "svg_plot.h"

namespace kv {

// One way of decoding, timed step by step.
struct StepTimes {
    std::string column;                  // its columns in the table: "naive", "naive (ms)"
    std::string legend;                  // its line in the plot
    const std::vector<double>& seconds;  // (answer_len) median time of each step
};

// About six rows and the last: each step's sequence length, then every
// method's time as a person reads it, then in ms.
Table step_table(int prompt_len, const std::vector<StepTimes>& methods);

// Time per step (ms) against sequence length, one line per method.
SvgPlot step_plot(const std::string& title, int prompt_len, const std::vector<StepTimes>& methods);

}  // namespace kv
