// make bench: how close the book's engine runs to this machine's limits.
//
// It measures the two limits itself (peak arithmetic and DRAM bandwidth, one
// thread), then times decode at batch 1 and 16 and prefill for three model
// shapes, and prints each as a fraction of the limit that binds it.
#include <cstdio>
#include <iostream>

#include "../../chapters/04_batched_decoding/batch_report.h"
#include "../../chapters/04_batched_decoding/memory_bandwidth.h"
#include "../../common/kit/flags.h"
#include "../../common/kit/output.h"
#include "../../common/kit/program.h"
#include "../../common/kit/report.h"
#include "probes.h"
#include "workloads.h"

using namespace kv;
using namespace kv::bench;

namespace {

struct Target {
    const char* what;
    double fraction;
    double goal;
};

}  // namespace

int main(int argc, char** argv) {
    return run_program("bench", [&] {
        int repeats = 20;  // timed steps per measurement (median reported)
        OutputOptions out;
        Flags flags("bench",
                    "The engine against the machine's limits: FMA peak and DRAM bandwidth.");
        flags.add("repeats", repeats, 3, 10000, "timed repetitions per measurement");
        add_output_flags(flags, out);
        if (!flags.parse(argc, argv)) return 0;

        // The memory probe is chapter 04's: a sum over a buffer 8 x the largest cache.
        std::uint64_t l3 = last_level_cache_bytes();
        if (l3 == 0) l3 = 32ull << 20;  // not Linux: assume a common size
        const double dram = streaming_bytes_per_second(streaming_buffer_bytes(l3), 5);
        const Limits limits{peak_fma_flops(), peak_mul_add_flops(), dram, l3};
        Table table({"shape", "weights", "measurement", "tokens/s", "GFLOP/s", "% of peak",
                     "weight GB/s", "% of bandwidth", "bound by"});
        std::vector<Target> targets;
        Json shapes_json;
        for (const BenchShape& shape : bench_shapes()) {
            const ShapeResults r = measure_shape(shape, repeats, limits);
            for (const Measurement& m : r.rows)
                table.add_row(
                    {shape.name, format_bytes(r.weight_bytes), m.what, Cell(m.tokens_per_second, 0),
                     Cell(m.flops_per_second / 1e9, 1),
                     Cell(100 * m.flops_per_second / limits.peak_fma, 1),
                     Cell(m.weight_bytes_per_second / 1e9, 1),
                     Cell(100 * m.weight_bytes_per_second / limits.dram_bytes_per_second, 1),
                     m.memory_bound ? "bandwidth" : "arithmetic"});
            const double fma = limits.peak_fma;
            if (shape.name == std::string("large")) {
                targets.push_back({"large: batch-1 decode, of the bandwidth bound",
                                   r.rows[0].weight_bytes_per_second / limits.dram_bytes_per_second,
                                   0.85});
            }
            if (shape.name == std::string("cache-resident"))
                targets.push_back({"cache-resident: batch-1 decode, of peak FMA",
                                   r.rows[0].flops_per_second / fma, 0.25});
            if (shape.name == std::string("demo")) {
                targets.push_back(
                    {"demo: batch-16 decode, of peak FMA", r.rows[1].flops_per_second / fma, 0.50});
                targets.push_back(
                    {"demo: prefill, of peak FMA", r.rows[2].flops_per_second / fma, 0.50});
            }
            shapes_json.add_raw(shape.name, r.to_json());
        }

        Table goals({"target", "measured", "goal", "met"});
        for (const Target& t : targets)
            goals.add_row({t.what, Cell(100 * t.fraction, 1), Cell(100 * t.goal, 0),
                           t.fraction >= t.goal ? "yes" : "no"});
        Json json;
        json.add("peak_fma_gflops", limits.peak_fma / 1e9)
            .add("peak_mul_add_gflops", limits.peak_mul_add / 1e9)
            .add("dram_read_gbs", limits.dram_bytes_per_second / 1e9)
            .add("l3_bytes", limits.l3_bytes)
            .add("results", table)
            .add("targets", goals);
        if (emit(out, json)) return 0;

        std::printf("Limits of one core, measured:\n");
        std::printf("  peak float32 FMA:          %.1f GFLOP/s\n", limits.peak_fma / 1e9);
        std::printf(
            "  peak multiply then add:    %.1f GFLOP/s (the kernels' arithmetic: "
            "-ffp-contract=off)\n",
            limits.peak_mul_add / 1e9);
        std::printf("  streaming read from DRAM:  %.1f GB/s\n", limits.dram_bytes_per_second / 1e9);
        std::printf("  last-level cache:          %s\n\n", format_bytes(limits.l3_bytes).c_str());
        table.print(std::cout);
        std::cout << "\n";
        goals.print(std::cout);
        return 0;
    });
}
