// Chapter 03 exercises 4 and 5: write these functions (see EXERCISES.md).
//
// Each one throws until you write it. Its tests are in
// tests/exercises_ch03_test.cpp, skipped by default; run them with
//
//     make build/book_tests && ./build/book_tests -ts="exercises ch03" --no-skip
//
// Worked solutions: solutions/SOLUTIONS.md.
#pragma once

#include <cstdint>
#include <stdexcept>

#include "memory_arithmetic.h"

namespace kv {

// ---------------------------------------------- exercise 4: a 4-bit cache

// Bytes per token when each cached number takes `bits_per_number` bits
// (1..64), ignoring s.bytes_per_number. Exact: throws std::invalid_argument
// when a token's bits are not a whole number of bytes, and
// std::overflow_error when its count of numbers or of bytes does not fit in
// 64 bits. A count of bits that does not fit is no reason to refuse.
inline std::uint64_t bytes_per_token_at_bits(const CacheShape& s, std::uint64_t bits_per_number) {
    (void)s;
    (void)bits_per_number;
    throw std::logic_error("exercise 4: write bytes_per_token_at_bits in exercises.h");
}

// ------------------------------------------- exercise 5: paging arithmetic

// Blocks of `block_tokens` positions needed to hold `tokens` tokens: a
// conversation's last block is partly empty. Throws std::invalid_argument
// for a block of 0 tokens; never overflows.
inline std::uint64_t blocks_needed(std::uint64_t tokens, std::uint64_t block_tokens) {
    (void)tokens;
    (void)block_tokens;
    throw std::logic_error("exercise 5: write blocks_needed in exercises.h");
}

// Bytes a conversation of `tokens` tokens holds when its cache is allocated
// in blocks of `block_tokens` positions.
inline std::uint64_t paged_bytes(const CacheShape& s, std::uint64_t tokens,
                                 std::uint64_t block_tokens) {
    (void)s;
    (void)tokens;
    (void)block_tokens;
    throw std::logic_error("exercise 5: write paged_bytes in exercises.h");
}

}  // namespace kv
