// Chapter 02 exercises: stubs for you to fill in (see EXERCISES.md). Each
// throws until you write it. Its tests, skipped until you enable them:
//
//     make build/book_tests && ./build/book_tests -ts="exercises ch02" --no-skip
#pragma once

#include <span>
#include <stdexcept>
#include <vector>

#include "../../common/core/cached_decoding.h"
#include "../../common/core/generation.h"
#include "../../common/core/kv_cache.h"
#include "../../common/core/kv_store.h"
#include "../../common/core/transformer.h"

namespace kv::exercises {

// Exercise 3: the prompt fed `chunk` tokens at a time, one forward pass per
// chunk; the logits after the last. (The cache is any KVStore, so that the
// test can count the passes.)
inline std::vector<float> prefill_chunked(Transformer& model, std::span<const int> prompt,
                                          KVStore& cache, int chunk) {
    (void)model, (void)prompt, (void)cache, (void)chunk;
    throw std::logic_error("exercise 02.3: prefill_chunked is not implemented yet");
}

// Exercise 4: round to the nearest bfloat16 value, ties to even.
inline float round_to_bfloat16(float x) {
    (void)x;
    throw std::logic_error("exercise 02.4: round_to_bfloat16 is not implemented yet");
}

// Exercise 4: cached generation with every cached number rounded to bfloat16.
inline std::vector<int> generate_cached_bf16(Transformer& model, std::span<const int> prompt,
                                             int answer_len, const StepCallback& on_step = {}) {
    (void)model, (void)prompt, (void)answer_len, (void)on_step;
    throw std::logic_error("exercise 02.4: generate_cached_bf16 is not implemented yet");
}

}  // namespace kv::exercises
