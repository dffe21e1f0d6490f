// The model's learned numbers, here drawn at random from a seed.
#pragma once

#include <cstdint>
#include <vector>

#include "config.h"
#include "matrix.h"

namespace kv {

struct LayerWeights {
    std::vector<float> attn_norm;  // (dim) RMSNorm scale before attention
    Matrix wq;                     // (dim, dim)    queries
    Matrix wk;                     // (kv_dim, dim) keys
    Matrix wv;                     // (kv_dim, dim) values
    Matrix wo;                     // (dim, dim)    attention output
    std::vector<float> ffn_norm;   // (dim) RMSNorm scale before the feed-forward
    Matrix w1;                     // (ffn, dim)    gate
    Matrix w2;                     // (dim, ffn)    down
    Matrix w3;                     // (ffn, dim)    up
};

struct Weights {
    Matrix token_embedding;            // (vocab, dim) one row per token
    std::vector<LayerWeights> layers;  // (n_layers)
    std::vector<float> final_norm;     // (dim)
    Matrix output;                     // (vocab, dim) logits = output * x
};

// Zero-filled weights of the right shapes (for a reader that fills them).
Weights empty_weights(const Config& config);

// Random weights from the book's own generator. Each matrix (out, in) is
// uniform with standard deviation 1/sqrt(in), so its product with a
// vector of RMS 1 again has RMS about 1; embeddings have RMS 1 and norm
// scales are 1. The logits then spread about one unit apart: greedy
// decoding picks clear winners, and the tokens vary from step to step.
Weights random_weights(const Config& config, std::uint64_t seed);

}  // namespace kv
