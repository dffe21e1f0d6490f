// The vectors every fast kernel is written in: kLanes floats as one value,
// the pairwise trees that finish kLanes partial sums (kernels.h's order),
// prefetch hints, and the register tile of R rows against C rows. Shared by
// the matrix products (matmul_fast.cpp) and attention (attention_fast.cpp).
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "../core/kernels.h"

namespace kv::fast {

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

// ------------------------------------------------- the tile, in registers

// The widest vector this build has: 16 floats with AVX-512, 8 with AVX,
// 4 with SSE2 or NEON. A Lanes is kParts of them side by side.
#if defined(__AVX512F__)
#define KV_NATIVE_WIDTH 16
#elif defined(__AVX__)
#define KV_NATIVE_WIDTH 8
#else
#define KV_NATIVE_WIDTH 4
#endif
inline constexpr int kNativeWidth = KV_NATIVE_WIDTH;
inline constexpr int kParts = kLanes / kNativeWidth;
typedef float Native __attribute__((vector_size(kNativeWidth * sizeof(float))));

inline Native load_native(const float* p) {
    Native v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// An empty instruction that takes v in a register and may change it: the
// compiler must keep v there instead of loading it again from memory for
// each multiply, which GCC otherwise does, doubling a tile's loads.
inline void in_register(Native& v) {
#if defined(__AVX512F__)
    asm("" : "+v"(v));
#elif defined(__SSE2__)
    asm("" : "+x"(v));
#elif defined(__aarch64__)
    asm("" : "+w"(v));
#endif
}

// The tree's first steps, while a sum's lanes lie in kParts vectors: lane
// l with l + 8 (part p with p + kParts / 2), then l with l + 4 where that
// still crosses parts. Leaves one vector of the tree's last kNativeWidth sums.
template <int R, int C>
[[gnu::always_inline]] inline Native fold_parts(const Native (&acc)[kParts][R][C], int r, int c) {
#if KV_NATIVE_WIDTH == 16
    return acc[0][r][c];
#elif KV_NATIVE_WIDTH == 8
    return acc[0][r][c] + acc[1][r][c];
#else
    return (acc[0][r][c] + acc[2][r][c]) + (acc[1][r][c] + acc[3][r][c]);
#endif
}

// The rest of the tree for N sums, each in one Native (fold_parts), side
// by side as reduce_many does for kLanes: out[i] is sum i, added in the
// book's order.
template <int N>
[[gnu::always_inline]] inline void reduce_natives(const Native* v, float* out) {
#if KV_NATIVE_WIDTH == 16
    static_assert(std::is_same_v<Native, Lanes>);
    reduce_many<N>(v, out);
#else
    if constexpr (N > 0) {
        constexpr int W = kNativeWidth, Take = N < W ? N : W;
        Native s[W];
        for (int i = 0; i < W; ++i) s[i] = i < Take ? v[i] : Native{};
        Native f;
#if KV_NATIVE_WIDTH == 8  // l with l + 4, then l + 2, then l + 1
        Native h[4], q[2];
        for (int i = 0; i < 4; ++i)
            h[i] = __builtin_shufflevector(s[2 * i], s[2 * i + 1], 0, 1, 2, 3, 8, 9, 10, 11) +
                   __builtin_shufflevector(s[2 * i], s[2 * i + 1], 4, 5, 6, 7, 12, 13, 14, 15);
        for (int i = 0; i < 2; ++i)
            q[i] = __builtin_shufflevector(h[2 * i], h[2 * i + 1], 0, 1, 4, 5, 8, 9, 12, 13) +
                   __builtin_shufflevector(h[2 * i], h[2 * i + 1], 2, 3, 6, 7, 10, 11, 14, 15);
        f = __builtin_shufflevector(q[0], q[1], 0, 2, 4, 6, 8, 10, 12, 14) +
            __builtin_shufflevector(q[0], q[1], 1, 3, 5, 7, 9, 11, 13, 15);
#else                     // 4 wide: l with l + 2, then l + 1
        const Native h0 = __builtin_shufflevector(s[0], s[1], 0, 1, 4, 5) +
                          __builtin_shufflevector(s[0], s[1], 2, 3, 6, 7);
        const Native h1 = __builtin_shufflevector(s[2], s[3], 0, 1, 4, 5) +
                          __builtin_shufflevector(s[2], s[3], 2, 3, 6, 7);
        f = __builtin_shufflevector(h0, h1, 0, 2, 4, 6) +
            __builtin_shufflevector(h0, h1, 1, 3, 5, 7);
#endif
        std::memcpy(out, &f, Take * sizeof(float));
        reduce_natives<N - Take>(v + Take, out + Take);
    }
#endif
}

// One vector step of a tile: part p (kNativeWidth of the kLanes lanes) of
// each row of x and w, kNativeWidth lanes of each of R x C sums.
template <int R, int C>
[[gnu::always_inline]] inline void tile_step(const Native (&xv)[R], const float* w, std::size_t ws,
                                             Native (&acc)[R][C]) {
    for (int c = 0; c < C; ++c) {
        Native wv = load_native(w + c * ws);
        in_register(wv);
        for (int r = 0; r < R; ++r) acc[r][c] += xv[r] * wv;
    }
}

// R rows of x (xs apart) against C rows of w (ws apart): out[r * os + c] =
// dot(x row r, w row c, n), so each number loaded from x serves C sums and
// each from w serves R. Each loaded number is kept in a register and the
// lanes are split in the build's own vectors, so that R x C x kParts
// accumulators, R rows of x and one row of w fit in the registers: each sum
// is the book's, lane for lane. The accumulators start from zero one by
// one: GCC clears an `= {}` array with a rep stos on every tile.
template <int R, int C, class Pf>
inline void tile_in_registers(const float* x, std::size_t xs, const float* w, std::size_t ws, int n,
                              float* out, std::size_t os, Pf& pf) {
    Native acc[kParts][R][C];
    for (int p = 0; p < kParts; ++p)
        for (int r = 0; r < R; ++r)
            for (int c = 0; c < C; ++c) acc[p][r][c] = Native{};
    int k = 0;
    for (; k + kLanes <= n; k += kLanes) {
        pf.step(k);
        for (int p = 0; p < kParts; ++p) {
            const int at = k + p * kNativeWidth;
            Native xv[R];
            for (int r = 0; r < R; ++r) {
                xv[r] = load_native(x + r * xs + at);
                in_register(xv[r]);
            }
            tile_step<R, C>(xv, w + at, ws, acc[p]);
        }
    }
    if (k < n) {  // the tail, padded with zeros (0 * 0 changes no sum)
        pf.step(k);
        float xt[R][kLanes], wt[C][kLanes];
        for (int r = 0; r < R; ++r) {
            const Lanes v = load_tail(x + r * xs + k, n - k);
            std::memcpy(xt[r], &v, sizeof v);
        }
        for (int c = 0; c < C; ++c) {
            const Lanes v = load_tail(w + c * ws + k, n - k);
            std::memcpy(wt[c], &v, sizeof v);
        }
        for (int p = 0; p < kParts; ++p) {
            Native xv[R];
            for (int r = 0; r < R; ++r) xv[r] = load_native(xt[r] + p * kNativeWidth);
            tile_step<R, C>(xv, wt[0] + p * kNativeWidth, kLanes, acc[p]);
        }
    }
    Native folded[R * C];
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) folded[r * C + c] = fold_parts(acc, r, c);
    float sums[R * C];
    reduce_natives<R * C>(folded, sums);
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) out[r * os + c] = sums[r * C + c];
}

}  // namespace kv::fast
