// The book's arithmetic as plain loops, every sum one number at a time: the
// tests hold each fast kernel (common/fast/) to these, bit for bit. The
// last section holds the operations with no vector path (RMSNorm, softmax of
// one row, RoPE).
#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "kernels.h"

namespace kv {

// ------------------------------------------------------- the order of a dot

float dot_in_book_order(const float* a, const float* b, int n) {
    float partial[kLanes] = {};  // partial[l] sums the terms k = l, l + 16, l + 32, ...
    for (int k = 0; k < n; ++k) partial[k % kLanes] += a[k] * b[k];
    // The pairwise tree: 16 sums to 8, 8 to 4, 4 to 2, 2 to 1.
    for (int width = kLanes / 2; width >= 1; width /= 2)
        for (int l = 0; l < width; ++l) partial[l] = partial[l] + partial[l + width];
    return partial[0];
}

void dot_rows_reference(const float* x, const float* rows, int n_rows, std::size_t stride, int n,
                        float* out) {
    for (int j = 0; j < n_rows; ++j) out[j] = dot_in_book_order(x, rows + j * stride, n);
}

void matmul_reference(const Matrix& x, const Matrix& w, Matrix& y) {
    if (x.cols != w.cols || y.rows != x.rows || y.cols != w.rows)
        throw std::invalid_argument("matmul_reference: shapes do not match");
    for (int i = 0; i < x.rows; ++i)
        for (int j = 0; j < w.rows; ++j) y.at(i, j) = dot_in_book_order(x.row(i), w.row(j), x.cols);
}

// ------------------------------------------------------------- weighted sums

// Each output adds its terms in row order.
void weighted_sum_add_reference(const float* weights, int n_rows, const float* rows,
                                std::size_t stride, int width, float* out) {
    for (int j = 0; j < n_rows; ++j)
        for (int d = 0; d < width; ++d) out[d] += weights[j] * rows[j * stride + d];
}

// ------------------------------------------------------------------- e^x

float exp_float_reference(float x) {
    if (x != x) return x;
    if (x < -87.0f) return 0.0f;
    if (x > 88.0f) return std::numeric_limits<float>::infinity();
    const float n = std::nearbyint(x * 1.44269504f);  // x / ln2, to the nearest, ties to even
    const float r = (x - n * 0.693145751953125f) - n * 1.42860677e-06f;
    const float p = exp_taylor(r);              // e^r, the same series in the same order
    return std::ldexp(p, static_cast<int>(n));  // p * 2^n
}

// ------------------------------------------------------- the other operations

void rmsnorm(std::span<float> out, std::span<const float> x, std::span<const float> scale) {
    assert(out.size() == x.size() && scale.size() == x.size());
    const int n = static_cast<int>(x.size());
    const float mean_square = dot(x.data(), x.data(), n) / static_cast<float>(n);
    const float inv_rms = 1.0f / std::sqrt(mean_square + 1e-5f);
    for (int i = 0; i < n; ++i) out[i] = x[i] * inv_rms * scale[i];
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
