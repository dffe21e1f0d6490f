// Chapter 10's measure of what a narrower cache costs the answer: the KL
// divergence by hand, float32 against itself, and the first differing
// step of teacher-forced decoding against the format's own greedy answer.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "../chapters/10_cache_number_format/answer_agreement.h"
#include "../common/core/cached_decoding.h"
#include "../common/core/generation.h"
#include "tiny_models.h"

using namespace kv;
using namespace kv::ch10;

TEST_CASE("KL divergence of two softmax rows by hand") {
    // p = (1/2, 1/2), q = (1/4, 3/4): 1/2 ln 2 + 1/2 ln(2/3).
    const std::vector<float> p = {0.0f, 0.0f}, q = {0.0f, float(std::log(3.0))};
    CHECK(kl_divergence(p, q) == doctest::Approx(0.5 * std::log(2.0) + 0.5 * std::log(2.0 / 3)));
    CHECK(kl_divergence(p, p) == 0.0);
    // Adding a constant to every logit changes no probability.
    const std::vector<float> shifted = {5.0f, 5.0f};
    CHECK(kl_divergence(p, shifted) == doctest::Approx(0.0).epsilon(1e-12));
}

TEST_CASE("float32 against itself: no difference and every token agrees") {
    const Config c = test::tiny_config();
    Transformer model(c, 4);
    const std::vector<int> prompt = fixed_prompt(6, c.vocab_size, 4);
    const ReferenceAnswer ref = float32_answer(model, prompt, 20);
    CHECK(ref.tokens.size() == 20);
    CHECK(ref.logits.size() == 20);
    const AnswerComparison same = compare_answer(model, prompt, ref, NumberFormat::float32);
    CHECK(same.largest_logit_difference == 0.0);
    CHECK(same.kl_sum == 0.0);
    CHECK(same.identical());
    // The reference is chapter 02's cached answer.
    std::vector<int> cached;
    logits_per_step([&](const StepCallback& on) { return generate_cached(model, prompt, 20, on); },
                    cached);
    CHECK(cached == ref.tokens);
}

TEST_CASE("the first differing step is where the format's own greedy answer departs") {
    const Config c = test::tiny_config();
    int departed = 0;  // answers whose own greedy decoding left float32's
    for (const NumberFormat format : {NumberFormat::bfloat16, NumberFormat::int8})
        for (std::uint64_t seed = 1; seed <= 6; ++seed) {
            Transformer model(c, seed);
            const std::vector<int> prompt = fixed_prompt(5, c.vocab_size, seed);
            const ReferenceAnswer ref = float32_answer(model, prompt, 40);
            const AnswerComparison cmp = compare_answer(model, prompt, ref, format);
            CHECK(cmp.largest_logit_difference > 0.0);
            CHECK(cmp.kl_sum > 0.0);
            KVCache cache(c, 5 + 40 - 1, format);
            const std::vector<int> own =
                decode_answer(model, prompt, 40, cache, {}, [](int, std::span<const float>) {});
            for (int s = 0; s < cmp.first_difference; ++s)
                CHECK(own[std::size_t(s)] == ref.tokens[std::size_t(s)]);
            if (!cmp.identical()) {
                ++departed;
                CHECK(own[std::size_t(cmp.first_difference)] !=
                      ref.tokens[std::size_t(cmp.first_difference)]);
            }
        }
    CHECK(departed > 0);  // else this test would check nothing
}
