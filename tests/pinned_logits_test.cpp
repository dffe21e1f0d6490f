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
std::string cached_answer_digest(const Config& c, NumberFormat format = NumberFormat::float32) {
    Transformer model(c, 5);
    KVCache cache(c, c.max_seq, format);
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
std::string batched_paged_digest(const Config& c, NumberFormat format = NumberFormat::float32) {
    Transformer model(c, 6);
    BlockPool pool(c, 4, 32, format);
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

// A head of 48 numbers: an int8 row of one whole block of 32 and a block
// of 16 per head, and 16-bit rows of three whole vectors.
Config two_block_heads() {
    return Config{.n_layers = 2,
                  .dim = 96,
                  .n_heads = 2,
                  .n_kv_heads = 1,
                  .ffn_dim = 64,
                  .vocab_size = 101,
                  .max_seq = 64};
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

// The narrower caches' logits, pinned as the float32 ones are: attention
// reads each format where it lies, widening in registers, and adds exactly
// what it added when it read float32 copies of the same numbers. Each
// shape's cached answer, then its batched step on paged caches.
TEST_CASE("every number format's logits are the pinned ones; contiguous and paged") {
    struct Pinned {
        NumberFormat format;
        const char* digests[3][2];  // tiny, head size 16, head size 48
    };
    const Pinned pinned[] = {
        {NumberFormat::float32,
         {{"d2a1d7006cf2c08f", "b08b8f0e6e4e9e41"},
          {"0a9c34123b568d79", "aac8def9b001289c"},
          {"cb42fc0ecaec967a", "7bc4b7a0ed36949a"}}},
        {NumberFormat::bfloat16,
         {{"d8ffd5c84f851b3b", "83c99ebcdd9ba698"},
          {"500be7eea993c706", "cb141e6adeb5a9f5"},
          {"f7f831ffadf0b220", "46642d9b5ce6adbc"}}},
        {NumberFormat::float16,
         {{"50bfb8a339cacd49", "490409cf85b87928"},
          {"f4587624e0a2666c", "f54c390cdd6b4612"},
          {"613b43cc00642e05", "250df320f2843bcf"}}},
        {NumberFormat::int8,
         {{"41728a41a43c38e7", "52ad20d7e2d0503f"},
          {"cfef01cc0848a1c9", "6df29fad74ca1a00"},
          {"0a89624903e80615", "bfb8f2506cc0d134"}}},
    };
    std::vector<Config> shapes = pinned_shapes();
    shapes.push_back(two_block_heads());
    for (const Pinned& p : pinned)
        for (std::size_t i = 0; i < shapes.size(); ++i) {
            const std::string name = format_name(p.format);
            CAPTURE(name);
            CAPTURE(shapes[i].describe());
            CHECK(cached_answer_digest(shapes[i], p.format) == p.digests[i][0]);
            CHECK(batched_paged_digest(shapes[i], p.format) == p.digests[i][1]);
        }
}
