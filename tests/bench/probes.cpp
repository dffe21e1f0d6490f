// Built with the book's own flags (-ffp-contract=off): the probe's
// acc * a + b stays a multiply and an add, as in common/kernels.cpp.
#include "probes.h"

#include <algorithm>
#include <cstring>
#include <vector>

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

double stream_read_bytes_per_second() {
    const std::size_t floats =
        (std::size_t(512) << 20) / sizeof(float);  // 512 MiB, far past any L3
    std::vector<float> data(floats, 1.0f);
    volatile float sink = 0;
    double best = 1e300;
    for (int pass = 0; pass < 5; ++pass) {
        const auto start = Clock::now();
        ProbeLanes acc[8] = {};  // 8 independent sums keep many loads in flight
        for (std::size_t i = 0; i + 128 <= floats; i += 128)
            for (int j = 0; j < 8; ++j) {
                ProbeLanes v;
                std::memcpy(&v, &data[i + 16 * j], sizeof v);
                acc[j] += v;
            }
        best = std::min(best, seconds_since(start));
        ProbeLanes total = {};
        for (const ProbeLanes& a : acc) total += a;  // every load must count, or it is dropped
        for (int l = 0; l < 16; ++l) sink = sink + total[l];
    }
    return double(floats * sizeof(float)) / best;
}

}  // namespace kv::bench
