// Real weights: llama2.c's legacy ("version 0") checkpoint format.
//
// The small Llama-2-family models that classrooms use (the TinyStories
// models stories15M, stories42M and stories110M) are published in this
// format. It is a header of seven little-endian int32 numbers, then every
// weight as a little-endian float32, one whole tensor (all layers) after
// another:
//
//   dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len
//   token embedding        (vocab, dim)
//   attention RMSNorm      (layer, dim)
//   wq                     (layer, dim, dim)
//   wk                     (layer, kv_dim, dim)
//   wv                     (layer, kv_dim, dim)
//   wo                     (layer, dim, dim)
//   feed-forward RMSNorm   (layer, dim)
//   w1                     (layer, hidden, dim)
//   w2                     (layer, dim, hidden)
//   w3                     (layer, hidden, dim)
//   final RMSNorm          (dim)
//   RoPE cos and sin       (seq_len, head_size / 2) each; unused: the model computes RoPE
//   output projection      (vocab, dim), only when vocab_size is written negative;
//                          otherwise the output projection is the embedding table
//
// Every matrix is (out, in) row-major as in weights.h, and the model
// conventions match (RoPE on adjacent pairs, theta 10000, RMSNorm epsilon
// 1e-5, SwiGLU), so the numbers go straight in. Every error is a
// std::runtime_error, one line starting "checkpoint FILE:"; the file's size
// is checked against its header before any weight is read.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "../core/config.h"
#include "../core/weights.h"

namespace kv {

struct Checkpoint {
    Config config;    // the header's shape; shared_output when no output table was stored
    Weights weights;  // when shared, weights.output is a copy of the embedding table
};

// The header alone: the model's shape, checked, and the file's size checked
// against it. Cheap, so a program can check memory before reading weights.
Config read_checkpoint_config(const std::string& path);

// The whole model. Rejects weights that are NaN or infinite.
Checkpoint read_checkpoint(const std::string& path);

// Writes `weights` in the same format (with config.shared_output, the
// output projection must equal the embedding table). A file that cannot be
// written is a FileError "<what> <path>: <cause>", `what` naming the flag.
void write_checkpoint(const std::string& path, const Config& config, const Weights& weights,
                      std::string_view what = "checkpoint");

// The exact size in bytes of a checkpoint of this shape.
std::uint64_t checkpoint_bytes(const Config& config);

// Little-endian numbers, shared with the tokenizer file: assembled byte by
// byte, so the files read the same on any host.
std::int32_t le_int32(const unsigned char* bytes);
float le_float32(const unsigned char* bytes);
void append_le_int32(std::string& out, std::int32_t value);
void append_le_float32(std::string& out, float value);

}  // namespace kv
