// One sequence's key/value store: the KV cache, in one contiguous array.
//
// Attention at position t needs the keys and values of every position up
// to t. Those of position j depend on tokens 0..j and never on a later
// token, so they do not change as the sequence grows: a server computes
// each once and keeps it here instead of recomputing it for every new
// token. It keeps float32 unless told another number format (chapter 10).
#pragma once

#include <cstdint>
#include <vector>

#include "config.h"
#include "kv_rows.h"
#include "kv_store.h"
#include "number_format.h"

namespace kv {

class KVCache final : public KVStore {
  public:
    // Room for `capacity` positions (at most config.max_seq), allocated and
    // zeroed now: the whole possible context is reserved up front.
    KVCache(const Config& config, int capacity, NumberFormat format = NumberFormat::float32);
    explicit KVCache(const Config& config) : KVCache(config, config.max_seq) {}

    int length() const override { return length_; }      // positions 0..length-1 are filled
    int capacity() const override { return capacity_; }  // positions it can hold
    int remaining() const { return capacity_ - length_; }

    // Bytes of keys and values written so far, and bytes allocated (read off
    // the buffers themselves, so the tests can hold them to Config::kv_bytes).
    std::uint64_t bytes_used() const;
    std::uint64_t bytes_allocated() const;

    // Key and value vectors (kv_dim numbers) of one layer at one position,
    // in a float32 cache (a narrower one throws).
    float* key(int layer, int pos) override { return keys_.floats(row(layer, pos)); }
    float* value(int layer, int pos) override { return values_.floats(row(layer, pos)); }
    const float* key(int layer, int pos) const { return keys_.floats(row(layer, pos)); }
    const float* value(int layer, int pos) const { return values_.floats(row(layer, pos)); }
    void write(int layer, int pos, const float* key, const float* value) override;
    RowFormat row_format() const override { return keys_.format(); }
    NumberFormat number_format() const { return keys_.format().format; }

    // Throws std::length_error if n more positions do not fit.
    void check_room(int n) const override;
    void reserve(int n) override { check_room(n); }  // the room is there from the start
    void unreserve() override {}                     // and stays
    void commit(int n) override;
    // Keep positions 0..n-1 and forget the rest (their memory stays
    // allocated): a preempted request's cache, or a context rebuilt.
    void truncate(int n) override;

    // One run: every position of a layer, kv_dim numbers apart.
    void runs(int layer, int positions, std::vector<KVRun>& out) const override;

    int kv_dim() const override { return kv_dim_; }
    int n_layers() const override { return n_layers_; }

  private:
    std::size_t row(int layer, int pos) const { return std::size_t(layer) * capacity_ + pos; }

    int n_layers_;
    int kv_dim_;
    int capacity_;
    int length_ = 0;
    KVRows keys_;    // (layer, capacity) rows of kv_dim numbers
    KVRows values_;  // (layer, capacity) rows of kv_dim numbers
};

}  // namespace kv
