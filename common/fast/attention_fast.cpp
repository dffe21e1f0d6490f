// Attention's vector paths: a group of query heads scored against the keys
// they share, the softmax, and the weighted sums of the values, each the
// same sums in the same order as the plain loops of kernels_reference.cpp.
#include <algorithm>
#include <cstring>
#include <span>

#include "../core/kernels.h"
#include "lanes.h"

namespace kv {

using namespace fast;

namespace {

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

}  // namespace

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
