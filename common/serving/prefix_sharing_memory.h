// Chapter 08: the block manager that shares cached prefixes.
//
// Chapter 07's manager counted blocks; this one holds them: a block table
// per request in a BlockLedger, and a PrefixCache naming every full prompt
// block once it is computed. The same code decides in the simulator (over
// a ledger alone) and on the engine (over its BlockPool).
//   admit: the longest cached chain of the prompt's blocks (one more owner
//     on each), new blocks for the rest; only once nobody is still
//     prefilling, so that every block computed before its prefill is found.
//   grow: the blocks a step's new positions need; a prefill's full prompt
//     blocks enter the cache, and the step about to run writes them before
//     anyone else can be admitted to find them. Nobody writes them again.
//   release: every block of the table loses an owner; the cache's own
//     reference keeps a block until the pool needs room (prefix_cache.h).
// A prompt's last token is always computed (its logits give the first
// answer token), so the block after the cached ones is the request's own.
// With a second tier (chapter 11), admit continues the chain from the tier:
// those blocks are read back into new blocks of the pool.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "../core/block_pool.h"
#include "memory_manager.h"
#include "prefix_cache.h"
#include "step_plan.h"
#include "workload.h"

namespace kv {

struct SharingMemoryOptions {
    double watermark = 0.05;    // share of the pool admission keeps free (chapter 07)
    bool share = true;          // the prefix cache on, or every request on its own blocks
    int tier_blocks = 0;        // chapter 11: blocks the second tier keeps; 0: none
    TierStore* tier = nullptr;  // where it keeps them (nullptr: counted only, the simulator)
};

class PrefixSharingMemory : public MemoryManager {
  public:
    PrefixSharingMemory(BlockLedger& ledger, const SharingMemoryOptions& o)
        : ledger_(ledger),
          watermark_blocks_(static_cast<int>(o.watermark * ledger.blocks())),
          tables_naming_(std::size_t(ledger.blocks()), 0) {
        if (o.share) cache_.emplace(ledger);
        if (cache_ && o.tier_blocks > 0) cache_->keep_evicted(o.tier_blocks, o.tier);
    }

    int block_size() const { return ledger_.block_size(); }
    int blocks_for(int positions) const { return kv::blocks_for(positions, block_size()); }
    // Request r's block table: block i holds positions i*B..i*B+B-1.
    std::span<const int> table(int id) const {
        return std::size_t(id) < tables_.size() ? std::span<const int>(tables_[std::size_t(id)])
                                                : std::span<const int>();
    }
    const BlockLedger& ledger() const { return ledger_; }
    // Tables that name block b now (the ledger's owners() also counts the
    // prefix cache's own reference).
    int tables_naming(int b) const { return tables_naming_.at(std::size_t(b)); }
    const PrefixCache* prefix_cache() const { return cache_ ? &*cache_ : nullptr; }

    // Counted at every admission: the positions a sequence had, and those
    // from the cache; the difference is what its prefills computed.
    std::int64_t positions_admitted() const { return admitted_; }
    std::int64_t positions_from_cache() const { return from_cache_; }
    // The same, for first admissions only: the prompts as they arrived.
    std::int64_t prompt_tokens() const { return prompt_tokens_; }
    std::int64_t prompt_tokens_from_cache() const { return prompt_from_cache_; }
    // Of those from the cache, read back from the second tier.
    std::int64_t prompt_tokens_from_tier() const { return prompt_from_tier_; }
    std::int64_t positions_recomputed() const { return recomputed_; }
    // Blocks the running requests' tables name, and blocks they hold: a
    // block in k tables is named k times and held once. Means over the steps.
    double mean_named_blocks() const { return steps_ ? double(named_sum_) / steps_ : 0; }
    double mean_held_blocks() const { return steps_ ? double(held_sum_) / steps_ : 0; }

    bool fits_alone(const Request& r) const override {
        return blocks_for(int(longest_context(r))) <= ledger_.blocks();
    }

    // Whole cached blocks of r's prompt, stopping short of its last token:
    // in the pool, then in the tier.
    int cached_prefix(const Request& r) const override {
        return cache_ ? cache_->blocks_cached(prompt(r), most_blocks(r)) * block_size() : 0;
    }

    // Rule: nobody is still prefilling, and its new blocks fit and leave the
    // watermark free. A hit on a block only the cache holds uses up a block
    // the pool could have evicted, so it counts too.
    bool can_admit(const Request& r, std::span<Request* const> batch) const override {
        for (const Request* other : batch)
            if (other->status == RequestStatus::prefilling) return false;
        const std::vector<int> hits = cached_chain(r);
        int kept_only_by_cache = 0;
        for (int b : hits) kept_only_by_cache += ledger_.owners(b) == 1;
        const int fresh = blocks_for(r.length()) - int(hits.size());
        return ledger_.available_blocks() - kept_only_by_cache - fresh >= watermark_blocks_;
    }

    void admit(Request& r) override {
        MemoryManager::admit(r);
        std::vector<int>& t = at(r.id);
        std::int64_t reloaded = 0;
        if (cache_) {
            for (int b : cache_->match(prompt(r), most_blocks(r))) take(t, b, /*shared=*/true);
            for (int b : cache_->reload(prompt(r), int(t.size()), most_blocks(r))) {
                take(t, b, /*shared=*/false);  // reload() gave it its owner
                reloaded += block_size();
            }
            // A block that failed its check on reading is computed instead.
            r.cached = int(t.size()) * block_size();
        }
        const std::int64_t hit = std::int64_t(t.size()) * block_size();
        while (int(t.size()) < blocks_for(r.length())) take(t, ledger_.allocate(), false);
        admitted_ += r.length();
        from_cache_ += hit;
        if (seen_.size() <= std::size_t(r.id)) seen_.resize(std::size_t(r.id) + 1, 0);
        if (!seen_[std::size_t(r.id)]) {  // its first admission: the prompt as it arrived
            seen_[std::size_t(r.id)] = 1;
            prompt_tokens_ += r.prompt_len;
            prompt_from_cache_ += hit;
            prompt_from_tier_ += reloaded;
        }
    }

    // Rule: the blocks the step's new positions need are available.
    bool can_grow(const StepPlan& plan) const override {
        int need = 0;
        for (const StepRow& row : plan.rows)
            need += blocks_for(row.request->held + row.new_positions()) -
                    int(table(row.request->id).size());
        return need <= ledger_.available_blocks();
    }

    void grow(const StepPlan& plan) override {
        MemoryManager::grow(plan);
        for (const StepRow& row : plan.rows) {
            Request& r = *row.request;
            std::vector<int>& t = at(r.id);
            while (int(t.size()) < blocks_for(r.held)) take(t, ledger_.allocate(), false);
            // The prompt blocks this step fills become findable.
            const int computed = std::min(r.prompt_len, row.first + row.tokens);
            if (cache_ && row.first < r.prompt_len)
                cache_->insert(prompt(r).first(std::size_t(computed)), t);
        }
        ++steps_;
        named_sum_ += named_;
        held_sum_ += held_;
    }

    // A request sent back before it finishes loses what it computed.
    void release(Request& r) override {
        if (r.status != RequestStatus::finished) recomputed_ += r.cached;
        std::vector<int>& t = at(r.id);
        if (cache_) cache_->touch(t);  // its cached blocks: used until now
        for (int b : t) {
            if (--tables_naming_[std::size_t(b)] == 0) --held_;
            ledger_.release(b);
        }
        named_ -= int(t.size());
        t.clear();
        MemoryManager::release(r);
    }

    // Positions of the blocks requests hold (the prefix cache's alone are free to take).
    std::uint64_t charged() const override {
        return std::uint64_t(held_) * std::uint64_t(block_size());
    }

  private:
    static std::span<const int> prompt(const Request& r) {
        if (int(r.token_ids.size()) < r.prompt_len)
            throw std::logic_error("prefix sharing: request " + std::to_string(r.id) +
                                   " came without its prompt's tokens");
        return std::span<const int>(r.token_ids).first(std::size_t(r.prompt_len));
    }
    // At most (length - 1) / B blocks: the last token is always computed.
    int most_blocks(const Request& r) const { return (r.length() - 1) / block_size(); }
    std::vector<int> cached_chain(const Request& r) const {
        return cache_ ? cache_->peek(prompt(r), most_blocks(r)) : std::vector<int>();
    }
    std::vector<int>& at(int id) {
        if (tables_.size() <= std::size_t(id)) tables_.resize(std::size_t(id) + 1);
        return tables_[std::size_t(id)];
    }
    // Block b joins a table; `shared`: it was already in use, one more owner.
    void take(std::vector<int>& t, int b, bool shared) {
        if (shared) ledger_.share(b);
        if (tables_naming_[std::size_t(b)]++ == 0) ++held_;
        t.push_back(b);
        ++named_;
    }

    BlockLedger& ledger_;
    int watermark_blocks_;
    std::optional<PrefixCache> cache_;      // none without sharing
    std::vector<std::vector<int>> tables_;  // (requests) each request's block table
    std::vector<int> tables_naming_;        // (blocks) tables naming each block
    std::vector<char> seen_;                // (requests) admitted at least once
    int named_ = 0, held_ = 0;              // blocks named by tables, and held by them
    std::int64_t steps_ = 0, named_sum_ = 0, held_sum_ = 0;
    std::int64_t admitted_ = 0, from_cache_ = 0, prompt_tokens_ = 0, prompt_from_cache_ = 0;
    std::int64_t prompt_from_tier_ = 0;
    std::int64_t recomputed_ = 0;
};

}  // namespace kv
