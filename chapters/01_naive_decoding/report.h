// What chapter 01 prints: the step table, the token-positions against the
// formula (naive_positions), the step plot and the headline; or all of it
// as one JSON object.
#pragma once

#include <cstdint>
#include <iostream>
#include <string>

#include "../../common/kit/output.h"
#include "../../common/kit/report.h"
#include "../../common/kit/step_report.h"
#include "experiment.h"

namespace kv::ch01 {

// Writes the plot, then the JSON or the text. Returns the exit status.
inline int report(const Results& r, const OutputOptions& out) {
    const Config& config = r.loaded.model.config();
    const int p = static_cast<int>(r.loaded.prompt.size()), n = r.answer_len;
    const std::vector<StepTimes> naive = {{"time", "naive step", r.naive.step_seconds}};
    const Table steps = step_table(p, naive);
    const std::string plot_path =
        step_plot("Naive decoding: every step recomputes the whole sequence", p, naive)
            .write(out.plot_dir + "/01_naive_step_time.svg");
    const std::uint64_t predicted = naive_positions(p, n);
    const bool has_text = r.loaded.tokenizer.has_value();

    Json json = Json()
                    .add("model", config.describe())
                    .add("parameters", config.parameter_count())
                    .add("prompt_len", p)
                    .add("answer_len", n)
                    .add("repeats", r.repeats)
                    .add("naive_answer_ms", r.naive.answer_seconds * 1e3)
                    .add("positions_processed", r.naive.positions)
                    .add("positions_predicted", predicted)
                    .add("tokens", r.naive.tokens)
                    .add("steps", steps)
                    .add("plot", plot_path);
    if (r.from_checkpoint) json.add("weights", r.loaded.weights);
    if (has_text)
        json.add("prompt_text", r.loaded.prompt_text())
            .add("answer_text", r.loaded.answer_text(r.naive.tokens));
    if (emit(out, json)) return 0;

    std::cout << "Chapter 01: naive decoding\n\nmodel: " << config.describe() << "\n";
    if (r.from_checkpoint) std::cout << "weights: " << visible(r.loaded.weights) << "\n";
    std::cout << "parameters: " << with_commas(config.parameter_count()) << " ("
              << format_bytes(config.weight_bytes()) << " of float32 weights)\n"
              << "prompt: " << p << " tokens, answer: " << n << " tokens, median of " << r.repeats
              << " runs after a warm-up\n\n"
              << "Each step runs the whole sequence through the model again:\n";
    steps.print(std::cout);
    std::cout << "\ntoken-positions processed: " << with_commas(r.naive.positions) << " for " << n
              << " new tokens\n  predicted: n*p + n*(n-1)/2 = " << n << "*" << p << " + " << n
              << "*" << n - 1 << "/2 = " << with_commas(predicted)
              << (predicted == r.naive.positions ? " (matches)" : " (DOES NOT MATCH)") << "\n"
              << "plot: " << visible(plot_path) << "\n\n";
    if (has_text)
        std::cout << "prompt text: " << r.loaded.prompt_text()
                  << "\nanswer text: " << r.loaded.answer_text(r.naive.tokens) << "\n\n";
    std::cout << n << "-token answer without the cache: " << format_duration(r.naive.answer_seconds)
              << "\n";
    return 0;
}

}  // namespace kv::ch01
