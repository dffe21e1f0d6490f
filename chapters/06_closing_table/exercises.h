// Chapter 06 exercises: stubs for you to fill in (see EXERCISES.md). Each
// throws until you write it. Its test, skipped until you enable it:
//
//     make build/book_tests && ./build/book_tests -ts="exercises ch06" --no-skip
#pragma once

#include <stdexcept>

#include "../../common/kit/saved_results.h"

namespace kv::exercises {

// Exercise 4: how many times more tokens per second chapter 04's best batch
// decoded than its batch of one, read from chapter 04's saved results
// (`ch04.json`). A file without those numbers, or with one that is not
// above zero, is an error (SavedResults says which).
inline double batching_gain(const SavedResults& ch04) {
    (void)ch04;
    throw std::logic_error("exercise 06.4: batching_gain is not implemented yet");
}

}  // namespace kv::exercises
