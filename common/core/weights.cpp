#include "weights.h"

#include <cmath>

#include "rng.h"

namespace kv {

Weights empty_weights(const Config& c) {
    c.validate();
    Weights w;
    w.token_embedding = Matrix(c.vocab_size, c.dim);
    w.layers.resize(c.n_layers);
    for (LayerWeights& layer : w.layers) {
        layer.attn_norm.assign(c.dim, 0.0f);
        layer.wq = Matrix(c.dim, c.dim);
        layer.wk = Matrix(c.kv_dim(), c.dim);
        layer.wv = Matrix(c.kv_dim(), c.dim);
        layer.wo = Matrix(c.dim, c.dim);
        layer.ffn_norm.assign(c.dim, 0.0f);
        layer.w1 = Matrix(c.ffn_dim, c.dim);
        layer.w2 = Matrix(c.dim, c.ffn_dim);
        layer.w3 = Matrix(c.ffn_dim, c.dim);
    }
    w.final_norm.assign(c.dim, 0.0f);
    w.output = Matrix(c.vocab_size, c.dim);
    return w;
}

namespace {

// Uniform on [-a, a) has standard deviation a / sqrt(3).
void fill(Matrix& m, Rng& rng, float stddev) {
    const float a = stddev * std::sqrt(3.0f);
    for (float& v : m.data) v = rng.symmetric(a);
}

float inverse_sqrt(int n) {
    return 1.0f / std::sqrt(static_cast<float>(n));
}

}  // namespace

Weights random_weights(const Config& c, std::uint64_t seed) {
    Weights w = empty_weights(c);
    Rng rng(seed);
    fill(w.token_embedding, rng, 1.0f);
    for (LayerWeights& layer : w.layers) {
        layer.attn_norm.assign(c.dim, 1.0f);
        layer.ffn_norm.assign(c.dim, 1.0f);
        for (Matrix* m :
             {&layer.wq, &layer.wk, &layer.wv, &layer.wo, &layer.w1, &layer.w2, &layer.w3})
            fill(*m, rng, inverse_sqrt(m->cols));  // in this order: the seed's stream
    }
    w.final_norm.assign(c.dim, 1.0f);
    fill(w.output, rng, inverse_sqrt(c.dim));
    return w;
}

}  // namespace kv
