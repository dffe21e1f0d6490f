// Chapter 10's measure of what a narrower cache costs the answer: the KL
// divergence by hand, float32 against itself, every format answered at
// once against each alone, the first differing step of teacher-forced
// decoding against the format's own greedy answer, and answers started from
// copies of one prefilled prefix (the long answers) against whole prompts.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <span>
#include <string>
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

namespace {

// The format's own answer, alone: greedy when `fed` is empty, else fed
// `fed`'s tokens (teacher forcing); every step's logits in `logits`.
std::vector<int> answer_alone(Transformer& model, std::span<const int> prompt, int answer_len,
                              NumberFormat format, std::span<const int> fed,
                              std::vector<std::vector<float>>* logits = nullptr) {
    NarrowKVCache cache(model.config(), int(prompt.size()) + answer_len - 1, format);
    std::vector<int> answer;
    std::span<const float> l = model.forward(prompt, cache);
    for (int s = 0; s < answer_len; ++s) {
        if (logits) logits->emplace_back(l.begin(), l.end());
        answer.push_back(fed.empty() ? argmax(l) : fed[std::size_t(s)]);
        if (s + 1 < answer_len) l = model.forward(std::span(&answer.back(), 1), cache);
    }
    return answer;
}

}  // namespace

TEST_CASE("float32 against itself: no difference and every token agrees") {
    const Config c = test::tiny_config();
    Transformer model(c, 4);
    const std::vector<int> prompt = fixed_prompt(6, c.vocab_size, 4);
    const std::vector<NumberFormat> twice = {NumberFormat::float32, NumberFormat::float32};
    const FormatAnswers a = compare_formats(model, prompt, 20, twice);
    REQUIRE(a.tokens.size() == 20);
    for (const Agreement& same : a.formats) {
        CHECK(same.steps == 20);
        CHECK(same.largest_logit_difference == 0.0);
        CHECK(same.kl_sum == 0.0);
        CHECK(same.identical == 1);
    }
    // The reference is chapter 02's cached answer.
    std::vector<int> cached;
    logits_per_step([&](const StepCallback& on) { return generate_cached(model, prompt, 20, on); },
                    cached);
    CHECK(cached == a.tokens);
}

TEST_CASE("every format answered at once gives what each gives alone") {
    const Config c = test::tiny_config();
    Transformer model(c, 3);
    const std::vector<int> prompt = fixed_prompt(7, c.vocab_size, 3);
    const std::vector<NumberFormat> formats = all_formats();
    const FormatAnswers a = compare_formats(model, prompt, 24, formats);
    std::vector<std::vector<float>> want;
    CHECK(answer_alone(model, prompt, 24, NumberFormat::float32, {}, &want) == a.tokens);
    for (std::size_t i = 0; i < formats.size(); ++i) {
        std::vector<std::vector<float>> got;
        answer_alone(model, prompt, 24, formats[i], a.tokens, &got);
        double largest = 0, kl = 0;
        int first = 24;
        for (std::size_t s = 0; s < got.size(); ++s) {
            kl += kl_divergence(want[s], got[s]);
            for (std::size_t v = 0; v < got[s].size(); ++v)
                largest = std::max(largest, std::fabs(double(got[s][v]) - want[s][v]));
            if (first == 24 && argmax(got[s]) != a.tokens[s]) first = int(s);
        }
        INFO(format_name(formats[i]));
        CHECK(a.formats[i].largest_logit_difference == largest);  // bit for bit
        CHECK(a.formats[i].kl_sum == kl);
        CHECK(a.formats[i].agreeing == first);
        CHECK(a.formats[i].identical == int(first == 24));
        CHECK((largest > 0) == (formats[i] != NumberFormat::float32));
    }
}

TEST_CASE("the first differing step is where the format's own greedy answer departs") {
    const Config c = test::tiny_config();
    int departed = 0;  // answers whose own greedy decoding left float32's
    for (const NumberFormat format : {NumberFormat::bfloat16, NumberFormat::int8})
        for (std::uint64_t seed = 1; seed <= 6; ++seed) {
            Transformer model(c, seed);
            const std::vector<int> prompt = fixed_prompt(5, c.vocab_size, seed);
            const std::vector<NumberFormat> pair = {NumberFormat::float32, format};
            const FormatAnswers a = compare_formats(model, prompt, 40, pair);
            const Agreement& cmp = a.formats[1];
            CHECK(cmp.largest_logit_difference > 0.0);
            CHECK(cmp.kl_sum > 0.0);
            const std::vector<int> own = answer_alone(model, prompt, 40, format, {});
            for (int s = 0; s < cmp.agreeing; ++s)
                CHECK(own[std::size_t(s)] == a.tokens[std::size_t(s)]);
            if (!cmp.identical) {
                ++departed;
                CHECK(own[std::size_t(cmp.agreeing)] != a.tokens[std::size_t(cmp.agreeing)]);
            }
        }
    CHECK(departed > 0);  // else this test would check nothing
}

namespace {

// The fields in which two comparisons of every format differ, bit for bit;
// none: the same.
std::vector<std::string> differences(const FormatAnswers& got, const FormatAnswers& want) {
    std::vector<std::string> d;
    if (got.tokens != want.tokens) d.push_back("tokens");
    if (got.formats.size() != want.formats.size()) return d.push_back("formats"), d;
    for (std::size_t i = 0; i < got.formats.size(); ++i) {
        const Agreement &g = got.formats[i], &w = want.formats[i];
        const std::string at = " of format " + std::to_string(i);
        if (g.steps != w.steps) d.push_back("steps" + at);
        if (g.identical != w.identical) d.push_back("identical" + at);
        if (g.agreeing != w.agreeing) d.push_back("agreeing" + at);
        if (g.largest_logit_difference != w.largest_logit_difference)
            d.push_back("largest logit difference" + at);
        if (g.kl_sum != w.kl_sum) d.push_back("kl sum" + at);
        if (g.kl_max != w.kl_max) d.push_back("kl max" + at);
    }
    return d;
}

void check_same(const FormatAnswers& got, const FormatAnswers& want) {
    const std::vector<std::string> d = differences(got, want);
    std::string fields;
    for (const std::string& field : d) fields += " " + field;
    INFO("differs:" << fields);
    CHECK(d.empty());
}

// A cache of every format holding `prefix`, with room for `rest` more positions.
std::vector<NarrowKVCache> prefilled(Transformer& model, std::span<const int> prefix, int rest) {
    std::vector<NarrowKVCache> caches;
    for (const NumberFormat f : all_formats()) {
        caches.emplace_back(model.config(), int(prefix.size()) + rest, f);
        model.forward(prefix, caches.back());
    }
    return caches;
}

std::vector<int> joined(std::vector<int> prefix, const std::vector<int>& tail) {
    prefix.insert(prefix.end(), tail.begin(), tail.end());
    return prefix;
}

}  // namespace

TEST_CASE("an answer from a copied prefix cache and its tail is the whole prompt's answer") {
    const Config c = test::tiny_config();
    const int answer = 20;
    for (std::uint64_t seed = 1; seed <= 3; ++seed) {
        Transformer model(c, seed);
        const std::vector<int> prefix = fixed_prompt(11, c.vocab_size, seed);
        const std::vector<int> tail = fixed_prompt(4, c.vocab_size, seed + 100);
        const std::vector<NarrowKVCache> caches = prefilled(model, prefix, 4 + answer - 1);
        // The tail's pass after the prefix's gives the whole prompt's logits, bit for bit.
        for (const NarrowKVCache& cache : caches) {
            NarrowKVCache copy = cache, whole(c, 15, cache.number_format());
            const std::span<const float> l = model.forward(tail, copy);
            const std::vector<float> from_prefix(l.begin(), l.end());
            const std::span<const float> w = model.forward(joined(prefix, tail), whole);
            INFO(format_name(cache.number_format()));
            CHECK(from_prefix == std::vector<float>(w.begin(), w.end()));
        }
        // And so does every step of the answer, in every format.
        const FormatAnswers whole =
            compare_formats(model, joined(prefix, tail), answer, all_formats());
        check_same(compare_formats(model, caches, tail, answer), whole);
        CHECK(whole.formats[3].largest_logit_difference > 0);  // int8 differs: something compared
    }
}

namespace {

// One prefix and two prompts after it, a's answer from its whole prompt.
struct OnePrefix {
    Config c = test::tiny_config();
    Transformer model{c, 7};
    int answer = 16;
    std::vector<int> prefix = fixed_prompt(9, c.vocab_size, 7);
    std::vector<int> a = fixed_prompt(5, c.vocab_size, 8), b = fixed_prompt(5, c.vocab_size, 9);
    FormatAnswers whole_a = compare_formats(model, joined(prefix, a), answer, all_formats());
};

}  // namespace

// Each answer from the prefilled caches, one after another, against its
// whole prompt from empty caches. (Not the first answer again against
// itself: the caches are copied, so a second run of it could only agree.)
TEST_CASE_FIXTURE(OnePrefix, "answers from one prefix do not disturb each other or the prefix") {
    const std::vector<NarrowKVCache> caches = prefilled(model, prefix, 5 + answer - 1);
    const FormatAnswers first_a = compare_formats(model, caches, a, answer);
    const FormatAnswers then_b = compare_formats(model, caches, b, answer);
    const FormatAnswers a_again = compare_formats(model, caches, a, answer);
    check_same(first_a, whole_a);
    check_same(then_b, compare_formats(model, joined(prefix, b), answer, all_formats()));
    check_same(a_again, whole_a);            // b ran before it
    CHECK(first_a.tokens != then_b.tokens);  // two answers, not one twice
    for (const NarrowKVCache& cache : caches) CHECK(cache.length() == int(prefix.size()));
}

// A planted fault: b's prompt fed into the prefix's own caches, as an
// engine that shared them instead of copying them would. The check above
// then says no.
TEST_CASE_FIXTURE(OnePrefix,
                  "an answer from a prefix that another answer disturbed is seen to differ") {
    std::vector<NarrowKVCache> caches = prefilled(model, prefix, 2 * (5 + answer));
    check_same(compare_formats(model, caches, a, answer), whole_a);  // undisturbed: the same
    for (NarrowKVCache& cache : caches) model.forward(b, cache);
    CHECK_FALSE(differences(compare_formats(model, caches, a, answer), whole_a).empty());
}

// The chapter's tables print totals, not single answers: adding up must
// sum the counts, keep the largest differences (a NaN among them wins) and
// give the shares and means over every token compared.
TEST_CASE("answers add up: counts sum, largest values stay, shares over every token") {
    using kv::ch10::Agreement;
    const Agreement kept{.answers = 1,
                         .identical = 1,
                         .steps = 48,
                         .agreeing = 48,
                         .largest_logit_difference = 0.01,
                         .kl_sum = 0.5,
                         .kl_max = 0.02};
    const Agreement changed{.answers = 1,
                            .identical = 0,
                            .steps = 32,
                            .agreeing = 20,
                            .largest_logit_difference = 0.03,
                            .kl_sum = 1.5,
                            .kl_max = 0.05};
    Agreement total;
    CHECK(total.agreement() == 1.0);  // nothing compared: nothing disagrees
    CHECK(total.mean_kl() == 0.0);
    total.add(kept);
    total.add(changed);
    CHECK(total.answers == 2);
    CHECK(total.identical == 1);
    CHECK(total.steps == 80);
    CHECK(total.agreeing == 68);
    CHECK(total.largest_logit_difference == 0.03);
    CHECK(total.kl_sum == 2.0);
    CHECK(total.kl_max == 0.05);
    CHECK(total.agreement() == 68.0 / 80.0);  // over tokens, not the mean of two shares
    CHECK(total.mean_kl() == 2.0 / 80.0);
    Agreement broken = changed;
    broken.largest_logit_difference = std::nan("");
    total.add(broken);
    CHECK(std::isnan(total.largest_logit_difference));
}
