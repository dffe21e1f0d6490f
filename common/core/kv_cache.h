// The KV cache: one sequence's keys and values, computed once and kept.
//
// Attention at position t needs the key and value of every position up to t.
// Those of position j depend only on tokens 0..j, so they never change as the
// sequence grows: each is computed once, when its token passes through the
// model, and kept here instead of being recomputed for every new token.
//
// Two float32 arrays, keys and values alike, the whole capacity allocated up
// front (as llama2.c's key_cache and value_cache):
//     key_cache  (layer, position, KV head, number)
//                (n_layers, capacity, n_kv_heads, head_size)
// so number i of KV head h at position p of layer l sits at
//     ((l * capacity + p) * n_kv_heads + h) * head_size + i.
// One position's kv_dim = n_kv_heads x head_size numbers lie together, and a
// layer's positions one after another: attention reads a layer as one run.
// Numbers narrower than float32 (chapter 10): narrow_kv_cache.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "config.h"
#include "kv_store.h"
#include "matrix.h"  // AlignedFloats

namespace kv {

class KVCache final : public KVStore {
  public:
    // Room for `capacity` positions (1..config.max_seq), allocated and zeroed now.
    KVCache(const Config& config, int capacity);
    explicit KVCache(const Config& config) : KVCache(config, config.max_seq) {}

    int length() const override { return length_; }      // positions 0..length-1 are filled
    int capacity() const override { return capacity_; }  // positions it can hold
    int remaining() const { return capacity_ - length_; }
    int kv_dim() const override { return n_kv_heads_ * head_size_; }
    int n_layers() const override { return n_layers_; }

    // The key and value of one layer at one position: kv_dim numbers each.
    float* key(int layer, int pos) override { return &key_cache_[at(layer, pos)]; }
    float* value(int layer, int pos) override { return &value_cache_[at(layer, pos)]; }
    const float* key(int layer, int pos) const { return &key_cache_[at(layer, pos)]; }
    const float* value(int layer, int pos) const { return &value_cache_[at(layer, pos)]; }

    // Bytes of keys and values written so far, and bytes allocated.
    std::uint64_t bytes_used() const { return bytes_per_position() * std::uint64_t(length_); }
    std::uint64_t bytes_allocated() const {
        return bytes_per_position() * std::uint64_t(capacity_);
    }

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

  private:
    // Where (layer, pos, KV head 0, number 0) sits in either array.
    std::size_t at(int layer, int pos) const {
        return (std::size_t(layer) * capacity_ + pos) * std::size_t(kv_dim());
    }
    std::uint64_t bytes_per_position() const {
        return (key_cache_.size() + value_cache_.size()) * sizeof(float) / std::uint64_t(capacity_);
    }

    int n_layers_, n_kv_heads_, head_size_, capacity_;
    int length_ = 0;
    AlignedFloats key_cache_;    // (n_layers, capacity, n_kv_heads, head_size)
    AlignedFloats value_cache_;  // (n_layers, capacity, n_kv_heads, head_size)
};

}  // namespace kv
