// The arithmetic probe: 16 independent chains acc = acc * a + b on 16
// lanes each, 512 FLOP per iteration. With enough independent chains the
// core's throughput, not the latency of one operation, sets the pace.
// Whether `acc * a + b` is one fused multiply-add or a multiply and an add
// depends on the -ffp-contract flag of the file that includes this header,
// which is the point: fma_probe.cpp measures one, probes.cpp the other.
#pragma once

#include "../../common/kit/timing.h"

namespace kv::bench {
namespace {  // internal linkage: each file gets its own, compiled its own way

typedef float ProbeLanes __attribute__((vector_size(16 * sizeof(float))));

__attribute__((noinline)) float multiply_add_chains(long iterations) {
    constexpr int kChains = 16;
    ProbeLanes acc[kChains];
    for (int i = 0; i < kChains; ++i) acc[i] = ProbeLanes{} + float(i);
    // The values converge to 1: nothing overflows or goes subnormal.
    const ProbeLanes a = ProbeLanes{} + 0.999f, b = ProbeLanes{} + 0.001f;
    for (long it = 0; it < iterations; ++it)
        for (int i = 0; i < kChains; ++i) acc[i] = acc[i] * a + b;
    ProbeLanes sum = {};
    for (const ProbeLanes& v : acc) sum += v;
    return sum[0];
}

constexpr double kFlopsPerIteration = 2.0 * 16 * 16;

// FLOP/s of the chains, as compiled in the including file: the median of 3.
double measure_chain_flops() {
    const long iterations = 20'000'000;
    // Volatile in and out: the compiler can neither skip the calls nor, the
    // probe being a pure function, fold the repeats into one.
    volatile long count = iterations;
    volatile float sink = 0;
    const double seconds = median_seconds(3, [&] { sink = sink + multiply_add_chains(count); });
    return kFlopsPerIteration * double(iterations) / seconds;
}

}  // namespace
}  // namespace kv::bench
