// The machine's two limits, measured on one thread: how fast one core can
// do float32 arithmetic, and how fast it can stream bytes from DRAM.
#pragma once

namespace kv::bench {

// Peak float32 rate with fused multiply-adds (FLOP/s; one FMA = 2 FLOP).
double peak_fma_flops();

// The same with a separate multiply and add, as the book's kernels compute
// (they are built with -ffp-contract=off; see common/kernels.h). On cores
// with separate multiply and add pipes this equals the FMA peak; on others
// it is half of it.
double peak_mul_add_flops();

// Streaming read bandwidth from DRAM (bytes/s): sums a buffer far larger
// than the caches, best of several passes.
double stream_read_bytes_per_second();

}  // namespace kv::bench
