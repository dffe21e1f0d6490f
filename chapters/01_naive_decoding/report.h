// What chapter 01 prints: the step table, the token-positions against the
// formula, the step plot and the headline; or all of it as one JSON object.
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
    const int prompt_len = r.prompt_len();
    const std::vector<StepTimes> naive = {{"time", "naive step", r.naive.step_seconds}};
    const Table steps = step_table(prompt_len, naive);
    const std::string plot_path =
        step_plot("Naive decoding: every step recomputes the whole sequence", prompt_len, naive)
            .write(out.plot_dir + "/01_naive_step_time.svg");
    const bool has_text = r.loaded.tokenizer.has_value();
    const std::string prompt_text = r.loaded.prompt_text();
    const std::string answer_text = r.loaded.answer_text(r.naive.tokens);
    const std::string model = config.describe();
    const std::uint64_t parameters = config.parameter_count();

    Json json = Json()
                    .add("model", model)
                    .add("parameters", parameters)
                    .add("prompt_len", prompt_len)
                    .add("answer_len", r.answer_len)
                    .add("repeats", r.repeats)
                    .add("naive_answer_ms", r.naive.answer_seconds * 1e3)
                    .add("positions_processed", r.naive.positions)
                    .add("positions_predicted", r.predicted)
                    .add("tokens", r.naive.tokens)
                    .add("steps", steps)
                    .add("plot", plot_path);
    if (r.from_checkpoint) json.add("weights", r.loaded.weights);
    if (has_text) json.add("prompt_text", prompt_text).add("answer_text", answer_text);
    if (emit(out, json)) return 0;

    std::cout << "Chapter 01: naive decoding\n\n"
              << "model: " << model << "\n";
    if (r.from_checkpoint) std::cout << "weights: " << visible(r.loaded.weights) << "\n";
    std::cout << "parameters: " << with_commas(parameters) << " ("
              << format_bytes(config.weight_bytes()) << " of float32 weights)\n"
              << "prompt: " << prompt_len << " tokens, answer: " << r.answer_len
              << " tokens, median of " << r.repeats << " runs after a warm-up\n\n"
              << "Each step runs the whole sequence through the model again:\n";
    steps.print(std::cout);
    std::cout << "\ntoken-positions processed: " << with_commas(r.naive.positions) << " for "
              << r.answer_len << " new tokens\n"
              << "  predicted: n*p + n*(n-1)/2 = " << r.answer_len << "*" << prompt_len << " + "
              << r.answer_len << "*" << r.answer_len - 1 << "/2 = " << with_commas(r.predicted)
              << (r.predicted == r.naive.positions ? " (matches)" : " (DOES NOT MATCH)") << "\n"
              << "plot: " << visible(plot_path) << "\n\n";
    if (has_text)
        std::cout << "prompt text: " << prompt_text << "\n"
                  << "answer text: " << answer_text << "\n\n";
    std::cout << r.answer_len
              << "-token answer without the cache: " << format_duration(r.naive.answer_seconds)
              << "\n";
    return 0;
}

}  // namespace kv::ch01
