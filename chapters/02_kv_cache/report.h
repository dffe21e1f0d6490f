// What chapter 02 prints: both methods' step table, the token-positions
// each processed, whether the answers agree to the last bit, the step plot
// and the headline; or all of it as one JSON object.
#pragma once

#include <iostream>
#include <string>
#include <vector>

#include "../../common/kit/answer_timing.h"
#include "../../common/kit/output.h"
#include "../../common/kit/report.h"
#include "../../common/kit/step_report.h"
#include "experiment.h"

namespace kv::ch02 {

// Writes the plot, then the JSON or the text. Returns the exit status: 1
// if the two methods disagree on a token.
inline int report(const Results& r, const OutputOptions& out) {
    const int p = static_cast<int>(r.loaded.prompt.size()), n = r.answer_len;
    const std::vector<StepTimes> methods = {{"naive", "naive (no cache)", r.naive.step_seconds},
                                            {"cached", "KV cache", r.cached.step_seconds}};
    const Table steps = step_table(p, methods);
    const std::string plot_path =
        step_plot("Time per step: recomputing everything vs the KV cache", p, methods)
            .write(out.plot_dir + "/02_step_time.svg");
    const bool same_tokens = r.naive.tokens == r.cached.tokens;
    const double max_diff = r.max_logit_difference, prefill = r.cached.step_seconds[0];
    const bool has_text = r.loaded.tokenizer.has_value();
    const std::string naive_text = r.loaded.answer_text(r.naive.tokens);
    const std::string cached_text = r.loaded.answer_text(r.cached.tokens);
    const std::string model = r.loaded.model.config().describe();
    const int status = same_tokens ? 0 : 1;

    Json json = Json()
                    .add("model", model)
                    .add("prompt_len", p)
                    .add("answer_len", n)
                    .add("repeats", r.repeats)
                    .add("naive_answer_ms", r.naive.answer_seconds * 1e3)
                    .add("cached_answer_ms", r.cached.answer_seconds * 1e3)
                    .add("speedup", r.speedup())
                    .add("prefill_ms", prefill * 1e3)
                    .add("decode_step_ms", r.decode_step_seconds() * 1e3)
                    .add("one_row_step_ms", r.one_row.fastest() * 1e3)
                    .add("one_row_step_context", r.one_row_context)
                    .add("one_row_step_samples", int(r.one_row.seconds.size()))
                    .add("argmax_ms", r.argmax.fastest() * 1e3)
                    .add("naive_ms_per_row", r.naive_seconds_per_row() * 1e3)
                    .add("predicted_speedup", r.predicted_speedup())
                    .add("naive_positions", r.naive.positions)
                    .add("cached_positions", r.cached.positions)
                    .add("same_tokens", same_tokens)
                    .add("max_logit_difference", max_diff)
                    .add("logits_fnv1a64", r.logits_digest)
                    .add("tokens", r.cached.tokens)
                    .add("steps", steps)
                    .add("plot", plot_path);
    if (r.from_checkpoint) json.add("weights", r.loaded.weights);
    if (has_text)
        json.add("prompt_text", r.loaded.prompt_text())
            .add("naive_text", naive_text)
            .add("cached_text", cached_text)
            .add("same_text", naive_text == cached_text);
    if (emit(out, json)) return status;

    std::cout << "Chapter 02: the KV cache\n\nmodel: " << model << "\n";
    if (r.from_checkpoint) std::cout << "weights: " << visible(r.loaded.weights) << "\n";
    std::cout << r.saved << "prompt: " << p << " tokens, answer: " << n << " tokens, median of "
              << r.repeats
              << " runs per method after a warm-up, in thread CPU time, the thread kept on its "
                 "core\n\n";
    steps.print(std::cout);
    const int vocab = r.loaded.model.config().vocab_size;
    std::cout << "\nprefill (" << p << " tokens): " << format_duration(prefill)
              << ", then a decode step takes " << format_duration(r.decode_step_seconds())
              << " within the answer (median)\n"
              << "one decode step alone: " << format_duration(r.one_row.fastest())
              << " (the answer's last, at " << r.one_row_context
              << " cached positions; the fastest of " << r.one_row.seconds.size()
              << " runs, as make bench times its steps);\n"
              << "  beside it the answer chooses each token: argmax over " << with_commas(vocab)
              << " logits takes " << format_duration(r.argmax.fastest()) << "\n"
              << "predicted from this run's rates: a row of a naive pass takes "
              << format_duration(r.naive_seconds_per_row()) << ", the one-row step "
              << fixed(r.one_row_step_in_rows(), 2) << " rows' worth, so "
              << with_commas(r.naive.positions) << " rows / (" << p << " + " << n - 1 << " x "
              << fixed(r.one_row_step_in_rows(), 2) << ") = " << fixed(r.predicted_speedup(), 1)
              << " x\ntoken-positions processed: naive " << with_commas(r.naive.positions)
              << " (n*p + n*(n-1)/2 = " << with_commas(naive_positions(p, n)) << "), cached "
              << with_commas(r.cached.positions)
              << " (p + n - 1 = " << with_commas(cached_positions(p, n)) << ")\n"
              << "same tokens: " << (same_tokens ? "yes" : "NO")
              << "; largest logit difference over all " << n << " steps: " << max_diff
              << (max_diff == 0 ? " (identical to the last bit)" : "") << "\n"
              << "plot: " << visible(plot_path) << "\n\n";
    if (has_text)
        std::cout << "prompt text: " << r.loaded.prompt_text()
                  << "\nanswer without the cache: " << naive_text
                  << "\nanswer with the cache:    " << cached_text
                  << "\nsame text: " << (naive_text == cached_text ? "yes" : "NO") << "\n\n";
    std::cout << n << "-token answer: " << format_duration(r.naive.answer_seconds)
              << " without the cache -> " << format_duration(r.cached.answer_seconds)
              << " with it (" << fixed(r.speedup(), 1) << " x faster; "
              << fixed(r.predicted_speedup(), 1) << " x predicted)\n";
    return status;
}

}  // namespace kv::ch02
