// Chapter 07: the block manager, chapter 05's memory manager in blocks.
//
// The budget is a pool of blocks of B positions. A request holds the blocks
// its sequence needs, taken one at a time as it grows and given back when
// it finishes: nothing is reserved for an answer that may never come.
//   admit: a request joins if its blocks fit and leave the watermark's
//     share of the pool free (without one, the next step, in which the
//     running requests grow, may have to preempt someone at once).
//   grow: the blocks a step's new positions need must be free; when they
//     are not, the newest request is preempted (chapter 05's victim).
//   preempt: by recompute (its blocks are dropped; it prefills again when
//     it rejoins) or by swap (its blocks are copied to host memory and back:
//     no recomputation, but bytes over the bus both ways).
// Counts of blocks only, shared by the simulator and the real engine, whose
// executor takes real blocks from a BlockPool of the same size.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <utility>

#include "../core/block_pool.h"  // blocks_for
#include "memory_manager.h"
#include "step_plan.h"
#include "workload.h"

namespace kv {

enum class Preemption { recompute, swap };

struct PagedMemoryOptions {
    int blocks = 1;                                 // blocks in the pool
    int block_size = 16;                            // positions per block
    double watermark = 0;                           // share of the pool admission keeps free
    Preemption preemption = Preemption::recompute;  // what a preempted request keeps
};

class PagedMemory : public MemoryManager {
  public:
    explicit PagedMemory(const PagedMemoryOptions& o)
        : o_(o), watermark_blocks_(static_cast<int>(o.watermark * o.blocks)) {}

    int blocks_for(int positions) const { return kv::blocks_for(positions, o_.block_size); }
    int free_blocks() const { return o_.blocks - used_; }
    int used_blocks() const { return used_; }
    int blocks_of(const Request& r) const { return blocks_for(r.held); }  // its block table's

    // What preemption has cost so far.
    std::int64_t positions_recomputed() const { return recomputed_; }  // recompute: dropped work
    std::int64_t blocks_swapped_out() const { return swapped_out_; }
    std::int64_t blocks_swapped_in() const { return swapped_in_; }

    bool fits_alone(const Request& r) const override {
        return blocks_for(int(longest_context(r))) <= o_.blocks;
    }

    // Swap: a request coming back finds its computed positions in host
    // memory; they are copied in, not prefilled again.
    int cached_prefix(const Request& r) const override {
        const auto it = swapped_.find(r.id);
        return it == swapped_.end() ? 0 : it->second;
    }

    // Rule: its blocks fit and leave the watermark free.
    bool can_admit(const Request& r, std::span<Request* const>) const override {
        return free_blocks() - blocks_for(r.length()) >= watermark_blocks_;
    }
    void admit(Request& r) override {
        MemoryManager::admit(r);
        used_ += blocks_of(r);
        // Its swapped positions are copied in when its first step runs (grow).
        if (const int waiting = take(swapped_, r.id)) swapping_in_[r.id] = waiting;
    }

    // Rule: every block the step's new positions need is free.
    bool can_grow(const StepPlan& plan) const override {
        int need = 0;
        for (const StepRow& row : plan.rows)
            need += blocks_for(row.request->held + row.new_positions()) - blocks_of(*row.request);
        return need <= free_blocks();
    }
    void grow(const StepPlan& plan) override {
        for (const StepRow& row : plan.rows) used_ -= blocks_of(*row.request);
        MemoryManager::grow(plan);
        for (const StepRow& row : plan.rows) {
            used_ += blocks_of(*row.request);
            swapped_in_ += blocks_for(take(swapping_in_, row.request->id));
        }
    }

    // Every request gives its blocks back; a preempted one's computed
    // positions wait in host memory (swap) or are lost (recompute).
    void release(Request& r) override {
        if (r.status != RequestStatus::finished) {
            if (const int coming = take(swapping_in_, r.id)) {
                swapped_[r.id] = coming;  // sent back before its blocks came in: they stay out
            } else if (o_.preemption == Preemption::swap) {
                if (r.cached > 0) swapped_[r.id] = r.cached;
                swapped_out_ += blocks_for(r.cached);
            } else {
                recomputed_ += r.cached;
            }
        }
        used_ -= blocks_of(r);
        MemoryManager::release(r);
    }

    std::uint64_t charged() const override {
        return std::uint64_t(used_) * std::uint64_t(o_.block_size);
    }

  private:
    PagedMemoryOptions o_;
    int watermark_blocks_;
    int used_ = 0;  // blocks all requests hold: each the blocks of its r.held
    // A request's entry, removed (0 if none): the maps hold only positions still waiting.
    static int take(std::map<int, int>& waiting, int id) {
        const auto entry = waiting.extract(id);
        return entry ? entry.mapped() : 0;
    }
    std::map<int, int> swapped_;      // (request id) positions waiting in host memory, by swap
    std::map<int, int> swapping_in_;  // (request id) admitted, to be copied in at its next step
    std::int64_t recomputed_ = 0, swapped_out_ = 0, swapped_in_ = 0;
};

}  // namespace kv
