// What chapters that generate text share: a fixed prompt, the hook that sees
// each step's logits, and the stopwatch for one whole answer.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "transformer.h"

namespace kv {

// Called after each generated token's logits are computed: step 0 is the
// first answer token. Tests compare logits here; programs time steps here.
using StepCallback = std::function<void(int step, std::span<const float> logits)>;

// A generator: produces one answer, calling on_step after every token.
using Generator = std::function<std::vector<int>(const StepCallback& on_step)>;

// Runs `generate` once, keeping every step's logits (step, vocab); the
// answer goes to `tokens`.
std::vector<std::vector<float>> logits_per_step(const Generator& generate,
                                                std::vector<int>& tokens);

// The largest |a[i] - b[i]| over two equal-length lists of logits, and over
// every step of two runs: 0 when they agree to the last bit.
double max_abs_difference(std::span<const float> a, std::span<const float> b);
double max_abs_difference(const std::vector<std::vector<float>>& a,
                          const std::vector<std::vector<float>>& b);

// The prompt every chapter uses: `length` tokens drawn from `seed`, so the
// same flags give the same prompt everywhere.
std::vector<int> fixed_prompt(int length, int vocab_size, std::uint64_t seed);

struct AnswerTiming {
    std::vector<int> tokens;           // the answer of the last run (every run gives the same)
    double answer_seconds = 0;         // median time for the whole answer
    std::vector<double> step_seconds;  // (answer_len) median time of each step
    std::uint64_t positions = 0;       // token-positions the model processed for one answer
};

// Warms up with one answer, then times `repeats` more and takes medians.
AnswerTiming time_answer(const Transformer& model, int repeats, const Generator& generate);

}  // namespace kv
