// Attention's vector paths: a group of query heads scored against the keys
// they share, the softmax, and the weighted sums of the values, each the
// same sums in the same order as the plain loops of kernels_reference.cpp.
// Keys and values are read where the cache keeps them, in its own format,
// and widened in registers (widen.h): a narrower cache is fewer bytes read.
#include <algorithm>
#include <cstring>
#include <span>
#include <vector>

#include "../core/attention.h"
#include "../core/kernels.h"
#include "lanes.h"
#include "widen.h"

namespace kv {

using namespace fast;

namespace {

// ------------------------------------------------- a group of query heads

// Up to 4 query heads (by_fours) scored together, kGroupKeys keys at a
// time, every sum in registers: with 32 registers (AVX-512) 4 keys, 16
// accumulators; with 16 registers (AVX2) one key, its 4 heads' sums in 2
// vectors each (SSE2's 4 vectors each fill all 16, so some wait in memory).
// The weighted sums hold kMostChunks vectors of each head's outputs. More
// would spill, and wait on memory for every addition.
inline constexpr int kGroupKeys = kParts == 1 ? 4 : 1;
inline constexpr int kMostChunks = kParts == 1 ? 4 : 2;

// Keys and values are asked for kRowsAhead positions ahead of use: between
// two reads of a sequence's cache every weight of the model passes through
// the caches, and the hardware finds the stride of one head's rows too late.
inline constexpr int kRowsAhead = 16;

// Bytes from a row's start to where number k's part of it begins: an int8
// row keeps each block's scale before its numbers.
inline std::size_t offset_of(NumberFormat f, int k) {
    switch (f) {
        case NumberFormat::float32:
            return 4 * std::size_t(k);
        case NumberFormat::bfloat16:
        case NumberFormat::float16:
            return 2 * std::size_t(k);
        case NumberFormat::int8:
            return std::size_t(k / kInt8Block) * (2 + kInt8Block) + std::size_t(k % kInt8Block);
    }
    return 0;
}

// The part [first, end) of each row a kernel walks, asked for kRowsAhead
// rows ahead of it, whichever run that row sits in: a paged cache's next
// block arrives while this one is worked on (the hardware prefetcher stops
// at each page), a row or a few at a time, as the kernel moves on.
class Ahead {
  public:
    Ahead(std::span<const StoredRun> runs, std::size_t stride, std::size_t first, std::size_t end)
        : run_(runs.data()),
          end_(runs.data() + runs.size()),
          stride_(stride),
          first_(first),
          last_(end) {
        for (int r = 0; r <= kRowsAhead && run_ != end_; ++r) next();  // to row kRowsAhead
    }
    // Asks for the next `rows` rows and moves past them.
    void fetch(int rows) {
        for (int r = 0; r < rows && run_ != end_; ++r) {
            const std::byte* row = run_->rows + std::size_t(at_) * stride_;
            const auto line = reinterpret_cast<std::uintptr_t>(row + first_) & ~std::uintptr_t(63);
            for (auto p = line; p < reinterpret_cast<std::uintptr_t>(row + last_); p += 64)
                __builtin_prefetch(reinterpret_cast<const void*>(p), 0, 3);
            next();
        }
    }

  private:
    void next() {
        if (++at_ < run_->count) return;
        at_ = 0;
        while (++run_ != end_ && run_->count == 0) {
        }
    }
    const StoredRun* run_;
    const StoredRun* end_;
    std::size_t stride_, first_, last_;  // the bytes [first_, last_) of each row are fetched
    int at_ = -1;                        // the row of *run_ fetched next
};

// Numbers k..k + kNativeWidth - 1 of a stored row, widened. An int8 row's
// block scale is read at the block's first vector and kept in `scale`.
template <NumberFormat F>
[[gnu::always_inline]] inline Native widened(const std::byte* row, int k, float& scale) {
    if constexpr (F == NumberFormat::int8) {
        if (k % kInt8Block == 0) scale = Stored<F>::scale(row, k);
        return Stored<F>::native(row, k, scale);
    } else {
        return Stored<F>::native(row, k);
    }
}

// The last n (< kLanes) numbers of a stored row from k on, widened, then
// zeros (0 * 0 changes no sum). Kept out of line: rare, and a copy of
// variable length would make GCC keep a tile's sums in memory.
template <NumberFormat F>
[[gnu::noinline]] Lanes widened_tail(const std::byte* row, int k, int n) {
    float padded[kLanes] = {};
    for (int i = 0; i < n; ++i) padded[i] = Stored<F>::number(row, k + i);
    return load(padded);
}

// Part p of a Lanes, as the build's own vector.
inline Native part_of(const Lanes& v, int p) {
    return load_native(reinterpret_cast<const float*>(&v) + p * kNativeWidth);
}

// R rows of x (xs floats apart) against C stored rows of w (ws bytes
// apart): out[r * os + c] = dot(x row r, w row c widened, n), each of w's
// numbers widened as it is loaded. Inlined into the walk over the keys, so
// that the R x C sums stay in registers from the first product to the
// tree, each in kParts vectors of the build's width as the matrix products
// hold theirs (lanes.h: tile_in_registers), so the tree is the book's.
//
// Each lane's sum starts at its first product, not at 0 + that product:
// the two differ only when the product is -0, and then only in the sign of
// a zero, which the tree carries at most to a finished sum of -0 where the
// book's is +0 (0 + x is never -0, and x + y is -0 only if both are). One
// addition of +0 to each finished sum puts that right, instead of one per lane.
template <NumberFormat F, int R, int C>
[[gnu::always_inline]] inline void stored_tile(const float* x, std::size_t xs, const std::byte* w,
                                               std::size_t ws, int n, float* out, std::size_t os) {
    Native acc[kParts][R][C];
    float scale[C] = {};  // int8: each row's scale of the block number k is in
    auto add = [&](int k, bool first) {
        const bool tail = k + kLanes > n;
        Lanes wt[C], xt[R];
        if (tail) {
            for (int c = 0; c < C; ++c) wt[c] = widened_tail<F>(w + c * ws, k, n - k);
            for (int r = 0; r < R; ++r) xt[r] = load_tail(x + r * xs + k, n - k);
        }
        for (int p = 0; p < kParts; ++p) {
            const int at = k + p * kNativeWidth;
            Native wv[C];
            for (int c = 0; c < C; ++c)
                wv[c] = tail ? part_of(wt[c], p) : widened<F>(w + c * ws, at, scale[c]);
            for (int r = 0; r < R; ++r) {
                const Native xv = tail ? part_of(xt[r], p) : load_native(x + r * xs + at);
                for (int c = 0; c < C; ++c)
                    acc[p][r][c] = first ? xv * wv[c] : acc[p][r][c] + xv * wv[c];
            }
        }
    };
    add(0, true);
    for (int k = kLanes; k < n; k += kLanes) add(k, false);
    Native folded[R * C];
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) folded[r * C + c] = fold_parts(acc, r, c);
    float sums[R * C];
    reduce_natives<R * C>(folded, sums);
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) out[r * os + c] = sums[r * C + c] + 0.0f;
}

// R queries against the first n_rows keys of the runs, run after run,
// kGroupKeys keys at a time, then one at a time.
template <NumberFormat F, int R>
void dot_rows_slice(const float* queries, std::size_t query_stride, std::span<const StoredRun> runs,
                    int n_rows, const StoredRows& layout, float* out, std::size_t out_stride) {
    const std::size_t stride = layout.stride;
    const int n = layout.width;
    Ahead ahead(runs, stride, 0, layout.bytes());
    int done = 0;  // keys scored, in the runs before this one
    for (std::size_t i = 0; i < runs.size() && done < n_rows; ++i) {
        const StoredRun& run = runs[i];
        const int m = std::min(run.count, n_rows - done);
        float* o = out + done;
        int j = 0;
        for (; j + kGroupKeys <= m; j += kGroupKeys) {
            ahead.fetch(kGroupKeys);
            stored_tile<F, R, kGroupKeys>(queries, query_stride, run.rows + std::size_t(j) * stride,
                                          stride, n, o + j, out_stride);
        }
        for (; j < m; ++j, ahead.fetch(1))
            stored_tile<F, R, 1>(queries, query_stride, run.rows + std::size_t(j) * stride, stride,
                                 n, o + j, out_stride);
        done += m;
    }
}

// Chunks x kNativeWidth outputs of each of Heads heads over the runs'
// rows, numbers d.. of each row: each row is loaded (and widened) once for
// all heads, and the Heads x Chunks chains of additions (each in row order)
// stay in registers from first run to last. d is a multiple of Chunks x
// kNativeWidth, so the chunks of an int8 row share one block's scale, or
// start blocks of their own.
template <NumberFormat F, int Heads, int Chunks>
inline void weighted_chunks_for_group(const float* weights, std::size_t weights_stride,
                                      std::span<const StoredRun> runs, int n_rows, int d,
                                      std::size_t stride, float* out, std::size_t out_stride) {
    constexpr int W = kNativeWidth;
    Native acc[Heads][Chunks];
    for (int h = 0; h < Heads; ++h)
        for (int c = 0; c < Chunks; ++c) acc[h][c] = load_native(out + h * out_stride + c * W);
    Ahead ahead(runs, stride, offset_of(F, d), offset_of(F, d + Chunks * W));
    int done = 0;  // rows summed, in the runs before this one
    for (std::size_t i = 0; i < runs.size() && done < n_rows; ++i) {
        const StoredRun& run = runs[i];
        const int m = std::min(run.count, n_rows - done);
        const float* w = weights + done;
        for (int j = 0; j < m; ++j) {
            const std::byte* row = run.rows + std::size_t(j) * stride;
            ahead.fetch(1);
            Native v[Chunks];
            float scale = 0;  // int8: read at each block's first chunk
            for (int c = 0; c < Chunks; ++c) {
                if constexpr (F == NumberFormat::int8) {
                    if (c * W % kInt8Block == 0) scale = Stored<F>::scale(row, d + c * W);
                    v[c] = Stored<F>::native(row, d + c * W, scale);
                } else {
                    v[c] = Stored<F>::native(row, d + c * W);
                }
            }
            for (int h = 0; h < Heads; ++h) {
                const float x = w[h * weights_stride + j];
                for (int c = 0; c < Chunks; ++c) acc[h][c] += x * v[c];
            }
        }
        done += m;
    }
    for (int h = 0; h < Heads; ++h) std::memcpy(out + h * out_stride, acc[h], sizeof acc[h]);
}

template <NumberFormat F, int Heads>
void weighted_sum_add_slice(const float* weights, std::size_t weights_stride,
                            std::span<const StoredRun> runs, int n_rows, const StoredRows& layout,
                            float* out, std::size_t out_stride) {
    constexpr int W = kNativeWidth;
    const std::size_t stride = layout.stride;
    const int width = layout.width;
    int d = 0;
    for (; d + kMostChunks * W <= width; d += kMostChunks * W)
        weighted_chunks_for_group<F, Heads, kMostChunks>(weights, weights_stride, runs, n_rows, d,
                                                         stride, out + d, out_stride);
    if constexpr (kMostChunks > 2)
        if (d + 2 * W <= width) {
            weighted_chunks_for_group<F, Heads, 2>(weights, weights_stride, runs, n_rows, d, stride,
                                                   out + d, out_stride);
            d += 2 * W;
        }
    if constexpr (kMostChunks > 1)
        if (d + W <= width) {
            weighted_chunks_for_group<F, Heads, 1>(weights, weights_stride, runs, n_rows, d, stride,
                                                   out + d, out_stride);
            d += W;
        }
    if (d == width) return;
    int done = 0;
    for (const StoredRun& run : runs) {  // the last width % kNativeWidth outputs, one at a time
        const int m = std::min(run.count, n_rows - done);
        if (m <= 0) break;
        for (int h = 0; h < Heads; ++h)
            for (int e = d; e < width; ++e) {
                float acc = out[h * out_stride + e];
                for (int j = 0; j < m; ++j)
                    acc += weights[h * weights_stride + done + j] *
                           Stored<F>::number(run.rows + std::size_t(j) * stride, e);
                out[h * out_stride + e] = acc;
            }
        done += m;
    }
}

// f(std::integral_constant<NumberFormat, F>()) for the format of the rows.
template <class Fn>
inline void by_format(NumberFormat format, Fn&& f) {
    switch (format) {
        case NumberFormat::float32:
            return f(std::integral_constant<NumberFormat, NumberFormat::float32>());
        case NumberFormat::bfloat16:
            return f(std::integral_constant<NumberFormat, NumberFormat::bfloat16>());
        case NumberFormat::float16:
            return f(std::integral_constant<NumberFormat, NumberFormat::float16>());
        case NumberFormat::int8:
            return f(std::integral_constant<NumberFormat, NumberFormat::int8>());
    }
}

// Float32 rows, `stride` floats apart, as stored rows.
std::vector<StoredRun> as_stored(std::span<const RowRun> runs) {
    std::vector<StoredRun> out;
    for (const RowRun& run : runs)
        out.push_back({reinterpret_cast<const std::byte*>(run.rows), run.count});
    return out;
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
                        std::span<const StoredRun> runs, int n_rows, const StoredRows& rows,
                        float* out, std::size_t out_stride) {
    by_format(rows.format, [&](auto format) {
        by_fours(n_queries, [&](auto heads, int i) {
            dot_rows_slice<decltype(format)::value, decltype(heads)::value>(
                queries + i * query_stride, query_stride, runs, n_rows, rows, out + i * out_stride,
                out_stride);
        });
    });
}

void weighted_sum_add_for_group(const float* weights, int n_sums, std::size_t weights_stride,
                                std::span<const StoredRun> runs, int n_rows, const StoredRows& rows,
                                float* out, std::size_t out_stride) {
    by_format(rows.format, [&](auto format) {
        by_fours(n_sums, [&](auto heads, int i) {
            weighted_sum_add_slice<decltype(format)::value, decltype(heads)::value>(
                weights + i * weights_stride, weights_stride, runs, n_rows, rows,
                out + i * out_stride, out_stride);
        });
    });
}

void dot_rows_for_group(const float* queries, int n_queries, std::size_t query_stride,
                        std::span<const RowRun> runs, int n_rows, std::size_t stride, int n,
                        float* out, std::size_t out_stride) {
    dot_rows_for_group(queries, n_queries, query_stride, as_stored(runs), n_rows,
                       {NumberFormat::float32, stride * sizeof(float), n}, out, out_stride);
}

void weighted_sum_add_for_group(const float* weights, int n_sums, std::size_t weights_stride,
                                std::span<const RowRun> runs, int n_rows, std::size_t stride,
                                int width, float* out, std::size_t out_stride) {
    weighted_sum_add_for_group(weights, n_sums, weights_stride, as_stored(runs), n_rows,
                               {NumberFormat::float32, stride * sizeof(float), width}, out,
                               out_stride);
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
