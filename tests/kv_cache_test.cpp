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

TEST_CASE("truncate keeps the first n positions and the next pass rebuilds the rest") {
    const Config c = test::tiny_config();
    Transformer model(c, 4);
    const std::vector<int> prompt = {3, 1, 4, 1, 5, 9}, last_three = {1, 5, 9};
    KVCache fresh(c, 16);
    const std::span<const float> fresh_logits = model.forward(prompt, fresh);
    const std::vector<float> want(fresh_logits.begin(), fresh_logits.end());

    // Fill with other tokens, truncate to the three that agree, then feed
    // the last three: the same cache and the same logits as one fresh pass.
    KVCache rebuilt(c, 16);
    const std::vector<int> other = {3, 1, 4, 2, 7, 8, 6, 6};
    model.forward(other, rebuilt);
    rebuilt.truncate(3);
    CHECK(rebuilt.length() == 3);
    CHECK(rebuilt.bytes_used() == c.kv_bytes(3));
    const std::span<const float> got = model.forward(last_three, rebuilt);
    CHECK(std::vector<float>(got.begin(), got.end()) == want);
    CHECK(rebuilt.length() == 6);
    for (int l = 0; l < c.n_layers; ++l)
        for (int pos = 0; pos < 6; ++pos)
            for (int i = 0; i < c.kv_dim(); ++i) {
                CHECK(rebuilt.key(l, pos)[i] == fresh.key(l, pos)[i]);
                CHECK(rebuilt.value(l, pos)[i] == fresh.value(l, pos)[i]);
            }
    CHECK_THROWS_AS(rebuilt.truncate(7), std::out_of_range);
    CHECK_THROWS_AS(rebuilt.truncate(-1), std::out_of_range);
    rebuilt.truncate(0);
    CHECK(rebuilt.length() == 0);
}

TEST_CASE("a pass over token lists and their caches equals one pass per sequence") {
    const Config c = test::tiny_config();
    Transformer model(c, 6);
    const std::vector<std::vector<int>> tokens = {{1, 2, 3}, {4}, {5, 6, 7, 8, 9}};
    std::vector<KVCache> caches(tokens.size(), KVCache(c, 16));
    const Matrix& together = model.forward(tokens, caches);
    std::vector<std::vector<float>> rows;
    for (int i = 0; i < 3; ++i) rows.emplace_back(together.row(i), together.row(i) + c.vocab_size);
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        KVCache alone(c, 16);
        const std::span<const float> logits = model.forward(tokens[i], alone);
        CHECK(std::vector<float>(logits.begin(), logits.end()) == rows[i]);
        CHECK(caches[i].length() == static_cast<int>(tokens[i].size()));
    }
    std::vector<KVCache> too_few(2, KVCache(c, 16));
    CHECK_THROWS_AS(model.forward(tokens, too_few), std::invalid_argument);
}
