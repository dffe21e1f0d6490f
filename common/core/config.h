// The model's shape, and what it costs in numbers and bytes.
#pragma once

#include <cstdint>
#include <string>

namespace kv {

struct Config {
    int n_layers = 6;       // transformer blocks
    int dim = 256;          // model width: the length of each token's vector
    int n_heads = 8;        // query heads; dim = n_heads * head_size
    int n_kv_heads = 2;     // key/value heads, shared by n_heads / n_kv_heads query heads each
    int ffn_dim = 768;      // hidden width of the SwiGLU feed-forward
    int vocab_size = 4096;  // tokens the model can read and write
    int max_seq = 512;      // longest context: prompt plus answer

    // The output projection is the embedding table (tied), as in llama2.c's
    // TinyStories checkpoints: parameter_count() counts it once.
    bool shared_output = false;

    int head_size() const { return dim / n_heads; }
    int kv_dim() const { return n_kv_heads * head_size(); }  // width of one position's keys
    int group_size() const { return n_heads / n_kv_heads; }  // query heads per KV head

    // Throws std::invalid_argument naming the first thing wrong: a size not
    // positive, heads not dividing the width or KV heads the heads, an odd
    // head size (RoPE rotates pairs); std::overflow_error past 64-bit bytes.
    void validate() const;

    // Every learned number: embedding, per layer (two norms, four attention
    // and three feed-forward matrices), final norm, output projection
    // (unless shared with the embedding).
    std::uint64_t parameter_count() const;
    std::uint64_t weight_bytes() const;  // float32 weights

    // What one forward pass reads and multiplies, whatever its row count. A
    // separate embedding table is only looked up; a shared one is also the
    // output projection, so it is read in full.
    std::uint64_t lookup_only_parameters() const;      // vocab x dim, or 0 when shared
    std::uint64_t weight_bytes_read_per_pass() const;  // every weight but a lookup-only table
    // The matrices a token is multiplied by: wq, wk, wv, wo, w1, w2, w3 per
    // layer and the output projection (not the RMSNorm scales).
    std::uint64_t multiplied_parameters() const;

    // The book's memory formula (memory_arithmetic.h) at this shape.
    std::uint64_t kv_bytes_per_token(std::uint64_t bytes_per_number = sizeof(float)) const;
    std::uint64_t kv_bytes(std::uint64_t tokens,
                           std::uint64_t bytes_per_number = sizeof(float)) const;

    std::string describe() const;  // "4 layers, dim 256, 8 heads (2 KV heads, head size 32), ..."
};

}  // namespace kv
