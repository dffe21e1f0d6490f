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

#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "matrix.h"

namespace kv {

// Partial sums per dot product. 16 floats is one AVX-512 register, two AVX
// or four SSE/NEON registers: the compiler maps the lanes onto whatever the
// machine has, and the order of additions stays the same everywhere.
inline constexpr int kLanes = 16;

float dot(const float* a, const float* b, int n);

// The same dot product as plain C++, for a reader: the statement of the order
// every dot product in the book adds its terms in. Term k goes to partial sum
// k % kLanes, each partial sum adds its terms from the first to the last, and
// the 16 partial sums meet in a fixed pairwise tree (lane l with l + 8, then
// l + 4, l + 2, l + 1). dot(), dot_rows() and matmul() compute exactly this,
// bit for bit, only kLanes (or many times kLanes) numbers at a time; that,
// with -ffp-contract=off, is why the naive, cached and batched paths give
// the same logits to the last bit on every machine. Slow (on an Intel Xeon,
// Emerald Rapids, family 6 model 207, GCC 12, AVX-512, both in one process,
// interleaved, fastest of 1,500 samples of 20,000 calls: 188 ns over 256
// numbers against dot()'s 17.8, 34.5 against 5.5 over 32); never called by
// the model; tests/kernels_test.cpp checks the fast kernels against it.
float dot_in_book_order(const float* a, const float* b, int n);

// out[j] = dot(x, rows + j * stride, n) for j < n_rows: one query against many
// keys, as attention needs. Same order of additions as dot(), computed 16
// rows at a time so the query's numbers are loaded once for all 16. What
// that bought, and where it bought nothing, is measured at kKeyRows in
// kernels.cpp. dot_rows_reference below is what it must equal, bit for bit.
void dot_rows(const float* x, const float* rows, int n_rows, std::size_t stride, int n, float* out);

// The same as a plain loop: dot_in_book_order on each row, one at a time.
// The reference dot_rows is tested against; never called by the model.
void dot_rows_reference(const float* x, const float* rows, int n_rows, std::size_t stride, int n,
                        float* out);

// out[d] = sum over j of weights[j] * rows[j * stride + d], for d < width,
// adding the terms in the order j = 0, 1, 2, ...: attention's weighted sum
// of values. The plain loop (weighted_sum_reference) is the reference; this
// one keeps kLanes outputs in a register while it walks the rows, which
// gives the same numbers.
// Measured on an Intel Xeon (Emerald Rapids, family 6 model 207, GCC 12,
// AVX-512), both in one process, interleaved, fastest of 1,500 samples of
// 20 calls, against weighted_sum_reference: 4,097 rows of head size 32, 64
// floats apart, 18.5 -> 10.7 us;
// a demo decode step over 4,096 cached positions, one head at a time
// (attend_one_head, the path that calls this), fastest of 150: 5.14 ->
// 4.65 ms (5.96 -> 5.26 in a run of 60).
void weighted_sum(const float* weights, int n_rows, const float* rows, std::size_t stride,
                  int width, float* out);

// The same, but adding to what out already holds: out[d] += the terms, in
// the order j = 0, 1, 2, .... Started from zero and called on consecutive
// runs of rows (the blocks of a paged cache), it gives exactly what one
// weighted_sum over all of them gives, because each output is still one
// sum taken in row order.
void weighted_sum_add(const float* weights, int n_rows, const float* rows, std::size_t stride,
                      int width, float* out);

// The same two as the plain loop: for each row, add its weighted numbers to
// every output. Each output then adds its terms in row order, all the fast
// ones promise, so they must give the same bits. The references they are
// tested against; never called by the model.
void weighted_sum_reference(const float* weights, int n_rows, const float* rows, std::size_t stride,
                            int width, float* out);
void weighted_sum_add_reference(const float* weights, int n_rows, const float* rows,
                                std::size_t stride, int width, float* out);

// ----------------------------------------- a group of query heads at once
//
// In grouped-query attention the query heads of one group (n_heads /
// n_kv_heads of them) read the same keys and values. The two kernels below
// do for a whole group what dot_rows and weighted_sum_add do for one head,
// in one pass over the keys or values, so each key and each value is loaded
// once per group instead of once per head. Every score and every output is
// still the same one sum, added in the same order: the numbers are
// bit-identical to calling the one-head kernels once per head, which stay
// as the reference (tests/kernels_test.cpp checks the one against the other).

// out[i * out_stride + j] = dot(queries + i * query_stride, rows + j * stride, n)
// for i < n_queries, j < n_rows: a group's queries against the same keys.
void dot_rows_for_group(const float* queries, int n_queries, std::size_t query_stride,
                        const float* rows, int n_rows, std::size_t stride, int n, float* out,
                        std::size_t out_stride);

// For each i < n_sums, weighted_sum_add(weights + i * weights_stride, n_rows,
// rows, stride, width, out + i * out_stride): a group's weighted sums of the
// same values, each output adding its terms in the order j = 0, 1, 2, ....
void weighted_sum_add_for_group(const float* weights, int n_sums, std::size_t weights_stride,
                                int n_rows, const float* rows, std::size_t stride, int width,
                                float* out, std::size_t out_stride);

// y (x.rows, w.rows) = x (rows, in) times w (out, in) transposed: each output
// y[i][j] is the dot product of input row i with weight row j. Weights are
// stored (out, in) as in Llama, so each output reads one contiguous row.
void matmul(const Matrix& x, const Matrix& w, Matrix& y);

// The textbook triple loop, one sequential sum per output. Slow (on the same
// Xeon, both in one process, interleaved, fastest of 150: 128 x 256 by
// 768 x 256 20.1 ms against matmul's 0.66, 16 rows 2.54 against 0.084),
// and its sums round differently; kept as the reference the fast kernel is
// tested against.
void matmul_reference(const Matrix& x, const Matrix& w, Matrix& y);

// out = x / sqrt(mean(x^2) + 1e-5) * scale, as in Llama.
void rmsnorm(std::span<float> out, std::span<const float> x, std::span<const float> scale);

// In place: exp(x - max) / sum. Subtracting the max first keeps exp from
// overflowing; the result is unchanged mathematically.
void softmax(std::span<float> x);

// softmax() of each of n_rows rows of n numbers, row r at x + r * stride:
// the same numbers, but the rows' sums, each still taken left to right, run
// side by side (one sum alone waits for each addition before the next).
// Four heads over 4,097 positions: 27 -> 20 us on the Xeon of
// Transformer::attend_group's measurements.
void softmax_for_group(float* x, int n_rows, std::size_t stride, int n);

// e^x from float additions and multiplications only (and an exact scaling by
// a power of two), so it rounds the same on every machine and compiler,
// which the C library's expf does not promise; within a few units in the
// last place of the true value. Below -87 it returns 0, above 88 infinity.
//
// Written without branches or library calls, and inline, so that the
// compiler turns a loop of them (SiLU over a row of the feed-forward,
// softmax over a row of scores) into vector code. The arithmetic is the
// same on every path: vectorising changes how many numbers go through at
// once, not how any one of them is rounded. The lack of branches measured
// no gain with GCC 12: written with early returns for NaN and the two
// ends, the loops became vector code all the same, and ran as fast or a
// little faster (Intel Xeon, Emerald Rapids, family 6 model 207, AVX-512,
// both in one process, interleaved, fastest of 1,500: silu(gate) * up over
// 128 x 768 numbers 85.0 us branch-free against 80.1 with branches,
// softmax_for_group over 4 x 4,097 scores 20.1 against 18.8 us; a 128-token
// prefill 19.4 against 19.1 ms, fastest of 150). Kept: another compiler
// may not make vector code of the branches; that was not measured.
// e^r by its Taylor series to r^7, for |r| <= ln2 / 2 (the next term is
// below 6e-9 there), in Horner's order: exp_float and its reference share it.
inline float exp_taylor(float r) {
    float p = 1.0f / 5040;
    p = p * r + 1.0f / 720;
    p = p * r + 1.0f / 120;
    p = p * r + 1.0f / 24;
    p = p * r + 1.0f / 6;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    return p;
}

inline float exp_float(float x) {
    // Clamped to where the steps below stay in range (NaN becomes 0 here);
    // the ends, and NaN, are put right at the end.
    const float xc = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : (x == x ? x : 0.0f));
    // x = n ln2 + r with |r| <= ln2 / 2; ln2 is split in two so that n * ln2_hi
    // is exact. n is x / ln2 rounded to the nearest integer, ties to even:
    // adding and then subtracting 1.5 * 2^23 rounds exactly so, as nearbyint
    // does, for any value below 2^22 in size.
    const float shifter = 12582912.0f;  // 1.5 * 2^23
    const float n = (xc * 1.44269504f + shifter) - shifter;
    const float r = (xc - n * 0.693145751953125f) - n * 1.42860677e-06f;
    const float p = exp_taylor(r);
    // e^x = e^r * 2^n, 2^n built from its exponent bits (n is in -126..127 here).
    const float two_to_n = std::bit_cast<float>(std::uint32_t(static_cast<int>(n) + 127) << 23);
    const float e = p * two_to_n;
    if (x != x) return x;  // NaN in, NaN out
    return x < -87.0f ? 0.0f : (x > 88.0f ? std::numeric_limits<float>::infinity() : e);
}

// exp_float written plainly: early returns, std::nearbyint and std::ldexp
// (each rounds as IEEE 754 says, on every C library) in place of the clamp,
// the shifter and the exponent bits above; the same steps, one number at a
// time, so the same bits. The reference exp_float is tested against, inside
// loops the compiler turns into vector code; never called by the model.
float exp_float_reference(float x);

// SiLU(x) = x * sigmoid(x), the gate of the SwiGLU feed-forward. Inline, as
// exp_float is, so that a loop of them becomes vector code.
inline float silu(float x) {
    return x / (1.0f + exp_float(-x));
}

// Rotary position embedding, Llama 2 convention: inside each head of
// head_size numbers, the pair (2i, 2i+1) turns by the angle
// pos * 10000^(-2i / head_size). vec holds whole heads back to back.
void rope(std::span<float> vec, int head_size, int pos);

// The same rotation with the cosines and sines of every position worked out
// once, when the model is built, instead of a pow, a cos and a sin per pair
// on every call. Gives exactly what rope() gives; rope() stays as its
// reference. Measured on an Intel Xeon (Emerald Rapids, family 6 model 207,
// GCC 12, AVX-512), both in one process, interleaved, rope() against the
// table: a 128-token demo prefill 20.98 -> 19.40 ms (fastest of 300; 3 to
// 10 % in three runs: rope() works out 16 angles per call, 32 per token
// and layer, about 24,600 in this prefill); a batch-1 decode step 0.893 ->
// 0.889 ms (fastest of 900), no gain to see there: 192 angles a step.
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
