// Chapter 09: what one step carries, two more ways.
//
// Chapter 05's steps (PrefillFirst) run each newcomer's prompt alone, and
// every request already answering waits for it: a long prompt is a long
// stall in every stream. Two other rules fill chapter 05's step seam:
// BatchedPrefill reads the weights once for every admitted prompt, but the
// running requests still wait for the whole pass; ChunkedPrefill lets no
// stream wait for more than C prompt tokens. The forward pass already
// takes rows of several sequences, each from its own position (chapter
// 04), so a mixed step is one call, and gives each row the logits it would
// get alone.
#pragma once

#include <algorithm>
#include <span>
#include <stdexcept>

#include "../../common/serving/step_plan.h"
#include "../../common/serving/workload.h"

namespace kv {

// Rule: if anyone is prefilling, one pass with the rest of every admitted
// prompt; otherwise one decode step for the whole batch.
class BatchedPrefill : public StepComposition {
  public:
    void compose(std::span<Request* const> batch, bool cache, StepPlan& plan) const override {
        plan.rows.clear();
        plan.cache = cache;
        for (Request* r : batch)
            if (r->status == RequestStatus::prefilling) plan.rows.push_back(prefill_row(*r, cache));
        if (!plan.rows.empty()) return;
        for (Request* r : batch) plan.rows.push_back(decode_row(*r, cache));
    }
};

// Rule: a decode row for every request answering, then prompt tokens, the
// oldest prompt first, at most `chunk` of them in the step, a chunk of a
// prompt if it does not fit. This is Sarathi-Serve's "stall-free batching"
// and vLLM's chunked prefill, except that their token budget counts the
// decode rows too (exercise 3 builds that one). Only with the cache:
// without it there is nothing to continue a prompt from.
class ChunkedPrefill : public StepComposition {
  public:
    explicit ChunkedPrefill(int chunk) : chunk_(std::max(1, chunk)) {}

    void compose(std::span<Request* const> batch, bool cache, StepPlan& plan) const override {
        if (!cache) throw std::invalid_argument("chunked prefill needs the KV cache");
        plan.rows.clear();
        plan.cache = cache;
        int budget = chunk_;        // prompt tokens left in this step
        for (Request* r : batch) {  // in join order: older prompts first
            if (r->status != RequestStatus::prefilling) {
                plan.rows.push_back(decode_row(*r, cache));
            } else if (budget > 0) {
                StepRow row = prefill_row(*r, cache);
                row.tokens = std::min(row.tokens, budget);
                budget -= row.tokens;
                plan.rows.push_back(row);
            }
        }
    }

  private:
    int chunk_;
};

// The prompt tokens a step carries (the rows of requests still prefilling).
inline int prompt_tokens(const StepPlan& plan) {
    int n = 0;
    for (const StepRow& row : plan.rows)
        if (row.request->status == RequestStatus::prefilling) n += row.tokens;
    return n;
}

}  // namespace kv
