// The stopwatch for one whole answer: its total time and each step's, the
// fastest of repeated runs after a warm-up (chapters 01 and 02), as make
// bench keeps a step's fastest: a quiet machine's cost, which other work
// only adds to. In the
// thread's CPU time with the thread kept on its core, as every step in the
// book is timed (common/core/timing.h).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "../core/generation.h"
#include "../core/timing.h"
#include "../core/transformer.h"
#include "program.h"  // Progress

namespace kv {

struct AnswerTiming {
    std::vector<int> tokens;           // the answer of the last run (every run gives the same)
    double answer_seconds = 0;         // the fastest timed answer, thread CPU time
    std::vector<double> step_seconds;  // (answer_len) each step's fastest, from the end of the
                                       // step before (its token chosen) to its logits
    std::uint64_t positions = 0;       // token-positions the model processed for one answer
};

// Warms up with one answer, then times `repeats` more and keeps the
// fastest; on a terminal, stderr shows the run and the tokens so far.
// `after_timed` (if given) runs after each timed answer, untimed: another
// measurement taking turns with the answers, so that both see the same load.
inline AnswerTiming time_answer(Transformer& model, int repeats, const Generator& generate,
                                const std::function<void()>& after_timed = {}) {
    AnswerTiming result;
    std::vector<std::vector<double>> per_step;  // (step, repeat)
    // A long prompt, or a long answer without the cache, takes minutes.
    Progress progress("timing the answer: run");
    long run = 0;
    const std::vector<double> totals = timed_runs(
        repeats,
        [&](bool timed) {
            double last = thread_cpu_seconds();
            std::vector<double> steps;
            const std::uint64_t before = model.positions_processed();
            const std::string warm_up = timed ? "" : "(a warm-up) ";
            progress.update(run + 1, repeats + 1, warm_up + "0 tokens");
            result.tokens = generate([&](int, std::span<const float>) {
                steps.push_back(thread_cpu_seconds() - last);
                last = thread_cpu_seconds();
                progress.update(run + 1, repeats + 1,
                                warm_up + std::to_string(steps.size()) + " tokens");
            });
            ++run;
            result.positions = model.positions_processed() - before;
            if (!timed) return;
            per_step.resize(steps.size());
            for (std::size_t i = 0; i < steps.size(); ++i) per_step[i].push_back(steps[i]);
        },
        [&] {
            if (after_timed) after_timed();
        });
    result.answer_seconds = *std::min_element(totals.begin(), totals.end());
    for (const auto& samples : per_step)
        result.step_seconds.push_back(*std::min_element(samples.begin(), samples.end()));
    return result;
}

}  // namespace kv
