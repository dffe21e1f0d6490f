// Small model shapes for tests: big enough to exercise every part of the
// forward pass (several layers, grouped-query heads, a tail that is not a
// multiple of the kernels' lane count), small enough to run in milliseconds
// even under the sanitizers.
#pragma once

#include <vector>

#include "../common/config.h"

namespace kv::test {

inline Config tiny_config() {
    Config c;
    c.n_layers = 2;
    c.dim = 24;        // not a multiple of 16: the kernels' tail path runs
    c.n_heads = 4;     // head size 6
    c.n_kv_heads = 2;  // grouped-query: two query heads per KV head
    c.ffn_dim = 40;
    c.vocab_size = 97;
    c.max_seq = 64;
    return c;
}

// The shapes the cache must be exact on: grouped-query, multi-query (one KV
// head), multi-head (KV heads = query heads), a single layer, and a wider one.
inline std::vector<Config> shapes_to_check() {
    std::vector<Config> shapes;
    shapes.push_back(tiny_config());
    Config mqa = tiny_config();
    mqa.n_kv_heads = 1;
    shapes.push_back(mqa);
    Config mha = tiny_config();
    mha.n_kv_heads = mha.n_heads;
    shapes.push_back(mha);
    Config one_layer = tiny_config();
    one_layer.n_layers = 1;
    shapes.push_back(one_layer);
    Config wide = tiny_config();
    wide.dim = 64;
    wide.n_heads = 4;  // head size 16
    wide.n_kv_heads = 2;
    wide.ffn_dim = 96;
    wide.vocab_size = 211;
    wide.n_layers = 3;
    shapes.push_back(wide);
    return shapes;
}

}  // namespace kv::test
