// Chapter 01 exercises: stubs for you to fill in (see EXERCISES.md). Each
// throws until you write it. Its tests, skipped until you enable them:
//
//     make build/book_tests && ./build/book_tests -ts="exercises ch01" --no-skip
#pragma once

#include <span>
#include <stdexcept>
#include <vector>

#include "../../common/core/config.h"
#include "../../common/core/naive_decoding.h"
#include "../../common/core/transformer.h"

namespace kv::exercises {

// Exercise 4: FLOPs of one forward pass over `rows` new tokens at positions
// start..start+rows-1 (matrix products, attention, and the output
// projection of the last row).
inline double forward_flops(const Config& config, int rows, int start) {
    (void)config, (void)rows, (void)start;
    throw std::logic_error("exercise 01.4: forward_flops is not implemented yet");
}

// Exercise 5: like generate_naive, but stops right after `stop_token`.
inline std::vector<int> generate_naive_until(Transformer& model, std::span<const int> prompt,
                                             int max_len, int stop_token) {
    (void)model, (void)prompt, (void)max_len, (void)stop_token;
    throw std::logic_error("exercise 01.5: generate_naive_until is not implemented yet");
}

}  // namespace kv::exercises
