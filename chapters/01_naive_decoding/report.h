// What chapter 01 prints: the step table and plot, the token-positions
// against the formula (naive_positions) and the headline.
#pragma once

#include <cstdint>

#include "../../common/kit/output.h"
#include "../../common/kit/step_report.h"
#include "experiment.h"

namespace kv::ch01 {

inline int report(const Results& r, const OutputOptions& out) {
    const Config& config = r.loaded.model.config();
    const int p = int(r.loaded.prompt.size()), n = r.answer_len;
    const std::vector<StepTimes> naive = {{"time", "naive step", r.naive.step_seconds}};
    const std::uint64_t predicted = naive_positions(p, n), weights = config.parameter_count();
    Findings f("Chapter 01: naive decoding");
    f.line("model", "model", config.describe());
    if (r.from_checkpoint) f.line("weights", "weights", outside_text(r.loaded.weights));
    f.line("parameters", "parameters",
           Cell(with_commas(weights) + " (" + format_bytes(config.weight_bytes()) +
                    " of float32 weights)",
                double(weights)))
        .line("prompt_len", "prompt (tokens)", p)
        .line("answer_len", "answer (tokens)", n)
        .line("repeats", "timed answers after a warm-up (the fastest kept, thread CPU time)",
              r.repeats)
        .text("")
        .table("steps",
               "Each step runs the whole sequence through the model again:", step_table(p, naive))
        .text("")
        .line("positions_processed", "token-positions processed", r.naive.positions)
        .line("positions_predicted", "predicted: n*p + n*(n-1)/2",
              Cell(with_commas(predicted) +
                       (predicted == r.naive.positions ? " (matches)" : " (DOES NOT MATCH)"),
                   double(predicted)))
        .data("tokens", r.naive.tokens)
        .line("plot", "plot",
              outside_text(
                  step_plot("Naive decoding: every step recomputes the whole sequence", p, naive)
                      .write(out.plot_dir + "/01_naive_step_time.svg")));
    if (r.loaded.tokenizer)
        f.line("prompt_text", "prompt text", r.loaded.prompt_text())
            .line("answer_text", "answer text", r.loaded.answer_text(r.naive.tokens));
    f.data("naive_answer_ms", Cell(r.naive.answer_seconds * 1e3, 3))
        .headline(std::to_string(n) +
                  "-token answer without the cache: " + format_duration(r.naive.answer_seconds));
    emit(out, f);
    return 0;
}

}  // namespace kv::ch01
