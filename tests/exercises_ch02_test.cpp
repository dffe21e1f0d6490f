// Chapter 02 exercises (see chapters/02_kv_cache/EXERCISES.md).
// Skipped until you enable them: ./build/book_tests -ts="exercises ch02" --no-skip
// (or remove * doctest::skip() from one case).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "../chapters/02_kv_cache/exercises.h"
#include "forwarding_store.h"
#include "tiny_models.h"

using namespace kv;

namespace {

// A KVCache that records how many positions each forward pass commits:
// one entry per pass, so a test can tell one pass from several.
class CountingCache final : public test::ForwardingStore {
  public:
    explicit CountingCache(const Config& c) : ForwardingStore(c, c.max_seq) {}
    std::vector<int> passes;  // positions committed by each forward pass, in order

    void commit(int n) override {
        cache_.commit(n);
        passes.push_back(n);
    }
};

// The chunk sizes a prompt of `length` tokens is fed in: all of `chunk`
// but the last, which holds the rest.
std::vector<int> expected_chunks(int length, int chunk) {
    std::vector<int> sizes;
    for (int start = 0; start < length; start += chunk)
        sizes.push_back(std::min(chunk, length - start));
    return sizes;
}

}  // namespace

TEST_SUITE("exercises ch02") {
    TEST_CASE("exercise 02.3 prefill_chunked" * doctest::skip()) {
        const Config c = test::tiny_config();
        Transformer model(c, 6);
        const std::vector<int> prompt = fixed_prompt(13, c.vocab_size, 6);
        KVCache whole(c);
        const auto one_piece = model.forward(prompt, whole);
        const std::vector<float> expected(one_piece.begin(), one_piece.end());
        for (int chunk : {1, 4, 5, 13, 20}) {
            CAPTURE(chunk);
            CountingCache cache(c);
            CHECK(exercises::prefill_chunked(model, prompt, cache, chunk) == expected);
            CHECK(cache.length() == 13);
            // One forward pass per chunk, each of `chunk` positions (the last
            // one the rest): a prefill that ignores the chunk size fails here.
            CHECK(cache.passes == expected_chunks(13, chunk));
        }
    }

    TEST_CASE("exercise 02.4 bfloat16 cache" * doctest::skip()) {
        using exercises::round_to_bfloat16;
        CHECK(round_to_bfloat16(1.0f) == 1.0f);
        CHECK(round_to_bfloat16(-2.5f) == -2.5f);
        CHECK(round_to_bfloat16(1.0f + 0x1p-8f) == 1.0f);                // a tie: to even (down)
        CHECK(round_to_bfloat16(1.0f + 3 * 0x1p-8f) == 1.0f + 0x1p-6f);  // a tie: to even (up)
        CHECK(round_to_bfloat16(1.0f + 0x1p-8f + 0x1p-12f) == 1.0f + 0x1p-7f);  // above the tie
        CHECK(std::isnan(round_to_bfloat16(std::numeric_limits<float>::quiet_NaN())));

        const Config c = test::tiny_config();
        Transformer model(c, 2);
        const std::vector<int> prompt = fixed_prompt(6, c.vocab_size, 2);
        std::vector<std::vector<float>> exact, rounded;
        generate_cached(model, prompt, 12, [&](int, std::span<const float> l) {
            exact.emplace_back(l.begin(), l.end());
        });
        exercises::generate_cached_bf16(model, prompt, 12, [&](int, std::span<const float> l) {
            rounded.emplace_back(l.begin(), l.end());
        });
        REQUIRE(rounded.size() == exact.size());
        const double worst = max_abs_difference(exact, rounded);
        MESSAGE("largest logit difference with a bfloat16 cache: " << worst);
        CHECK(exact[0] == rounded[0]);  // the prefill's logits do not read rounded numbers
        CHECK(worst > 0);               // rounding must change something...
        CHECK(worst < 0.5);             // ...but not much
    }
}
