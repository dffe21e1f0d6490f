// Chapter 10: what a narrower cache costs the answer.
//
// The engine proves that the cache, batching, paging and sharing change
// nothing but time and memory. A narrower number format is the first
// change in the book that does change the answer: every key and value is
// rounded once as it is written, and attention reads the rounded ones.
// How much does that move the logits, and when does it change a token?
//
// Decode one answer greedily in float32 and feed each of its tokens to a
// cache of every other format too (teacher forcing), so that at each step
// all of them read the same text and their logits compare one for one:
//   - the largest logit difference, over every step and every token;
//   - the divergence of the next-token distributions, KL(p32 || p), in
//     nats: what the format's distribution loses against float32's;
//   - the first step whose greedy token differs from float32's. Until that
//     step the format, decoding greedily on its own, would have fed exactly
//     the tokens float32 fed, so it is where the format's own answer departs
//     from float32's (tests/answer_agreement_test.cpp checks it).
#pragma once

#include <algorithm>
#include <cmath>
#include <span>
#include <utility>
#include <vector>

#include "../../common/core/generation.h"  // larger_difference
#include "../../common/core/kv_cache.h"
#include "../../common/core/number_format.h"
#include "../../common/core/transformer.h"

namespace kv::ch10 {

// One answer in one format against float32's.
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
        largest_logit_difference =
            larger_difference(largest_logit_difference, c.largest_logit_difference);
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

// One prompt's answer in every format, float32 first: float32 chooses each
// token greedily and every cache is fed it. `caches` (one per format) may
// already hold the prompt's start: each is fed the rest, `prompt`, in a pass
// of its own, then each step is one batched pass of all the formats, which
// gives each sequence its logits alone (chapter 04), for about the time of
// one. The caches are taken by value: the caller's stay as they were, so
// many answers can start from one prefilled prefix (chapter 08's idea).
struct FormatAnswers {
    std::vector<int> tokens;                // float32's greedy answer
    std::vector<AnswerComparison> formats;  // (formats) each against float32, float32 too
};

inline FormatAnswers compare_formats(Transformer& model, std::vector<KVCache> caches,
                                     std::span<const int> prompt, int answer_len) {
    std::vector<std::vector<float>> logits;  // (formats, vocab) each cache's latest
    for (KVCache& cache : caches) {
        const std::span<const float> l = model.forward(prompt, cache);
        logits.emplace_back(l.begin(), l.end());
    }
    FormatAnswers a{{}, std::vector<AnswerComparison>(caches.size(), {answer_len, answer_len})};
    std::vector<SequenceInput> inputs(caches.size());
    for (int s = 0; s < answer_len; ++s) {
        a.tokens.push_back(argmax(logits[0]));
        for (std::size_t i = 0; i < caches.size(); ++i) {
            AnswerComparison& c = a.formats[i];
            for (std::size_t v = 0; v < logits[i].size(); ++v)
                c.largest_logit_difference = larger_difference(
                    c.largest_logit_difference, std::fabs(double(logits[i][v]) - logits[0][v]));
            const double kl = kl_divergence(logits[0], logits[i]);
            c.kl_sum += kl;
            c.kl_max = std::max(c.kl_max, kl);
            if (c.identical() && argmax(logits[i]) != a.tokens.back()) c.first_difference = s;
        }
        if (s + 1 == answer_len) break;
        for (std::size_t i = 0; i < caches.size(); ++i)
            inputs[i] = {std::span(&a.tokens.back(), 1), &caches[i]};
        const Matrix& rows = model.forward(inputs);
        for (std::size_t i = 0; i < caches.size(); ++i)
            logits[i].assign(rows.row_span(int(i)).begin(), rows.row_span(int(i)).end());
    }
    return a;
}

// The same from empty caches of each of `formats`, each the whole answer long.
inline FormatAnswers compare_formats(Transformer& model, std::span<const int> prompt,
                                     int answer_len, std::span<const NumberFormat> formats) {
    std::vector<KVCache> caches;
    for (const NumberFormat f : formats)
        caches.emplace_back(model.config(), int(prompt.size()) + answer_len - 1, f);
    return compare_formats(model, std::move(caches), prompt, answer_len);
}

}  // namespace kv::ch10
