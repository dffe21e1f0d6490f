// Where one sequence's keys and values live, as the forward pass sees them.
//
// A contiguous cache (kv_cache.h) keeps a layer's positions in one array:
// one run. A paged cache (paged_kv_cache.h) keeps them in blocks scattered
// through a pool: one run per block. Attention walks the runs in order, so
// it adds the same numbers in the same order either way: paging changes
// where the bytes sit, never the logits. A store narrower than float32
// (number_format.h) rounds each number once, in write(); its runs are its
// bytes as stored, which attention reads where they lie (attention.h).
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "number_format.h"

namespace kv {

// Consecutive positions of one layer, in the store's row_format(): position
// i of the run has its key at keys + i * row_format().bytes() and its value
// at values + i * row_format().bytes() (float32: kv_dim floats apart).
struct KVRun {
    const std::byte* keys;
    const std::byte* values;
    int positions;

    KVRun(const std::byte* k, const std::byte* v, int n) : keys(k), values(v), positions(n) {}
    KVRun(const float* k, const float* v, int n)
        : KVRun(reinterpret_cast<const std::byte*>(k), reinterpret_cast<const std::byte*>(v), n) {}
};

class KVStore {
  public:
    virtual ~KVStore() = default;

    virtual int length() const = 0;    // positions 0..length-1 are filled
    virtual int capacity() const = 0;  // most positions it may ever hold
    virtual int n_layers() const = 0;
    virtual int kv_dim() const = 0;  // numbers in one position's key (and value)
    // How it keeps one position's key (and value): float32 unless it says.
    virtual RowFormat row_format() const { return {NumberFormat::float32, 1, kv_dim()}; }

    // Throws std::length_error if n more positions cannot be stored.
    virtual void check_room(int n) const = 0;
    // Makes room for n more positions (a paged store takes blocks), or
    // throws, storing nothing.
    virtual void reserve(int n) = 0;
    // Gives back what the last reserve() took: after a failed pass a store
    // holds the positions and numbers it had (a paged store may keep a
    // private copy of a block it shared: the same numbers, one block more).
    virtual void unreserve() { truncate(length()); }
    // Where a float32 store keeps position pos of one layer (kv_dim numbers
    // each); a narrower store has no floats there, and throws.
    virtual float* key(int layer, int pos) = 0;
    virtual float* value(int layer, int pos) = 0;
    // Writes a reserved position of one layer, rounded to the store's format.
    virtual void write(int layer, int pos, const float* key, const float* value) {
        std::copy(key, key + kv_dim(), this->key(layer, pos));
        std::copy(value, value + kv_dim(), this->value(layer, pos));
    }
    // After every layer has written them, the n new positions join the cache.
    virtual void commit(int n) = 0;
    // Keep positions 0..n-1 and forget the rest (and anything reserved).
    virtual void truncate(int n) = 0;

    // The first `positions` positions of one layer, as runs in order (`out` cleared first).
    virtual void runs(int layer, int positions, std::vector<KVRun>& out) const = 0;
};

}  // namespace kv
