// The machine's arithmetic limit, measured on one thread. (Its other limit,
// how fast one core streams bytes from DRAM, is measured by chapter 04's
// chapters/04_batched_decoding/memory_bandwidth.h.)
#pragma once

namespace kv::bench {

// Peak float32 rate with fused multiply-adds (FLOP/s; one FMA = 2 FLOP).
double peak_fma_flops();

// The same with a separate multiply and add, as the book's kernels compute
// (they are built with -ffp-contract=off; see common/core/kernels.h). On cores
// with separate multiply and add pipes this equals the FMA peak; on others
// it is half of it.
double peak_mul_add_flops();

}  // namespace kv::bench
