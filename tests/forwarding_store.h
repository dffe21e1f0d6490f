// A KVStore that hands every call to a KVCache it owns: a test derives
// from it and overrides the one call it watches or changes (chapter 02's
// exercise counts commits, chapter 10's oracle rounds at the write).
#pragma once

#include <vector>

#include "../common/core/kv_cache.h"
#include "../common/core/kv_store.h"

namespace kv::test {

class ForwardingStore : public KVStore {
  public:
    ForwardingStore(const Config& c, int capacity) : cache_(c, capacity) {}
    int length() const override { return cache_.length(); }
    int capacity() const override { return cache_.capacity(); }
    int n_layers() const override { return cache_.n_layers(); }
    int kv_dim() const override { return cache_.kv_dim(); }
    void check_room(int n) const override { cache_.check_room(n); }
    void reserve(int n) override { cache_.reserve(n); }
    float* key(int layer, int pos) override { return cache_.key(layer, pos); }
    float* value(int layer, int pos) override { return cache_.value(layer, pos); }
    void commit(int n) override { cache_.commit(n); }
    void truncate(int n) override { cache_.truncate(n); }
    void runs(int layer, int positions, std::vector<KVRun>& out) const override {
        cache_.runs(layer, positions, out);
    }

  protected:
    KVCache cache_;
};

}  // namespace kv::test
