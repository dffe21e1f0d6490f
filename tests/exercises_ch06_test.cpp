// Chapter 06 exercises (see chapters/06_closing_table/EXERCISES.md).
// Skipped until you enable them: ./build/book_tests -ts="exercises ch06" --no-skip
// (or remove * doctest::skip() from one case).
#include <doctest/doctest.h>

#include <stdexcept>

#include "../chapters/06_closing_table/exercises.h"
#include "../common/kit/saved_results.h"

using namespace kv;

TEST_SUITE("exercises ch06") {
    TEST_CASE("exercise 06.4 batching_gain" * doctest::skip()) {
        // Hand-written results: 1,000 tokens per second alone, 4,300 at the
        // best batch (32): a gain of 4.3, whatever the best batch was.
        const SavedResults ch04 = SavedResults::parse(
            "ch04.json", R"({"tokens_per_second_batch1": 1000, "tokens_per_second_best": 4300,)"
                         R"( "best_batch": 32, "wide_tokens_per_second_batch1": 40,)"
                         R"( "wide_tokens_per_second_best": 400})");
        CHECK(exercises::batching_gain(ch04) == doctest::Approx(4.3));
        // The demo model's keys, not the wide model's.
        CHECK(exercises::batching_gain(ch04) != doctest::Approx(10.0));
        // A missing number or one that is not above zero is an error, not a
        // row of "nan x" or "inf x".
        CHECK_THROWS_AS(exercises::batching_gain(SavedResults::parse(
                            "ch04.json", R"({"tokens_per_second_best": 4300})")),
                        std::runtime_error);
        CHECK_THROWS_AS(
            exercises::batching_gain(SavedResults::parse(
                "ch04.json", R"({"tokens_per_second_batch1": 0, "tokens_per_second_best": 4300})")),
            std::runtime_error);
    }
}
