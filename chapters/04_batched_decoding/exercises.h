// Chapter 04 exercises: stubs for you to fill in (see EXERCISES.md). Each
// throws until you write it. Its tests, skipped until you enable them:
//
//     make build/book_tests && ./build/book_tests -ts="exercises ch04" --no-skip
#pragma once

#include <span>
#include <stdexcept>
#include <vector>

#include "../../common/core/kv_cache.h"
#include "../../common/core/matrix.h"
#include "../../common/core/transformer.h"
#include "batch_benchmark.h"

namespace kv::exercises {

// Exercise 4: one forward pass that decodes tokens[i] into caches[i] for
// every i, as decode_batch does, and also prefills `prompt` into
// `prompt_cache`, which must not be one of `caches`. Row i < B of the result
// holds sequence i's logits; row B holds the logits after the prompt's last
// token. Logits and caches must come out exactly as from decode_batch
// followed by prefill. Bad arguments throw before any cache is touched.
inline const Matrix& decode_with_prefill(Transformer& model, std::span<const int> tokens,
                                         std::span<KVCache* const> caches,
                                         std::span<const int> prompt, KVCache& prompt_cache) {
    (void)model, (void)tokens, (void)caches, (void)prompt, (void)prompt_cache;
    throw std::logic_error("exercise 04.4: decode_with_prefill is not implemented yet");
}

// Exercise 5: where batching stops paying. `timings` holds batch sizes in
// increasing order. Returns the first batch size from which going to the
// next size raises tokens per second by less than `min_gain` (0.1 means
// 10%); the last size if every step up pays. A lone timing is its own
// answer. Throws std::invalid_argument if `timings` is empty or min_gain is
// negative.
inline int batch_where_gains_end(const std::vector<BatchTiming>& timings, double min_gain) {
    (void)timings, (void)min_gain;
    throw std::logic_error("exercise 04.5: batch_where_gains_end is not implemented yet");
}

}  // namespace kv::exercises
