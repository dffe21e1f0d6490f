// Chapter 08: the prefix cache, blocks computed once for many requests.
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
// leaf of the chain (a block whose continuation is cached stays).
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <span>
#include <utility>
#include <vector>

#include "../core/block_pool.h"

namespace kv {

class PrefixCache : public BlockReclaimer {
  public:
    static constexpr int kNoLimit = std::numeric_limits<int>::max();

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

    int block_size() const { return pool_.block_size(); }
    int entries() const { return int(index_.size()); }
    std::int64_t evictions() const { return evictions_; }  // blocks given back to the pool

    // The blocks of the longest cached chain `tokens` starts with, in
    // order, at most `most`: whole blocks only. A look that changes nothing.
    std::vector<int> peek(std::span<const int> tokens, int most = kNoLimit) const {
        std::vector<int> blocks;
        for (int parent = kRoot; int(blocks.size()) < most;) {
            const std::size_t first = blocks.size() * std::size_t(block_size());
            if (first + block_size() > tokens.size()) break;
            const auto it = index_.find(key(parent, tokens.subspan(first, block_size())));
            if (it == index_.end()) break;
            parent = it->second;
            blocks.push_back(entries_[std::size_t(parent)].block);
        }
        return blocks;
    }

    // peek(), and the blocks found become the most recently used.
    std::vector<int> match(std::span<const int> tokens, int most = kNoLimit) {
        std::vector<int> blocks = peek(tokens, most);
        touch(blocks);
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
                const std::size_t block = std::size_t(table[b]);
                pool_.share(table[b]);  // the cache's own reference
                it = index_.emplace(k, int(entries_.size())).first;
                entries_.push_back({parent, table[b], 0, 0, it});
                if (parent != kRoot) ++entries_[std::size_t(parent)].children;
                if (entry_of_.size() <= block) entry_of_.resize(block + 1, -1);
                entry_of_[block] = it->second;
                ++added;
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
    // no cached block continues. It walks every entry ever made: a server
    // keeps its candidates in eviction order instead (vLLM's free-block queue).
    bool reclaim_one() override {
        int victim = -1;
        for (int i = 0; i < int(entries_.size()); ++i) {
            const Entry& e = entries_[std::size_t(i)];
            if (e.block < 0 || e.children > 0 || pool_.owners(e.block) != 1) continue;
            if (victim < 0 || e.last_used < entries_[std::size_t(victim)].last_used) victim = i;
        }
        if (victim < 0) return false;
        Entry& e = entries_[std::size_t(victim)];
        index_.erase(e.at);
        if (e.parent != kRoot) --entries_[std::size_t(e.parent)].children;
        pool_.release(e.block);  // the cache's reference: the block is free again
        entry_of_[std::size_t(e.block)] = -1;
        e.block = -1;
        ++evictions_;
        return true;
    }

  private:
    static constexpr int kRoot = -1;

    using Key = std::pair<int, std::vector<int>>;  // (parent entry, the block's tokens)
    using Index = std::map<Key, int>;              // -> entry

    struct Entry {
        int parent = kRoot;           // the entry of the block before; kRoot for the first
        int block = -1;               // the pool's block; -1 once given back
        int children = 0;             // cached blocks that continue it
        std::uint64_t last_used = 0;  // the cache's clock when last matched, filled or let go
        Index::iterator at;           // its key in index_
    };

    static Key key(int parent, std::span<const int> tokens) {
        return {parent, std::vector<int>(tokens.begin(), tokens.end())};
    }

    BlockLedger& pool_;
    Index index_;                 // the live entries
    std::vector<Entry> entries_;  // every entry ever made, parents first; given back: block -1
    std::vector<int> entry_of_;   // (blocks) the live entry naming each block, or -1
    std::uint64_t clock_ = 0;
    std::int64_t evictions_ = 0;
};

}  // namespace kv
