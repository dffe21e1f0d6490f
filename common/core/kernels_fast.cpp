// The vector paths the model runs. Each computes exactly what its plain
// loop in kernels_reference.cpp computes, in the same order of additions;
// only how many numbers go through at once changes. Each trick carries one
// sentence of why; what each one measured is in tests/bench/README.md.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "kernels.h"

namespace kv {

namespace {

// ------------------------------------------------------------- the vectors

// kLanes floats as one value: GCC and Clang turn arithmetic on it into the
// target's vector instructions and keep it in registers, which they do not
// reliably do for a float[16].
typedef float Lanes __attribute__((vector_size(kLanes * sizeof(float))));
typedef float Lanes8 __attribute__((vector_size(8 * sizeof(float))));
typedef float Lanes4 __attribute__((vector_size(4 * sizeof(float))));
typedef float Lanes2 __attribute__((vector_size(2 * sizeof(float))));

inline Lanes load(const float* p) {
    Lanes v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// The last n % kLanes numbers, padded with zeros (0 * 0 changes no sum).
// Copied in pieces of fixed size: a copy of variable length is a library
// call, which makes GCC keep a tile's accumulators in memory.
inline Lanes load_tail(const float* p, int n) {
    float padded[kLanes] = {};
    int i = 0;
    if (n & 8) std::memcpy(padded + i, p + i, 8 * sizeof(float)), i += 8;
    if (n & 4) std::memcpy(padded + i, p + i, 4 * sizeof(float)), i += 4;
    if (n & 2) std::memcpy(padded + i, p + i, 2 * sizeof(float)), i += 2;
    if (n & 1) padded[i] = p[i];
    return load(padded);
}

// ---------------------------------------------------------- the reductions

// The pairwise tree of one sum's kLanes partial sums, in half-width vectors
// so that it stays in registers.
inline float reduce_lanes(Lanes v) {
    const Lanes8 a = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) +
                     __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);  // width 8
    const Lanes4 b = __builtin_shufflevector(a, a, 0, 1, 2, 3) +
                     __builtin_shufflevector(a, a, 4, 5, 6, 7);  // width 4
    return (b[0] + b[2]) + (b[1] + b[3]);                        // widths 2 and 1
}

// The same tree for many sums at once: each step puts the halves of two
// vectors side by side and adds, so one shuffle pair and one add serve two
// sums, and every output still adds the same two numbers at every step.

// [a | b] -> [a[l] + a[l + 8] | b[l] + b[l + 8]]: width 16 to 8, two sums per vector.
inline Lanes halves(Lanes a, Lanes b) {
    return __builtin_shufflevector(a, b, 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23) +
           __builtin_shufflevector(a, b, 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30,
                                   31);
}
// Two vectors of two width-8 sums -> one of four width-4 sums.
inline Lanes quarters(Lanes a, Lanes b) {
    return __builtin_shufflevector(a, b, 0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27) +
           __builtin_shufflevector(a, b, 4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30,
                                   31);
}
// Two vectors of four width-4 sums -> one of eight width-2 sums: (b0 + b2), (b1 + b3).
inline Lanes pairs(Lanes a, Lanes b) {
    return __builtin_shufflevector(a, b, 0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21, 24, 25, 28, 29) +
           __builtin_shufflevector(a, b, 2, 3, 6, 7, 10, 11, 14, 15, 18, 19, 22, 23, 26, 27, 30,
                                   31);
}
// Two vectors of eight width-2 sums -> sixteen finished sums, in order.
inline Lanes finish(Lanes a, Lanes b) {
    return __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28,
                                   30) +
           __builtin_shufflevector(a, b, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
}

// out[i] = reduce_lanes(acc[i]) for i < N: blocks of 16, then 8, 4, 2 and
// 1; a smaller block finishes its last steps in narrower vectors, the same
// additions.
template <int N>
inline void reduce_many(const Lanes* acc, float* out) {
    if constexpr (N >= 16) {
        Lanes h[8], q[4], p[2];
        for (int i = 0; i < 8; ++i) h[i] = halves(acc[2 * i], acc[2 * i + 1]);
        for (int i = 0; i < 4; ++i) q[i] = quarters(h[2 * i], h[2 * i + 1]);
        for (int i = 0; i < 2; ++i) p[i] = pairs(q[2 * i], q[2 * i + 1]);
        const Lanes f = finish(p[0], p[1]);
        std::memcpy(out, &f, sizeof f);
        reduce_many<N - 16>(acc + 16, out + 16);
    } else if constexpr (N >= 8) {
        const Lanes q0 = quarters(halves(acc[0], acc[1]), halves(acc[2], acc[3]));
        const Lanes q1 = quarters(halves(acc[4], acc[5]), halves(acc[6], acc[7]));
        const Lanes p = pairs(q0, q1);
        const Lanes8 f = __builtin_shufflevector(p, p, 0, 2, 4, 6, 8, 10, 12, 14) +
                         __builtin_shufflevector(p, p, 1, 3, 5, 7, 9, 11, 13, 15);
        std::memcpy(out, &f, sizeof f);
        reduce_many<N - 8>(acc + 8, out + 8);
    } else if constexpr (N >= 4) {
        const Lanes q = quarters(halves(acc[0], acc[1]), halves(acc[2], acc[3]));
        const Lanes8 p = __builtin_shufflevector(q, q, 0, 1, 4, 5, 8, 9, 12, 13) +
                         __builtin_shufflevector(q, q, 2, 3, 6, 7, 10, 11, 14, 15);
        const Lanes4 f =
            __builtin_shufflevector(p, p, 0, 2, 4, 6) + __builtin_shufflevector(p, p, 1, 3, 5, 7);
        std::memcpy(out, &f, sizeof f);
        reduce_many<N - 4>(acc + 4, out + 4);
    } else if constexpr (N >= 2) {
        const Lanes h = halves(acc[0], acc[1]);
        const Lanes8 q = __builtin_shufflevector(h, h, 0, 1, 2, 3, 8, 9, 10, 11) +
                         __builtin_shufflevector(h, h, 4, 5, 6, 7, 12, 13, 14, 15);
        const Lanes4 p =
            __builtin_shufflevector(q, q, 0, 1, 4, 5) + __builtin_shufflevector(q, q, 2, 3, 6, 7);
        const Lanes2 f = __builtin_shufflevector(p, p, 0, 2) + __builtin_shufflevector(p, p, 1, 3);
        std::memcpy(out, &f, sizeof f);
        reduce_many<N - 2>(acc + 2, out + 2);
    } else if constexpr (N == 1) {
        out[0] = reduce_lanes(acc[0]);
    }
}

// ---------------------------------------------------------------- prefetch

// Cache lines asked for before they are needed, per_step of them at each
// vector step of a tile: a hint (prefetcht0 on x86-64), never a number.
struct Prefetch {
    const char* next = nullptr;
    const char* end = nullptr;
    int per_step = 0;
    void step() {
        for (int p = 0; p < per_step && next < end; ++p, next += 64)
            __builtin_prefetch(next, 0, 3);  // for reading, into every cache level
    }
};

// Asks for every cache line of the n floats from p on.
inline void prefetch_span(const float* p, int n) {
    const std::uintptr_t first = reinterpret_cast<std::uintptr_t>(p) & ~std::uintptr_t(63);
    const std::uintptr_t end = reinterpret_cast<std::uintptr_t>(p + n);
    for (std::uintptr_t line = first; line < end; line += 64)
        __builtin_prefetch(reinterpret_cast<const void*>(line), 0, 3);
}

// -------------------------------------------------------------- the tile

// R rows of x against C rows of w: R * C dot products together, so each
// number loaded from x serves C sums and each from w serves R while it sits
// in a register. The accumulators start from zero one by one, because GCC
// clears an `= {}` array with a rep stos on every tile.
template <int R, int C, bool Prefetching = false>
inline void dot_tile(const float* const* x, const float* const* w, int n, float* out,
                     int out_stride, Prefetch* pf = nullptr) {
    Lanes acc[R][C];
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) acc[r][c] = Lanes{};
    int k = 0;
    for (; k + kLanes <= n; k += kLanes) {
        if constexpr (Prefetching) pf->step();
        Lanes xv[R], wv[C];
        for (int r = 0; r < R; ++r) xv[r] = load(x[r] + k);
        for (int c = 0; c < C; ++c) wv[c] = load(w[c] + k);
        for (int r = 0; r < R; ++r)
            for (int c = 0; c < C; ++c) acc[r][c] += xv[r] * wv[c];
    }
    if (k < n) {
        if constexpr (Prefetching) pf->step();
        Lanes xv[R], wv[C];
        for (int r = 0; r < R; ++r) xv[r] = load_tail(x[r] + k, n - k);
        for (int c = 0; c < C; ++c) wv[c] = load_tail(w[c] + k, n - k);
        for (int r = 0; r < R; ++r)
            for (int c = 0; c < C; ++c) acc[r][c] += xv[r] * wv[c];
    }
    float sums[R * C];
    reduce_many<R * C>(&acc[0][0], sums);
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) out[r * out_stride + c] = sums[r * C + c];
}

// ------------------------------------------------------------ matrix products

// 4 input rows by 4 weight rows: 16 accumulators, one full reduce_many
// block, half of AVX-512's 32 registers, leaving room for a step's 8 loads.
inline constexpr int kTileRows = 4;
inline constexpr int kTileCols = 4;
// A single row streams weights, each used once: 8 weight rows at a time keep
// more loads in flight.
inline constexpr int kStreamCols = 8;

// Rows i0.. of x against rows j0.. of w, R and C at a time.
template <int R, int C>
inline void matmul_block(const Matrix& x, int i0, const Matrix& w, int j0, Matrix& y,
                         Prefetch& pf) {
    const float* xr[R];
    const float* wr[C];
    for (int r = 0; r < R; ++r) xr[r] = x.row(i0 + r);
    for (int c = 0; c < C; ++c) wr[c] = w.row(j0 + c);
    dot_tile<R, C, true>(xr, wr, x.cols, &y.at(i0, j0), y.cols, &pf);
}

// The last x.rows - i rows (fewer than kTileRows) as one smaller tile, not
// one by one, so a batch of 7 is a 4-row and a 3-row tile.
template <int C, int R = kTileRows - 1>
inline void leftover_rows(const Matrix& x, int i, const Matrix& w, int j0, Matrix& y,
                          Prefetch& pf) {
    if constexpr (R > 0) {
        if (x.rows - i == R)
            matmul_block<R, C>(x, i, w, j0, y, pf);
        else
            leftover_rows<C, R - 1>(x, i, w, j0, y, pf);
    }
}

// Weight rows j0..j0+C-1 against every row of x: the C weight rows stay in
// L1 while all of x streams past them, so each weight is read from memory
// once per product. With more than one row, the tiles fetch the next C
// weight rows, spread over all the tiles' vector steps, because a new block
// of weights otherwise starts by waiting for the last-level cache.
template <int C>
void matmul_columns(const Matrix& x, const Matrix& w, int j0, Matrix& y) {
    Prefetch pf;
    if (x.rows > 1) {
        pf.next = reinterpret_cast<const char*>(w.row(std::min(j0 + C, w.rows)));
        pf.end = reinterpret_cast<const char*>(w.row(std::min(j0 + 2 * C, w.rows)));
        const long lines = (pf.end - pf.next + 63) / 64;
        const long tiles = (x.rows + kTileRows - 1) / kTileRows;
        const long steps = tiles * ((x.cols + kLanes - 1) / kLanes);  // vector steps in all tiles
        pf.per_step = static_cast<int>((lines + steps - 1) / steps);
    }
    int i = 0;
    for (; i + kTileRows <= x.rows; i += kTileRows) matmul_block<kTileRows, C>(x, i, w, j0, y, pf);
    leftover_rows<C>(x, i, w, j0, y, pf);
}

// ------------------------------------------------- a group of query heads

// Up to 4 query heads scored together, 4 keys at a time: 16 accumulators,
// one full reduce_many block (the matrix products' tile).
inline constexpr int kGroupRows = 4;
inline constexpr int kGroupKeys = 4;

// Keys and values are asked for 16 positions ahead of use: between two
// reads of a sequence's cache every weight of the model passes through the
// caches, and the hardware finds the stride of one head's rows too late.
inline constexpr int kKeysAhead = 16;
inline constexpr int kValuesAhead = 16;

// R queries against keys j.., C at a time while C are left; returns the next key.
template <int R, int C>
inline int group_key_blocks(const float* const* q, const float* rows, int j, int n_rows,
                            std::size_t stride, int n, float* out, std::size_t out_stride) {
    for (; j + C <= n_rows; j += C) {
        if (j + kKeysAhead + C <= n_rows)
            for (int c = 0; c < C; ++c) prefetch_span(rows + (j + kKeysAhead + c) * stride, n);
        const float* k[C];
        for (int c = 0; c < C; ++c) k[c] = rows + (j + c) * stride;
        dot_tile<R, C>(q, k, n, out + j, static_cast<int>(out_stride));
    }
    return j;
}

template <int R>
void dot_rows_slice(const float* queries, std::size_t query_stride, const float* rows, int n_rows,
                    std::size_t stride, int n, float* out, std::size_t out_stride) {
    const float* q[R];
    for (int r = 0; r < R; ++r) q[r] = queries + r * query_stride;
    int j = group_key_blocks<R, kGroupKeys>(q, rows, 0, n_rows, stride, n, out, out_stride);
    j = group_key_blocks<R, 2>(q, rows, j, n_rows, stride, n, out, out_stride);
    group_key_blocks<R, 1>(q, rows, j, n_rows, stride, n, out, out_stride);
}

// Chunks x kLanes outputs of one head summed in one pass over the rows: the
// Chunks chains of additions (each in row order) run side by side instead
// of one after another.
template <int Chunks>
inline void weighted_chunks(const float* weights, int n_rows, const float* rows, std::size_t stride,
                            float* out) {
    Lanes acc[Chunks];
    for (int c = 0; c < Chunks; ++c) acc[c] = load(out + c * kLanes);
    for (int j = 0; j < n_rows; ++j) {
        const float* row = rows + j * stride;
        for (int c = 0; c < Chunks; ++c) acc[c] += weights[j] * load(row + c * kLanes);
    }
    std::memcpy(out, acc, sizeof acc);
}

// The same for Heads heads at once: each row's vectors are loaded once for
// all of them, and Heads x Chunks chains run side by side.
template <int Heads, int Chunks>
inline void weighted_chunks_for_group(const float* weights, std::size_t weights_stride, int n_rows,
                                      const float* rows, std::size_t stride, float* out,
                                      std::size_t out_stride) {
    Lanes acc[Heads][Chunks];
    for (int h = 0; h < Heads; ++h)
        for (int c = 0; c < Chunks; ++c) acc[h][c] = load(out + h * out_stride + c * kLanes);
    for (int j = 0; j < n_rows; ++j) {
        const float* row = rows + j * stride;
        if (j + kValuesAhead < n_rows) prefetch_span(row + kValuesAhead * stride, Chunks * kLanes);
        Lanes v[Chunks];
        for (int c = 0; c < Chunks; ++c) v[c] = load(row + c * kLanes);
        for (int h = 0; h < Heads; ++h) {
            const float w = weights[h * weights_stride + j];
            for (int c = 0; c < Chunks; ++c) acc[h][c] += w * v[c];
        }
    }
    for (int h = 0; h < Heads; ++h) std::memcpy(out + h * out_stride, acc[h], sizeof acc[h]);
}

template <int Heads>
void weighted_sum_add_slice(const float* weights, std::size_t weights_stride, int n_rows,
                            const float* rows, std::size_t stride, int width, float* out,
                            std::size_t out_stride) {
    int d = 0;
    for (; d + 4 * kLanes <= width; d += 4 * kLanes)
        weighted_chunks_for_group<Heads, 4>(weights, weights_stride, n_rows, rows + d, stride,
                                            out + d, out_stride);
    if (d + 2 * kLanes <= width) {
        weighted_chunks_for_group<Heads, 2>(weights, weights_stride, n_rows, rows + d, stride,
                                            out + d, out_stride);
        d += 2 * kLanes;
    }
    if (d + kLanes <= width) {
        weighted_chunks_for_group<Heads, 1>(weights, weights_stride, n_rows, rows + d, stride,
                                            out + d, out_stride);
        d += kLanes;
    }
    for (int h = 0; h < Heads; ++h)  // the last width % kLanes outputs, one at a time
        for (int e = d; e < width; ++e) {
            float acc = out[h * out_stride + e];
            for (int j = 0; j < n_rows; ++j)
                acc += weights[h * weights_stride + j] * rows[j * stride + e];
            out[h * out_stride + e] = acc;
        }
}

// ----------------------------------------------------------------- softmax

// The largest of x[0..n-1] (n > 0), kLanes candidates at a time: a maximum
// does not depend on the order it is taken in, and one serial comparison
// per score is slow.
float largest(const float* x, int n) {
    Lanes lane_max = Lanes{} + x[0];
    int i = 0;
    for (; i + kLanes <= n; i += kLanes) {
        const Lanes v = load(x + i);
        lane_max = v > lane_max ? v : lane_max;
    }
    float max = x[0];
    for (int l = 0; l < kLanes; ++l) max = lane_max[l] > max ? lane_max[l] : max;
    for (; i < n; ++i) max = x[i] > max ? x[i] : max;
    return max;
}

// sums[r] = x[r * stride + 0] + x[r * stride + 1] + ..., left to right, for
// r < R: R chains of additions side by side, where one sum alone waits out
// each addition's latency before it can start the next.
template <int R>
void sums_side_by_side(const float* x, std::size_t stride, int n, float* sums) {
    float s[R] = {};
    for (int j = 0; j < n; ++j)
        for (int r = 0; r < R; ++r) s[r] += x[r * stride + j];
    for (int r = 0; r < R; ++r) sums[r] = s[r];
}

}  // namespace

// ---------------------------------------------------------------- dot products

float dot(const float* a, const float* b, int n) {
    float out;
    dot_tile<1, 1>(&a, &b, n, &out, 1);
    return out;
}

void dot_rows(const float* x, const float* rows, int n_rows, std::size_t stride, int n,
              float* out) {
    for (int j = 0; j < n_rows; ++j) out[j] = dot(x, rows + j * stride, n);
}

void dot_rows_for_group(const float* queries, int n_queries, std::size_t query_stride,
                        const float* rows, int n_rows, std::size_t stride, int n, float* out,
                        std::size_t out_stride) {
    int i = 0;
    for (; i + kGroupRows <= n_queries; i += kGroupRows)
        dot_rows_slice<kGroupRows>(queries + i * query_stride, query_stride, rows, n_rows, stride,
                                   n, out + i * out_stride, out_stride);
    const float* q = queries + i * query_stride;
    float* o = out + i * out_stride;
    switch (n_queries - i) {  // the heads left over, fewer than kGroupRows
        case 3:
            dot_rows_slice<3>(q, query_stride, rows, n_rows, stride, n, o, out_stride);
            break;
        case 2:
            dot_rows_slice<2>(q, query_stride, rows, n_rows, stride, n, o, out_stride);
            break;
        case 1:
            dot_rows_slice<1>(q, query_stride, rows, n_rows, stride, n, o, out_stride);
            break;
        default:
            break;
    }
}

// ------------------------------------------------------------- weighted sums

void weighted_sum(const float* weights, int n_rows, const float* rows, std::size_t stride,
                  int width, float* out) {
    std::fill(out, out + width, 0.0f);  // each sum then starts from 0, as a plain loop's does
    weighted_sum_add(weights, n_rows, rows, stride, width, out);
}

void weighted_sum_add(const float* weights, int n_rows, const float* rows, std::size_t stride,
                      int width, float* out) {
    int d = 0;
    for (; d + 4 * kLanes <= width; d += 4 * kLanes)
        weighted_chunks<4>(weights, n_rows, rows + d, stride, out + d);
    if (d + 2 * kLanes <= width) {
        weighted_chunks<2>(weights, n_rows, rows + d, stride, out + d);
        d += 2 * kLanes;
    }
    if (d + kLanes <= width) {
        weighted_chunks<1>(weights, n_rows, rows + d, stride, out + d);
        d += kLanes;
    }
    for (; d < width; ++d) {
        float acc = out[d];
        for (int j = 0; j < n_rows; ++j) acc += weights[j] * rows[j * stride + d];
        out[d] = acc;
    }
}

void weighted_sum_add_for_group(const float* weights, int n_sums, std::size_t weights_stride,
                                int n_rows, const float* rows, std::size_t stride, int width,
                                float* out, std::size_t out_stride) {
    int i = 0;
    for (; i + kGroupRows <= n_sums; i += kGroupRows)
        weighted_sum_add_slice<kGroupRows>(weights + i * weights_stride, weights_stride, n_rows,
                                           rows, stride, width, out + i * out_stride, out_stride);
    const float* w = weights + i * weights_stride;
    float* o = out + i * out_stride;
    switch (n_sums - i) {
        case 3:
            weighted_sum_add_slice<3>(w, weights_stride, n_rows, rows, stride, width, o,
                                      out_stride);
            break;
        case 2:
            weighted_sum_add_slice<2>(w, weights_stride, n_rows, rows, stride, width, o,
                                      out_stride);
            break;
        case 1:
            weighted_sum_add_slice<1>(w, weights_stride, n_rows, rows, stride, width, o,
                                      out_stride);
            break;
        default:
            break;
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

// ----------------------------------------------------------------- softmax

void softmax_for_group(float* x, int n_rows, std::size_t stride, int n) {
    if (n <= 0) return;
    for (int r = 0; r < n_rows; ++r) {
        float* row = x + r * stride;
        const float max = largest(row, n);
        for (int i = 0; i < n; ++i) row[i] = exp_float(row[i] - max);
    }
    for (int r0 = 0; r0 < n_rows; r0 += kGroupRows) {  // kGroupRows rows at a time
        float* rows = x + r0 * stride;
        const int m = std::min(kGroupRows, n_rows - r0);
        float sums[kGroupRows];
        static_assert(kGroupRows == 4, "the cases below are 4 rows and fewer");
        switch (m) {
            case 4:
                sums_side_by_side<4>(rows, stride, n, sums);
                break;
            case 3:
                sums_side_by_side<3>(rows, stride, n, sums);
                break;
            case 2:
                sums_side_by_side<2>(rows, stride, n, sums);
                break;
            default:
                sums_side_by_side<1>(rows, stride, n, sums);
                break;
        }
        for (int r = 0; r < m; ++r)
            for (int j = 0; j < n; ++j) rows[r * stride + j] /= sums[r];
    }
}

}  // namespace kv
