// The Llama-shaped decoder and its one forward pass.
//
// Every way of generating text in the book calls forward():
//   naive decoding   (chapter 01): a fresh cache and the whole sequence, every step;
//   cached decoding  (chapter 02): the prompt once (prefill), then one token at a time;
//   batched decoding (chapter 04): one new token for each of many sequences at once;
//   paged, shared and mixed steps (chapters 07-09): caches in blocks, blocks shared
//     by several sequences, and decode rows beside prompt chunks in one pass.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "attention.h"
#include "config.h"
#include "kernels.h"
#include "kv_cache.h"
#include "kv_store.h"
#include "matrix.h"
#include "weights.h"

namespace kv {

// One sequence's part of a forward pass: its new tokens and its cache. The
// tokens go to positions cache->length() onwards.
struct SequenceInput {
    std::span<const int> tokens;
    KVStore* cache;  // contiguous (KVCache) or paged (PagedKVCache)
};

class Transformer {
  public:
    Transformer(const Config& config, Weights weights);
    Transformer(const Config& config, std::uint64_t seed)
        : Transformer(config, random_weights(config, seed)) {}

    // The forward pass for one sequence: appends the keys and values of
    // `tokens` to `cache` and returns the logits after the last of them:
    // the scores of every possible next token. A number that stops being
    // finite throws NonFiniteError (finite_numbers.h), the cache as it was.
    std::span<const float> forward(std::span<const int> tokens, KVStore& cache);

    // The same for several sequences at once: the weight products run once
    // over all their rows, attention per sequence over its own cache. Row i
    // of the result holds the logits after chunk i's last token.
    const Matrix& forward(std::span<const SequenceInput> inputs);
    // The same, tokens[i] joining caches[i].
    const Matrix& forward(std::span<const std::vector<int>> tokens, std::span<KVCache> caches);

    // The matrix-product kernel of each row class, chosen by measurement
    // when the model is built (kernel_plan.h): it only changes the time.
    MatmulChoice matmul_kernels;

    const Config& config() const { return config_; }
    const Weights& weights() const { return weights_; }

    // Token-positions pushed through the layers: tells whether a cache was used.
    std::uint64_t positions_processed() const { return positions_processed_; }

  private:
    void check(std::span<const SequenceInput> inputs) const;
    void reserve(std::span<const SequenceInput> inputs);
    const Matrix& pass(std::span<const SequenceInput> inputs);  // forward() after its checks
    void append_to_cache(const SequenceInput& input, int first_row, int layer);
    void attention(const SequenceInput& input, int first_row, int layer);
    void attend_group(int row, int pos, int kv_head);  // one pass per group of query heads
    // finite_numbers.cpp: a NonFiniteError where a number stops being finite.
    void check_layer_numbers(std::span<const SequenceInput> inputs, int layer, int rows);
    void check_keys_values(std::span<const SequenceInput> inputs, int layer, int rows);
    void check_logits(std::span<const SequenceInput> inputs);

    Config config_;
    Weights weights_;
    RopeTable rope_;  // cosines and sines for positions 0..max_seq-1
    std::uint64_t positions_processed_ = 0;

    // Scratch space, one row per token in flight, allocated once and reused.
    Matrix x_;                   // (rows, dim)    the residual stream
    Matrix xb_;                  // (rows, dim)    x after RMSNorm
    Matrix q_;                   // (rows, dim)    queries
    Matrix k_;                   // (rows, kv_dim) keys of the new tokens
    Matrix v_;                   // (rows, kv_dim) values of the new tokens
    Matrix att_;                 // (rows, dim)    attention output, all heads
    Matrix proj_;                // (rows, dim)    output of wo or w2, added to x
    Matrix gate_;                // (rows, ffn)    w1 x, then silu(w1 x) * w3 x
    Matrix up_;                  // (rows, ffn)    w3 x
    Matrix last_;                // (chunks, dim)  the normalized last row of each chunk
    Matrix logits_;              // (chunks, vocab)
    std::vector<float> scores_;  // (group, max_seq) attention scores of one KV head's query heads
    std::vector<KVRun> runs_;    // where one sequence's cached positions sit, in order
    RowFormat row_format_;       // how runs_ keeps each position's key (and value)
    std::vector<StoredRun> key_runs_, value_runs_;  // one KV head's part of runs_
};

// Greedy decoding picks the highest-scoring token; ties go to the lowest id.
// A NaN among the logits throws std::domain_error (no token is the choice).
int argmax(std::span<const float> logits);

}  // namespace kv
