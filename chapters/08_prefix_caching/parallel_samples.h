// Chapter 08: n answers to one prompt, sharing its blocks until they differ.
//
// The prompt is prefilled once and every sample's block table starts with
// its blocks (PagedKVCache::fork). A sample about to write into a block
// another still holds (the prompt's partial last block) copies it first:
// copy-on-write. The first n - 1 writers copy; the last writes in place.
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "../../common/core/block_pool.h"
#include "../../common/core/paged_kv_cache.h"
#include "../../common/core/transformer.h"

namespace kv {

// ------------------------------------------------------ the arithmetic

// Blocks for n samples of `positions` positions each whose first `prompt`
// positions are one shared prompt, kept by copy-on-write: the prompt's
// full blocks once, and for each sample every block after them.
inline std::int64_t blocks_with_copy_on_write(int prompt, int positions, int n, int B) {
    const std::int64_t own = blocks_for(positions, B);
    if (positions <= prompt) return blocks_for(prompt, B);  // nobody wrote: all shared
    const std::int64_t full = prompt / B;
    return full + std::int64_t(n) * (own - full);
}

// The same samples, each with its own copy of the prompt's cache.
inline std::int64_t blocks_copying_the_prompt(int positions, int n, int B) {
    return std::int64_t(n) * blocks_for(positions, B);
}

// ------------------------------------------------------ on the engine

struct ParallelSamples {
    std::vector<std::vector<int>> answers;        // (n, answer_len) each sample's tokens
    int blocks_used = 0;                          // the pool's, once every answer is written
    int copies_on_write = 0;                      // over every sample's table
    std::vector<std::vector<float>> last_logits;  // (n, vocab) each sample's at its last step
};

// Prefills `prompt` once, forks it n - 1 times and decodes n answers of
// `answer_len` tokens in one batch, with blocks from `pool` (which must be
// empty). Sample k's first token is the k-th likeliest (as sampling would
// make them differ; the book draws nothing at random so that every machine
// gives the same tokens); after it, each takes its likeliest. So n is at
// most the vocabulary: n first tokens must be n different tokens.
inline ParallelSamples sample_in_parallel(Transformer& model, BlockPool& pool,
                                          std::span<const int> prompt, int answer_len, int n) {
    const int vocab = model.config().vocab_size;
    if (n < 1 || n > vocab || answer_len < 1)
        throw std::invalid_argument("sample_in_parallel: " + std::to_string(n) + " samples of " +
                                    std::to_string(answer_len) + " tokens; 1 to " +
                                    std::to_string(vocab) +
                                    " samples (the vocabulary) of at least 1 token");
    const int capacity = int(prompt.size()) + answer_len - 1;
    std::vector<PagedKVCache> samples;
    samples.reserve(std::size_t(n));
    samples.emplace_back(pool, capacity);
    const std::span<const float> first = model.forward(prompt, samples[0]);
    std::vector<int> order(first.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return first[std::size_t(a)] > first[std::size_t(b)]; });
    for (int k = 1; k < n; ++k) samples.push_back(samples[0].fork());

    ParallelSamples out;
    out.answers.resize(std::size_t(n));
    for (int k = 0; k < n; ++k) out.answers[std::size_t(k)].push_back(order[std::size_t(k)]);
    std::vector<SequenceInput> step(static_cast<std::size_t>(n));
    for (int t = 1; t < answer_len; ++t) {
        for (int k = 0; k < n; ++k)
            step[std::size_t(k)] = {std::span(&out.answers[std::size_t(k)].back(), 1),
                                    &samples[std::size_t(k)]};
        const Matrix& logits = model.forward(step);
        for (int k = 0; k < n; ++k)
            out.answers[std::size_t(k)].push_back(argmax(logits.row_span(k)));
        if (t + 1 == answer_len)
            for (int k = 0; k < n; ++k)
                out.last_logits.emplace_back(logits.row_span(k).begin(), logits.row_span(k).end());
    }
    out.blocks_used = pool.used_blocks();
    for (const PagedKVCache& s : samples) out.copies_on_write += s.copies_on_write();
    return out;
}

}  // namespace kv
