#include "transformer.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>
#include <string>

#include "kernels.h"

namespace kv {

Transformer::Transformer(const Config& config, Weights weights)
    : config_((config.validate(), config)),
      weights_(std::move(weights)),
      rope_(config.head_size(), config.max_seq) {
    const Config& c = config_;
    for (Matrix* m : {&x_, &xb_, &q_, &att_, &proj_, &last_}) *m = Matrix(0, c.dim);
    for (Matrix* m : {&k_, &v_}) *m = Matrix(0, c.kv_dim());
    for (Matrix* m : {&gate_, &up_}) *m = Matrix(0, c.ffn_dim);
    logits_ = Matrix(0, c.vocab_size);
    scores_.resize(std::size_t(c.group_size()) * c.max_seq);
    matmul_kernels = matmul_plan(c, weights_);
}

std::span<const float> Transformer::forward(std::span<const int> tokens, KVStore& cache) {
    const SequenceInput input{tokens, &cache};
    return forward(std::span(&input, 1)).row_span(0);
}

const Matrix& Transformer::forward(std::span<const std::vector<int>> tokens,
                                   std::span<KVCache> caches) {
    if (tokens.size() != caches.size())
        throw std::invalid_argument("forward: " + std::to_string(tokens.size()) +
                                    " token lists for " + std::to_string(caches.size()) +
                                    " caches");
    std::vector<SequenceInput> inputs;
    for (std::size_t i = 0; i < tokens.size(); ++i) inputs.push_back({tokens[i], &caches[i]});
    return forward(inputs);
}

// Everything is checked before anything is written, so a bad call leaves
// every cache as it was.
void Transformer::check(std::span<const SequenceInput> inputs) const {
    if (inputs.empty()) throw std::invalid_argument("forward: no sequences given");
    std::set<const KVStore*> seen;
    for (const SequenceInput& input : inputs) {
        if (input.cache == nullptr) throw std::invalid_argument("forward: missing KV cache");
        if (!seen.insert(input.cache).second)
            throw std::invalid_argument("forward: one KV cache given twice in a batch");
        // A cache of another shape would be read and written out of bounds.
        if (input.cache->kv_dim() != config_.kv_dim() ||
            input.cache->n_layers() != config_.n_layers ||
            input.cache->capacity() > config_.max_seq ||
            (input.cache->row_format().format != NumberFormat::float32 &&
             input.cache->row_format().head_size != config_.head_size()))
            throw std::invalid_argument("forward: KV cache made for another model shape");
        if (input.tokens.empty())
            throw std::invalid_argument("forward: a sequence has no new tokens");
        input.cache->check_room(static_cast<int>(input.tokens.size()));
        for (int token : input.tokens)
            if (token < 0 || token >= config_.vocab_size)
                throw std::out_of_range("forward: token " + std::to_string(token) +
                                        " outside the vocabulary 0.." +
                                        std::to_string(config_.vocab_size - 1));
    }
}

// Room for every new position is taken before anything is written. If a
// paged cache finds its pool short, the sequences before it give their new
// blocks back, and the pass throws.
void Transformer::reserve(std::span<const SequenceInput> inputs) {
    std::size_t done = 0;
    try {
        for (; done < inputs.size(); ++done)
            inputs[done].cache->reserve(static_cast<int>(inputs[done].tokens.size()));
    } catch (...) {
        for (std::size_t i = 0; i < done; ++i) inputs[i].cache->unreserve();
        throw;
    }
}

// Whatever stops a pass after its room is taken (a number that is not
// finite, a store that throws) gives that room back: every store keeps the
// positions and numbers it had (a paged one may keep a private copy of a
// block it shared, paged_kv_cache.h).
const Matrix& Transformer::forward(std::span<const SequenceInput> inputs) {
    check(inputs);
    reserve(inputs);
    try {
        return pass(inputs);
    } catch (...) {
        for (const SequenceInput& input : inputs) input.cache->unreserve();
        throw;
    }
}

const Matrix& Transformer::pass(std::span<const SequenceInput> inputs) {
    const Config& c = config_;
    int rows = 0;
    for (const SequenceInput& input : inputs) rows += static_cast<int>(input.tokens.size());
    for (Matrix* m : {&x_, &xb_, &q_, &k_, &v_, &att_, &proj_, &gate_, &up_}) m->resize_rows(rows);

    // Token embedding: row r of x is the vector of the r-th new token.
    int r = 0;
    for (const SequenceInput& input : inputs)
        for (int token : input.tokens) {
            const float* e = weights_.token_embedding.row(token);
            std::copy(e, e + c.dim, x_.row(r++));
        }

    for (int l = 0; l < c.n_layers; ++l) {
        const LayerWeights& w = weights_.layers[l];

        // Attention block: x += wo * attention(rope(wq xb), rope(wk xb), wv xb).
        for (int i = 0; i < rows; ++i) rmsnorm(xb_.row_span(i), x_.row_span(i), w.attn_norm);
        matmul(xb_, w.wq, q_, matmul_kernels);
        matmul(xb_, w.wk, k_, matmul_kernels);
        matmul(xb_, w.wv, v_, matmul_kernels);
        // Each new key turned by RoPE to its position, then every key and
        // value checked finite before a store rounds it (finite_numbers.h).
        for (int r = 0; const SequenceInput& input : inputs)
            for (int t = 0; t < static_cast<int>(input.tokens.size()); ++t)
                rope_.apply(k_.row_span(r++), input.cache->length() + t);
        check_keys_values(inputs, l, rows);
        // The new keys and values join each sequence's cache first, so that
        // each new token attends to itself and to the new tokens before it,
        // exactly as in a pass over the whole sequence.
        int first_row = 0;
        for (const SequenceInput& input : inputs) {
            append_to_cache(input, first_row, l);
            attention(input, first_row, l);
            first_row += static_cast<int>(input.tokens.size());
        }
        matmul(att_, w.wo, proj_, matmul_kernels);
        for (std::size_t i = 0; i < std::size_t(rows) * c.dim; ++i) x_.data[i] += proj_.data[i];

        // Feed-forward block: x += w2 (silu(w1 xb) * w3 xb).
        for (int i = 0; i < rows; ++i) rmsnorm(xb_.row_span(i), x_.row_span(i), w.ffn_norm);
        matmul(xb_, w.w1, gate_, matmul_kernels);
        matmul(xb_, w.w3, up_, matmul_kernels);
        for (std::size_t i = 0; i < std::size_t(rows) * c.ffn_dim; ++i)
            gate_.data[i] = silu(gate_.data[i]) * up_.data[i];
        matmul(gate_, w.w2, proj_, matmul_kernels);
        for (std::size_t i = 0; i < std::size_t(rows) * c.dim; ++i) x_.data[i] += proj_.data[i];
        check_layer_numbers(inputs, l, rows);  // finite_numbers.h
    }

    // Only the last token of each sequence needs logits: it is the one whose
    // next token we are about to choose.
    const int n_inputs = static_cast<int>(inputs.size());
    last_.resize_rows(n_inputs);
    logits_.resize_rows(n_inputs);
    int last_row = -1;
    for (int i = 0; i < n_inputs; ++i) {
        last_row += static_cast<int>(inputs[i].tokens.size());
        rmsnorm(last_.row_span(i), x_.row_span(last_row), weights_.final_norm);
    }
    matmul(last_, weights_.output, logits_, matmul_kernels);
    check_logits(inputs);

    for (const SequenceInput& input : inputs)
        input.cache->commit(static_cast<int>(input.tokens.size()));
    positions_processed_ += static_cast<std::uint64_t>(rows);
    return logits_;
}

// The new positions' keys (already turned by RoPE) and values go into the
// cache at length() on; forward() commits them after the last layer. A
// narrower cache (chapter 10) rounds them here, the one place a number is
// rounded.
void Transformer::append_to_cache(const SequenceInput& input, int first_row, int layer) {
    const int start = input.cache->length();
    for (int t = 0; t < static_cast<int>(input.tokens.size()); ++t)
        input.cache->write(layer, start + t, k_.row(first_row + t), v_.row(first_row + t));
}

// Attention for one sequence's new rows at one layer, each over the
// positions up to its own (causal). The positions come as runs (one per
// block of a paged cache); each score is one dot product and each output
// sums the values in position order, so the runs change no number.
void Transformer::attention(const SequenceInput& input, int first_row, int layer) {
    const Config& c = config_;
    const int start = input.cache->length();
    const int n_new = static_cast<int>(input.tokens.size());
    input.cache->runs(layer, start + n_new, runs_);
    row_format_ = input.cache->row_format();  // how the runs' numbers are kept
    // The queries turn by their positions too, so that q.k sees only the
    // distance between the two tokens.
    for (int t = 0; t < n_new; ++t) rope_.apply(q_.row_span(first_row + t), start + t);

    for (int t = 0; t < n_new; ++t) {
        const int pos = start + t;  // attends to positions 0..pos (causal)
        for (int kv_head = 0; kv_head < c.n_kv_heads; ++kv_head)
            attend_group(first_row + t, pos, kv_head);
    }
}

// Every query head of one KV head's group together: one pass over the keys
// and one over the values, each loaded once per group and read in the
// cache's own format (attention.h); every score and output the same sum,
// in the same order, as the plain loops give one head at a time
// (kernels_reference.cpp; tests/transformer_test.cpp holds the two equal).
void Transformer::attend_group(int row, int pos, int kv_head) {
    const Config& c = config_;
    const int hs = c.head_size();
    const int group = c.group_size();
    const int n = pos + 1;                   // positions attended; one head's scores
    const int h0 = kv_head * group;          // the group's first query head
    const float* q = q_.row(row) + h0 * hs;  // the group's queries, hs apart
    float* scores = scores_.data();          // (group, pos + 1)
    // The head's keys and values, run by run, where the cache keeps them.
    const StoredRows layout{row_format_.format, row_format_.bytes(), hs};
    const std::size_t head = std::size_t(kv_head) * (layout.stride / std::size_t(c.n_kv_heads));
    key_runs_.clear();
    value_runs_.clear();
    for (const KVRun& run : runs_) {
        key_runs_.push_back({run.keys + head, run.positions});
        value_runs_.push_back({run.values + head, run.positions});
    }
    dot_rows_for_group(q, group, hs, key_runs_, n, layout, scores, std::size_t(n));
    const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
    for (std::size_t i = 0; i < std::size_t(group) * n; ++i) scores[i] *= scale;
    softmax_for_group(scores, group, std::size_t(n), n);
    float* out = att_.row(row) + h0 * hs;  // the group's outputs, hs apart
    std::fill(out, out + std::size_t(group) * hs, 0.0f);
    weighted_sum_add_for_group(scores, group, std::size_t(n), value_runs_, n, layout, out, hs);
}

int argmax(std::span<const float> logits) {
    int best = 0;
    for (int i = 0; i < static_cast<int>(logits.size()); ++i) {
        // NaN is neither above nor below anything: it would never be picked,
        // and a NaN first would never be passed. Neither is a choice.
        if (std::isnan(logits[i]))
            throw std::domain_error("argmax: logit " + std::to_string(i) + " is NaN");
        if (logits[i] > logits[best]) best = i;
    }
    return best;
}

}  // namespace kv
