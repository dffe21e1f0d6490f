// A plain peer for make bench: the same one-token step as the engine's
// batch-1 decode, written the way a simple C implementation of a Llama
// model is (one plain loop per operation, one row of weights after another,
// as llama2.c's run.c does), and compiled with -Ofast, so the compiler may
// reorder the additions, fuse multiply-adds and vectorise as it likes. Its
// logits are not the book's (their order of additions is the compiler's);
// only its time is compared with the engine's.
//
// This header holds plain structs of pointers and no inline arithmetic: the
// -Ofast file (plain_peer.cpp) shares no inline function with the rest of
// the program, so none of the book's arithmetic is ever compiled with it.
#pragma once

namespace kv::bench {

struct PeerLayer {
    const float* attn_norm;  // (dim)
    const float* wq;         // (dim, dim)
    const float* wk;         // (kv_dim, dim)
    const float* wv;         // (kv_dim, dim)
    const float* wo;         // (dim, dim)
    const float* ffn_norm;   // (dim)
    const float* w1;         // (hidden, dim)
    const float* w2;         // (dim, hidden)
    const float* w3;         // (hidden, dim)
};

struct PeerModel {
    int dim, hidden, n_layers, n_heads, n_kv_heads, vocab, seq_len;
    const float* token_embedding;  // (vocab, dim)
    const PeerLayer* layers;       // (n_layers)
    const float* final_norm;       // (dim)
    const float* output;           // (vocab, dim)
    const float* rope_cos;         // (seq_len, head_size / 2)
    const float* rope_sin;         // (seq_len, head_size / 2)
};

// The run state, allocated by the caller.
struct PeerState {
    float* x;            // (dim) the residual stream
    float* xb;           // (dim)
    float* xb2;          // (dim)
    float* hb;           // (hidden)
    float* hb2;          // (hidden)
    float* q;            // (dim)
    float* att;          // (n_heads, seq_len) scores
    float* logits;       // (vocab)
    float* key_cache;    // (layer, seq_len, kv_dim)
    float* value_cache;  // (layer, seq_len, kv_dim)
};

// One token at position pos: its key and value join the cache at pos, it
// attends to positions 0..pos, and state.logits holds its scores.
void peer_forward(const PeerModel& model, const PeerState& state, int token, int pos);

}  // namespace kv::bench
