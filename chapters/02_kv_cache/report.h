// What chapter 02 prints: both methods' step table and plot, the one-row
// step beside the speed-up it predicts, the token-positions each method
// processed, whether the answers agree to the last bit, and the headline.
#pragma once

#include <string>
#include <vector>

#include "../../common/kit/output.h"
#include "../../common/kit/step_report.h"
#include "experiment.h"

namespace kv::ch02 {

// Returns the exit status: 1 if the two methods disagree on a token.
inline int report(const Results& r, const OutputOptions& out) {
    const int p = int(r.loaded.prompt.size()), n = r.answer_len;
    const std::vector<StepTimes> methods = {{"naive", "naive (no cache)", r.naive.step_seconds},
                                            {"cached", "KV cache", r.cached.step_seconds}};
    const bool same_tokens = r.naive.tokens == r.cached.tokens;
    const std::string rows = fixed(r.one_row_step_in_rows(), 2);
    Findings f("Chapter 02: the KV cache");
    f.line("model", "model", r.loaded.model.config().describe());
    if (r.from_checkpoint) f.line("weights", "weights", outside_text(r.loaded.weights));
    if (!r.saved.empty()) f.text(r.saved.substr(0, r.saved.find_last_not_of('\n') + 1));
    f.line("prompt_len", "prompt (tokens)", p)
        .line("answer_len", "answer (tokens)", n)
        .line("repeats",
              "timed answers per method after a warm-up (thread CPU time, the thread kept on "
              "its core; each time the fastest, as make bench keeps a step's)",
              r.repeats)
        .text("")
        .table("steps", "", step_table(p, methods))
        .text("")
        .line("prefill_s", "prefill (" + std::to_string(p) + " tokens)",
              duration_cell(r.prefill_seconds()))
        .line("decode_step_s", "a decode step within the answer (the median step)",
              duration_cell(r.decode_step_seconds()))
        .line("one_row_step_s",
              "the answer's last decode step alone, as make bench times its 'decode, batch 1'",
              duration_cell(r.one_row.fastest()))
        .line("one_row_step_context", "  at cached positions", r.one_row_context)
        .line("one_row_step_samples", "  the fastest of timed runs", int(r.one_row.seconds.size()))
        .line("one_row_step_median_s", "  their median", duration_cell(r.one_row.median()))
        .line("argmax_s",
              "beside each step the answer chooses its token: argmax over " +
                  with_commas(r.loaded.model.config().vocab_size) + " logits",
              duration_cell(r.argmax.fastest()))
        .line("naive_s_per_row", "a row of a naive pass (the naive answer over its rows)",
              duration_cell(r.naive_seconds_per_row()))
        .line("one_row_step_in_rows", "the one-row step, in rows of a naive pass",
              Cell(rows + " x", r.one_row_step_in_rows()))
        .line("predicted_speedup",
              "predicted speed-up: " + with_commas(r.naive.positions) + " rows / (" +
                  std::to_string(p) + " + " + std::to_string(n - 1) + " x " + rows + ")",
              times_cell(r.predicted_speedup()))
        .text("")
        .line("naive_positions", "token-positions processed, naive", r.naive.positions)
        .line("naive_positions_predicted", "  n*p + n*(n-1)/2", naive_positions(p, n))
        .line("cached_positions", "token-positions processed, cached", r.cached.positions)
        .line("cached_positions_predicted", "  p + n - 1", cached_positions(p, n))
        .line("same_tokens", "same tokens", yes_no(same_tokens))
        .line("max_logit_difference",
              "largest logit difference over all " + std::to_string(n) + " steps",
              difference_cell(r.max_logit_difference))
        .data("logits_fnv1a64", Cell(r.logits_digest))
        .data("tokens", r.cached.tokens)
        .line("plot", "plot",
              outside_text(
                  step_plot("Time per step: recomputing everything vs the KV cache", p, methods)
                      .write(out.plot_dir + "/02_step_time.svg")));
    if (r.loaded.tokenizer) {
        const std::string naive = r.loaded.answer_text(r.naive.tokens),
                          cached = r.loaded.answer_text(r.cached.tokens);
        f.line("prompt_text", "prompt text", r.loaded.prompt_text())
            .line("naive_text", "answer without the cache", naive)
            .line("cached_text", "answer with the cache   ", cached)
            .line("same_text", "same text", yes_no(naive == cached));
    }
    f.data("naive_answer_ms", Cell(r.naive_answer_seconds() * 1e3, 3))
        .data("cached_answer_ms", Cell(r.cached_answer_seconds() * 1e3, 3))
        .headline(std::to_string(n) +
                  "-token answer: " + format_duration(r.naive_answer_seconds()) +
                  " without the cache -> " + format_duration(r.cached_answer_seconds()) +
                  " with it (" + fixed(r.speedup(), 1) + " x faster; " +
                  fixed(r.predicted_speedup(), 1) + " x predicted)");
    emit(out, f);
    return same_tokens ? 0 : 1;
}

}  // namespace kv::ch02
