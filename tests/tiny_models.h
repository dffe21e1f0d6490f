// Small model shapes for tests: big enough to exercise every part of the
// forward pass (several layers, grouped-query heads, a tail that is not a
// multiple of the kernels' lane count), small enough to run in milliseconds
// even under the sanitizers.
#pragma once

#include <vector>

#include "../common/core/config.h"

namespace kv::test {

// dim 24 is not a multiple of 16, so the kernels' tail path runs; 4 heads of
// 6 numbers share 2 KV heads (grouped-query).
inline Config tiny_config() {
    return Config{.n_layers = 2,
                  .dim = 24,
                  .n_heads = 4,
                  .n_kv_heads = 2,
                  .ffn_dim = 40,
                  .vocab_size = 97,
                  .max_seq = 64};
}

// A shape small enough to count by hand: 1 layer, dim 4, 2 heads of 2
// numbers sharing 1 KV head (kv_dim 2), ffn 6, vocabulary 10.
inline Config hand_sized_config() {
    return Config{.n_layers = 1,
                  .dim = 4,
                  .n_heads = 2,
                  .n_kv_heads = 1,
                  .ffn_dim = 6,
                  .vocab_size = 10,
                  .max_seq = 16};
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
    shapes.push_back(Config{.n_layers = 3,
                            .dim = 64,
                            .n_heads = 4,
                            .n_kv_heads = 2,  // head size 16
                            .ffn_dim = 96,
                            .vocab_size = 211,
                            .max_seq = 64});
    return shapes;
}

}  // namespace kv::test
