// The same logits as before, to the last bit: a fingerprint of every logit
// two small models compute, pinned to the value this code gave when it was
// written. tests/check_same_tokens.sh shows that today's builds agree with
// each other; this shows that they agree with yesterday's code, in every
// build the tests run in (native, the sanitizers' -O1 build, CMake's).
//
// A change that reorders any addition in the forward pass (a kernel, the
// norm, the softmax, the residual) changes the fingerprint and fails here,
// even when every build changes alike. If such a change is meant, it is no
// longer "the same logits": say so in its commit, and pin the new value.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "../common/core/block_pool.h"
#include "../common/core/kv_cache.h"
#include "../common/core/paged_kv_cache.h"
#include "../common/core/transformer.h"
#include "../common/kit/digest.h"
#include "tiny_models.h"

using namespace kv;

namespace {

// The tiny shape (tails, grouped-query heads) and a wider one whose head
// size, 16, fills a vector: together they run every kernel's paths.
std::vector<Config> pinned_shapes() {
    return {test::tiny_config(), test::shapes_to_check().back()};
}

// One sequence: a 7-token prompt, then 12 tokens decoded greedily, one at
// a time, from the cache; every logit of every step goes in.
std::string cached_answer_digest(const Config& c) {
    Transformer model(c, 5);
    KVCache cache(c);
    std::vector<int> tokens = {1, 7, 3, 9, 2, 5, 4};
    Fnv1a64 digest;
    std::span<const float> logits = model.forward(tokens, cache);
    for (int step = 0; step < 12; ++step) {
        digest.add_floats(logits);
        const int next = argmax(logits);
        const std::vector<int> one = {next};
        logits = model.forward(one, cache);
    }
    digest.add_floats(logits);
    return digest.hex();
}

// Three sequences in one pass, on paged caches: a prompt chunk beside two
// decode rows, then a step of three decode rows.
std::string batched_paged_digest(const Config& c) {
    Transformer model(c, 6);
    BlockPool pool(c, 4, 32);
    std::vector<PagedKVCache> caches;
    for (int i = 0; i < 3; ++i) caches.emplace_back(pool, c.max_seq);
    const std::vector<std::vector<int>> first = {{3, 1, 4, 1, 5, 9, 2, 6, 5}, {8}, {2, 7}};
    std::vector<SequenceInput> inputs;
    for (int i = 0; i < 3; ++i) inputs.push_back({first[std::size_t(i)], &caches[std::size_t(i)]});
    Fnv1a64 digest;
    digest.add_floats(model.forward(inputs).data);
    const std::vector<std::vector<int>> second = {{4}, {6}, {0}};
    for (int i = 0; i < 3; ++i) inputs[std::size_t(i)].tokens = second[std::size_t(i)];
    digest.add_floats(model.forward(inputs).data);
    return digest.hex();
}

}  // namespace

TEST_CASE("a cached answer's logits are the pinned ones; to the last bit") {
    const std::vector<Config> shapes = pinned_shapes();
    CHECK(cached_answer_digest(shapes[0]) == "d2a1d7006cf2c08f");
    CHECK(cached_answer_digest(shapes[1]) == "0a9c34123b568d79");
}

TEST_CASE("a batched step's logits on paged caches are the pinned ones; to the last bit") {
    const std::vector<Config> shapes = pinned_shapes();
    CHECK(batched_paged_digest(shapes[0]) == "b08b8f0e6e4e9e41");
    CHECK(batched_paged_digest(shapes[1]) == "aac8def9b001289c");
}
