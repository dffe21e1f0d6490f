// The stopwatch for one whole answer: its total time and each step's,
// medians over repeated runs after a warm-up (chapters 01 and 02).
#pragma once

#include <cstdint>
#include <vector>

#include "../core/generation.h"
#include "../core/transformer.h"

namespace kv {

struct AnswerTiming {
    std::vector<int> tokens;           // the answer of the last run (every run gives the same)
    double answer_seconds = 0;         // median time for the whole answer
    std::vector<double> step_seconds;  // (answer_len) median time of each step
    std::uint64_t positions = 0;       // token-positions the model processed for one answer
};

// Warms up with one answer, then times `repeats` more and takes medians.
AnswerTiming time_answer(const Transformer& model, int repeats, const Generator& generate);

}  // namespace kv
