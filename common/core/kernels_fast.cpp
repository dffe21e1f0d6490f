// The vector paths the model runs: each computes what its plain loop in
// kernels_reference.cpp computes, in the same order of additions. Each
// trick carries one sentence of why; what it measured is in
// tests/bench/README.md.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <type_traits>

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

// f(std::integral_constant<int, R>(), i) for rows i..i+R-1 of n rows, R = 4
// while 4 are left, then the 3, 2 or 1 left: a constant loops unroll on.
template <class F>
inline void by_fours(int n, F&& f) {
    int i = 0;
    for (; i + 4 <= n; i += 4) f(std::integral_constant<int, 4>(), i);
    switch (n - i) {
        case 3:
            return f(std::integral_constant<int, 3>(), i);
        case 2:
            return f(std::integral_constant<int, 2>(), i);
        case 1:
            return f(std::integral_constant<int, 1>(), i);
        default:
            return;
    }
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
// sums, each output adding the same two numbers as reduce_lanes.
// [a | b] -> [a[l] + a[l + 8] | b[l] + b[l + 8]]: width 16 to 8.
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

// out[i] = reduce_lanes(acc[i]) for i < N, in blocks of 16, 8, 4, 2 and 1.
// Always inlined, so a tile's accumulators go from registers into the tree.
template <int N>
[[gnu::always_inline]] inline void reduce_many(const Lanes* acc, float* out) {
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

// Prefetches are hints: they change when bytes arrive, never a number.
struct NoPrefetch {
    void step(int) {}
};

// While a tile works on C weight rows, the same columns of the next C
// rows, where the hardware prefetcher stops at each 4 KiB page.
template <int C>
struct RowsAhead {
    const float* rows = nullptr;  // the first row to fetch; nullptr: none
    std::size_t stride = 0;
    void step(int k) {
        if (rows != nullptr)
            for (int c = 0; c < C; ++c) __builtin_prefetch(rows + c * stride + k, 0, 3);
    }
};

// The lines from next to end, per_step of them at each vector step.
struct Spread {
    const char* next = nullptr;
    const char* end = nullptr;
    int per_step = 0;
    void step(int) {
        for (int p = 0; p < per_step && next < end; ++p, next += 64) __builtin_prefetch(next, 0, 3);
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

// R rows of x (xs apart) against C rows of w (ws apart): out[r * os + c] =
// dot(x row r, w row c, n), so each number loaded from x serves C sums and
// each from w serves R. The accumulators start from zero one by one: GCC
// clears an `= {}` array with a rep stos on every tile.
template <int R, int C, class Pf>
inline void tile(const float* x, std::size_t xs, const float* w, std::size_t ws, int n, float* out,
                 std::size_t os, Pf& pf) {
    Lanes acc[R][C];
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) acc[r][c] = Lanes{};
    int k = 0;
    for (; k + kLanes <= n; k += kLanes) {
        pf.step(k);
        Lanes xv[R], wv[C];
        for (int r = 0; r < R; ++r) xv[r] = load(x + r * xs + k);
        for (int c = 0; c < C; ++c) wv[c] = load(w + c * ws + k);
        for (int r = 0; r < R; ++r)
            for (int c = 0; c < C; ++c) acc[r][c] += xv[r] * wv[c];
    }
    if (k < n) {
        pf.step(k);
        Lanes xv[R], wv[C];
        for (int r = 0; r < R; ++r) xv[r] = load_tail(x + r * xs + k, n - k);
        for (int c = 0; c < C; ++c) wv[c] = load_tail(w + c * ws + k, n - k);
        for (int r = 0; r < R; ++r)
            for (int c = 0; c < C; ++c) acc[r][c] += xv[r] * wv[c];
    }
    float sums[R * C];
    reduce_many<R * C>(&acc[0][0], sums);
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) out[r * os + c] = sums[r * C + c];
}

// ---------------------------------------------- matrix products: the streams

// Rows i0..i0+R-1 of x against the last weight rows from j on (fewer
// than C): tiles of 4, 2 and 1 weight rows.
template <int R, int C>
inline void leftover_columns(const Matrix& x, int i0, const Matrix& w, int j, Matrix& y) {
    NoPrefetch none;
    if constexpr (C > 1) {
        constexpr int Next = C > 4 ? 4 : C / 2;
        for (; j + Next <= w.rows; j += Next)
            tile<R, Next>(x.row(i0), x.cols, w.row(j), w.cols, x.cols, &y.at(i0, j), y.cols, none);
        leftover_columns<R, Next>(x, i0, w, j, y);
    }
}

// Up to 4 rows of x in one pass over the weights, C weight rows at a time:
// the weights stream past once, and C rows keep C streams of loads in
// flight, the next C rows fetched meanwhile.
template <int C>
void stream(const Matrix& x, const Matrix& w, Matrix& y) {
    by_fours(x.rows, [&](auto rows, int i0) {
        constexpr int R = decltype(rows)::value;
        int j = 0;
        for (; j + C <= w.rows; j += C) {
            RowsAhead<C> pf;
            if (j + 2 * C <= w.rows) pf = {w.row(j + C), std::size_t(w.cols)};
            tile<R, C>(x.row(i0), x.cols, w.row(j), w.cols, x.cols, &y.at(i0, j), y.cols, pf);
        }
        leftover_columns<R, C>(x, i0, w, j, y);
    });
}

// ------------------------------------------------ matrix products: the tiles

// Rows i.. of x (fewer than R) against weight rows j0.. as one smaller tile.
template <int C, int R>
inline void leftover_rows(const Matrix& x, int i, const Matrix& w, int j0, Matrix& y, Spread& pf) {
    if constexpr (R > 0) {
        if (x.rows - i == R)
            tile<R, C>(x.row(i), x.cols, w.row(j0), w.cols, x.cols, &y.at(i, j0), y.cols, pf);
        else
            leftover_rows<C, R - 1>(x, i, w, j0, y, pf);
    }
}

// Weight rows j0..j0+C-1 against every row of x, R rows at a time: the C
// weight rows stay in L1 while x streams past, so each weight is read from
// memory once. The next C weight rows are fetched meanwhile, spread over
// every vector step, or a new block starts by waiting for the last-level cache.
template <int R, int C>
void tile_columns(const Matrix& x, const Matrix& w, int j0, Matrix& y) {
    Spread pf;
    pf.next = reinterpret_cast<const char*>(w.row(std::min(j0 + C, w.rows)));
    pf.end = reinterpret_cast<const char*>(w.row(std::min(j0 + 2 * C, w.rows)));
    const long lines = (pf.end - pf.next + 63) / 64;
    const long steps = long((x.rows + R - 1) / R) * ((x.cols + kLanes - 1) / kLanes);
    pf.per_step = steps > 0 ? static_cast<int>((lines + steps - 1) / steps) : 0;
    int i = 0;
    for (; i + R <= x.rows; i += R)
        tile<R, C>(x.row(i), x.cols, w.row(j0), w.cols, x.cols, &y.at(i, j0), y.cols, pf);
    leftover_rows<C, R - 1>(x, i, w, j0, y, pf);
}

template <int R, int C>
void tiles(const Matrix& x, const Matrix& w, Matrix& y) {
    int j = 0;
    for (; j + C <= w.rows; j += C) tile_columns<R, C>(x, w, j, y);
    for (; j < w.rows; ++j) tile_columns<R, 1>(x, w, j, y);
}

// ------------------------------------------------- a group of query heads

// Up to 4 query heads (by_fours) scored together, 4 keys at a time: 16
// accumulators, one full reduce_many block (the matrix products' tile).
inline constexpr int kGroupKeys = 4;

// Keys and values are asked for 16 positions ahead of use: between two
// reads of a sequence's cache every weight of the model passes through the
// caches, and the hardware finds the stride of one head's rows too late.
inline constexpr int kRowsAhead = 16;

// The rows of runs, kRowsAhead rows ahead of a kernel walking them in
// order, whichever run they sit in: the next block of a paged cache arrives
// while this one is worked on (the hardware prefetcher stops at each page).
class Lookahead {
  public:
    // Rows of n_rows in all, `floats` numbers of each from `offset` on.
    Lookahead(std::span<const RowRun> runs, std::size_t stride, int n_rows, std::size_t offset,
              int floats)
        : run_(runs.data()),
          end_(runs.data() + runs.size()),
          stride_(stride),
          offset_(offset),
          left_(n_rows),
          floats_(floats) {
        skip(kRowsAhead);
    }
    // Asks for the next `rows` rows and moves past them.
    void fetch(int rows) {
        for (int r = 0; r < rows && left_ > 0; ++r) {
            prefetch_span(run_->rows + offset_ + std::size_t(at_) * stride_, floats_);
            skip(1);
        }
    }

  private:
    void skip(int rows) {
        at_ += rows;
        left_ -= rows;
        while (run_ != end_ && at_ >= run_->count) at_ -= (run_++)->count;
        if (run_ == end_) left_ = 0;
    }
    const RowRun* run_;
    const RowRun* end_;
    std::size_t stride_;
    std::size_t offset_;
    int left_;    // rows still to fetch, of the n_rows the kernel reads
    int floats_;  // of each row
    int at_ = 0;  // the next row to fetch: row at_ of *run_
};

// R queries against keys j.. of one run, C at a time; returns the next key.
template <int R, int C>
inline int group_key_blocks(const float* q, std::size_t query_stride, const float* rows, int j,
                            int n_rows, std::size_t stride, int n, float* out,
                            std::size_t out_stride, Lookahead& ahead) {
    for (; j + C <= n_rows; j += C) {
        ahead.fetch(C);
        NoPrefetch none;
        tile<R, C>(q, query_stride, rows + j * stride, stride, n, out + j, out_stride, none);
    }
    return j;
}

// R queries against the first n_rows keys of the runs, run after run.
template <int R>
void dot_rows_slice(const float* queries, std::size_t query_stride, std::span<const RowRun> runs,
                    int n_rows, std::size_t stride, int n, float* out, std::size_t out_stride) {
    Lookahead ahead(runs, stride, n_rows, 0, n);
    int done = 0;  // keys scored, in the runs before this one
    for (const RowRun& run : runs) {
        const int m = std::min(run.count, n_rows - done);
        if (m <= 0) break;
        float* o = out + done;
        int j = group_key_blocks<R, kGroupKeys>(queries, query_stride, run.rows, 0, m, stride, n, o,
                                                out_stride, ahead);
        j = group_key_blocks<R, 2>(queries, query_stride, run.rows, j, m, stride, n, o, out_stride,
                                   ahead);
        group_key_blocks<R, 1>(queries, query_stride, run.rows, j, m, stride, n, o, out_stride,
                               ahead);
        done += m;
    }
}

// Chunks x kLanes outputs of each of Heads heads over the runs' rows: each
// row is loaded once for all heads, and the Heads x Chunks chains of
// additions (each in row order) stay in registers from first run to last.
template <int Heads, int Chunks>
inline void weighted_chunks_for_group(const float* weights, std::size_t weights_stride,
                                      std::span<const RowRun> runs, int n_rows, std::size_t d,
                                      std::size_t stride, float* out, std::size_t out_stride) {
    Lanes acc[Heads][Chunks];
    for (int h = 0; h < Heads; ++h)
        for (int c = 0; c < Chunks; ++c) acc[h][c] = load(out + h * out_stride + c * kLanes);
    Lookahead ahead(runs, stride, n_rows, d, Chunks * kLanes);
    int done = 0;  // rows summed, in the runs before this one
    for (const RowRun& run : runs) {
        const int m = std::min(run.count, n_rows - done);
        if (m <= 0) break;
        const float* w = weights + done;
        for (int j = 0; j < m; ++j) {
            const float* row = run.rows + d + j * stride;
            ahead.fetch(1);
            Lanes v[Chunks];
            for (int c = 0; c < Chunks; ++c) v[c] = load(row + c * kLanes);
            for (int h = 0; h < Heads; ++h) {
                const float x = w[h * weights_stride + j];
                for (int c = 0; c < Chunks; ++c) acc[h][c] += x * v[c];
            }
        }
        done += m;
    }
    for (int h = 0; h < Heads; ++h) std::memcpy(out + h * out_stride, acc[h], sizeof acc[h]);
}

template <int Heads>
void weighted_sum_add_slice(const float* weights, std::size_t weights_stride,
                            std::span<const RowRun> runs, int n_rows, std::size_t stride, int width,
                            float* out, std::size_t out_stride) {
    int d = 0;
    for (; d + 4 * kLanes <= width; d += 4 * kLanes)
        weighted_chunks_for_group<Heads, 4>(weights, weights_stride, runs, n_rows, d, stride,
                                            out + d, out_stride);
    if (d + 2 * kLanes <= width) {
        weighted_chunks_for_group<Heads, 2>(weights, weights_stride, runs, n_rows, d, stride,
                                            out + d, out_stride);
        d += 2 * kLanes;
    }
    if (d + kLanes <= width) {
        weighted_chunks_for_group<Heads, 1>(weights, weights_stride, runs, n_rows, d, stride,
                                            out + d, out_stride);
        d += kLanes;
    }
    if (d == width) return;
    int done = 0;
    for (const RowRun& run : runs) {  // the last width % kLanes outputs, one at a time
        const int m = std::min(run.count, n_rows - done);
        if (m <= 0) break;
        for (int h = 0; h < Heads; ++h)
            for (int e = d; e < width; ++e) {
                float acc = out[h * out_stride + e];
                for (int j = 0; j < m; ++j)
                    acc += weights[h * weights_stride + done + j] * run.rows[j * stride + e];
                out[h * out_stride + e] = acc;
            }
        done += m;
    }
}

// The largest of x[0..n-1] (n > 0), kLanes candidates at a time: a maximum
// does not depend on the order it is taken in.
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

// ------------------------------------------------------ the candidates

// Every candidate of each row class, the default (before any plan) first.
const MatmulKernel kOneRow[] = {
    {"stream8", RowClass::one, stream<8>},
    {"stream4", RowClass::one, stream<4>},
};
const MatmulKernel kFewRows[] = {
    {"stream8", RowClass::few, stream<8>},
    {"stream4", RowClass::few, stream<4>},
    {"stream2", RowClass::few, stream<2>},
};
const MatmulKernel kManyRows[] = {
    {"tile4x4", RowClass::many, tiles<4, 4>}, {"tile4x6", RowClass::many, tiles<4, 6>},
    {"tile6x4", RowClass::many, tiles<6, 4>}, {"tile2x8", RowClass::many, tiles<2, 8>},
    {"tile2x4", RowClass::many, tiles<2, 4>},
};

}  // namespace

// ---------------------------------------------------------------- dot products

float dot(const float* a, const float* b, int n) {
    float out;
    NoPrefetch none;
    tile<1, 1>(a, 0, b, 0, n, &out, 1, none);
    return out;
}

void dot_rows_for_group(const float* queries, int n_queries, std::size_t query_stride,
                        std::span<const RowRun> runs, int n_rows, std::size_t stride, int n,
                        float* out, std::size_t out_stride) {
    by_fours(n_queries, [&](auto heads, int i) {
        dot_rows_slice<decltype(heads)::value>(queries + i * query_stride, query_stride, runs,
                                               n_rows, stride, n, out + i * out_stride, out_stride);
    });
}

void weighted_sum_add_for_group(const float* weights, int n_sums, std::size_t weights_stride,
                                std::span<const RowRun> runs, int n_rows, std::size_t stride,
                                int width, float* out, std::size_t out_stride) {
    by_fours(n_sums, [&](auto heads, int i) {
        weighted_sum_add_slice<decltype(heads)::value>(weights + i * weights_stride, weights_stride,
                                                       runs, n_rows, stride, width,
                                                       out + i * out_stride, out_stride);
    });
}

// ------------------------------------------------------------ matrix products

RowClass row_class(int rows) {
    return rows <= 1 ? RowClass::one : rows <= kFewRowsMost ? RowClass::few : RowClass::many;
}

std::span<const MatmulKernel> matmul_kernels(RowClass rows) {
    if (rows == RowClass::one) return kOneRow;
    if (rows == RowClass::few) return kFewRows;
    return kManyRows;
}

MatmulChoice::MatmulChoice()
    : one(&matmul_kernels(RowClass::one)[0]),
      few(&matmul_kernels(RowClass::few)[0]),
      many(&matmul_kernels(RowClass::many)[0]) {}

void matmul(const Matrix& x, const Matrix& w, Matrix& y, const MatmulChoice& choice) {
    if (x.cols != w.cols || y.rows != x.rows || y.cols != w.rows)
        throw std::invalid_argument("matmul: shapes do not match");
    choice.for_rows(x.rows).run(x, w, y);
}

void matmul(const Matrix& x, const Matrix& w, Matrix& y) {
    matmul(x, w, y, MatmulChoice());
}

// ----------------------------------------------------------------- softmax

// Each row's sum is taken left to right, as softmax() takes it, but up to
// four rows' sums run side by side: one sum alone waits out each
// addition's latency before it can start the next.
void softmax_for_group(float* x, int n_rows, std::size_t stride, int n) {
    if (n <= 0) return;
    for (int r = 0; r < n_rows; ++r) {
        float* row = x + r * stride;
        const float max = largest(row, n);
        for (int i = 0; i < n; ++i) row[i] = exp_float(row[i] - max);
    }
    by_fours(n_rows, [&](auto rows, int r0) {
        constexpr int R = decltype(rows)::value;
        float* first = x + r0 * stride;
        float sums[R] = {};
        for (int j = 0; j < n; ++j)
            for (int r = 0; r < R; ++r) sums[r] += first[r * stride + j];
        for (int r = 0; r < R; ++r)
            for (int j = 0; j < n; ++j) first[r * stride + j] /= sums[r];
    });
}

}  // namespace kv
