#include "generation.h"

#include "rng.h"
#include "timing.h"

namespace kv {

std::vector<int> fixed_prompt(int length, int vocab_size, std::uint64_t seed) {
    Rng rng(seed ^ 0x5EED0F9A0A7ull);  // a stream apart from the weights' stream
    std::vector<int> prompt(length);
    for (int& token : prompt) token = static_cast<int>(rng.below(std::uint64_t(vocab_size)));
    return prompt;
}

AnswerTiming time_answer(const Transformer& model, int repeats, const Generator& generate) {
    AnswerTiming result;
    std::vector<std::vector<double>> per_step;  // (step, repeat)
    std::vector<double> totals;
    for (int run = 0; run <= repeats; ++run) {  // run 0 is the warm-up
        const auto start = Clock::now();
        auto last = start;
        std::vector<double> steps;
        const std::uint64_t before = model.positions_processed();
        result.tokens = generate([&](int, std::span<const float>) {
            const auto now = Clock::now();
            steps.push_back(std::chrono::duration<double>(now - last).count());
            last = now;
        });
        const double total = seconds_since(start);
        result.positions = model.positions_processed() - before;
        if (run == 0) continue;
        totals.push_back(total);
        per_step.resize(steps.size());
        for (std::size_t i = 0; i < steps.size(); ++i) per_step[i].push_back(steps[i]);
    }
    result.answer_seconds = median(totals);
    for (const auto& samples : per_step) result.step_seconds.push_back(median(samples));
    return result;
}

}  // namespace kv
