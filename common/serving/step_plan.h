// Chapter 05: the step plan, what one engine step carries.
//
// At every turn the scheduler decides what the next forward pass carries:
// for each sequence, which of its tokens (a whole prompt, a chunk of one,
// or one new token to decode). Deciding is a seam of its own
// (StepComposition), so that a later chapter fills steps differently
// without touching the scheduler: chapter 05 runs prefills first
// (PrefillFirst), chapter 09 batches prompts or mixes them with decode rows.
#pragma once

#include <algorithm>
#include <span>
#include <vector>

#include "workload.h"

namespace kv {

// One sequence's part of a step. Its kind follows from its request's
// status: prefilling, decoding, or finished (static batching's padding: the
// row runs, and rewrites a position it already holds).
struct StepRow {
    Request* request = nullptr;
    int first = 0;   // position of its first token in this step; the ones before are cached
    int tokens = 1;  // how many of its tokens the step feeds

    // Positions beyond the memory it holds that this row writes: a decode
    // row's new token. Prefills were charged when they were admitted.
    int new_positions() const {
        if (request->status == RequestStatus::finished) return 0;
        return std::max(0, first + tokens - request->held);
    }
};

struct StepPlan {
    std::vector<StepRow> rows;  // (sequences in the step) in the batch's join order
    bool cache = true;          // rows continue their caches, or recompute from position 0

    int new_positions() const {
        int n = 0;
        for (const StepRow& row : rows) n += row.new_positions();
        return n;
    }
};

// The row that runs the rest of r's prefill: every token of its sequence
// not cached yet. Without the cache, every token from position 0.
inline StepRow prefill_row(Request& r, bool cache) {
    const int first = cache ? r.cached : 0;
    return {&r, first, r.length() - first};
}

// The row that gives r its next token: its newest token, at the position
// after its cached ones. Without the cache, its whole sequence again.
inline StepRow decode_row(Request& r, bool cache) {
    return cache ? StepRow{&r, r.cached, 1} : StepRow{&r, 0, r.cached + 1};
}

// Decides what the next step carries from the batch alone (the admitted
// requests in join order): a rule, not a state, so it is const.
class StepComposition {
  public:
    virtual ~StepComposition() = default;
    virtual void compose(std::span<Request* const> batch, bool cache, StepPlan& plan) const = 0;
};

// Chapter 05's steps. Rule: prefills first, each newcomer alone, the
// oldest first (its first token is the wait a user feels); when none is
// left, one decode step for every row of the batch.
class PrefillFirst : public StepComposition {
  public:
    void compose(std::span<Request* const> batch, bool cache, StepPlan& plan) const override {
        plan.rows.clear();
        plan.cache = cache;
        for (Request* r : batch)
            if (r->status == RequestStatus::prefilling) {
                plan.rows.push_back(prefill_row(*r, cache));
                return;
            }
        for (Request* r : batch) plan.rows.push_back(decode_row(*r, cache));
    }
};

}  // namespace kv
