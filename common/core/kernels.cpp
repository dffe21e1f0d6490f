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
// the unused lanes, which changes nothing. Copied in pieces of fixed size
// (8, 4, 2, 1 floats) rather than one memcpy of n: a copy of variable length
// is a call to the C library, and a call in a tile's body made GCC keep the
// tile's accumulators in memory, zeroed with a rep stos on every tile.
inline Lanes load_tail(const float* p, int n) {
    float padded[kLanes] = {};
    int i = 0;
    if (n & 8) std::memcpy(padded + i, p + i, 8 * sizeof(float)), i += 8;
    if (n & 4) std::memcpy(padded + i, p + i, 4 * sizeof(float)), i += 4;
    if (n & 2) std::memcpy(padded + i, p + i, 2 * sizeof(float)), i += 2;
    if (n & 1) padded[i] = p[i];
    return load(padded);
}

// The fixed pairwise reduction of the kLanes partial sums: lane l adds lane
// l + 8, then l + 4, l + 2, l + 1. Written with half-width vectors so that it
// costs a handful of instructions in registers: a scalar loop here took a
// third of the time of a 16-row product, and halves copied through memory
// stalled on store forwarding. Measured on an Intel Xeon (Emerald Rapids,
// family 6 model 207, GCC 12, AVX-512), both in one process, interleaved,
// against the scalar loop (the same tree on a float[16] copy), fastest of
// 1,500 samples of 20,000 calls: dot() over 32 numbers 9.9 -> 5.9 ns, over
// 256 18.9 -> 16.2 ns. A demo batch-1 decode step shows nothing (0.883 ->
// 0.870 ms, fastest of 450; the other way round in a run of 180): since
// reduce_many finishes the tiles, only dot() (RMSNorm) and the one-key and
// one-column leftovers come here.
typedef float Lanes8 __attribute__((vector_size(8 * sizeof(float))));
typedef float Lanes4 __attribute__((vector_size(4 * sizeof(float))));

inline float reduce_lanes(Lanes v) {
    const Lanes8 a = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) +
                     __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);  // width 8
    const Lanes4 b = __builtin_shufflevector(a, a, 0, 1, 2, 3) +
                     __builtin_shufflevector(a, a, 4, 5, 6, 7);  // width 4
    return (b[0] + b[2]) + (b[1] + b[3]);                        // widths 2 and 1
}

// ------------------------------------------- the reduction, many sums at once
//
// The same pairwise steps as reduce_lanes, applied to 2, 4, 8 or 16
// accumulators at once. Each step puts the halves of two vectors side by
// side and adds: one shuffle pair and one add finish a step for two sums,
// where reduce_lanes spends them on one, and the last steps, which
// reduce_lanes does on single floats, run on full vectors. Every output
// still adds exactly the same two numbers at every step (addition is
// commutative, so a + b and b + a round alike). Measured on an Intel Xeon
// (Emerald Rapids, AVX-512, GCC 12): 16 sums cost about 45 vector
// instructions instead of about 150, which took the 4 x 6 tile of a
// 128 x 256 by 256 x 256 product from 52 to 70 GFLOP/s, and a whole
// 128-token prefill of the demo model from 29 to 25 ms.

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

typedef float Lanes2 __attribute__((vector_size(2 * sizeof(float))));

// out[i] = reduce_lanes(acc[i]) for i < N, for any N: blocks of 16, then 8,
// 4, 2 and 1. A block smaller than 16 finishes its last steps in narrower
// vectors, the same additions.
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

// Bytes asked for before they are needed: the cache lines from next to end,
// per_step of them at each vector step of the tiles that carry this. A
// prefetch is a hint to the memory system (__builtin_prefetch, GCC and
// Clang; prefetcht0 on x86-64, in the SSE2 baseline too): it changes when
// bytes arrive, never a number.
struct Prefetch {
    const char* next = nullptr;
    const char* end = nullptr;
    int per_step = 0;
    void step() {
        for (int p = 0; p < per_step && next < end; ++p, next += 64)
            __builtin_prefetch(next, 0, 3);  // for reading, into every cache level
    }
};

// R rows of x against C rows of w: R * C dot products computed together, so
// each number loaded from x is used C times and each from w R times while it
// sits in a register. Every one of them adds its terms exactly as dot() does.
// With Prefetching, each vector step also asks for pf's next lines.
//
// What the tiles bought, against one dot product at a time (1 x 1 tiles,
// the same loop order and prefetch), measured on the Xeon of reduce_lanes,
// both in one process, interleaved, fastest of 150 steps, demo model: a
// 128-token prefill 46.6 -> 18.7 ms, a batch-16 decode step 7.61 -> 3.19
// ms, batch 4 2.24 -> 1.07 ms (2.1 to 2.5 x, 1.7 to 2.1 x at batch 4, in
// three runs of 60 to 300). At batch 1, 8 weight rows at a time against one
// measured no clear gain: 0.863 -> 0.853 ms (see kStreamCols).
//
// The accumulators start from zero one by one: written `= {}`, GCC 12
// cleared the array with a rep stos on every tile, about 8 % of a 4 x 4
// tile over 256 numbers. Without it (and without the call in load_tail):
// 16 x 256 by 768 x 256, weights in L2, 73.7 -> 79.4 GFLOP/s; a 128-token
// prefill 21.4 -> 20.0 ms, a batch-16 decode step 5.56 -> 5.31 ms (Intel
// Xeon, Emerald Rapids, GCC 12, one run of each interleaved, the other core
// busy).
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

// The tile: 4 input rows by 4 weight rows, 16 accumulators of kLanes each:
// one full block for reduce_many, and half the 32 vector registers of
// AVX-512, which leaves room for the 4 input and 4 weight vectors of a
// step. The register count is the instruction set's, the same on a core
// that executes 512-bit operations in two 256-bit halves (Zen 4) as on
// one with 512-bit datapaths; how fast the tile runs there was not
// measured after this choice (the Zen 5 figures below predate it).
// Measured on an Intel Xeon (Emerald Rapids, two 512-bit FMA ports, GCC 12),
// quiet moments of a shared machine, in GFLOP/s for a 128 x 256 by
// 256 x 256 and a 16 x 768 by 256 x 768 product, once the sums were reduced
// together (reduce_many): 4 x 4 69 and 80, 4 x 6 70 and 81, 4 x 5 71 and 81,
// 6 x 4 69 and 80, 5 x 5 69 and 80, 3 x 8 65 and 79, 2 x 8 68 and 77, 4 x 7
// 70 and 80 (47 at batch 16). Within noise of each other, so we take the
// smallest that is as fast. (Before, on the book's Zen 5 machine, with one
// reduction per sum: 4 x 4 about 100, 6 x 4 129, 5 x 5 136, 4 x 6 141.)
inline constexpr int kTileRows = 4;
inline constexpr int kTileCols = 4;
// A single row (decoding one sequence) is a stream of weights, each used
// once: there, 8 weight rows at a time keep more loads in flight (about 60
// GFLOP/s from L2 against 52 with 4 on the Zen 5). On the Xeon the gain
// does not show: a demo batch-1 decode step, both in one process,
// interleaved, 4 rows against 8 in three runs: 0.911 -> 0.874 ms (fastest
// of 180), 0.832 -> 0.831 (450), 0.987 -> 0.969 (900), 0 to 4 %, within
// this shared machine's noise; 16 rows were 2 to 5 % slower than 8 (0.924
// against 0.877, 0.838 against 0.818, 0.900 against 0.860 ms); one row at
// a time 1 to 2 % slower in the two longer runs (see dot_tile; 29 % in a
// run of 60, which they do not bear out). The 8 stay for the Zen 5's sake.
inline constexpr int kStreamCols = 8;
// Attention's keys are short (head size 32 in the demo model: two vector
// steps), so a score is mostly its reduction: 16 keys at a time make one
// full reduce_many block. Measured on the Xeon above, both in one process,
// interleaved: against 8 keys at a time, dot_rows over 4,097 keys of head
// size 32, 64 floats apart (fastest of 1,500 samples of 20 calls) 20.7 ->
// 18.3 us, and a demo decode step over 4,096 positions one head at a time
// (attend_one_head, the only caller; fastest of 150) 5.06 -> 4.73 ms. But
// against one key at a time it measured no gain: one at a time was faster,
// 15.7 against 18.3 us (fastest of 3,000) and 4.21 against 4.34 ms
// (fastest of 300; 3 to 6 % in three runs). Only short runs of keys gain:
// 15 keys, all of them in the blocks of 8, 4, 2 and 1 below, against one
// key at a time, 0.050 -> 0.042 us (the comparison the comment on those
// blocks gives too, from another run: 0.044 -> 0.042). Kept as it is; noted here
// so as not to claim what it does not buy.
inline constexpr int kKeyRows = 16;

// The last x.rows - i rows (fewer than kTileRows) as one R x C tile.
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

// Weight rows j0..j0+C-1 against every row of x. The C weight rows (C * in
// floats, a few KiB) stay in the L1 cache while all of x streams past them,
// so each weight is read from memory once per matmul, not once per row block.
// Against the other order (each block of 4 input rows walks all of w, and
// without the prefetch below, which needs this order), measured on the
// Xeon above, both in one process, interleaved, fastest of 150, demo
// model: a 128-token prefill 22.3 -> 18.6 ms, a batch-16 decode step 5.49
// -> 3.13 ms, batch 4 3.73 -> 1.83 ms (1.2, 1.6 to 1.8 and 1.7 to 2.0 x in
// two runs).
// Rows left over after the last full tile go through one smaller tile, not
// one by one: a batch of 7 is a 4-row and a 3-row tile. Measured the same
// way: a batch-3 decode step 1.025 -> 0.882 ms, batch 7 1.407 -> 1.313 ms
// (1.13 to 1.26 x and 1.07 to 1.14 x in three runs); batch 17, one row
// left over, the same code either way, came out 0.985 to 1.07 x, which is
// the noise of such a pair.
//
// While they do, the tiles fetch the next C weight rows, one cache line per
// vector step, spread over all the tiles of the pass (a batch of 16 over 256
// numbers: 64 lines in 4 tiles of 16 steps). Without it each new block of
// weights began by waiting for the last-level cache, and the wait grew when
// the other core of this shared machine was busy: batch-16 decode took 3.3
// ms in one run and 5.2 in the next. (A likely reason, not measured: a
// block of 4 x 256 weights is 4 KiB, a page, and the hardware's stream
// prefetcher does not cross pages.) Measured on an Intel Xeon (Emerald
// Rapids, family 6 model 207, GCC 12, AVX-512), every variant in one
// process, interleaved, the other core busy: a demo batch-16 decode step
// 5.31 -> 3.14 ms, batch 4 1.04 -> 0.93 ms, a 128-token prefill 20.0 ->
// 18.5 ms; with the change to dot_tile above, 16 x 256 by 768 x 256 over
// 30 different weight matrices (22.5 MiB) 41 -> 68 GFLOP/s. Tried and not
// kept: the lines of a block all at once at the start of each tile (3.1 to
// 3.9 ms against 2.8; perf put a quarter of the step on the prefetches,
// waiting, likely for free line-fill buffers), two blocks ahead (2.76 ms
// against 2.73; batch 4 1.02 against 0.95), into L2 only (prefetcht1, t2:
// 2.83, 2.80 against 2.72; a non-temporal one 4.86), a far one into L2
// beside the near one (no gain), and the same for a single row (batch-1
// decode 0.823 -> 0.856 ms: there 8 streams of weights already keep the
// memory busy, at 94 % of the roof).
// Nothing in it depends on the width of the datapath; with 256-bit ones
// (Zen 4) the tiles take longer and the lines have longer to arrive.
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

}  // namespace

float dot(const float* a, const float* b, int n) {
    float out;
    dot_tile<1, 1>(&a, &b, n, &out, 1);
    return out;
}

namespace {

// C keys from row j on, if that many are left; returns the next row.
template <int C>
inline int key_block(const float* x, const float* rows, int j, int n_rows, std::size_t stride,
                     int n, float* out) {
    if (j + C > n_rows) return j;
    const float* r[C];
    for (int c = 0; c < C; ++c) r[c] = rows + (j + c) * stride;
    dot_tile<1, C>(&x, r, n, out + j, 1);
    return j + C;
}

}  // namespace

float dot_in_book_order(const float* a, const float* b, int n) {
    float partial[kLanes] = {};  // partial[l] sums the terms k = l, l + 16, l + 32, ...
    for (int k = 0; k < n; ++k) partial[k % kLanes] += a[k] * b[k];
    // The pairwise tree: 16 sums to 8, 8 to 4, 4 to 2, 2 to 1.
    for (int width = kLanes / 2; width >= 1; width /= 2)
        for (int l = 0; l < width; ++l) partial[l] = partial[l] + partial[l + width];
    return partial[0];
}

void dot_rows(const float* x, const float* rows, int n_rows, std::size_t stride, int n,
              float* out) {
    int j = 0;
    for (; j + kKeyRows <= n_rows; j += kKeyRows) {
        const float* r[kKeyRows];
        for (int c = 0; c < kKeyRows; ++c) r[c] = rows + (j + c) * stride;
        dot_tile<1, kKeyRows>(&x, r, n, out + j, 1);
    }
    // The last n_rows % 16 keys in blocks of 8, 4, 2 and 1. Against one by
    // one, on the Xeon above, in one process, interleaved, fastest of 1,500 samples of 2,000 calls:
    // 15 keys 0.044 -> 0.042 us (0.052 -> 0.047 in a run of 600); 79 keys 0.259 -> 0.257 us.
    // Nanoseconds per head and row: no step shows it.
    j = key_block<8>(x, rows, j, n_rows, stride, n, out);
    j = key_block<4>(x, rows, j, n_rows, stride, n, out);
    j = key_block<2>(x, rows, j, n_rows, stride, n, out);
    key_block<1>(x, rows, j, n_rows, stride, n, out);
}

void dot_rows_reference(const float* x, const float* rows, int n_rows, std::size_t stride, int n,
                        float* out) {
    for (int j = 0; j < n_rows; ++j) out[j] = dot_in_book_order(x, rows + j * stride, n);
}

void weighted_sum(const float* weights, int n_rows, const float* rows, std::size_t stride,
                  int width, float* out) {
    std::fill(out, out + width, 0.0f);  // each sum then starts from 0, as a plain loop's does
    weighted_sum_add(weights, n_rows, rows, stride, width, out);
}

namespace {

// Chunks of kLanes outputs d0, d0 + kLanes, ... (Chunks of them) summed in
// one pass over the rows. Each output's sum is one chain of additions in row
// order, 4 cycles an addition; walking the rows once for all the chunks of
// a head runs those chains side by side instead of one after another
// (head size 32: two chains). Measured on the Xeon above, both in one
// process, interleaved, against one walk per chunk: weighted_sum_add over
// 4,097 rows of head size 32, 64 floats apart, 11.98 -> 10.69 us (fastest
// of 3,000 samples of 20 calls; 1.10 to 1.12 x in three runs), a demo
// decode step over 4,096 positions one head at a time (attend_one_head)
// 5.32 -> 4.65 ms (fastest of 300; 1.08 to 1.14 x). Not the 1.8 x this
// comment used to claim, with no machine named. (A likely reason, not
// measured: each row is two new cache lines, which cost more here than
// the chains' latency.)
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

}  // namespace

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

void weighted_sum_reference(const float* weights, int n_rows, const float* rows, std::size_t stride,
                            int width, float* out) {
    std::fill(out, out + width, 0.0f);
    weighted_sum_add_reference(weights, n_rows, rows, stride, width, out);
}

void weighted_sum_add_reference(const float* weights, int n_rows, const float* rows,
                                std::size_t stride, int width, float* out) {
    for (int j = 0; j < n_rows; ++j)
        for (int d = 0; d < width; ++d) out[d] += weights[j] * rows[j * stride + d];
}

// ------------------------------------------- a group of query heads at once

namespace {

// Up to kGroupRows query heads are scored together, kGroupKeys keys at a
// time: 4 x 4 = 16 accumulators, one full reduce_many block, with room left
// for the 4 query and 4 key vectors of a step (the matrix products' tile).
// A larger group goes through in slices of 4 heads, each reading the keys
// once. What scoring a group together bought is measured at
// Transformer::attend_group. The 4 keys at a time, against 1 (4 x 1
// tiles), measured on the Xeon above, both in one process, interleaved:
// a demo decode step over 4,096 positions 3.47 -> 3.15 ms (fastest of
// 300; 1.01 to 1.11 x in three runs); but on keys already in L2,
// dot_rows_for_group over 4,097 keys was slower with 4, 41.0 against 38.6
// us (fastest of 3,000 samples of 20 calls, the same in three runs).
inline constexpr int kGroupRows = 4;
inline constexpr int kGroupKeys = 4;

// Keys and values are read 16 positions ahead of use. A sequence's cache
// is read once per layer per step, and between two reads every weight of
// the model passes through the caches, so it comes from the last-level
// cache; the hardware finds the stride of one head's rows (kv_dim apart)
// too late. Measured on the Xeon above, one process, interleaved, the other
// core busy: decode over 4,096 positions 2.57 -> 2.11 ms (another run 2.74
// -> 1.97), a demo batch-16 step 3.14 -> 3.02 ms, batch 4 0.93 -> 0.91 ms;
// 32 ahead measured the same as 16, 8 slower.
inline constexpr int kKeysAhead = 16;
inline constexpr int kValuesAhead = 16;

// Asks for every cache line of the n floats from p on.
inline void prefetch_span(const float* p, int n) {
    const std::uintptr_t first = reinterpret_cast<std::uintptr_t>(p) & ~std::uintptr_t(63);
    const std::uintptr_t end = reinterpret_cast<std::uintptr_t>(p + n);
    for (std::uintptr_t line = first; line < end; line += 64)
        __builtin_prefetch(reinterpret_cast<const void*>(line), 0, 3);
}

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

// Heads weighted sums over the same rows, Chunks x kLanes outputs of each,
// in one pass: each row's vectors are loaded once for all the heads, and
// the Heads x Chunks chains of additions (one per kLanes outputs, in row
// order, as weighted_chunks adds them) run side by side.
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
    for (int h = 0; h < Heads; ++h)  // the last width % kLanes outputs, as weighted_sum_add does
        for (int e = d; e < width; ++e) {
            float acc = out[h * out_stride + e];
            for (int j = 0; j < n_rows; ++j)
                acc += weights[h * weights_stride + j] * rows[j * stride + e];
            out[h * out_stride + e] = acc;
        }
}

}  // namespace

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

namespace {

// The largest of x[0..n-1] (n > 0), kLanes candidates at a time: a maximum
// does not depend on the order it is taken in (one serial comparison per
// score was 40 % of softmax's time). Measured on the Xeon above, both in
// one process, interleaved, against the serial loop: softmax_for_group
// over 4 x 4,097 scores 40.9 -> 19.8 us (fastest of 1,500 samples of 20
// calls; 2.0 x in two runs), a demo decode step over 4,096 positions 3.43
// -> 3.08 ms (fastest of 150; 1.10 to 1.12 x in two runs).
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

// softmax's first step: x[i] = e^(x[i] - max). The exponentials are
// independent and run as vector code.
void exp_minus_largest(float* x, int n) {
    const float max = largest(x, n);
    for (int i = 0; i < n; ++i) x[i] = exp_float(x[i] - max);
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

void softmax(std::span<float> x) {
    if (x.empty()) return;
    const int n = static_cast<int>(x.size());
    // Two loops where one would do: the exponentials run as vector code;
    // the sum keeps its one fixed order, left to right. Measured, this
    // bought nothing: with GCC 12 on the Xeon above, the one loop (each
    // exponential added to the sum as it is made) was a little faster,
    // 6.23 against 6.41 us over 4,097 scores (both in one process,
    // interleaved, fastest of 3,000 samples of 20 calls, the same in three
    // runs); a decode step over 4,096 positions one head at a time
    // (attend_one_head, the caller) took 4.69 ms with one loop against 4.58
    // with two, within noise (1.00 to 1.09 x in three runs).
    exp_minus_largest(x.data(), n);
    float sum = 0.0f;
    for (float v : x) sum += v;
    for (float& v : x) v /= sum;
}

void softmax_for_group(float* x, int n_rows, std::size_t stride, int n) {
    if (n <= 0) return;
    for (int r = 0; r < n_rows; ++r) exp_minus_largest(x + r * stride, n);
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

float exp_float_reference(float x) {
    if (x != x) return x;
    if (x < -87.0f) return 0.0f;
    if (x > 88.0f) return std::numeric_limits<float>::infinity();
    const float n = std::nearbyint(x * 1.44269504f);  // x / ln2, to the nearest, ties to even
    const float r = (x - n * 0.693145751953125f) - n * 1.42860677e-06f;
    const float p = exp_taylor(r);              // e^r, the same series in the same order
    return std::ldexp(p, static_cast<int>(n));  // p * 2^n
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
