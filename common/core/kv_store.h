// Where one sequence's keys and values live, as the forward pass sees them.
//
// The forward pass needs two things of a sequence's store: a place to write
// the new positions' keys and values, and, to attend, every cached position
// in order. A contiguous cache (kv_cache.h) keeps a layer's positions in one
// array: one run. A paged cache (paged_kv_cache.h) keeps them in blocks of
// B positions scattered through a pool: one run per block. Attention walks
// the runs in order, so the numbers it adds, and the order it adds them in,
// are the same either way: paging changes where the bytes sit, never the
// logits.
#pragma once

#include <vector>

namespace kv {

// Consecutive positions of one layer: position i of the run has its key at
// keys + i * kv_dim and its value at values + i * kv_dim.
struct KVRun {
    const float* keys;
    const float* values;
    int positions;
};

class KVStore {
  public:
    virtual ~KVStore() = default;

    virtual int length() const = 0;    // positions 0..length-1 are filled
    virtual int capacity() const = 0;  // most positions it may ever hold
    virtual int n_layers() const = 0;
    virtual int kv_dim() const = 0;  // numbers in one position's key (and value)

    // Throws std::length_error if n more positions cannot be stored.
    virtual void check_room(int n) const = 0;
    // Makes room for n more positions before the forward pass writes them
    // (a paged store takes blocks from its pool here). Throws, storing
    // nothing, if they do not fit.
    virtual void reserve(int n) = 0;
    // Undoes the last reserve() before anything was committed, exactly: a
    // pass that fails after some of its sequences reserved leaves them as
    // they were.
    virtual void unreserve() { truncate(length()); }
    // Where the forward pass writes position pos (length() <= pos <
    // length() + reserved) of one layer: kv_dim numbers each.
    virtual float* key(int layer, int pos) = 0;
    virtual float* value(int layer, int pos) = 0;
    // After every layer has written them, the n new positions join the cache.
    virtual void commit(int n) = 0;
    // Keep positions 0..n-1 and forget the rest (and anything reserved).
    virtual void truncate(int n) = 0;

    // The first `positions` positions of one layer, as runs in position
    // order (`out` is cleared first).
    virtual void runs(int layer, int positions, std::vector<KVRun>& out) const = 0;
};

}  // namespace kv
