// The stopwatch for one whole answer: its total time and each step's,
// medians over repeated runs after a warm-up (chapters 01 and 02); and the
// sign of life a long forward pass gives on a terminal.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "../core/generation.h"
#include "../core/transformer.h"
#include "program.h"  // Progress

namespace kv {

struct AnswerTiming {
    std::vector<int> tokens;           // the answer of the last run (every run gives the same)
    double answer_seconds = 0;         // median time for the whole answer
    std::vector<double> step_seconds;  // (answer_len) median time of each step
    std::uint64_t positions = 0;       // token-positions the model processed for one answer
};

// Warms up with one answer, then times `repeats` more and takes medians;
// on a terminal, stderr shows the run, the tokens so far and long passes.
AnswerTiming time_answer(Transformer& model, int repeats, const Generator& generate);

// While it lives, each forward pass of `model` over many tokens shows on a
// terminal how far it has got, after the line's own note:
//     timing the answer: run 1/6 (a warm-up) 0 tokens, a pass of 60,000 tokens: layer 3/6
class PassesShown {
  public:
    PassesShown(Transformer& model, Progress& progress);
    ~PassesShown();  // the model's observer is again the one it had
    PassesShown(const PassesShown&) = delete;
    PassesShown& operator=(const PassesShown&) = delete;

    static constexpr int kLongPass = Transformer::kRowsPerSign;  // fewer tokens: not shown

  private:
    Transformer& model_;
    std::function<void(const PassProgress&)> before_;
    bool watching_;
};

}  // namespace kv
