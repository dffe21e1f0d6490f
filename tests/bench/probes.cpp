// Built with the book's own flags (-ffp-contract=off): the probe's
// acc * a + b stays a multiply and an add, as in common/kernels.cpp.
#include "probes.h"

#include "../../common/timing.h"
#include "chain.h"

namespace kv::bench {

double peak_mul_add_flops() {
    const long iterations = 20'000'000;
    // Volatile in and out: the compiler can neither skip the calls nor, the
    // probe being a pure function, fold the repeats into one.
    volatile long count = iterations;
    volatile float sink = 0;
    const double seconds = median_seconds(3, [&] { sink = sink + multiply_add_chains(count); });
    return kFlopsPerIteration * double(iterations) / seconds;
}

}  // namespace kv::bench
