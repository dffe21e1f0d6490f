// Chapter 02: the KV cache.
//
// The keys and values of a position depend only on the tokens up to it, so
// they never change once computed. Keep them: run the prompt through the
// model once (prefill), keeping its keys and values in a KVCache, then feed
// one token at a time (decode), each step computing only the new token's
// keys and values and attending over the cache. The arithmetic for each
// token is the same as in chapter 01, so the logits are the same to the last
// bit; only the repeated work is gone: p + n - 1 token-positions instead of
// n*p + n*(n-1)/2.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "generation.h"
#include "kv_cache.h"
#include "transformer.h"

namespace kv {

// Prefill: the whole prompt in one forward pass, filling the cache.
inline std::span<const float> prefill(Transformer& model, std::span<const int> prompt,
                                      KVCache& cache) {
    return model.forward(prompt, cache);
}

// Decode: one token against everything the cache holds.
inline std::span<const float> decode_step(Transformer& model, int token, KVCache& cache) {
    return model.forward(std::span(&token, 1), cache);
}

// Greedy generation of answer_len tokens with a cache of exactly the room
// needed: the prompt, plus every answer token but the last (which is
// produced, never fed back).
inline std::vector<int> generate_cached(Transformer& model, std::span<const int> prompt,
                                        int answer_len, const StepCallback& on_step = {}) {
    std::vector<int> answer;
    if (answer_len <= 0) return answer;
    KVCache cache(model.config(), static_cast<int>(prompt.size()) + answer_len - 1);
    std::span<const float> logits = prefill(model, prompt, cache);
    for (int step = 0;; ++step) {
        if (on_step) on_step(step, logits);
        answer.push_back(argmax(logits));
        if (step + 1 == answer_len) break;
        logits = decode_step(model, answer.back(), cache);
    }
    return answer;
}

// Token-positions cached decoding pushes through the model.
inline std::uint64_t cached_positions(std::uint64_t prompt_len, std::uint64_t answer_len) {
    return answer_len == 0 ? 0 : prompt_len + answer_len - 1;
}

}  // namespace kv
