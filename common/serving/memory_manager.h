// Chapter 05: the memory manager, who may hold how much KV cache.
//
// The scheduler asks it whether a request may join now (can_admit), whether
// the next step fits (can_grow), which row makes room when it does not
// (victim) and whether a request could ever run (fits_alone); and tells it
// who joined (admit), that the step ran (grow) and who left (release). It
// keeps the accounts, never the keys and values (the executor's caches).
// Chapter 05 has chapter 03's two ways of charging a request:
//   WholeContextReservation (full): its longest context, prompt + answer
//     cap - 1 positions, from admission on. Nothing is ever preempted, but
//     most of it sits empty: answers are usually far shorter than the cap.
//   TokensHeld (held): the positions its cache holds now. More requests
//     fit, but when the next step would not, a request is preempted: its
//     cache dropped, it goes back to the queue to be prefilled again.
// Chapters 07 and 08 add paged and prefix-sharing managers as subclasses.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "memory_budget.h"
#include "step_plan.h"
#include "workload.h"

namespace kv {

class MemoryManager {
  public:
    virtual ~MemoryManager() = default;

    // Could r run alone on an empty server? If not, it would wait forever.
    virtual bool fits_alone(const Request& r) const = 0;
    // Positions at the start of r's sequence already cached, where its
    // prefill starts (chapter 08 shares prefixes). None here.
    virtual int cached_prefix(const Request&) const { return 0; }
    // May r join now beside `batch` (the admitted requests, in join order),
    // holding its whole sequence so far, r.length() positions?
    virtual bool can_admit(const Request& r, std::span<Request* const> batch) const = 0;
    // r joins: from now it holds r.length() positions (r.held).
    virtual void admit(Request& r) {
        r.held = r.length();
        held_ += std::uint64_t(r.held);
    }
    // Do the positions the next step adds fit?
    virtual bool can_grow(const StepPlan& plan) const = 0;
    // The step is about to run: its rows' new positions are taken.
    virtual void grow(const StepPlan& plan) {
        for (const StepRow& row : plan.rows) {
            const int n = row.new_positions();
            row.request->held += n;
            held_ += std::uint64_t(n);
        }
    }
    // r leaves, finished or sent back: what it holds is free again.
    virtual void release(Request& r) {
        held_ -= std::uint64_t(r.held);
        r.held = 0;
    }
    // Which row makes room when the next step does not fit. Rule: a padding
    // row if there is one, the newest first; else the newest request.
    virtual std::size_t victim(std::span<Request* const> batch) const {
        for (std::size_t i = batch.size(); i-- > 0;)
            if (batch[i]->status == RequestStatus::finished) return i;
        return batch.size() - 1;
    }

    std::uint64_t held() const { return held_; }  // positions in all caches
    virtual std::uint64_t charged() const = 0;    // positions charged against the budget

  protected:
    std::uint64_t held_ = 0;
};

// full: each request is charged its longest context from admission on.
class WholeContextReservation : public MemoryManager {
  public:
    explicit WholeContextReservation(std::uint64_t tokens) : tokens_(tokens) {}
    bool fits_alone(const Request& r) const override { return longest_context(r) <= tokens_; }
    // Rule: its longest context fits beside the others' reservations.
    bool can_admit(const Request& r, std::span<Request* const>) const override {
        return reserved_ + longest_context(r) <= tokens_;
    }
    void admit(Request& r) override {
        MemoryManager::admit(r);
        reserved_ += longest_context(r);
    }
    bool can_grow(const StepPlan&) const override { return true; }  // reserved at admission
    void release(Request& r) override {
        MemoryManager::release(r);
        reserved_ -= longest_context(r);
    }
    std::uint64_t charged() const override { return reserved_; }

  private:
    std::uint64_t tokens_;        // positions the budget holds
    std::uint64_t reserved_ = 0;  // sum of the admitted requests' longest contexts
};

// held: each request is charged the positions its cache holds.
class TokensHeld : public MemoryManager {
  public:
    explicit TokensHeld(std::uint64_t tokens) : tokens_(tokens) {}
    bool fits_alone(const Request& r) const override { return longest_context(r) <= tokens_; }
    // Rule: its cache fits, and so does the next step, where every request
    // still answering (the newcomer too) grows by one position.
    bool can_admit(const Request& r, std::span<Request* const> batch) const override {
        std::uint64_t growing = 1;
        for (const Request* other : batch) growing += other->status != RequestStatus::finished;
        return held_ + growing + std::uint64_t(r.length()) <= tokens_;
    }
    bool can_grow(const StepPlan& plan) const override {
        return held_ + std::uint64_t(plan.new_positions()) <= tokens_;
    }
    std::uint64_t charged() const override { return held_; }

  private:
    std::uint64_t tokens_;  // positions the budget holds
};

// The manager the budget's reservation names.
inline std::unique_ptr<MemoryManager> make_memory_manager(const MemoryBudget& budget) {
    if (budget.reserve == Reservation::whole_context)
        return std::make_unique<WholeContextReservation>(budget.tokens);
    return std::make_unique<TokensHeld>(budget.tokens);
}

}  // namespace kv
