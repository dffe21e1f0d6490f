// Chapter 01: naive decoding recomputes everything, and the counter proves it.
#include <doctest/doctest.h>

#include <set>
#include <vector>

#include "../common/core/naive_decoding.h"
#include "tiny_models.h"

using namespace kv;

TEST_CASE("naive decoding processes the full triangle of token-positions") {
    const Config c = test::tiny_config();
    for (int prompt_len : {1, 5})
        for (int answer_len : {1, 2, 10}) {
            Transformer model(c, 4);
            const std::vector<int> prompt = fixed_prompt(prompt_len, c.vocab_size, 4);
            const std::vector<int> answer = generate_naive(model, prompt, answer_len);
            CHECK(answer.size() == std::size_t(answer_len));
            // p + (p+1) + ... + (p+n-1), counted by hand and by the formula.
            std::uint64_t by_hand = 0;
            for (int i = 0; i < answer_len; ++i) by_hand += prompt_len + i;
            CHECK(model.positions_processed() == by_hand);
            CHECK(naive_positions(prompt_len, answer_len) == by_hand);
        }
}

TEST_CASE("naive decoding calls back once per token with the chosen token's logits") {
    const Config c = test::tiny_config();
    Transformer model(c, 4);
    const std::vector<int> prompt = {3, 1, 4};
    std::vector<int> argmaxes;
    const std::vector<int> answer =
        generate_naive(model, prompt, 6, [&](int step, std::span<const float> l) {
            CHECK(step == int(argmaxes.size()));
            CHECK(l.size() == std::size_t(c.vocab_size));
            argmaxes.push_back(argmax(l));
        });
    CHECK(argmaxes == answer);
}

TEST_CASE("the random model does not repeat one token forever") {
    // A degenerate model would make every cached-vs-naive comparison empty.
    for (const Config& c : test::shapes_to_check()) {
        Transformer model(c, 1);
        const std::vector<int> answer = generate_naive(model, fixed_prompt(4, c.vocab_size, 1), 16);
        const std::set<int> distinct(answer.begin(), answer.end());
        CHECK(distinct.size() >= 4);
    }
}
