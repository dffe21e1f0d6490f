// What chapters that generate text share: a fixed prompt, and the hook that
// sees each step's logits.
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

// Every step's logits (step, vocab) of one run; the answer goes to `tokens`.
std::vector<std::vector<float>> logits_per_step(const Generator& generate,
                                                std::vector<int>& tokens);

// The largest |a[i] - b[i]| over two lists of logits, or every step of two
// runs: 0 when they agree to the last bit. A NaN on either side (or inf
// against inf) makes it NaN, never 0: "identical" is never said falsely.
double max_abs_difference(std::span<const float> a, std::span<const float> b);
double max_abs_difference(const std::vector<std::vector<float>>& a,
                          const std::vector<std::vector<float>>& b);

// The larger of two differences, NaN if either is (std::max would drop it).
double larger_difference(double a, double b);

// The prompt every chapter uses: `length` tokens drawn from `seed`, so the
// same flags give the same prompt everywhere.
std::vector<int> fixed_prompt(int length, int vocab_size, std::uint64_t seed);

}  // namespace kv
