#include "answer_timing.h"

#include <string>
#include <utility>

#include "../core/timing.h"
#include "report.h"  // with_commas

namespace kv {

AnswerTiming time_answer(Transformer& model, int repeats, const Generator& generate) {
    AnswerTiming result;
    std::vector<std::vector<double>> per_step;  // (step, repeat)
    // A long prompt, or a long answer without the cache, takes minutes.
    Progress progress("timing the answer: run");
    const PassesShown passes(model, progress);
    long run = 0;
    const std::vector<double> totals = timed_runs(repeats, [&](bool timed) {
        auto last = Clock::now();
        std::vector<double> steps;
        const std::uint64_t before = model.positions_processed();
        const std::string warm_up = timed ? "" : "(a warm-up) ";
        progress.update(run + 1, repeats + 1, warm_up + "0 tokens");
        result.tokens = generate([&](int, std::span<const float>) {
            steps.push_back(seconds_since(last));
            last = Clock::now();
            if (progress.on_terminal())  // kept, and shown when due
                progress.update(run + 1, repeats + 1,
                                warm_up + std::to_string(steps.size()) + " tokens");
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

PassesShown::PassesShown(Transformer& model, Progress& progress)
    : model_(model), before_(model.on_progress), watching_(progress.on_terminal()) {
    if (!watching_) return;
    model_.on_progress = [&progress](const PassProgress& p) {
        if (p.rows < kLongPass || !progress.due()) return;
        progress.detail("a pass of " + with_commas(std::uint64_t(p.rows)) + " tokens: layer " +
                        std::to_string(p.layer + 1) + "/" + std::to_string(p.layers) +
                        (p.rows_done < p.rows
                             ? " (" + with_commas(std::uint64_t(p.rows_done)) + " attended)"
                             : " done"));
    };
}

PassesShown::~PassesShown() {
    if (watching_) model_.on_progress = std::move(before_);
}

}  // namespace kv
