// Chapter 02: cached decoding gives the same tokens and the same logits as
// naive decoding, while processing p + n - 1 token-positions instead of the
// triangle.
//
// Tolerance: zero. Every dot product in the core adds its terms in one fixed
// order whether it runs in a matrix-vector or a matrix-matrix product
// (common/core/kernels.h), so the logits agree to the last bit. The largest
// difference is still printed, as it is the number to look at if a kernel
// change ever breaks that promise.
#include <doctest/doctest.h>

#include <cmath>
#include <set>
#include <stdexcept>
#include <vector>

#include "../common/core/cached_decoding.h"
#include "../common/core/naive_decoding.h"
#include "tiny_models.h"

using namespace kv;

TEST_CASE("cached decoding equals naive decoding at every step") {
    const double tolerance = 0.0;
    for (const Config& c : test::shapes_to_check()) {
        std::set<int> seen;  // every token generated for this shape
        for (int prompt_len : {1, 2, 7, 20}) {
            Transformer model(c, 21);
            const std::vector<int> prompt = fixed_prompt(prompt_len, c.vocab_size, 21);
            const int answer_len = 16;
            std::vector<int> naive_tokens, cached_tokens;
            const auto naive = logits_per_step(
                [&](const StepCallback& cb) {
                    return generate_naive(model, prompt, answer_len, cb);
                },
                naive_tokens);
            const auto cached = logits_per_step(
                [&](const StepCallback& cb) {
                    return generate_cached(model, prompt, answer_len, cb);
                },
                cached_tokens);
            REQUIRE(naive.size() == cached.size());
            const double worst = max_abs_difference(naive, cached);
            INFO(c.describe() << ", prompt " << prompt_len << ": largest logit difference " << worst
                              << " (tolerance " << tolerance << ")");
            CHECK(worst <= tolerance);
            CHECK(cached_tokens == naive_tokens);
            seen.insert(naive_tokens.begin(), naive_tokens.end());
        }
        // The comparison means something only if the tokens vary. (A random
        // model can fall into repeating one token for some prompt, so this
        // counts over all prompts of the shape.)
        CHECK(seen.size() >= 4);
    }
}

TEST_CASE("the cache is really used: p + n - 1 token-positions") {
    const Config c = test::tiny_config();
    for (int prompt_len : {1, 3, 9})
        for (int answer_len : {1, 2, 12}) {
            Transformer model(c, 8);
            const std::vector<int> prompt = fixed_prompt(prompt_len, c.vocab_size, 8);
            generate_cached(model, prompt, answer_len);
            CHECK(model.positions_processed() == std::uint64_t(prompt_len + answer_len - 1));
            CHECK(cached_positions(prompt_len, answer_len) ==
                  std::uint64_t(prompt_len + answer_len - 1));
            const std::uint64_t before = model.positions_processed();
            generate_naive(model, prompt, answer_len);
            CHECK(model.positions_processed() - before == naive_positions(prompt_len, answer_len));
        }
}

TEST_CASE("prefill then decode_step fills the cache one position per token") {
    const Config c = test::tiny_config();
    Transformer model(c, 8);
    KVCache cache(c, 10);
    const std::vector<int> prompt = {7, 8, 9};
    prefill(model, prompt, cache);
    CHECK(cache.length() == 3);
    decode_step(model, 11, cache);
    CHECK(cache.length() == 4);
    CHECK(cache.bytes_used() == c.kv_bytes(4));
}

TEST_CASE("a cache too small for the answer is an error; not an overrun") {
    Config c = test::tiny_config();
    c.max_seq = 8;
    Transformer model(c, 8);
    const std::vector<int> prompt = {1, 2, 3, 4, 5};
    CHECK_NOTHROW(generate_cached(model, prompt, 4));  // 5 + 4 - 1 = 8 positions
    CHECK_THROWS_AS(generate_cached(model, prompt, 5), std::invalid_argument);  // needs 9
    CHECK_THROWS_AS(generate_naive(model, prompt, 5), std::invalid_argument);
}
