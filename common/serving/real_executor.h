// Chapter 05: the real executor, the scheduler driving the real engine.
//
// It runs each step plan through the transformer's one forward pass: with
// the cache, every row continues its request's own KV cache; without it,
// every row's sequence is recomputed from its first token (chapter 01's
// naive step, for a batch). The tokens it produces join the request's
// record. Each step returns the thread's CPU time (core/timing.h) since the
// previous one returned, so the scheduler's own bookkeeping between steps
// is counted too, and other programs on the machine do not stretch it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "../core/generation.h"
#include "../core/kv_cache.h"
#include "../core/kv_store.h"
#include "../core/timing.h"
#include "../core/transformer.h"
#include "scheduler.h"
#include "step_plan.h"
#include "workload.h"

namespace kv {

// Request r's prompt: its own seeded tokens, the same in every run.
inline std::vector<int> request_prompt(const Request& r, int vocab_size, std::uint64_t seed) {
    return fixed_prompt(r.prompt_len, vocab_size, seed + 1 + std::uint64_t(r.id));
}

class RealExecutor : public Executor {
  public:
    RealExecutor(Transformer& model, std::uint64_t seed) : model_(model), seed_(seed) { lap(); }

    double run(const StepPlan& plan) override {
        for (const StepRow& row : plan.rows)
            if (row.request->token_ids.empty())
                row.request->token_ids =
                    request_prompt(*row.request, model_.config().vocab_size, seed_);
        const Matrix& logits = plan.cache ? cached_step(plan) : recomputed_step(plan);
        // A row whose whole sequence is now computed gives its next token;
        // a padding row's is thrown away, and a prompt chunk gives none.
        for (std::size_t i = 0; i < plan.rows.size(); ++i) {
            Request& r = *plan.rows[i].request;
            if (r.status != RequestStatus::finished &&
                plan.rows[i].first + plan.rows[i].tokens == r.length())
                r.token_ids.push_back(argmax(logits.row_span(int(i))));
        }
        return lap();
    }

    // r left the batch: its cache is freed.
    void release(const Request& r) override {
        if (std::size_t(r.id) < caches_.size()) caches_[std::size_t(r.id)].reset();
    }

  protected:
    // A request's cache, made at its first prefill: one array for its
    // longest context. Chapter 07 makes block tables into a pool instead.
    virtual std::unique_ptr<KVStore> make_cache(const Request& r) {
        return std::make_unique<KVCache>(model_.config(), int(longest_context(r)));
    }
    KVStore* cache_of(const Request& r) const {  // r's cache while it runs, or none
        return std::size_t(r.id) < caches_.size() ? caches_[std::size_t(r.id)].get() : nullptr;
    }

  private:
    // Every row continues its own cache. A padding row feeds its last cached
    // token again at the same position: work, and no change.
    const Matrix& cached_step(const StepPlan& plan) {
        inputs_.clear();
        for (const StepRow& row : plan.rows) {
            Request& r = *row.request;
            if (caches_.size() <= std::size_t(r.id)) caches_.resize(std::size_t(r.id) + 1);
            std::unique_ptr<KVStore>& cache = caches_[std::size_t(r.id)];
            if (!cache) cache = make_cache(r);
            int first = row.first, tokens = row.tokens;
            if (r.status == RequestStatus::finished) {
                first = r.cached - 1;
                cache->truncate(first);
            } else if (cache->length() != first) {
                throw std::logic_error("RealExecutor: request " + std::to_string(r.id) + " has " +
                                       std::to_string(cache->length()) +
                                       " positions cached, the step starts at " +
                                       std::to_string(first));
            }
            const std::span<const int> ids(r.token_ids);
            inputs_.push_back({ids.subspan(std::size_t(first), std::size_t(tokens)), cache.get()});
        }
        return model_.forward(inputs_);
    }

    // Every row's sequence from position 0, into scratch caches thrown away.
    const Matrix& recomputed_step(const StepPlan& plan) {
        whole_.resize(plan.rows.size());
        std::vector<KVCache> scratch;
        scratch.reserve(plan.rows.size());
        for (std::size_t i = 0; i < plan.rows.size(); ++i) {
            const std::vector<int>& ids = plan.rows[i].request->token_ids;
            whole_[i].assign(ids.begin(), ids.begin() + plan.rows[i].tokens);
            scratch.emplace_back(model_.config(), plan.rows[i].tokens);
        }
        return model_.forward(whole_, scratch);
    }

    double lap() {
        const double now = thread_cpu_seconds();
        const double seconds = now - last_;
        last_ = now;
        return seconds;
    }

    Transformer& model_;
    std::uint64_t seed_;                            // of the prompts: request_prompt
    std::vector<std::unique_ptr<KVStore>> caches_;  // (requests) the keys and values of each
                                                    // request while it runs with the cache
    std::vector<SequenceInput> inputs_;             // (rows) scratch for the forward pass
    std::vector<std::vector<int>> whole_;           // (rows) whole sequences, without the cache
    double last_ = 0;                               // the clock when the last step returned
};

}  // namespace kv
