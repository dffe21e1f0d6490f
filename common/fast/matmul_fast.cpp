// The matrix products' vector paths: each computes what matmul_reference
// computes, in the same order of additions (kernels.h); which one runs for a
// number of rows is measured on this machine (kernel_plan.h). Each trick
// carries one sentence of why; what it measured is in tests/bench/README.md.
#include <algorithm>
#include <array>
#include <stdexcept>

#include "../core/kernels.h"
#include "lanes.h"

namespace kv {

using namespace fast;

namespace {

// ---------------------------------------------- matrix products: the streams

// Every tile is tile_in_registers (lanes.h): each loaded number held in a
// register, the lanes split in the build's own vectors.

// Rows i0..i0+R-1 of x against the last weight rows from j on (fewer
// than C): tiles of 4, 2 and 1 weight rows.
template <int R, int C>
inline void leftover_columns(const Matrix& x, int i0, const Matrix& w, int j, Matrix& y) {
    NoPrefetch none;
    if constexpr (C > 1) {
        constexpr int Next = C > 4 ? 4 : C / 2;
        for (; j + Next <= w.rows; j += Next)
            tile_in_registers<R, Next>(x.row(i0), x.cols, w.row(j), w.cols, x.cols, &y.at(i0, j),
                                       y.cols, none);
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
            tile_in_registers<R, C>(x.row(i0), x.cols, w.row(j), w.cols, x.cols, &y.at(i0, j),
                                    y.cols, pf);
        }
        leftover_columns<R, C>(x, i0, w, j, y);
    });
}

// One weight row after another, as the plain peer reads them, so the
// weights pass in memory order: one stream the hardware prefetcher follows
// from DRAM; with Ahead > 0, the line Ahead floats on is also asked for at
// each vector step, for a core whose prefetcher does not run far enough.
template <int Ahead>
struct LinearAhead {
    const float* row = nullptr;
    void step(int k) {
        if constexpr (Ahead > 0) __builtin_prefetch(row + k + Ahead, 0, 3);
    }
};

template <int Ahead>
void in_order(const Matrix& x, const Matrix& w, Matrix& y) {
    by_fours(x.rows, [&](auto rows, int i0) {
        constexpr int R = decltype(rows)::value;
        for (int j = 0; j < w.rows; ++j) {
            LinearAhead<Ahead> pf{w.row(j)};
            tile_in_registers<R, 1>(x.row(i0), x.cols, w.row(j), w.cols, x.cols, &y.at(i0, j),
                                    y.cols, pf);
        }
    });
}

// ------------------------------------------------ matrix products: the tiles

// Rows i.. of x (fewer than R) against weight rows j0.. as one smaller tile.
template <int C, int R>
inline void leftover_rows(const Matrix& x, int i, const Matrix& w, int j0, Matrix& y, Spread& pf) {
    if constexpr (R > 0) {
        if (x.rows - i == R)
            tile_in_registers<R, C>(x.row(i), x.cols, w.row(j0), w.cols, x.cols, &y.at(i, j0),
                                    y.cols, pf);
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
        tile_in_registers<R, C>(x.row(i), x.cols, w.row(j0), w.cols, x.cols, &y.at(i, j0), y.cols,
                                pf);
    leftover_rows<C, R - 1>(x, i, w, j0, y, pf);
}

template <int R, int C>
void tiles(const Matrix& x, const Matrix& w, Matrix& y) {
    int j = 0;
    for (; j + C <= w.rows; j += C) tile_columns<R, C>(x, w, j, y);
    for (; j < w.rows; ++j) tile_columns<R, 1>(x, w, j, y);
}

// ------------------------------------------------------ the candidates

// Every candidate of each row class, the default (before any plan) first.
// Each is here because the planner may find it the fastest: which one wins
// depends on the vector width and how many registers the core has (tile4x6
// needs 32 registers of 16 floats), and only a measurement on this machine
// tells; every tile holds its sums in registers itself (tile_in_registers),
// since left to the compiler they spill. The measurements are in
// tests/bench/README.md.
//
// One row and a few rows have the same candidates, weights read once: whole
// rows in memory order (the hardware prefetcher alone, or with lines asked
// for ahead), or 8 rows side by side; a few rows run the one-row plan
// (kernel_plan.h says why).
template <RowClass C>
constexpr std::array<MatmulKernel, 3> streams() {
    return {
        {{"inorder", C, in_order<0>}, {"inorder512", C, in_order<512>}, {"stream8", C, stream<8>}}};
}
const auto kOneRow = streams<RowClass::one>();
const auto kFewRows = streams<RowClass::few>();
// Many rows: R x C tiles, R x C x (16 / the build's vector width) sums held
// in registers (2 x 3: what 16 registers of 8 or 4 floats hold).
const MatmulKernel kManyRows[] = {
    {"tile4x4", RowClass::many, tiles<4, 4>},
    {"tile2x8", RowClass::many, tiles<2, 8>},
    {"tile4x6", RowClass::many, tiles<4, 6>},
    {"tile2x3", RowClass::many, tiles<2, 3>},
};

}  // namespace

// ---------------------------------------------------------------- dot products

float dot(const float* a, const float* b, int n) {
    float out;
    NoPrefetch none;
    tile_in_registers<1, 1>(a, 0, b, 0, n, &out, 1, none);
    return out;
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

}  // namespace kv
