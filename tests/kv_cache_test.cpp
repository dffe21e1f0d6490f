// The KVCache: its size, its bounds, and that a failed forward pass leaves it alone.
#include <doctest/doctest.h>

#include <stdexcept>
#include <vector>

#include "../common/core/kv_cache.h"
#include "../common/core/transformer.h"
#include "tiny_models.h"

using namespace kv;

TEST_CASE("a cache holds exactly the bytes the formula says") {
    for (const Config& c : test::shapes_to_check()) {
        KVCache cache(c, 10);
        CHECK(cache.bytes_allocated() == c.kv_bytes(10));
        CHECK(cache.bytes_used() == 0);
        Transformer model(c, 3);
        const std::vector<int> prompt = {1, 2, 3, 4};
        model.forward(prompt, cache);
        CHECK(cache.length() == 4);
        CHECK(cache.bytes_used() == c.kv_bytes(4));
        // 2 (keys and values) x layers x KV heads x head size x 4 bytes, per token.
        CHECK(cache.bytes_used() ==
              4ull * 2 * c.n_layers * c.n_kv_heads * c.head_size() * sizeof(float));
    }
}

TEST_CASE("appending past the capacity is an error and writes nothing") {
    const Config c = test::tiny_config();
    Transformer model(c, 1);
    KVCache cache(c, 5);
    const std::vector<int> four = {1, 2, 3, 4}, two = {5, 6};
    model.forward(four, cache);
    const std::vector<float> keys_before(cache.key(0, 0), cache.key(0, 0) + 5 * c.kv_dim());
    CHECK_THROWS_AS(model.forward(two, cache), std::length_error);
    CHECK(cache.length() == 4);
    CHECK(std::vector<float>(cache.key(0, 0), cache.key(0, 0) + 5 * c.kv_dim()) == keys_before);
    const int one = 5;
    CHECK_NOTHROW(model.forward(std::span(&one, 1), cache));
    CHECK(cache.remaining() == 0);
    CHECK_THROWS_AS(model.forward(std::span(&one, 1), cache), std::length_error);
}

TEST_CASE("bad forward calls are errors before anything is written") {
    const Config c = test::tiny_config();
    Transformer model(c, 1);
    KVCache cache(c);
    const std::vector<int> bad_token = {1, c.vocab_size};
    CHECK_THROWS_AS(model.forward(bad_token, cache), std::out_of_range);
    const std::vector<int> negative = {-1};
    CHECK_THROWS_AS(model.forward(negative, cache), std::out_of_range);
    CHECK_THROWS_AS(model.forward(std::span<const int>(), cache), std::invalid_argument);
    CHECK(cache.length() == 0);
    CHECK(model.positions_processed() == 0);
    CHECK_THROWS_AS(KVCache(c, 0), std::invalid_argument);
    CHECK_THROWS_AS(KVCache(c, c.max_seq + 1), std::invalid_argument);
    Config other = c;
    other.n_kv_heads = 1;
    KVCache wrong_shape(other);
    const std::vector<int> one = {1};
    CHECK_THROWS_AS(model.forward(one, wrong_shape), std::invalid_argument);
    // Same width of keys, but fewer layers: it would be written past its end.
    Config fewer_layers = c;
    fewer_layers.n_layers = 1;
    KVCache too_shallow(fewer_layers);
    CHECK_THROWS_AS(model.forward(one, too_shallow), std::invalid_argument);
    // More positions than the model's context: RoPE and the scores would overrun.
    Config longer = c;
    longer.max_seq = 2 * c.max_seq;
    KVCache too_long(longer);
    CHECK_THROWS_AS(model.forward(one, too_long), std::invalid_argument);
    CHECK(too_shallow.length() == 0);
    CHECK(too_long.length() == 0);
}
