// The arithmetic of a transformer: dot products, matrix products, RMSNorm,
// softmax, SiLU and rotary position embedding.
//
// The book's contract: every dot product, one row or many, adds its terms
// in one order (dot_in_book_order). With -ffp-contract=off (no fused
// multiply-adds), the cache, batching and paging change nothing but the
// time: the logits are the same to the last bit, on every machine.
// kernels_reference.cpp holds this arithmetic as plain loops, the tests'
// oracle; common/fast/ the vector paths the model runs, each proven
// equal to its reference bit for bit (tests/kernels_test.cpp).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "matrix.h"

namespace kv {

// Partial sums per dot product: one AVX-512 register, two AVX registers,
// four SSE or NEON registers. The compiler maps the lanes onto whatever the
// machine has; the order of additions is the same everywhere.
inline constexpr int kLanes = 16;

// ---------------------------------------------------------------- dot products

// The order every dot product adds its terms in: term k goes to partial sum
// k % kLanes, each partial sum adds its terms first to last, and the 16
// partial sums meet in a fixed pairwise tree (lane l with l + 8, then l + 4,
// l + 2, l + 1). The statement of the order, as a plain loop.
float dot_in_book_order(const float* a, const float* b, int n);
float dot(const float* a, const float* b, int n);  // the same sum, kLanes terms at a time

// out[j] = dot(x, rows + j * stride, n) for j < n_rows: one query against
// many keys, as plain loops.
void dot_rows_reference(const float* x, const float* rows, int n_rows, std::size_t stride, int n,
                        float* out);

// Rows held in runs, one after another (a paged cache's blocks): `count`
// rows from `rows` on, `stride` apart within the run.
struct RowRun {
    const float* rows;
    int count;
};

// The query heads of one grouped-query group against the keys they share,
// each key loaded once for the group: out[i * out_stride + j] = dot(query
// i, row j, n), row j of the first n_rows rows of the runs taken in order.
// The kernel walks the runs itself, fetching rows ahead across their ends.
void dot_rows_for_group(const float* queries, int n_queries, std::size_t query_stride,
                        std::span<const RowRun> runs, int n_rows, std::size_t stride, int n,
                        float* out, std::size_t out_stride);

// ------------------------------------------------------------- weighted sums

// out[d] += weights[j] * rows[j * stride + d] for j = 0, 1, 2, ... in turn,
// d < width: attention's weighted sum of values, as plain loops. Runs of
// rows summed one after the other give exactly one sum over all of them.
void weighted_sum_add_reference(const float* weights, int n_rows, const float* rows,
                                std::size_t stride, int width, float* out);

// A group's weighted sums of the same values (the first n_rows rows of
// the runs), sum i with weights i * weights_stride on into out + i *
// out_stride, each value loaded once for the group.
void weighted_sum_add_for_group(const float* weights, int n_sums, std::size_t weights_stride,
                                std::span<const RowRun> runs, int n_rows, std::size_t stride,
                                int width, float* out, std::size_t out_stride);

// ------------------------------------------------------------ matrix products

// y (x.rows, w.rows) = x times w transposed: y[i][j] = dot(x row i, w row
// j). Weights are stored (out, in) as in Llama: each output reads one row.
void matmul_reference(const Matrix& x, const Matrix& w, Matrix& y);  // a plain double loop

// The fast product comes in several kernels that all give the same bits
// and differ in how many rows of x and of w they take at once; which is
// fastest depends on the core and the rows, so it is measured
// (kernel_plan.h). A product's rows fall in one of three classes:
enum class RowClass {
    one,   // a decode step of one sequence: every weight is used once
    few,   // 2 to kFewRowsMost rows: a small batch, weights still streamed
    many,  // more: a batch or a prompt, weights reused from the L1 cache
};
inline constexpr int kFewRowsMost = 4;
RowClass row_class(int rows);

struct MatmulKernel {
    const char* name;  // "stream8", "tile4x4", ...: the plan file says these
    RowClass rows;     // the class it is a candidate for
    void (*run)(const Matrix& x, const Matrix& w, Matrix& y);  // shapes already checked
};

// The candidates for one row class; each takes any number of rows.
std::span<const MatmulKernel> matmul_kernels(RowClass rows);

// One kernel for each row class: the first candidates, until a plan says otherwise.
struct MatmulChoice {
    MatmulChoice();
    const MatmulKernel* one;
    const MatmulKernel* few;
    const MatmulKernel* many;
    const MatmulKernel*& of(RowClass c) {
        return c == RowClass::one ? one : c == RowClass::few ? few : many;
    }
    const MatmulKernel& for_class(RowClass c) const {
        return c == RowClass::one ? *one : c == RowClass::few ? *few : *many;
    }
    const MatmulKernel& for_rows(int rows) const { return for_class(row_class(rows)); }
};

// The choice for a model's shape, measured on this machine and kept
// (common/fast/kernel_plan.h): every choice gives the same bits.
struct Config;
struct Weights;
MatmulChoice matmul_plan(const Config& config, const Weights& weights);

void matmul(const Matrix& x, const Matrix& w, Matrix& y, const MatmulChoice& choice);
void matmul(const Matrix& x, const Matrix& w, Matrix& y);  // with MatmulChoice()

// ------------------------------------------------------- the other operations

// out = x / sqrt(mean(x^2) + 1e-5) * scale, as in Llama; the mean square is
// dot(x, x) / n.
void rmsnorm(std::span<float> out, std::span<const float> x, std::span<const float> scale);

// In place: exp(x - max) / sum, the sum taken left to right; subtracting
// the max keeps exp from overflowing.
void softmax(std::span<float> x);

// softmax() of n_rows rows of n numbers, stride apart, the sums side by side.
void softmax_for_group(float* x, int n_rows, std::size_t stride, int n);

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

// e^x from float additions and multiplications and an exact scaling by a
// power of two, so it rounds the same on every machine, which the C
// library's expf does not promise; within a few units in the last place.
// Below -87 it gives 0, above 88 infinity, NaN for NaN. Without branches or
// calls, so that a loop of them (SiLU, softmax) becomes vector code.
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

// exp_float written plainly (early returns, std::nearbyint, std::ldexp):
// the same steps, so the same bits.
float exp_float_reference(float x);

// SiLU(x) = x * sigmoid(x), the gate of the SwiGLU feed-forward.
inline float silu(float x) {
    return x / (1.0f + exp_float(-x));
}

// Rotary position embedding, Llama 2 convention: inside each head of
// head_size numbers, the pair (2i, 2i+1) turns by the angle
// pos * 10000^(-2i / head_size). vec holds whole heads back to back.
void rope(std::span<float> vec, int head_size, int pos);

// The same rotation with every position's cosines and sines worked out
// once; rope() is its reference.
class RopeTable {
  public:
    RopeTable(int head_size, int max_positions);
    void apply(std::span<float> vec, int pos) const;
    // The tables in the layout llama2.c's files keep.
    std::span<const float> cosines() const { return cos_; }
    std::span<const float> sines() const { return sin_; }

  private:
    int head_size_;
    std::vector<float> cos_;  // (position, head_size / 2)
    std::vector<float> sin_;  // (position, head_size / 2)
};

}  // namespace kv
