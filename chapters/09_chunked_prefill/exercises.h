// Chapter 09 exercises: stubs for you to fill in (see EXERCISES.md). The
// tests in tests/exercises_ch09_test.cpp are skipped until you enable them.
#pragma once

#include <span>
#include <stdexcept>

#include "../../common/serving/step_plan.h"
#include "../../common/serving/workload.h"

namespace kv::exercises {

// Exercise 3: a token budget that counts every token of a step, decode rows
// included (vLLM's max_num_batched_tokens), filled decode first as
// Sarathi-Serve's stall-free batching does: a decode row for each request
// answering, in join order, while the budget lasts; then prompt tokens, the
// oldest prompt first, a chunk of it if it does not fit, in what is left.
class TokenBudget : public StepComposition {
  public:
    explicit TokenBudget(int budget) : budget_(budget) {}
    void compose(std::span<Request* const> batch, bool cache, StepPlan& plan) const override {
        (void)batch;
        (void)cache;
        (void)plan;
        (void)budget_;
        throw std::logic_error("exercise 09.3: TokenBudget::compose is not implemented yet");
    }

  private:
    int budget_;
};

}  // namespace kv::exercises
