// The arithmetic of a transformer: dot products, matrix products, RMSNorm,
// softmax, SiLU and rotary position embedding.
//
// One rule makes the book's comparisons exact: every dot product, whether
// it comes from dot(), from a matrix-vector product at decode time or from
// a matrix-matrix product at prefill or in a batch, adds its terms in the
// same order (kLanes interleaved partial sums, then a fixed pairwise
// reduction). Together with -ffp-contract=off in the build, this means the
// cache and batching change nothing but the time: the logits are the same
// to the last bit.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "matrix.h"

namespace kv {

// Partial sums per dot product. 16 floats is one AVX-512 register, two AVX
// or four SSE/NEON registers: the compiler maps the lanes onto whatever the
// machine has, and the order of additions stays the same everywhere.
inline constexpr int kLanes = 16;

float dot(const float* a, const float* b, int n);

// out[j] = dot(x, rows + j * stride, n) for j < n_rows: one query against many
// keys, as attention needs. Same order of additions as dot(), computed 8
// rows at a time so the query's numbers are loaded once for all 8.
void dot_rows(const float* x, const float* rows, int n_rows, std::size_t stride, int n, float* out);

// out[d] = sum over j of weights[j] * rows[j * stride + d], for d < width,
// adding the terms in the order j = 0, 1, 2, ...: attention's weighted sum
// of values. The plain loop is the reference; this one keeps kLanes outputs
// in a register while it walks the rows, which gives the same numbers.
void weighted_sum(const float* weights, int n_rows, const float* rows, std::size_t stride,
                  int width, float* out);

// The same, but adding to what out already holds: out[d] += the terms, in
// the order j = 0, 1, 2, .... Started from zero and called on consecutive
// runs of rows (the blocks of a paged cache), it gives exactly what one
// weighted_sum over all of them gives, because each output is still one
// sum taken in row order.
void weighted_sum_add(const float* weights, int n_rows, const float* rows, std::size_t stride,
                      int width, float* out);

// y (x.rows, w.rows) = x (rows, in) times w (out, in) transposed: each output
// y[i][j] is the dot product of input row i with weight row j. Weights are
// stored (out, in) as in Llama, so each output reads one contiguous row.
void matmul(const Matrix& x, const Matrix& w, Matrix& y);

// The textbook triple loop, one sequential sum per output. Slow, and its sums
// round differently; kept as the reference the fast kernel is tested against.
void matmul_reference(const Matrix& x, const Matrix& w, Matrix& y);

// out = x / sqrt(mean(x^2) + 1e-5) * scale, as in Llama.
void rmsnorm(std::span<float> out, std::span<const float> x, std::span<const float> scale);

// In place: exp(x - max) / sum. Subtracting the max first keeps exp from
// overflowing; the result is unchanged mathematically.
void softmax(std::span<float> x);

// e^x from float additions and multiplications only (and an exact scaling by
// a power of two), so it rounds the same on every machine and compiler,
// which the C library's expf does not promise; within a few units in the
// last place of the true value. Below -87 it returns 0, above 88 infinity.
float exp_float(float x);

// SiLU(x) = x * sigmoid(x), the gate of the SwiGLU feed-forward.
float silu(float x);

// Rotary position embedding, Llama 2 convention: inside each head of
// head_size numbers, the pair (2i, 2i+1) turns by the angle
// pos * 10000^(-2i / head_size). vec holds whole heads back to back.
void rope(std::span<float> vec, int head_size, int pos);

// The same rotation with the cosines and sines of every position worked out
// once, when the model is built, instead of a pow, a cos and a sin per pair
// on every call. Gives exactly what rope() gives.
class RopeTable {
  public:
    RopeTable(int head_size, int max_positions);
    void apply(std::span<float> vec, int pos) const;
    // (position, head_size / 2): the tables, in the layout llama2.c's files keep.
    std::span<const float> cosines() const { return cos_; }
    std::span<const float> sines() const { return sin_; }

  private:
    int head_size_;
    std::vector<float> cos_;  // (position, head_size / 2)
    std::vector<float> sin_;  // (position, head_size / 2)
};

}  // namespace kv
