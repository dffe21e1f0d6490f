// Chapter 03 exercises (see chapters/03_memory_arithmetic/EXERCISES.md).
// Skipped until you enable them: ./build/book_tests -ts="exercises ch03" --no-skip
// (or remove * doctest::skip() from one case).
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <stdexcept>

#include "../chapters/03_memory_arithmetic/exercises.h"
#include "../common/core/memory_arithmetic.h"

using namespace kv;
using namespace kv::exercises;

namespace {

constexpr std::uint64_t KiB = 1024, MiB = 1024 * KiB, GiB = 1024 * MiB;
constexpr std::uint64_t u64_max = std::numeric_limits<std::uint64_t>::max();

}  // namespace

TEST_SUITE("exercises ch03") {
    TEST_CASE("exercise 03.4 bytes_per_token_at_bits for a 4-bit cache" * doctest::skip()) {
        const CacheShape seed;
        CHECK(bytes_per_token_at_bits(seed, 4) == 32 * KiB);
        CHECK(cache_bytes(seed, 4096) / 4 == 4096 * bytes_per_token_at_bits(seed, 4));
        // Whole-byte widths agree with bytes_per_token().
        for (std::uint64_t bytes : {1, 2, 4, 8}) {
            CacheShape s = seed;
            s.bytes_per_number = bytes;
            CHECK(bytes_per_token_at_bits(seed, 8 * bytes) == bytes_per_token(s));
        }
        // The shape's own bytes_per_number is ignored.
        CacheShape wide = seed;
        wide.bytes_per_number = 4;
        CHECK(bytes_per_token_at_bits(wide, 4) == 32 * KiB);
        // 2 numbers of 4 bits make one byte; 2 numbers of 3 bits make 6 bits.
        CHECK(bytes_per_token_at_bits({1, 1, 1, 1}, 4) == 1);
        CHECK_THROWS_AS(bytes_per_token_at_bits({1, 1, 1, 1}, 3), std::invalid_argument);
        CHECK(bytes_per_token_at_bits({1, 1, 4, 1}, 3) == 3);  // 8 numbers x 3 bits = 24 bits
        CHECK_THROWS_AS(bytes_per_token_at_bits(seed, 0), std::invalid_argument);
        CHECK_THROWS_AS(bytes_per_token_at_bits(seed, 65), std::invalid_argument);
        // 2^60 numbers of 16 bits are 2^61 bytes, though 2^64 bits do not fit in 64 bits.
        const CacheShape huge = {std::uint64_t(1) << 59, 1, 1, 1};
        CHECK(bytes_per_token_at_bits(huge, 16) == std::uint64_t(1) << 61);
        CHECK(bytes_per_token_at_bits(huge, 56) == 7 * (std::uint64_t(1) << 60));
        CHECK(bytes_per_token_at_bits(huge, 64) == std::uint64_t(1) << 63);
        const CacheShape too_big = {std::uint64_t(1) << 60, 1, 1, 1};  // 2^61 numbers x 8 bytes
        CHECK_THROWS_AS(bytes_per_token_at_bits(too_big, 64), std::overflow_error);
    }

    TEST_CASE("exercise 03.5 blocks_needed and paged_bytes" * doctest::skip()) {
        CHECK(blocks_needed(0, 16) == 0);
        CHECK(blocks_needed(1, 16) == 1);
        CHECK(blocks_needed(16, 16) == 1);
        CHECK(blocks_needed(17, 16) == 2);
        CHECK(blocks_needed(1024, 16) == 64);
        CHECK(blocks_needed(1025, 16) == 65);
        CHECK(blocks_needed(u64_max, 2) == std::uint64_t(1) << 63);  // no overflow in rounding up
        CHECK(blocks_needed(u64_max, u64_max) == 1);
        CHECK_THROWS_AS(blocks_needed(10, 0), std::invalid_argument);

        const CacheShape seed;
        CHECK(paged_bytes(seed, 1024, 16) == 128 * MiB);
        CHECK(paged_bytes(seed, 1025, 16) == 130 * MiB);
        CHECK(paged_bytes(seed, 1000, 16) == 126 * MiB);
        CHECK(paged_bytes(seed, 0, 16) == 0);
        CHECK(paged_bytes(seed, 4096, 4096) == cache_bytes(seed, 4096));  // one block: reserving
        // Paging wastes less than one block per conversation, never more.
        for (std::uint64_t tokens = 1; tokens <= 100; ++tokens) {
            const std::uint64_t extra = paged_bytes(seed, tokens, 16) - cache_bytes(seed, tokens);
            CHECK(extra < 16 * bytes_per_token(seed));
        }
        CHECK_THROWS_AS(paged_bytes(seed, std::uint64_t(1) << 47, 16), std::overflow_error);
        // The budget of the chapter: 1,000-token conversations in 16-token blocks.
        CHECK(conversations_that_fit(64 * GiB, paged_bytes(seed, 1000, 16)) == 520);
        CHECK(conversations_that_fit(64 * GiB, cache_bytes(seed, 1000)) == 524);
    }
}
