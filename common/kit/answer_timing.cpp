#include "answer_timing.h"

#include "program.h"  // Progress
#include "timing.h"

namespace kv {

AnswerTiming time_answer(const Transformer& model, int repeats, const Generator& generate) {
    AnswerTiming result;
    std::vector<std::vector<double>> per_step;  // (step, repeat)
    // A long prompt's prefill, or a long answer without the cache, takes
    // minutes: the run and the tokens so far on stderr, on a terminal only.
    Progress progress("timing the answer: run");
    long run = 0;
    const std::vector<double> totals = timed_runs(repeats, [&](bool timed) {
        auto last = Clock::now();
        std::vector<double> steps;
        const std::uint64_t before = model.positions_processed();
        progress.update(run + 1, repeats + 1, timed ? "" : "(a warm-up)");
        result.tokens = generate([&](int, std::span<const float>) {
            steps.push_back(seconds_since(last));
            last = Clock::now();
            progress.update(
                run + 1, repeats + 1,
                (timed ? "" : "(a warm-up) ") + std::to_string(steps.size()) + " tokens");
        });
        ++run;
        result.positions = model.positions_processed() - before;
        if (!timed) return;
        per_step.resize(steps.size());
        for (std::size_t i = 0; i < steps.size(); ++i) per_step[i].push_back(steps[i]);
    });
    result.answer_seconds = median(totals);
    for (const auto& samples : per_step) result.step_seconds.push_back(median(samples));
    return result;
}

}  // namespace kv
