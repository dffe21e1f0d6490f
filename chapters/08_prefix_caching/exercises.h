// Chapter 08 exercises: stubs for you to fill in (see EXERCISES.md). The
// tests in tests/exercises_ch08_test.cpp are skipped until you enable them.
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>

#include "../../common/serving/workload.h"

namespace kv::exercises {

// Exercise 4: the prefill positions a queue still needs with a prefix
// cache that never evicts. Requests are prefilled in arrival order; each
// finds the longest chain of whole blocks of B tokens that an earlier
// prompt started with too (at most (prompt_len - 1) / B blocks: its last
// token is always computed), prefills the rest of its prompt, and then its
// own whole blocks are cached. Returns the sum over the queue of the
// positions prefilled. Each request's prompt is in token_ids.
inline std::int64_t prefill_with_unbounded_cache(std::span<const Request> queue, int B) {
    (void)queue;
    (void)B;
    throw std::logic_error("exercise 08.4: prefill_with_unbounded_cache is not implemented yet");
}

}  // namespace kv::exercises
