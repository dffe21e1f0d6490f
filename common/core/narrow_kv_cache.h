// Chapter 10's contiguous cache: kv_cache.h's layout, each number stored in
// a chosen format (number_format.h) and rounded once, in write(). float32 is
// one of the formats, so that an experiment holds every width in one type.
// Its runs are its bytes as stored, which attention reads in place.
#pragma once

#include <cstdint>
#include <vector>

#include "config.h"
#include "kv_rows.h"
#include "kv_store.h"
#include "number_format.h"

namespace kv {

class NarrowKVCache final : public KVStore {
  public:
    // Room for `capacity` positions (at most config.max_seq), allocated and zeroed now.
    NarrowKVCache(const Config& config, int capacity, NumberFormat format);

    int length() const override { return length_; }      // positions 0..length-1 are filled
    int capacity() const override { return capacity_; }  // positions it can hold

    // Bytes of keys and values written so far, and bytes allocated.
    std::uint64_t bytes_used() const;
    std::uint64_t bytes_allocated() const;

    // float32 only: a narrower cache has no floats to point at, and throws.
    float* key(int layer, int pos) override { return keys_.floats(row(layer, pos)); }
    float* value(int layer, int pos) override { return values_.floats(row(layer, pos)); }
    void write(int layer, int pos, const float* key, const float* value) override;
    RowFormat row_format() const override { return keys_.format(); }
    NumberFormat number_format() const { return keys_.format().format; }

    void check_room(int n) const override;
    void reserve(int n) override { check_room(n); }  // the room is there from the start
    void unreserve() override {}                     // and stays
    void commit(int n) override;
    void truncate(int n) override;

    // One run: every position of a layer, row_format().bytes() apart.
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
