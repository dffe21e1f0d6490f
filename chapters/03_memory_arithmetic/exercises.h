// Chapter 03 exercises: stubs for you to fill in (see EXERCISES.md). Each
// throws until you write it. Its tests, skipped until you enable them:
//
//     make build/book_tests && ./build/book_tests -ts="exercises ch03" --no-skip
#pragma once

#include <cstdint>
#include <stdexcept>

#include "../../common/core/memory_arithmetic.h"

namespace kv::exercises {

// Exercise 4: bytes per token when each cached number takes
// `bits_per_number` bits (1..64), ignoring s.bytes_per_number. Exact: throws
// std::invalid_argument when a token's bits are not a whole number of
// bytes, and std::overflow_error when its count of numbers or of bytes does
// not fit in 64 bits. A count of bits that does not fit is no reason to refuse.
inline std::uint64_t bytes_per_token_at_bits(const CacheShape& s, std::uint64_t bits_per_number) {
    (void)s, (void)bits_per_number;
    throw std::logic_error("exercise 03.4: bytes_per_token_at_bits is not implemented yet");
}

// Exercise 5: blocks of `block_tokens` positions needed to hold `tokens`
// tokens: a conversation's last block is partly empty. Throws
// std::invalid_argument for a block of 0 tokens; never overflows.
inline std::uint64_t blocks_needed(std::uint64_t tokens, std::uint64_t block_tokens) {
    (void)tokens, (void)block_tokens;
    throw std::logic_error("exercise 03.5: blocks_needed is not implemented yet");
}

// Exercise 5: bytes a conversation of `tokens` tokens holds when its cache
// is allocated in blocks of `block_tokens` positions.
inline std::uint64_t paged_bytes(const CacheShape& s, std::uint64_t tokens,
                                 std::uint64_t block_tokens) {
    (void)s, (void)tokens, (void)block_tokens;
    throw std::logic_error("exercise 03.5: paged_bytes is not implemented yet");
}

}  // namespace kv::exercises
