// Chapter 10 exercises: stubs for you to fill in (see EXERCISES.md). Each
// throws until you write it. Its tests, skipped until you enable them:
//
//     make build/book_tests && ./build/book_tests -ts="exercises ch10" --no-skip
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "../../common/core/number_format.h"

namespace kv::exercises {

// Exercise 4, an 8-bit float: FP8 E4M3 (OCP's "E4M3FN", one of the two
// 8-bit floats vLLM's FP8 cache documentation names): a sign, 4 exponent
// bits (bias 7), 3 significand bits; no infinities; S.1111.111 is NaN, so
// the largest number is 1.75 x 2^8 = 448. Round to nearest, ties to even; a
// number beyond 448 (infinity too) becomes +-448; a NaN stays a NaN.
inline std::uint8_t to_e4m3(float x) {
    (void)x;
    throw std::logic_error("exercise 10.4: to_e4m3 is not implemented yet");
}

// Exact: every E4M3 number is a float.
inline float from_e4m3(std::uint8_t bits) {
    (void)bits;
    throw std::logic_error("exercise 10.4: from_e4m3 is not implemented yet");
}

// Exercise 5, a 4-bit cache: llama.cpp's q4_0 layout on the book's rows (a
// float16 scale, then 32 numbers in 16 bytes), with a symmetric grid: each
// block of 32 numbers of a head (kInt8Block; a smaller head is one block)
// keeps its largest magnitude / 7, rounded to float16, then its numbers as
// round(x / scale), ties to even, held to -7..7, two to a byte (the first
// number in the low 4 bits, as two's complement). A block of an odd count
// leaves the last high half zero.
inline std::size_t int4_row_bytes(const RowFormat& f) {
    (void)f;
    throw std::logic_error("exercise 10.5: int4_row_bytes is not implemented yet");
}

inline void narrow_int4_row(const RowFormat& f, const float* numbers, std::byte* out) {
    (void)f, (void)numbers, (void)out;
    throw std::logic_error("exercise 10.5: narrow_int4_row is not implemented yet");
}

// Exactly q x scale for each number.
inline void widen_int4_row(const RowFormat& f, const std::byte* in, float* out) {
    (void)f, (void)in, (void)out;
    throw std::logic_error("exercise 10.5: widen_int4_row is not implemented yet");
}

}  // namespace kv::exercises
