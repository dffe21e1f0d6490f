// The roofline model (Williams, Waterman and Patterson, 2009): the fastest
// a piece of work can run is the lower of two roofs, the machine's peak
// arithmetic and its memory bandwidth times the work's arithmetic
// intensity (FLOPs per byte read).
//
// A CPU has more than one memory roof: bytes that sit in the last-level
// cache arrive faster than bytes from DRAM. Where the demo model's 21 MiB
// of weights fit in the last-level cache, its roof is the cache's; the wide
// model's 292 MiB come from DRAM. The
// roofs are measured on this thread by the program kit's machine probes
// (common/kit/machine_probes.h, the same ones `make bench` uses): peak
// arithmetic as a multiply then an add (the book's kernels do not fuse),
// DRAM's read bandwidth here, and a cache's as a read of each working set's
// own size (which level that is: common/kit/memory_level.h).
//
// The roofs are what the machine allows, not what a kernel reaches: the
// book's kernels attain less arithmetic than the peak, so the batch at
// which they stop waiting for weights is set by their own best rate.
#pragma once

#include <algorithm>

namespace kv {

struct Roofline {
    double peak_flops = 0;             // FLOP/s, a multiply then an add
    double dram_bytes_per_second = 0;  // reading from DRAM

    // The fastest FLOP/s at `flops_per_byte`, with the bytes read at `bytes_per_second`.
    double attainable(double flops_per_byte, double bytes_per_second) const {
        return std::min(peak_flops, flops_per_byte * bytes_per_second);
    }
    // The intensity where the memory roof meets the arithmetic roof.
    double ridge(double bytes_per_second) const { return peak_flops / bytes_per_second; }
};

// The batch at which the weight products reach `flops_per_byte`: each
// weight is read once per step and does 2 FLOPs per sequence, so the
// intensity is 2 B / bytes_per_weight (B/2 with float32 weights, B with
// 16-bit ones).
inline double batch_at_intensity(double flops_per_byte, double bytes_per_weight) {
    return flops_per_byte * bytes_per_weight / 2;
}

}  // namespace kv
