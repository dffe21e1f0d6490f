#include "weights.h"

#include <cmath>

#include "rng.h"

namespace kv {

Weights empty_weights(const Config& c) {
    c.validate();
    Weights w;
    w.layers.resize(c.n_layers);
    for_each_tensor(c, w, [](const std::string&, auto& t, int rows, int cols) {
        if constexpr (requires { t.rows; })
            t = Matrix(rows, cols);
        else
            t.assign(std::size_t(cols), 0.0f);
    });
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
