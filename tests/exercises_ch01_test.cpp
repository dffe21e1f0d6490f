// Chapter 01 exercises (see chapters/01_naive_decoding/EXERCISES.md).
// Skipped until you enable them: ./build/book_tests -ts="exercises ch01" --no-skip
// (or remove * doctest::skip() from one case).
#include <doctest/doctest.h>

#include <vector>

#include "../chapters/01_naive_decoding/exercises.h"
#include "tiny_models.h"

using namespace kv;

TEST_SUITE("exercises ch01") {
    TEST_CASE("exercise 01.4 forward_flops" * doctest::skip()) {
        // By hand for a tiny shape: dim 4, 2 heads (head size 2), 1 KV head
        // (kv_dim 2), ffn 6, vocab 10, 1 layer.
        const Config c = test::hand_sized_config();
        // weights per layer: 2*16 + 2*8 + 3*24 = 120, so 240 FLOP per row.
        // attention: rows at positions 3 and 4 attend to 4 + 5 = 9 positions,
        //            2 heads * 2 numbers * 2 (scores and values) * 2 FLOP = 16 per position.
        // output: 2 * 10 * 4 = 80 for the last row.
        CHECK(exercises::forward_flops(c, 2, 3) == doctest::Approx(240 * 2 + 16 * 9 + 80));
        CHECK(exercises::forward_flops(c, 1, 0) == doctest::Approx(240 + 16 + 80));
    }

    TEST_CASE("exercise 01.5 generate_naive_until" * doctest::skip()) {
        const Config c = test::tiny_config();
        Transformer model(c, 4);
        const std::vector<int> prompt = {3, 1, 4};
        const std::vector<int> full = generate_naive(model, prompt, 12);
        const int stop = full[5];
        const std::vector<int> until = exercises::generate_naive_until(model, prompt, 12, stop);
        // It stops at the first occurrence of the stop token, keeping it.
        std::size_t first = 0;
        while (full[first] != stop) ++first;
        CHECK(until == std::vector<int>(full.begin(), full.begin() + first + 1));
        CHECK(exercises::generate_naive_until(model, prompt, 4, c.vocab_size + 1).size() == 4);
    }
}
