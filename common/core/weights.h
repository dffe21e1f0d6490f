// The model's learned numbers, here drawn at random from a seed.
#pragma once

#include <cstdint>
#include <string>
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

// f(name, tensor, rows, cols) for every tensor but the output projection,
// in the order of llama2.c's files: all layers of one tensor before the
// next; a norm is one row of cols.
template <class W, class F>
void for_each_tensor(const Config& c, W& w, F&& f) {
    f(std::string("the token embedding"), w.token_embedding, c.vocab_size, c.dim);
    auto layers = [&](const char* name, auto member, int rows, int cols) {
        for (int l = 0; l < c.n_layers; ++l)
            f(std::string(name) + " of layer " + std::to_string(l), w.layers[l].*member, rows,
              cols);
    };
    layers("attn_norm", &LayerWeights::attn_norm, 1, c.dim);
    layers("wq", &LayerWeights::wq, c.dim, c.dim);
    layers("wk", &LayerWeights::wk, c.kv_dim(), c.dim);
    layers("wv", &LayerWeights::wv, c.kv_dim(), c.dim);
    layers("wo", &LayerWeights::wo, c.dim, c.dim);
    layers("ffn_norm", &LayerWeights::ffn_norm, 1, c.dim);
    layers("w1", &LayerWeights::w1, c.ffn_dim, c.dim);
    layers("w2", &LayerWeights::w2, c.dim, c.ffn_dim);
    layers("w3", &LayerWeights::w3, c.ffn_dim, c.dim);
    f(std::string("the final norm"), w.final_norm, 1, c.dim);
}

// Zero-filled weights of the right shapes (for a reader that fills them).
Weights empty_weights(const Config& config);

// Random weights from the book's own generator. Each matrix (out, in) is
// uniform with standard deviation 1/sqrt(in), so a vector of RMS 1 keeps
// RMS about 1 through it; embeddings have RMS 1, norm scales are 1. The
// logits spread about one unit apart: greedy decoding picks clear winners.
Weights random_weights(const Config& config, std::uint64_t seed);

}  // namespace kv
