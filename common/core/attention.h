// Attention's kernels on the cache's own numbers: one KV head's keys (or
// values) as the cache stores them, float32, bfloat16, float16 or int8
// (number_format.h), read where they lie. Each number is widened exactly to
// the float32 it stands for, so every score and every weighted sum is the
// same sum, in the same order, as the float32 kernels of kernels.h would
// give on a float32 copy of the rows; only the bytes read shrink.
#pragma once

#include <cstddef>
#include <span>

#include "number_format.h"

namespace kv {

// One KV head's rows: how each is stored, and how far apart.
struct StoredRows {
    NumberFormat format = NumberFormat::float32;
    std::size_t stride = 0;  // bytes from one position's row to the next
    int width = 0;           // numbers in one row: the head size

    // The bytes of one row (an int8 row holds its scales too).
    std::size_t bytes() const { return RowFormat{format, 1, width}.bytes(); }
};

// Rows held in runs, one after another (a paged cache's blocks): `count`
// rows from `rows` on, StoredRows::stride bytes apart.
struct StoredRun {
    const std::byte* rows;
    int count;
};

// The query heads of one grouped-query group against the keys they share:
// out[i * out_stride + j] = dot(query i, row j widened, width), row j of
// the first n_rows rows of the runs taken in order.
void dot_rows_for_group(const float* queries, int n_queries, std::size_t query_stride,
                        std::span<const StoredRun> runs, int n_rows, const StoredRows& rows,
                        float* out, std::size_t out_stride);

// A group's weighted sums of the same values: out[i * out_stride + d] +=
// weights[i * weights_stride + j] * (row j widened)[d], j = 0, 1, 2, ... in turn.
void weighted_sum_add_for_group(const float* weights, int n_sums, std::size_t weights_stride,
                                std::span<const StoredRun> runs, int n_rows, const StoredRows& rows,
                                float* out, std::size_t out_stride);

}  // namespace kv
