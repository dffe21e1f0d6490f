// The forward pass: deterministic, sane activations, absolute RoPE positions.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "../common/core/block_pool.h"
#include "../common/core/generation.h"
#include "../common/core/paged_kv_cache.h"
#include "../common/core/transformer.h"
#include "tiny_models.h"

using namespace kv;

TEST_CASE("the same seed gives bit-identical logits and another seed does not") {
    const Config c = test::tiny_config();
    Transformer model(c, 11), twin(c, 11), other(c, 12);
    const std::vector<int> tokens = {5, 17, 3, 80, 42};
    KVCache c1(c), c2(c), c3(c);
    const auto first = model.forward(tokens, c1);
    const std::vector<float> a(first.begin(), first.end());
    const auto second = twin.forward(tokens, c2);
    CHECK(std::vector<float>(second.begin(), second.end()) == a);
    const auto third = other.forward(tokens, c3);
    CHECK(std::vector<float>(third.begin(), third.end()) != a);
}

TEST_CASE("activations stay sane: logits neither flat nor exploding") {
    for (int layers : {1, 4, 12}) {
        Config c = test::tiny_config();
        c.n_layers = layers;
        Transformer model(c, 5);
        KVCache cache(c);
        const std::vector<int> prompt = fixed_prompt(20, c.vocab_size, 5);
        const auto logits = model.forward(prompt, cache);
        double sum = 0, sum_sq = 0;
        for (float v : logits) {
            REQUIRE(std::isfinite(v));
            sum += v;
            sum_sq += double(v) * v;
        }
        const double n = double(logits.size());
        const double stddev = std::sqrt(sum_sq / n - (sum / n) * (sum / n));
        INFO(layers << " layers: logit standard deviation " << stddev);
        CHECK(stddev > 0.3);
        CHECK(stddev < 3.0);
    }
}

TEST_CASE("rope with a cache uses absolute positions") {
    // Keys are stored after RoPE, so they record the position each was
    // rotated for. A sequence fed one token at a time must leave exactly the
    // keys a single pass over the whole sequence leaves.
    for (const Config& c : test::shapes_to_check()) {
        Transformer model(c, 9);
        const std::vector<int> tokens = fixed_prompt(12, c.vocab_size, 9);
        KVCache whole(c), stepwise(c);
        model.forward(tokens, whole);
        for (int t : tokens) model.forward(std::span(&t, 1), stepwise);
        for (int layer = 0; layer < c.n_layers; ++layer)
            for (int pos = 0; pos < 12; ++pos) {
                const std::vector<float> a(whole.key(layer, pos),
                                           whole.key(layer, pos) + c.kv_dim());
                const std::vector<float> b(stepwise.key(layer, pos),
                                           stepwise.key(layer, pos) + c.kv_dim());
                CHECK(a == b);
                CHECK(std::equal(whole.value(layer, pos), whole.value(layer, pos) + c.kv_dim(),
                                 stepwise.value(layer, pos)));
            }
    }
}

TEST_CASE("argmax breaks ties toward the lowest token id") {
    const std::vector<float> logits = {0.5f, 2.0f, -1.0f, 2.0f};
    CHECK(argmax(logits) == 1);
    const std::vector<float> flat(5, 0.0f);
    CHECK(argmax(flat) == 0);
}

TEST_CASE("the model counts the token-positions it processes") {
    const Config c = test::tiny_config();
    Transformer model(c, 2);
    KVCache cache(c);
    const std::vector<int> prompt = {1, 2, 3};
    model.forward(prompt, cache);
    CHECK(model.positions_processed() == 3);
    const int t = 4;
    model.forward(std::span(&t, 1), cache);
    CHECK(model.positions_processed() == 4);
}

TEST_CASE("max_abs_difference finds the largest gap and refuses unequal lengths") {
    // Every cached-vs-naive test rests on this returning more than 0 when
    // anything differs.
    const std::vector<float> a = {1.0f, 2.0f, 3.0f}, b = {1.0f, 2.5f, 2.0f};
    CHECK(max_abs_difference(a, b) == 1.0);
    CHECK(max_abs_difference(a, a) == 0.0);
    CHECK(max_abs_difference(std::vector<std::vector<float>>{a, a},
                             std::vector<std::vector<float>>{a, b}) == 1.0);
    const std::vector<float> shorter = {1.0f};
    CHECK_THROWS_AS(max_abs_difference(a, shorter), std::invalid_argument);
}

namespace {

// Grouped-query attention as plain multi-head attention: the same weights,
// each KV head's rows of wk and wv repeated for every query head of its
// group, so that each query head has a KV head of its own.
Weights one_kv_head_per_query_head(const Config& c, const Weights& grouped) {
    Weights w = grouped;
    const int hs = c.head_size();
    for (LayerWeights& layer : w.layers)
        for (Matrix* m : {&layer.wk, &layer.wv}) {
            Matrix repeated(c.n_heads * hs, c.dim);
            for (int h = 0; h < c.n_heads; ++h)
                std::copy_n(m->row((h / c.group_size()) * hs), std::size_t(hs) * c.dim,
                            repeated.row(h * hs));
            *m = repeated;
        }
    return w;
}

}  // namespace

// Attention takes a group of query heads in one pass over their shared KV
// head; a model whose every query head has a KV head of its own (a group of
// one) attends one head at a time. Built from the same weights, the two
// give the same logits to the last bit.
TEST_CASE("attention by group gives the logits of one head at a time bit for bit") {
    // Groups of 1, 2 and 4 (shapes_to_check), of 3 and of 8 heads, with
    // head sizes from 6 to 40; a prefill and decode steps on a contiguous
    // cache, then a batch on paged caches whose runs are blocks of 5.
    std::vector<Config> shapes = test::shapes_to_check();
    shapes.push_back(Config{.n_layers = 2,
                            .dim = 36,
                            .n_heads = 6,
                            .n_kv_heads = 2,
                            .ffn_dim = 40,
                            .vocab_size = 97,
                            .max_seq = 64});
    shapes.push_back(Config{.n_layers = 2,
                            .dim = 320,
                            .n_heads = 8,
                            .n_kv_heads = 1,
                            .ffn_dim = 40,
                            .vocab_size = 97,
                            .max_seq = 64});
    for (const Config& c : shapes) {
        CAPTURE(c.describe());
        Config per_head = c;
        per_head.n_kv_heads = c.n_heads;
        const Weights grouped = random_weights(c, 21);
        Transformer by_group(c, grouped),
            one_head(per_head, one_kv_head_per_query_head(c, grouped));
        const std::vector<int> prompt = fixed_prompt(23, c.vocab_size, 4);
        KVCache a(c), b(per_head);
        double largest = 0;
        bool same_bits = true;
        auto compare = [&](std::span<const float> x, std::span<const float> y) {
            largest = larger_difference(largest, max_abs_difference(x, y));
            same_bits = same_bits && std::memcmp(x.data(), y.data(), x.size_bytes()) == 0;
        };
        compare(by_group.forward(prompt, a), one_head.forward(prompt, b));
        for (int token : {3, 1, 4, 1, 5}) {
            const auto fast = by_group.forward(std::span(&token, 1), a);
            const std::vector<float> kept(fast.begin(), fast.end());
            compare(kept, one_head.forward(std::span(&token, 1), b));
        }
        BlockPool pool_a(c, 5, 24), pool_b(per_head, 5, 24);
        PagedKVCache pa1(pool_a, 40), pa2(pool_a, 40), pb1(pool_b, 40), pb2(pool_b, 40);
        const std::vector<int> p1(prompt.begin(), prompt.begin() + 12),
            p2(prompt.begin() + 4, prompt.end());
        const std::vector<SequenceInput> in_a = {{p1, &pa1}, {p2, &pa2}},
                                         in_b = {{p1, &pb1}, {p2, &pb2}};
        const Matrix fast = by_group.forward(in_a);
        const Matrix& plain = one_head.forward(in_b);
        compare(fast.row_span(0), plain.row_span(0));
        compare(fast.row_span(1), plain.row_span(1));
        INFO("largest logit difference " << largest << " (tolerance 0: the same bits)");
        CHECK(same_bits);
    }
}
