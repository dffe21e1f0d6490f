// Chapter 10: what a narrower cache costs the answer.
//
// The engine proves that the cache, batching, paging and sharing change
// nothing but time and memory. A narrower number format is the first
// change in the book that does change the answer: every key and value is
// rounded once as it is written, and attention reads the rounded ones.
// How much does that move the logits, and when does it change a token?
//
// Decode one answer twice: with a float32 cache (the reference, greedy),
// and with a cache of the format in question, fed the float32 answer's
// tokens (teacher forcing), so that at each step both read the same text
// and their logits compare number for number:
//   - the largest logit difference, over every step and every token;
//   - the divergence of the next-token distributions, KL(p32 || p), in
//     nats: what the format's distribution loses against float32's;
//   - the first step whose greedy token differs from float32's. Until that
//     step the format, decoding greedily on its own, would have fed exactly
//     the tokens float32 fed, so it is where the format's own answer departs
//     from float32's (tests/cache_number_format_test.cpp checks it).
#pragma once

#include <algorithm>
#include <cmath>
#include <span>
#include <vector>

#include "../../common/core/kv_cache.h"
#include "../../common/core/number_format.h"
#include "../../common/core/transformer.h"

namespace kv::ch10 {

// float32's greedy answer and every step's logits.
struct ReferenceAnswer {
    std::vector<int> tokens;                 // the answer
    std::vector<std::vector<float>> logits;  // (step, vocab): step s chose tokens[s]
};

// One answer in one format against the reference.
struct AnswerComparison {
    int steps = 0;                          // answer tokens compared
    int first_difference = 0;               // first step whose greedy token differs; steps if none
    double largest_logit_difference = 0.0;  // over every step and token
    double kl_sum = 0.0;                    // KL(p32 || p) summed over the steps, in nats
    double kl_max = 0.0;                    // the largest step's

    bool identical() const { return first_difference == steps; }
};

// Many answers in one format, added up.
struct AgreementTotals {
    int answers = 0;
    int identical = 0;  // answers whose every greedy token is float32's
    long steps = 0;     // answer tokens compared
    long agreeing = 0;  // of them, before each answer's first difference
    double largest_logit_difference = 0.0;
    double kl_sum = 0.0, kl_max = 0.0;

    void add(const AnswerComparison& c) {
        ++answers;
        identical += c.identical();
        steps += c.steps;
        agreeing += c.first_difference;
        largest_logit_difference = std::max(largest_logit_difference, c.largest_logit_difference);
        kl_sum += c.kl_sum;
        kl_max = std::max(kl_max, c.kl_max);
    }
    double agreement() const { return steps ? double(agreeing) / double(steps) : 1.0; }
    double mean_kl() const { return steps ? kl_sum / double(steps) : 0.0; }
};

// KL(p || q) for the softmax distributions of two logit rows, in double.
inline double kl_divergence(std::span<const float> p_logits, std::span<const float> q_logits) {
    auto log_normalizer = [](std::span<const float> l) {
        const double top = *std::max_element(l.begin(), l.end());
        double sum = 0.0;
        for (float x : l) sum += std::exp(double(x) - top);
        return top + std::log(sum);
    };
    const double zp = log_normalizer(p_logits), zq = log_normalizer(q_logits);
    double kl = 0.0;
    for (std::size_t i = 0; i < p_logits.size(); ++i) {
        const double log_p = double(p_logits[i]) - zp, log_q = double(q_logits[i]) - zq;
        kl += std::exp(log_p) * (log_p - log_q);
    }
    return std::max(kl, 0.0);  // rounding can leave -1e-17 where the rows are equal
}

// The prompt in one pass, then `answer_len` - 1 decode steps, into `cache`;
// fed tokens[s] after step s when `tokens` is given (teacher forcing),
// greedy otherwise. Calls on_step(s, logits) for each answer step.
template <class OnStep>
std::vector<int> decode_answer(Transformer& model, std::span<const int> prompt, int answer_len,
                               KVCache& cache, std::span<const int> tokens, OnStep&& on_step) {
    std::vector<int> answer;
    std::span<const float> logits = model.forward(prompt, cache);
    for (int s = 0; s < answer_len; ++s) {
        on_step(s, logits);
        answer.push_back(tokens.empty() ? argmax(logits) : tokens[std::size_t(s)]);
        if (s + 1 < answer_len) logits = model.forward(std::span(&answer.back(), 1), cache);
    }
    return answer;
}

inline ReferenceAnswer float32_answer(Transformer& model, std::span<const int> prompt,
                                      int answer_len) {
    ReferenceAnswer ref;
    KVCache cache(model.config(), int(prompt.size()) + answer_len - 1);
    ref.tokens = decode_answer(
        model, prompt, answer_len, cache, {},
        [&](int, std::span<const float> l) { ref.logits.emplace_back(l.begin(), l.end()); });
    return ref;
}

inline AnswerComparison compare_answer(Transformer& model, std::span<const int> prompt,
                                       const ReferenceAnswer& ref, NumberFormat format) {
    AnswerComparison c;
    c.steps = int(ref.tokens.size());
    c.first_difference = c.steps;
    KVCache cache(model.config(), int(prompt.size()) + c.steps - 1, format);
    decode_answer(model, prompt, c.steps, cache, ref.tokens, [&](int s, std::span<const float> l) {
        const std::vector<float>& want = ref.logits[std::size_t(s)];
        for (std::size_t i = 0; i < l.size(); ++i)
            c.largest_logit_difference =
                std::max(c.largest_logit_difference, std::fabs(double(l[i]) - double(want[i])));
        const double kl = kl_divergence(want, l);
        c.kl_sum += kl;
        c.kl_max = std::max(c.kl_max, kl);
        if (c.first_difference == c.steps && argmax(l) != ref.tokens[std::size_t(s)])
            c.first_difference = s;
    });
    return c;
}

}  // namespace kv::ch10
