// Chapter 05: the real executor, the scheduler driving the real engine.
//
// It does what the scheduler asks with chapter 02's prefill, chapter 04's
// decode_batch, and without the cache a pass that recomputes every running
// sequence from its first token (chapter 01's naive step, for a batch).
// Its clock is the wall clock: each call returns the wall time since the
// previous call returned, so the scheduler's own bookkeeping between steps
// is counted too, and the scheduler's clock is the time a user would see.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "../../common/core/generation.h"
#include "../../common/core/kv_cache.h"
#include "../../common/core/transformer.h"
#include "../../common/kit/timing.h"
#include "../01_naive_decoding/naive_decoding.h"
#include "../02_kv_cache/cached_decoding.h"
#include "../04_batched_decoding/batched_decoding.h"
#include "scheduler.h"
#include "workload.h"

namespace kv {

// Request r's prompt: its own seeded tokens, the same in every run.
inline std::vector<int> request_prompt(const Request& r, int vocab_size, std::uint64_t seed) {
    return fixed_prompt(r.prompt_len, vocab_size, seed + 1 + std::uint64_t(r.id));
}

// Without the cache: every sequence recomputed from its first token in one
// forward pass, its weight products over all rows at once, each sequence
// into a scratch cache thrown away afterwards. Row i holds sequence i's logits.
inline const Matrix& naive_batch_step(Transformer& model,
                                      std::span<const std::span<const int>> sequences) {
    std::vector<KVCache> scratch;
    scratch.reserve(sequences.size());  // no reallocation: the chunks point into it
    std::vector<SequenceInput> chunks;
    for (std::span<const int> seq : sequences) {
        scratch.emplace_back(model.config(), int(seq.size()));
        chunks.push_back({seq, &scratch.back()});
    }
    return model.forward(chunks);
}

class RealExecutor : public Executor {
  public:
    RealExecutor(Transformer& model, std::span<const Request> requests, std::uint64_t seed)
        : model_(model), sequences_(requests.size()) {
        for (const Request& r : requests)
            sequences_[std::size_t(r.id)].tokens =
                request_prompt(r, model.config().vocab_size, seed);
        last_ = Clock::now();
    }

    double prefill(const Request& r, int tokens, bool cache) override {
        Sequence& s = sequences_[std::size_t(r.id)];
        const std::span<const int> known(s.tokens.data(), std::size_t(tokens));
        if (cache) {
            // Room for everything the request may come to hold, as the
            // budget's "full" charge assumes.
            s.cache = std::make_unique<KVCache>(model_.config(), r.prompt_len + r.answer_cap - 1);
            s.tokens.push_back(argmax(kv::prefill(model_, known, *s.cache)));
        } else {
            s.tokens.push_back(argmax(naive_step(model_, known)));
        }
        return lap();
    }

    double decode_step(std::span<const Running> batch, const StepShape&, bool cache) override {
        if (cache) {
            next_.clear();
            caches_.clear();
            for (const Running& r : batch) {
                Sequence& s = sequences_[std::size_t(r.request)];
                if (r.padding) {
                    // Answered, but its row still runs: it feeds its last
                    // cached token again at the same position, which
                    // rewrites the same key and value. Work, and no change.
                    s.cache->truncate(r.held - 1);
                    next_.push_back(s.tokens[std::size_t(r.held - 1)]);
                } else {
                    next_.push_back(s.tokens.back());  // the newest token, not yet cached
                }
                caches_.push_back(s.cache.get());
            }
            append(batch, decode_batch(model_, next_, caches_));
        } else {
            whole_.clear();
            for (const Running& r : batch)
                whole_.emplace_back(sequences_[std::size_t(r.request)].tokens);
            append(batch, naive_batch_step(model_, whole_));
        }
        return lap();
    }

    void release(const Request& r) override { sequences_[std::size_t(r.id)].cache.reset(); }

    // Every token of request id so far: its prompt, then its answer.
    const std::vector<int>& tokens(int id) const { return sequences_[std::size_t(id)].tokens; }

  private:
    struct Sequence {
        std::vector<int> tokens;         // prompt, then answer so far
        std::unique_ptr<KVCache> cache;  // while it runs with the cache
    };

    // Each row's new token joins its sequence; a padding row's is thrown away.
    void append(std::span<const Running> batch, const Matrix& logits) {
        for (std::size_t i = 0; i < batch.size(); ++i)
            if (!batch[i].padding)
                sequences_[std::size_t(batch[i].request)].tokens.push_back(
                    argmax(logits.row_span(int(i))));
    }

    double lap() {
        const auto now = Clock::now();
        const double seconds = std::chrono::duration<double>(now - last_).count();
        last_ = now;
        return seconds;
    }

    Transformer& model_;
    std::vector<Sequence> sequences_;          // (requests)
    std::vector<int> next_;                    // (batch) scratch for decode_batch
    std::vector<KVCache*> caches_;             // (batch)
    std::vector<std::span<const int>> whole_;  // (batch) whole sequences, without the cache
    Clock::time_point last_;
};

}  // namespace kv
