#include "kernels.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace kv {

// ---------------------------------------------------------------- dot products

namespace {

// kLanes floats as one value. GCC and Clang turn arithmetic on it into
// whatever vector instructions the target has (one AVX-512 register, two AVX
// registers, four SSE or NEON registers), and keep such values in registers,
// which they will not reliably do for a plain float[16] array.
typedef float Lanes __attribute__((vector_size(kLanes * sizeof(float))));

inline Lanes load(const float* p) {
    Lanes v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// The last n % kLanes numbers, padded with zeros: the padding adds 0 * 0 to
// the unused lanes, which changes nothing.
inline Lanes load_tail(const float* p, int n) {
    Lanes v = {};
    std::memcpy(&v, p, std::size_t(n) * sizeof(float));
    return v;
}

// The fixed pairwise reduction of the kLanes partial sums: lane l adds lane
// l + 8, then l + 4, l + 2, l + 1. Written with half-width vectors so that it
// costs a handful of instructions in registers: a scalar loop here took a
// third of the time of a 16-row product, and halves copied through memory
// stalled on store forwarding.
typedef float Lanes8 __attribute__((vector_size(8 * sizeof(float))));
typedef float Lanes4 __attribute__((vector_size(4 * sizeof(float))));

inline float reduce_lanes(Lanes v) {
    const Lanes8 a = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) +
                     __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);  // width 8
    const Lanes4 b = __builtin_shufflevector(a, a, 0, 1, 2, 3) +
                     __builtin_shufflevector(a, a, 4, 5, 6, 7);  // width 4
    return (b[0] + b[2]) + (b[1] + b[3]);                        // widths 2 and 1
}

// R rows of x against C rows of w: R * C dot products computed together, so
// each number loaded from x is used C times and each from w R times while it
// sits in a register. Every one of them adds its terms exactly as dot() does.
template <int R, int C>
inline void dot_tile(const float* const* x, const float* const* w, int n, float* out,
                     int out_stride) {
    Lanes acc[R][C] = {};
    int k = 0;
    for (; k + kLanes <= n; k += kLanes) {
        Lanes xv[R], wv[C];
        for (int r = 0; r < R; ++r) xv[r] = load(x[r] + k);
        for (int c = 0; c < C; ++c) wv[c] = load(w[c] + k);
        for (int r = 0; r < R; ++r)
            for (int c = 0; c < C; ++c) acc[r][c] += xv[r] * wv[c];
    }
    if (k < n) {
        for (int r = 0; r < R; ++r)
            for (int c = 0; c < C; ++c)
                acc[r][c] += load_tail(x[r] + k, n - k) * load_tail(w[c] + k, n - k);
    }
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) out[r * out_stride + c] = reduce_lanes(acc[r][c]);
}

// Rows i0.. of x against rows j0.. of w, R and C at a time.
template <int R, int C>
inline void matmul_block(const Matrix& x, int i0, const Matrix& w, int j0, Matrix& y) {
    const float* xr[R];
    const float* wr[C];
    for (int r = 0; r < R; ++r) xr[r] = x.row(i0 + r);
    for (int c = 0; c < C; ++c) wr[c] = w.row(j0 + c);
    dot_tile<R, C>(xr, wr, x.cols, &y.at(i0, j0), y.cols);
}

// The tile: 4 input rows by 6 weight rows, 24 accumulators of kLanes each,
// which with the 6 weight vectors and one input vector fills the 32 vector
// registers of AVX-512. Measured on the book's machine (Zen 5, GCC 12) for
// a 64 x 256 by 768 x 256 product, rows aligned to cache lines: 4 x 4 about
// 100 GFLOP/s, 6 x 4 129, 5 x 5 136, 4 x 6 141.
inline constexpr int kTileRows = 4;
inline constexpr int kTileCols = 6;
// A single row (decoding one sequence) is a stream of weights, each used
// once: there, 8 weight rows at a time keep more loads in flight (about 60
// GFLOP/s from L2 against 52 with 4).
inline constexpr int kStreamCols = 8;

// Weight rows j0..j0+C-1 against every row of x. The C weight rows (C * in
// floats, a few KiB) stay in the L1 cache while all of x streams past them,
// so each weight is read from memory once per matmul, not once per row block.
// Rows left over after the last full tile go through one smaller tile, not
// one by one: a batch of 7 is a 4-row and a 3-row tile.
template <int C>
void matmul_columns(const Matrix& x, const Matrix& w, int j0, Matrix& y) {
    int i = 0;
    for (; i + kTileRows <= x.rows; i += kTileRows) matmul_block<kTileRows, C>(x, i, w, j0, y);
    switch (x.rows - i) {
        case 3:
            matmul_block<3, C>(x, i, w, j0, y);
            break;
        case 2:
            matmul_block<2, C>(x, i, w, j0, y);
            break;
        case 1:
            matmul_block<1, C>(x, i, w, j0, y);
            break;
        default:
            break;
    }
    static_assert(kTileRows == 4, "the remainder cases above cover 1..kTileRows-1 rows");
}

}  // namespace

float dot(const float* a, const float* b, int n) {
    float out;
    dot_tile<1, 1>(&a, &b, n, &out, 1);
    return out;
}

void dot_rows(const float* x, const float* rows, int n_rows, std::size_t stride, int n,
              float* out) {
    int j = 0;
    for (; j + kStreamCols <= n_rows; j += kStreamCols) {
        const float* r[kStreamCols];
        for (int c = 0; c < kStreamCols; ++c) r[c] = rows + (j + c) * stride;
        dot_tile<1, kStreamCols>(&x, r, n, out + j, 1);
    }
    for (; j < n_rows; ++j) out[j] = dot(x, rows + j * stride, n);
}

void weighted_sum(const float* weights, int n_rows, const float* rows, std::size_t stride,
                  int width, float* out) {
    std::fill(out, out + width, 0.0f);  // each sum then starts from 0, as a plain loop's does
    weighted_sum_add(weights, n_rows, rows, stride, width, out);
}

void weighted_sum_add(const float* weights, int n_rows, const float* rows, std::size_t stride,
                      int width, float* out) {
    int d = 0;
    for (; d + kLanes <= width; d += kLanes) {
        Lanes acc = load(out + d);
        for (int j = 0; j < n_rows; ++j) acc += weights[j] * load(rows + j * stride + d);
        std::memcpy(out + d, &acc, sizeof acc);
    }
    for (; d < width; ++d) {
        float acc = out[d];
        for (int j = 0; j < n_rows; ++j) acc += weights[j] * rows[j * stride + d];
        out[d] = acc;
    }
}

// ------------------------------------------------------------ matrix products

void matmul(const Matrix& x, const Matrix& w, Matrix& y) {
    if (x.cols != w.cols || y.rows != x.rows || y.cols != w.rows)
        throw std::invalid_argument("matmul: shapes do not match");
    int j = 0;
    if (x.rows == 1)
        for (; j + kStreamCols <= w.rows; j += kStreamCols) matmul_columns<kStreamCols>(x, w, j, y);
    else
        for (; j + kTileCols <= w.rows; j += kTileCols) matmul_columns<kTileCols>(x, w, j, y);
    for (; j < w.rows; ++j) matmul_columns<1>(x, w, j, y);
}

void matmul_reference(const Matrix& x, const Matrix& w, Matrix& y) {
    if (x.cols != w.cols || y.rows != x.rows || y.cols != w.rows)
        throw std::invalid_argument("matmul_reference: shapes do not match");
    for (int i = 0; i < x.rows; ++i)
        for (int j = 0; j < w.rows; ++j) {
            float sum = 0.0f;
            for (int k = 0; k < x.cols; ++k) sum += x.at(i, k) * w.at(j, k);
            y.at(i, j) = sum;
        }
}

// ------------------------------------------------------- the other operations

void rmsnorm(std::span<float> out, std::span<const float> x, std::span<const float> scale) {
    assert(out.size() == x.size() && scale.size() == x.size());
    const int n = static_cast<int>(x.size());
    const float mean_square = dot(x.data(), x.data(), n) / static_cast<float>(n);
    const float inv_rms = 1.0f / std::sqrt(mean_square + 1e-5f);
    for (int i = 0; i < n; ++i) out[i] = x[i] * inv_rms * scale[i];
}

float exp_float(float x) {
    if (std::isnan(x)) return x;
    if (x < -87.0f) return 0.0f;  // e^-87 is 1.6e-38: nothing the model can see
    if (x > 88.0f) return std::numeric_limits<float>::infinity();
    // x = n ln2 + r with |r| <= ln2 / 2; ln2 is split in two so that n * ln2_hi is exact.
    const float n = std::nearbyint(x * 1.44269504f);
    const float r = (x - n * 0.693145751953125f) - n * 1.42860677e-06f;
    // e^r by its Taylor series to r^7 (the next term is below 6e-9 on this range).
    float p = 1.0f / 5040;
    for (float c : {1.0f / 720, 1.0f / 120, 1.0f / 24, 1.0f / 6, 0.5f, 1.0f, 1.0f}) p = p * r + c;
    // e^x = e^r * 2^n, 2^n built from its exponent bits (n is in -126..127 here).
    const std::uint32_t bits = std::uint32_t(static_cast<int>(n) + 127) << 23;
    float two_to_n;
    std::memcpy(&two_to_n, &bits, sizeof two_to_n);
    return p * two_to_n;
}

void softmax(std::span<float> x) {
    if (x.empty()) return;
    float max = x[0];
    for (float v : x) max = v > max ? v : max;
    float sum = 0.0f;
    for (float& v : x) {
        v = exp_float(v - max);
        sum += v;
    }
    for (float& v : x) v /= sum;
}

float silu(float x) {
    return x / (1.0f + exp_float(-x));
}

namespace {

// The angle of pair i at position pos. pow, cos and sin are computed in
// double and rounded once to float: the float versions may differ in the
// last bit between C libraries; a rounded double result almost never does.
void rope_angle(int head_size, int pos, int i, float& c, float& s) {
    const double angle = pos * std::pow(10000.0, -2.0 * i / head_size);
    c = static_cast<float>(std::cos(angle));
    s = static_cast<float>(std::sin(angle));
}

// Turns the pair (v0, v1) by the angle whose cosine and sine are c and s.
inline void rotate(float& v0, float& v1, float c, float s) {
    const float a = v0, b = v1;
    v0 = a * c - b * s;
    v1 = a * s + b * c;
}

}  // namespace

void rope(std::span<float> vec, int head_size, int pos) {
    assert(head_size % 2 == 0 && vec.size() % head_size == 0);
    for (int i = 0; i < head_size / 2; ++i) {
        float c, s;
        rope_angle(head_size, pos, i, c, s);
        for (std::size_t head = 0; head < vec.size(); head += head_size)
            rotate(vec[head + 2 * i], vec[head + 2 * i + 1], c, s);
    }
}

RopeTable::RopeTable(int head_size, int max_positions)
    : head_size_(head_size),
      cos_(std::size_t(max_positions) * (head_size / 2)),
      sin_(std::size_t(max_positions) * (head_size / 2)) {
    for (int pos = 0; pos < max_positions; ++pos)
        for (int i = 0; i < head_size / 2; ++i) {
            const std::size_t at = std::size_t(pos) * (head_size / 2) + i;
            rope_angle(head_size, pos, i, cos_[at], sin_[at]);
        }
}

void RopeTable::apply(std::span<float> vec, int pos) const {
    assert(vec.size() % head_size_ == 0);
    const std::size_t half = head_size_ / 2;
    const float* c = cos_.data() + std::size_t(pos) * half;
    const float* s = sin_.data() + std::size_t(pos) * half;
    for (std::size_t head = 0; head < vec.size(); head += head_size_)
        for (std::size_t i = 0; i < half; ++i)
            rotate(vec[head + 2 * i], vec[head + 2 * i + 1], c[i], s[i]);
}

}  // namespace kv
