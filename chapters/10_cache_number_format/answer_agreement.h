// Chapter 10: what a narrower cache costs the answer.
//
// A narrower number format is the book's first change that does change the
// answer: each key and value is rounded once as it is written, and attention
// reads the rounded ones. Decode one answer greedily in float32 and feed each
// of its tokens to a cache of every other format too (teacher forcing), so
// that at each step all read the same text and their logits compare one for
// one: the largest logit difference; the divergence KL(p32 || p) of the
// next-token distributions, in nats; and the first step whose greedy token
// differs from float32's. Until that step the format, decoding greedily on
// its own, would have fed exactly float32's tokens, so it is where its own
// answer departs (tests/answer_agreement_test.cpp checks it).
#pragma once

#include <algorithm>
#include <cmath>
#include <span>
#include <utility>
#include <vector>

#include "../../common/core/generation.h"  // larger_difference
#include "../../common/core/narrow_kv_cache.h"
#include "../../common/core/number_format.h"
#include "../../common/core/transformer.h"

namespace kv::ch10 {

// Answers in one format against float32's: one answer, or many added up.
struct Agreement {
    int answers = 0;
    int identical = 0;                      // answers whose every greedy token is float32's
    long steps = 0;                         // answer tokens compared
    long agreeing = 0;                      // of them, before each answer's first difference
    double largest_logit_difference = 0.0;  // over every step and token
    double kl_sum = 0.0, kl_max = 0.0;      // KL(p32 || p) over the steps, in nats

    void add(const Agreement& a) {
        answers += a.answers;
        identical += a.identical;
        steps += a.steps;
        agreeing += a.agreeing;
        largest_logit_difference =
            larger_difference(largest_logit_difference, a.largest_logit_difference);
        kl_sum += a.kl_sum;
        kl_max = std::max(kl_max, a.kl_max);
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
// token greedily and every cache is fed it. Each cache, which may hold the
// prompt's start already, is fed `prompt` in a pass of its own; each step
// after is one batched pass of all of them (chapter 04: each one's logits as
// alone, for about the time of one). The caches are taken by value, so that
// many answers can start from one prefilled prefix.
struct FormatAnswers {
    std::vector<int> tokens;         // float32's greedy answer
    std::vector<Agreement> formats;  // (formats) each against float32, float32 too
};

inline FormatAnswers compare_formats(Transformer& model, std::vector<NarrowKVCache> caches,
                                     std::span<const int> prompt, int answer_len) {
    std::vector<std::vector<float>> logits;  // (formats, vocab) each cache's latest
    for (NarrowKVCache& cache : caches) {
        const std::span<const float> l = model.forward(prompt, cache);
        logits.emplace_back(l.begin(), l.end());
    }
    const Agreement same{.answers = 1, .identical = 1, .steps = answer_len, .agreeing = answer_len};
    FormatAnswers a{{}, std::vector<Agreement>(caches.size(), same)};
    std::vector<SequenceInput> inputs(caches.size());
    for (int s = 0; s < answer_len; ++s) {
        a.tokens.push_back(argmax(logits[0]));
        for (std::size_t i = 0; i < caches.size(); ++i) {
            Agreement& c = a.formats[i];
            for (std::size_t v = 0; v < logits[i].size(); ++v)
                c.largest_logit_difference = larger_difference(
                    c.largest_logit_difference, std::fabs(double(logits[i][v]) - logits[0][v]));
            const double kl = kl_divergence(logits[0], logits[i]);
            c.kl_sum += kl;
            c.kl_max = std::max(c.kl_max, kl);
            if (c.identical && argmax(logits[i]) != a.tokens.back()) {
                c.identical = 0;
                c.agreeing = s;
            }
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
    std::vector<NarrowKVCache> caches;
    for (const NumberFormat f : formats)
        caches.emplace_back(model.config(), int(prompt.size()) + answer_len - 1, f);
    return compare_formats(model, std::move(caches), prompt, answer_len);
}

}  // namespace kv::ch10
