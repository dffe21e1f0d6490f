// Chapter 08's parallel samples: n answers to one prompt on shared blocks,
// copied on write, giving each sample the logits of a sequence of its own.
#include <doctest/doctest.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "../chapters/08_prefix_caching/parallel_samples.h"
#include "../common/core/block_pool.h"
#include "../common/core/generation.h"
#include "../common/core/kv_cache.h"
#include "../common/core/transformer.h"
#include "tiny_models.h"

using namespace kv;

TEST_CASE("n samples use the blocks the copy-on-write arithmetic counts") {
    const Config c = test::tiny_config();
    Transformer model(c, 21);
    for (int B : {1, 4, 5})
        for (int prompt : {8, 10})  // a multiple of 4, and not
            for (int answer : {1, 2, 9})
                for (int n : {1, 2, 3, 8}) {
                    CAPTURE(B);
                    CAPTURE(prompt);
                    CAPTURE(answer);
                    CAPTURE(n);
                    BlockPool pool(c, B, 200);
                    const std::vector<int> p = fixed_prompt(prompt, c.vocab_size, 4);
                    const ParallelSamples s = sample_in_parallel(model, pool, p, answer, n);
                    const int positions = prompt + answer - 1;
                    CHECK(s.blocks_used == blocks_with_copy_on_write(prompt, positions, n, B));
                    // The first n - 1 writers into a partial last prompt block copy it.
                    CHECK(s.copies_on_write == (answer > 1 && prompt % B != 0 ? n - 1 : 0));
                    CHECK(s.blocks_used <= blocks_copying_the_prompt(positions, n, B));
                }
}

TEST_CASE("copy-on-write copies a shared block once; at the first write and never again") {
    const Config c = test::tiny_config();
    Transformer model(c, 21);
    const std::vector<int> p = fixed_prompt(10, c.vocab_size, 4);  // 2 full blocks of 4, 2 over
    for (int answer : {2, 3, 12}) {
        BlockPool pool(c, 4, 200);
        CHECK(sample_in_parallel(model, pool, p, answer, 4).copies_on_write == 3);
    }
    BlockPool pool(c, 4, 200);
    CHECK(sample_in_parallel(model, pool, p, 1, 4).copies_on_write == 0);  // nobody wrote
}

TEST_CASE("each parallel sample gets the logits of a sequence prefilled on its own") {
    const Config c = test::tiny_config();
    Transformer model(c, 21);
    const std::vector<int> p = fixed_prompt(10, c.vocab_size, 4);
    BlockPool pool(c, 4, 200);
    const int n = 3, answer = 7;
    const ParallelSamples s = sample_in_parallel(model, pool, p, answer, n);
    for (int k = 0; k < n; ++k) {
        CAPTURE(k);
        KVCache fresh(c, 64);
        model.forward(p, fresh);
        std::vector<float> last;
        for (int t = 0; t + 1 < answer; ++t) {
            const std::span<const float> logits =
                model.forward(std::span(&s.answers[std::size_t(k)][std::size_t(t)], 1), fresh);
            CHECK(argmax(logits) == s.answers[std::size_t(k)][std::size_t(t) + 1]);
            last.assign(logits.begin(), logits.end());
        }
        CHECK(last == s.last_logits[std::size_t(k)]);  // bit for bit
    }
    CHECK(s.answers[0][0] != s.answers[1][0]);  // they differ from the first token
}

TEST_CASE("parallel samples are at most the vocabulary: each starts with its own token") {
    // Sample k's first token is the k-th likeliest, so n samples need n
    // tokens; a vocabulary of 4 has 4. A fifth would read past the end of
    // the ranking (chapter 08's --max-samples above --vocab).
    Config c = test::tiny_config();
    c.vocab_size = 4;
    Transformer model(c, 21);
    const std::vector<int> p = fixed_prompt(6, c.vocab_size, 4);
    BlockPool pool(c, 4, 200);
    const ParallelSamples four = sample_in_parallel(model, pool, p, 3, 4);
    std::vector<int> first;
    for (const std::vector<int>& answer : four.answers) first.push_back(answer[0]);
    std::sort(first.begin(), first.end());
    CHECK(first == std::vector<int>{0, 1, 2, 3});
    for (int n : {5, 8, 64}) {
        CAPTURE(n);
        BlockPool fresh(c, 4, 200);
        CHECK_THROWS_WITH_AS(sample_in_parallel(model, fresh, p, 3, n),
                             doctest::Contains("1 to 4 samples (the vocabulary)"),
                             std::invalid_argument);
        CHECK(fresh.used_blocks() == 0);  // refused before anything was taken
    }
    CHECK_THROWS_AS(sample_in_parallel(model, pool, p, 3, 0), std::invalid_argument);
    CHECK_THROWS_AS(sample_in_parallel(model, pool, p, 0, 2), std::invalid_argument);
}
