// Chapter 04 exercises (see chapters/04_batched_decoding/EXERCISES.md).
// Skipped until you enable them: ./build/book_tests -ts="exercises ch04" --no-skip
// (or remove * doctest::skip() from one case).
#include <doctest/doctest.h>

#include <stdexcept>
#include <vector>

#include "../chapters/04_batched_decoding/exercises.h"
#include "../common/core/batched_decoding.h"
#include "../common/core/cached_decoding.h"
#include "tiny_models.h"

using namespace kv;
using namespace kv::exercises;

namespace {

// Sequences 0..2 prefilled and ready to decode, with the token each feeds next.
struct Running {
    std::vector<KVCache> caches;
    std::vector<KVCache*> members;
    std::vector<int> tokens;

    Running(Transformer& model, const std::vector<std::vector<int>>& prompts) {
        caches.reserve(prompts.size());
        for (const auto& p : prompts) {
            caches.emplace_back(model.config(), 32);
            tokens.push_back(argmax(prefill(model, p, caches.back())));
            members.push_back(&caches.back());
        }
    }
};

BatchTiming timing(int batch, double tokens_per_second) {
    BatchTiming t;
    t.batch = batch;
    t.step_seconds = batch / tokens_per_second;
    return t;
}

}  // namespace

TEST_SUITE("exercises ch04") {
    TEST_CASE("exercise 04.4 decode_with_prefill" * doctest::skip()) {
        const Config c = test::tiny_config();
        const std::vector<std::vector<int>> prompts = {{3, 1, 4}, {1, 5, 9, 2, 6}, {5}};
        const std::vector<int> newcomer = {2, 7, 1, 8, 2, 8};
        // The reference: a decode step, then the newcomer's prefill on its own.
        Transformer model(c, 12);
        Running apart(model, prompts);
        const Matrix decoded = decode_batch(model, apart.tokens, apart.members);
        KVCache newcomer_apart(c, 32);
        const auto first = prefill(model, newcomer, newcomer_apart);
        const std::vector<float> newcomer_logits(first.begin(), first.end());

        // Both in one forward pass.
        Transformer twin(c, 12);
        Running together(twin, prompts);
        KVCache newcomer_together(c, 32);
        const std::uint64_t before = twin.positions_processed();
        const Matrix& both = decode_with_prefill(twin, together.tokens, together.members, newcomer,
                                                 newcomer_together);
        CHECK(twin.positions_processed() - before == 3 + newcomer.size());
        REQUIRE(both.rows == 4);
        for (int i = 0; i < 3; ++i)
            CHECK(std::vector<float>(both.row(i), both.row(i) + both.cols) ==
                  std::vector<float>(decoded.row(i), decoded.row(i) + decoded.cols));
        CHECK(std::vector<float>(both.row(3), both.row(3) + both.cols) == newcomer_logits);
        CHECK(newcomer_together.length() == 6);
        for (int i = 0; i < 3; ++i) CHECK(together.caches[i].length() == apart.caches[i].length());

        // The newcomer's cache among the decoding ones is an error, and so is
        // a count mismatch; neither touches a cache.
        CHECK_THROWS_AS(decode_with_prefill(twin, together.tokens, together.members, newcomer,
                                            together.caches[1]),
                        std::invalid_argument);
        const std::vector<int> two = {1, 2};
        KVCache spare(c, 32);
        CHECK_THROWS_AS(decode_with_prefill(twin, two, together.members, newcomer, spare),
                        std::invalid_argument);
        CHECK(spare.length() == 0);
        CHECK(together.caches[1].length() == apart.caches[1].length());
    }

    TEST_CASE("exercise 04.5 batch_where_gains_end" * doctest::skip()) {
        // Gains: x2, x1.5, x1.2, x1.05, x1.02.
        const std::vector<BatchTiming> t = {timing(1, 100), timing(2, 200),  timing(4, 300),
                                            timing(8, 360), timing(16, 378), timing(32, 385.56)};
        CHECK(batch_where_gains_end(t, 0.10) == 8);   // 8 -> 16 gains only 5%
        CHECK(batch_where_gains_end(t, 0.30) == 4);   // 4 -> 8 gains 20%
        CHECK(batch_where_gains_end(t, 0.01) == 32);  // every step up pays 1%
        CHECK(batch_where_gains_end(t, 1.50) == 1);   // not even 1 -> 2 gains 150%
        CHECK(batch_where_gains_end({timing(4, 10)}, 0.1) == 4);
        // A dip, then a recovery: the first size where the gain fails counts.
        const std::vector<BatchTiming> dip = {timing(1, 100), timing(2, 90), timing(4, 400)};
        CHECK(batch_where_gains_end(dip, 0.1) == 1);
        CHECK_THROWS_AS(batch_where_gains_end({}, 0.1), std::invalid_argument);
        CHECK_THROWS_AS(batch_where_gains_end(t, -0.5), std::invalid_argument);
    }
}
