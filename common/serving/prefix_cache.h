// Chapter 08: the prefix cache, blocks computed once for many requests;
// chapter 11: a second tier that keeps the blocks the pool gives back.
//
// Position j's keys and values depend on tokens 0..j only (chapter 02), so
// two sequences that begin alike may share the blocks of that beginning.
// A full block is named by its own B tokens AND every token before it: a
// chain, each entry pointing to the entry of the block before (its parent).
// vLLM hashes (parent's hash, tokens); this cache compares the tokens
// themselves, so two different prefixes can never be taken for one.
//
// The cache keeps one reference of its own on every block it names, so a
// block outlives the request that filled it. When the pool runs out, the
// least recently used block only the cache holds goes first, and only a
// leaf of the chain (a block whose continuation is cached stays). Another
// rule may choose instead (the course's final project plugs one in); the
// cache refuses any choice that breaks those two conditions.
//
// With a second tier (keep_evicted), a block the pool gives back is first
// written to the tier under its name, and its entry stays: a chain runs
// through the pool, then through the tier. A prompt that continues into
// the tier reads those blocks back into free blocks of the pool instead of
// computing them again. The tier has a capacity of its own and gives back
// its least recently used leaf when full; a block that fails its check on
// reading is dropped with everything cached after it, and computed again.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <span>
#include <utility>
#include <vector>

#include "../core/block_pool.h"

namespace kv {

// A cached block's name: the entry of the block before it (-1 for a
// prompt's first block) and its own B tokens.
struct BlockName {
    int parent = -1;
    std::span<const int> tokens;
};

// Where the second tier keeps blocks' numbers, one block per slot: a file
// on the engine (tier_file.h); none in the simulator, which only counts.
class TierStore {
  public:
    virtual ~TierStore() = default;
    // Copies pool block `block` into `slot` under `name`; false: not kept.
    virtual bool write(int slot, const BlockName& name, int block) = 0;
    // Copies `slot` into pool block `block`; false if the slot does not hold
    // exactly what write() stored there under `name`.
    virtual bool read(int slot, const BlockName& name, int block) = 0;
};

// A block cached in the pool, as an eviction policy sees it.
struct CachedBlock {
    int block = -1;               // the pool's block
    int depth = 0;                // its place in its chain: 0 for a prompt's first block
    bool leaf = true;             // no block cached in the pool continues it
    int holders = 0;              // sequences holding it (the cache's own reference not counted)
    std::uint64_t last_used = 0;  // the cache's clock when last matched, filled or let go
    int hits = 0;                 // prompts match() found it for
};

// Returns the index in `cached` of the block to give back; only a leaf
// nobody holds may go. Asked only when at least one may.
using EvictionPolicy = std::function<int(std::span<const CachedBlock>)>;

class PrefixCache : public BlockReclaimer {
  public:
    static constexpr int kNoLimit = std::numeric_limits<int>::max();

    // What the second tier did (all zero without one).
    struct TierCounts {
        std::int64_t kept = 0;       // blocks written to the tier
        std::int64_t not_kept = 0;   // blocks the store failed to write: forgotten
        std::int64_t reloaded = 0;   // blocks read back into the pool
        std::int64_t failed = 0;     // blocks that failed their check: computed again
        std::int64_t evictions = 0;  // blocks the tier gave back to make room
        std::int64_t dropped = 0;    // blocks forgotten because a block before them was
    };

    // Caches blocks of `pool` (the engine's BlockPool, or a simulator's
    // ledger alone), and gives them back when it runs out.
    explicit PrefixCache(BlockLedger& pool) : pool_(pool) { pool_.set_reclaimer(this); }
    ~PrefixCache() override {
        pool_.set_reclaimer(nullptr);
        for (const Entry& e : entries_)
            if (e.block >= 0) pool_.release(e.block);
    }
    PrefixCache(const PrefixCache&) = delete;
    PrefixCache& operator=(const PrefixCache&) = delete;

    // From now on, blocks the pool gives back go to a tier of `slots`
    // blocks, their numbers in `store` (nullptr: counted, not stored).
    void keep_evicted(int slots, TierStore* store) {
        store_ = store;
        for (int s = slots - 1; s >= 0; --s) free_slots_.push_back(s);
    }

    // From now on `policy` chooses what reclaim_one() gives back. A choice
    // that breaks the rule is refused, counted, and least recently used
    // chooses instead: the cache never gives back a block still needed.
    void evict_with(EvictionPolicy policy) { policy_ = std::move(policy); }
    std::int64_t refused() const { return refused_; }  // the policy's choices refused

    int block_size() const { return pool_.block_size(); }
    int entries() const { return int(index_.size()); }
    std::int64_t evictions() const { return evictions_; }  // blocks given back to the pool
    const TierCounts& tier() const { return tier_; }

    // The blocks of the longest cached chain `tokens` starts with, in
    // order, at most `most`: whole blocks only, in the pool only. A look
    // that changes nothing.
    std::vector<int> peek(std::span<const int> tokens, int most = kNoLimit) const {
        std::vector<int> blocks;
        for (int e : chain(tokens, most)) {
            if (entries_[std::size_t(e)].block < 0) break;  // the rest is in the tier
            blocks.push_back(entries_[std::size_t(e)].block);
        }
        return blocks;
    }

    // Cached blocks `tokens` starts with, at most `most`, in the pool or in the tier.
    int blocks_cached(std::span<const int> tokens, int most = kNoLimit) const {
        return int(chain(tokens, most).size());
    }

    // peek(), and the blocks found become the most recently used.
    std::vector<int> match(std::span<const int> tokens, int most = kNoLimit) {
        std::vector<int> blocks = peek(tokens, most);
        touch(blocks);
        for (int b : blocks) entries_[std::size_t(entry_of_[std::size_t(b)])].hits += 1;
        return blocks;
    }

    // After match() found `found` blocks: the chain's next blocks, up to
    // `most` in all, read back from the tier into free blocks of the pool
    // and cached there as if just computed, each with one more owner: the
    // caller. Stops at the first that fails its check, which is forgotten
    // with what continues it.
    std::vector<int> reload(std::span<const int> tokens, int found, int most = kNoLimit) {
        std::vector<int> blocks;
        const std::vector<int> links = chain(tokens, most);
        for (std::size_t i = std::size_t(found); i < links.size(); ++i) {
            const int e = links[i];
            loading_ = e;  // the tier keeps it while a pool block is found for it
            const int block = pool_.allocate();  // may send other blocks to the tier
            loading_ = -1;
            Entry& entry = entries_[std::size_t(e)];
            const bool ok = entry.slot >= 0;  // still kept: the tier's eviction spared it
            if (!ok || (store_ && !store_->read(entry.slot, name(entry), block))) {
                pool_.release(block);
                if (ok) {
                    ++tier_.failed;
                    forget(e);
                }
                break;
            }
            into_pool(e, block);
            pool_.share(block);  // the caller's
            entry.last_used = ++clock_;
            ++tier_.reloaded;
            blocks.push_back(block);
        }
        return blocks;
    }

    // A sequence of `tokens` holds its blocks in `table`: every full block
    // becomes an entry, unless the chain already names one for those
    // tokens. Returns the entries added.
    int insert(std::span<const int> tokens, std::span<const int> table) {
        int parent = kRoot, added = 0;
        for (std::size_t b = 0; (b + 1) * block_size() <= tokens.size() && b < table.size(); ++b) {
            const auto k = key(parent, tokens.subspan(b * block_size(), block_size()));
            auto it = index_.find(k);
            if (it == index_.end()) {  // a new entry, after its parent
                it = index_.emplace(k, int(entries_.size())).first;
                const int depth = parent == kRoot ? 0 : entries_[std::size_t(parent)].depth + 1;
                entries_.push_back({parent, -1, -1, 0, 0, 0, it, depth, 0});
                into_pool(it->second, table[b]);
                pool_.share(table[b]);  // the cache's own reference
                ++added;
            } else if (entries_[std::size_t(it->second)].block < 0) {
                // Kept in the tier and computed again (beyond what a prompt
                // may take): the computed block stands in for the kept one.
                pool_.share(table[b]);
                into_pool(it->second, table[b]);
            }
            parent = it->second;
            entries_[std::size_t(parent)].last_used = ++clock_;
        }
        return added;
    }

    // Blocks that leaves-first eviction could give back: only the cache
    // holds them, and no block cached after them is held by a sequence.
    // Entries are made parents first: from the newest down, children come first.
    int reclaimable() const override {
        std::vector<char> kept(entries_.size(), 0);  // in use, or continued by a block in use
        int n = 0;
        for (std::size_t i = entries_.size(); i-- > 0;) {
            const Entry& e = entries_[i];
            if (e.block < 0) continue;
            kept[i] |= pool_.owners(e.block) != 1;
            if (!kept[i]) ++n;
            if (e.parent != kRoot) kept[std::size_t(e.parent)] |= kept[i];
        }
        return n;
    }

    // The cached ones among `blocks` become the most recently used: a
    // sequence that lets go of its blocks calls it, so that "least recently
    // used" counts from the last moment anyone held a block, as in vLLM.
    void touch(std::span<const int> blocks) {
        for (int b : blocks)
            if (std::size_t(b) < entry_of_.size() && entry_of_[std::size_t(b)] >= 0)
                entries_[std::size_t(entry_of_[std::size_t(b)])].last_used = ++clock_;
    }

    // Gives back the least recently used block only the cache holds and
    // no block cached in the pool continues (or the policy's choice among
    // those); to the tier first, if there is one. It walks every entry ever
    // made: a server keeps its candidates in eviction order instead (vLLM's
    // free-block queue).
    bool reclaim_one() override {
        const auto may_go = [&](int, const Entry& e) {
            return e.block >= 0 && e.children == 0 && pool_.owners(e.block) == 1;
        };
        int victim = least_recently_used(may_go);
        if (victim < 0) return false;
        if (policy_) {
            const int chosen = chosen_by_policy();
            if (chosen >= 0 && may_go(chosen, entries_[std::size_t(chosen)]))
                victim = chosen;
            else
                ++refused_;
        }
        Entry& e = entries_[std::size_t(victim)];
        const int block = e.block;
        const int slot = free_slot();
        if (slot >= 0 && (!store_ || store_->write(slot, name(e), block))) {
            into_tier(victim, slot);
            ++tier_.kept;
        } else {
            if (slot >= 0) {
                free_slots_.push_back(slot);
                ++tier_.not_kept;
            }
            forget(victim);
        }
        pool_.release(block);  // the cache's reference: the block is free again
        ++evictions_;
        return true;
    }

  private:
    static constexpr int kRoot = -1;

    using Key = std::pair<int, std::vector<int>>;  // (parent entry, the block's tokens)
    using Index = std::map<Key, int>;              // -> entry

    struct Entry {
        int parent = kRoot;           // the entry of the block before; kRoot for the first
        int block = -1;               // the pool's block; -1 if in the tier or forgotten
        int slot = -1;                // the tier's slot; -1 if in the pool or forgotten
        int children = 0;             // blocks cached in the pool that continue it
        int kept_children = 0;        // blocks kept in the tier that continue it
        std::uint64_t last_used = 0;  // the cache's clock when last matched, filled or let go
        Index::iterator at;           // its key in index_
        int depth = 0;                // blocks before it in its chain
        int hits = 0;                 // prompts match() found it for
    };

    static Key key(int parent, std::span<const int> tokens) {
        return {parent, std::vector<int>(tokens.begin(), tokens.end())};
    }
    static BlockName name(const Entry& e) { return {e.parent, e.at->first.second}; }
    Entry* parent_of(const Entry& e) {
        return e.parent == kRoot ? nullptr : &entries_[std::size_t(e.parent)];
    }

    // The entries of the longest cached chain `tokens` starts with, at most `most`.
    std::vector<int> chain(std::span<const int> tokens, int most) const {
        std::vector<int> links;
        for (int parent = kRoot; int(links.size()) < most;) {
            const std::size_t first = links.size() * std::size_t(block_size());
            if (first + block_size() > tokens.size()) break;
            const auto it = index_.find(key(parent, tokens.subspan(first, block_size())));
            if (it == index_.end()) break;
            links.push_back(parent = it->second);
        }
        return links;
    }

    template <class Eligible>
    int least_recently_used(Eligible eligible) const {
        int found = -1;
        for (int i = 0; i < int(entries_.size()); ++i)
            if (eligible(i, entries_[std::size_t(i)]) &&
                (found < 0 ||
                 entries_[std::size_t(i)].last_used < entries_[std::size_t(found)].last_used))
                found = i;
        return found;
    }

    // The entry the policy chooses among those in the pool, or -1.
    int chosen_by_policy() const {
        std::vector<CachedBlock> shown;
        std::vector<int> entry;  // (shown) the entry each one is
        for (int i = 0; i < int(entries_.size()); ++i) {
            const Entry& e = entries_[std::size_t(i)];
            if (e.block < 0) continue;
            shown.push_back({e.block, e.depth, e.children == 0, pool_.owners(e.block) - 1,
                             e.last_used, e.hits});
            entry.push_back(i);
        }
        const int chosen = policy_(shown);
        return chosen >= 0 && chosen < int(entry.size()) ? entry[std::size_t(chosen)] : -1;
    }

    // A free slot of the tier, after giving back its least recently used
    // leaf if it is full; -1 without a tier.
    int free_slot() {
        if (free_slots_.empty()) {
            const int leaf = least_recently_used([&](int i, const Entry& e) {
                return e.slot >= 0 && e.kept_children == 0 && i != loading_;
            });
            if (leaf < 0) return -1;
            ++tier_.evictions;
            forget(leaf);
        }
        if (free_slots_.empty()) return -1;
        const int slot = free_slots_.back();
        free_slots_.pop_back();
        return slot;
    }

    // Entry e's block is now `block` of the pool (from the tier, or new).
    void into_pool(int e, int block) {
        Entry& entry = entries_[std::size_t(e)];
        if (Entry* p = parent_of(entry)) {
            p->children += 1;
            p->kept_children -= entry.slot >= 0;
        }
        if (entry.slot >= 0) free_slots_.push_back(entry.slot);
        entry.slot = -1;
        entry.block = block;
        if (entry_of_.size() <= std::size_t(block)) entry_of_.resize(std::size_t(block) + 1, -1);
        entry_of_[std::size_t(block)] = e;
    }

    // Entry e leaves the pool for `slot` of the tier.
    void into_tier(int e, int slot) {
        Entry& entry = entries_[std::size_t(e)];
        if (Entry* p = parent_of(entry)) {
            p->children -= 1;
            p->kept_children += 1;
        }
        entry_of_[std::size_t(entry.block)] = -1;
        entry.block = -1;
        entry.slot = slot;
    }

    // Entry e is forgotten, and so is every entry the tier keeps after it
    // (nothing could find them again). It holds no pool block when called
    // from the tier; reclaim_one() releases the victim's block itself.
    void forget(int e) {
        std::vector<char> gone(entries_.size(), 0);
        gone[std::size_t(e)] = 1;
        for (std::size_t i = std::size_t(e); i < entries_.size(); ++i) {
            Entry& entry = entries_[i];
            const bool live = entry.block >= 0 || entry.slot >= 0;
            if (!live || !(gone[i] || (entry.parent != kRoot && gone[std::size_t(entry.parent)])))
                continue;
            gone[i] = 1;
            tier_.dropped += i != std::size_t(e);
            index_.erase(entry.at);
            if (Entry* p = parent_of(entry)) (entry.block >= 0 ? p->children : p->kept_children)--;
            if (entry.slot >= 0) free_slots_.push_back(entry.slot);
            if (entry.block >= 0) entry_of_[std::size_t(entry.block)] = -1;
            entry.block = entry.slot = -1;
        }
    }

    BlockLedger& pool_;
    Index index_;  // the live entries
    std::vector<Entry>
        entries_;  // every entry ever made, parents first; forgotten: no block, no slot
    std::vector<int> entry_of_;  // (blocks) the live entry naming each block, or -1
    std::uint64_t clock_ = 0;
    std::int64_t evictions_ = 0;
    TierStore* store_ = nullptr;   // where the tier's blocks are, or none
    std::vector<int> free_slots_;  // the tier's free slots; the next one taken is at the back
    int loading_ = -1;             // the entry reload() is reading back, which the tier keeps
    TierCounts tier_;
    EvictionPolicy policy_;  // none: least recently used
    std::int64_t refused_ = 0;
};

}  // namespace kv
