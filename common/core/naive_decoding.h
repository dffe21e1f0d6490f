// Chapter 01: naive decoding.
//
// To choose each new token, run the whole sequence (prompt plus every token
// generated so far) through the model from scratch, then throw all of that
// work away. This is wasteful on purpose: the keys and values of the first
// tokens come out the same every time, yet they are computed again at every
// step. Step t costs as much as a pass over t tokens, so an answer of n
// tokens after a p-token prompt costs n*p + n*(n-1)/2 token-positions.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "generation.h"
#include "kv_cache.h"
#include "transformer.h"

namespace kv {

// One naive step: a fresh cache, the whole sequence through the model, and
// the logits after its last token. The cache dies when the step ends.
inline std::span<const float> naive_step(Transformer& model, std::span<const int> sequence) {
    KVCache scratch(model.config(), static_cast<int>(sequence.size()));
    return model.forward(sequence, scratch);
}

// Greedy generation of answer_len tokens, recomputing everything each step.
inline std::vector<int> generate_naive(Transformer& model, std::span<const int> prompt,
                                       int answer_len, const StepCallback& on_step = {}) {
    std::vector<int> sequence(prompt.begin(), prompt.end());
    std::vector<int> answer;
    for (int step = 0; step < answer_len; ++step) {
        std::span<const float> logits = naive_step(model, sequence);
        if (on_step) on_step(step, logits);
        const int next = argmax(logits);
        answer.push_back(next);
        sequence.push_back(next);
    }
    return answer;
}

// Token-positions naive decoding pushes through the model: the triangle
// p + (p+1) + ... + (p+n-1).
inline std::uint64_t naive_positions(std::uint64_t prompt_len, std::uint64_t answer_len) {
    return answer_len * prompt_len + answer_len * (answer_len - 1) / 2;
}

}  // namespace kv
