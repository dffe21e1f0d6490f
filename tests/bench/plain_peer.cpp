// The plain peer's step (plain_peer.h), compiled with -Ofast by the
// Makefile's bench rule. Written for this book, in the shape of llama2.c's
// forward(): no tiles, no fixed order of additions, nothing kept in
// registers by hand.
#include "plain_peer.h"

namespace kv::bench {

namespace {

void rmsnorm(float* out, const float* x, const float* weight, int n) {
    float ss = 0.0f;
    for (int j = 0; j < n; j++) ss += x[j] * x[j];
    ss = 1.0f / __builtin_sqrtf(ss / n + 1e-5f);
    for (int j = 0; j < n; j++) out[j] = weight[j] * (ss * x[j]);
}

void softmax(float* x, int n) {
    float max = x[0];
    for (int i = 1; i < n; i++)
        if (x[i] > max) max = x[i];
    float sum = 0.0f;
    for (int i = 0; i < n; i++) {
        x[i] = __builtin_expf(x[i] - max);
        sum += x[i];
    }
    for (int i = 0; i < n; i++) x[i] /= sum;
}

// out (d) = w (d, n) x (n), one row of w after another.
void matmul(float* out, const float* x, const float* w, int n, int d) {
    for (int i = 0; i < d; i++) {
        float val = 0.0f;
        for (int j = 0; j < n; j++) val += w[i * n + j] * x[j];
        out[i] = val;
    }
}

// Turns each pair (2i, 2i+1) of each head by the angle of pos.
void rope(float* v, int n, int head_size, const float* cos, const float* sin) {
    for (int i = 0; i < n; i += 2) {
        const int pair = (i % head_size) / 2;
        const float a = v[i], b = v[i + 1];
        v[i] = a * cos[pair] - b * sin[pair];
        v[i + 1] = a * sin[pair] + b * cos[pair];
    }
}

}  // namespace

void peer_forward(const PeerModel& m, const PeerState& s, int token, int pos) {
    const int dim = m.dim, hidden = m.hidden, head_size = dim / m.n_heads;
    const int kv_dim = m.n_kv_heads * head_size, kv_mul = m.n_heads / m.n_kv_heads;
    float* x = s.x;
    const float* row = m.token_embedding + long(token) * dim;
    for (int i = 0; i < dim; i++) x[i] = row[i];
    const float* cos = m.rope_cos + long(pos) * (head_size / 2);
    const float* sin = m.rope_sin + long(pos) * (head_size / 2);

    for (int l = 0; l < m.n_layers; l++) {
        const PeerLayer& w = m.layers[l];
        rmsnorm(s.xb, x, w.attn_norm, dim);
        const long layer_offset = long(l) * m.seq_len * kv_dim;
        float* k = s.key_cache + layer_offset + long(pos) * kv_dim;
        float* v = s.value_cache + layer_offset + long(pos) * kv_dim;
        matmul(s.q, s.xb, w.wq, dim, dim);
        matmul(k, s.xb, w.wk, dim, kv_dim);
        matmul(v, s.xb, w.wv, dim, kv_dim);
        rope(s.q, dim, head_size, cos, sin);
        rope(k, kv_dim, head_size, cos, sin);

        for (int h = 0; h < m.n_heads; h++) {
            const float* q = s.q + h * head_size;
            float* att = s.att + long(h) * m.seq_len;
            const long head = long(h / kv_mul) * head_size;
            for (int t = 0; t <= pos; t++) {
                const float* kt = s.key_cache + layer_offset + long(t) * kv_dim + head;
                float score = 0.0f;
                for (int i = 0; i < head_size; i++) score += q[i] * kt[i];
                att[t] = score / __builtin_sqrtf(float(head_size));
            }
            softmax(att, pos + 1);
            float* xb = s.xb + h * head_size;
            for (int i = 0; i < head_size; i++) xb[i] = 0.0f;
            for (int t = 0; t <= pos; t++) {
                const float* vt = s.value_cache + layer_offset + long(t) * kv_dim + head;
                const float a = att[t];
                for (int i = 0; i < head_size; i++) xb[i] += a * vt[i];
            }
        }
        matmul(s.xb2, s.xb, w.wo, dim, dim);
        for (int i = 0; i < dim; i++) x[i] += s.xb2[i];

        rmsnorm(s.xb, x, w.ffn_norm, dim);
        matmul(s.hb, s.xb, w.w1, dim, hidden);
        matmul(s.hb2, s.xb, w.w3, dim, hidden);
        for (int i = 0; i < hidden; i++) {
            const float g = s.hb[i];
            s.hb[i] = g / (1.0f + __builtin_expf(-g)) * s.hb2[i];
        }
        matmul(s.xb, s.hb, w.w2, hidden, dim);
        for (int i = 0; i < dim; i++) x[i] += s.xb[i];
    }
    rmsnorm(x, x, m.final_norm, dim);
    matmul(s.logits, x, m.output, dim, m.vocab);
}

}  // namespace kv::bench
