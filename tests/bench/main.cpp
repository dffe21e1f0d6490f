// make bench: how close the book's engine runs to this machine's limits.
//
// It measures the limits itself (peak arithmetic, read bandwidth from DRAM,
// and a read of each row's own working set that fits in the reported
// last-level cache, one thread: common/kit/machine_probes.h),
// times decode at batch 1 and 16, decode over a 4,096-position cache, and
// prefill for three model shapes, and prints each as a fraction of the
// limits. Probes and workloads take turns, so that a spell of load on a
// shared machine hits both: in every round, before each workload, every
// probe runs once (more often if --repeats is larger than the number of
// workloads), so each limit is sampled at least as often as each
// workload's step, in the same minutes. The best sample of each is kept
// and the spread printed. Everything is timed in this thread's CPU time (a
// pause while the OS runs something else is not counted). What makes a row
// a measurement and a target met: measurement_rules.h.
#include <cstdio>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "../../common/kit/flags.h"
#include "../../common/kit/machine_probes.h"
#include "../../common/kit/output.h"
#include "../../common/kit/program.h"
#include "../../common/kit/report.h"
#include "measurement_rules.h"
#include "workloads.h"

using namespace kv;
using namespace kv::bench;

namespace {

// What this build's vectors compile to, from the compiler's own macros.
std::string instruction_set() {
#if defined(__AVX512F__)
    return "AVX-512";
#elif defined(__AVX2__) && defined(__FMA__)
    return "AVX2 with FMA";
#elif defined(__AVX__)
    return "AVX";
#elif defined(__SSE2__)
    return "SSE2 (the x86-64 baseline)";
#elif defined(__aarch64__)
    return "ARM64 (NEON)";
#else
    return "none the bench knows";
#endif
}

// Each probe's sample is about as long as a step of the workloads it is
// compared with, so that a lucky quiet moment is as likely to fall on one as
// on the other: an arithmetic sample is a million steps of the probe's
// chains, 512 MFLOP with AVX-512 and 96 with SSE2 (about 6 and 3.4 ms at the
// multiply-then-add rates in machine_probes.cpp; a batch-16 decode takes
// a few ms, a prefill tens), a read at a row's working-set size one pass
// over its buffer, as a batch-1 decode step reads its bytes once.
// A DRAM sample is one pass over its buffer too: about 70 ms for 1 GiB, longer
// than the large model's 28 ms decode step (a smaller buffer would leave
// part of it in the cache).
constexpr long kPeakIterations = 1'000'000;

// A workload's timed steps in one round stop short of --repeats once they
// have taken this long: the large model's prefill takes 0.3 s a step with
// AVX-512 and 1.9 s in the SSE2 baseline build.
constexpr double kRoundSecondsPerWorkload = 1.0;

// The machine's limits, sampled beside each workload.
struct Limits {
    Samples fma, mul_add, dram;
    std::vector<Samples> at_size;  // a read of each row size that fits (probes' order)

    // `runs` samples of each probe, DRAM's first: it empties the caches.
    void sample(int runs, const std::vector<ReadBandwidthProbe>& at_size_probes,
                const ReadBandwidthProbe& dram_probe) {
        for (int k = 0; k < runs; ++k)
            dram.values.push_back(dram_probe.bytes_per_second(1, dram_probe.bytes()));
        for (int k = 0; k < runs; ++k) {
            fma.values.push_back(peak_fused_flops(1, kPeakIterations));
            mul_add.values.push_back(peak_multiply_then_add_flops(1, kPeakIterations));
        }
        // Two passes first, not counted: after the DRAM probe, the pass after
        // the probe's own untimed one read 11.5 to 14.1 GB/s in four tries on
        // the Xeon of the README, most passes after it 21 to 28.
        // (Each probe after the one before it: the same holds.)
        at_size.resize(at_size_probes.size());
        for (std::size_t p = 0; p < at_size_probes.size(); ++p) {
            const ReadBandwidthProbe& probe = at_size_probes[p];
            probe.bytes_per_second(1, probe.bytes());
            for (int k = 0; k < runs; ++k)
                at_size[p].values.push_back(probe.bytes_per_second(1, probe.bytes()));
        }
    }
};

// One workload's best step against the limits.
struct Row {
    std::string name;  // "demo: decode, batch 1"
    Workload workload;
    StepCost cost;
    std::uint64_t bytes = 0;  // weights and keys and values read per step
    double seconds = 0;       // the best step
    double tokens_per_second = 0;
    double read_at_size = 0;  // bytes per second of a read of `bytes` (0: not probed, DRAM)
    double roof = 0;          // bytes per second of the level the bytes come from
    RowFractions fractions;
    bool memory_bound = false;  // bytes / roof takes longer than FLOPs / peak
    bool valid = false;         // measurement_rules.h
};

// A goal for one row's fraction of a limit.
struct Target {
    std::string row;
    Against against;
    double goal;
};

std::string percent(double fraction) {
    return fixed(100 * fraction, 1);
}

Json samples_json(const Samples& s, double scale) {
    std::vector<double> v;
    for (double x : s.values) v.push_back(x / scale);
    return Json().add("best", s.best() / scale).add("spread", s.spread()).add("samples", v);
}

}  // namespace

int main(int argc, char** argv) {
    return run_program("bench", [&] {
        int repeats = 10;  // timed steps per workload per round (fastest kept)
        int rounds = 5;    // probes and workloads, interleaved
        OutputOptions out;
        Flags flags("bench",
                    "The engine against the machine's limits: arithmetic peak and read "
                    "bandwidth from the last-level cache and from DRAM.");
        flags.add("repeats", repeats, 1, 10000,
                  "timed steps per workload in each round (fewer once they take a second)");
        flags.add("rounds", rounds, 1, 100, "rounds of probes and workloads, interleaved");
        add_output_flags(flags, out, false);
        if (!flags.parse(argc, argv)) return 0;

        // ---------------------------------------------------------- the probes
        const CacheSizes caches = cache_sizes();
        const std::vector<BenchShape> shapes = bench_shapes();
        const ReadBandwidthProbe dram_probe(dram_probe_bytes(caches));

        // ------------------------------------------------------- the workloads
        std::vector<std::unique_ptr<TimedWorkload>> workloads;
        for (const BenchShape& shape : shapes) {
            const std::vector<Workload> list = {
                {shape.name, "decode, batch 1", 1, 64, 0},
                {shape.name, "decode, batch 16", 16, 64, 0},
                {shape.name, "prefill, 128 tokens", 1, 0, 128},
            };
            for (const Workload& w : list)
                workloads.push_back(std::make_unique<TimedWorkload>(shape.config, w));
            if (shape.name == "demo")
                workloads.push_back(std::make_unique<TimedWorkload>(
                    shape.config,
                    Workload{shape.name, "decode, batch 1, context 4096", 1, 4096, 0}));
        }

        // A read of each row's own working set, for those that fit in the
        // reported last level (measurement_rules.h): its roof, if faster than DRAM.
        std::vector<std::uint64_t> row_bytes;
        for (const auto& w : workloads) {
            const StepCost cost = step_cost(w->config(), w->workload());
            row_bytes.push_back(static_cast<std::uint64_t>(cost.weight_bytes + cost.cache_bytes));
        }
        const std::vector<std::uint64_t> probe_sizes =
            last_level_probe_sizes(row_bytes, caches.last_level);
        std::vector<ReadBandwidthProbe> at_size_probes;
        at_size_probes.reserve(probe_sizes.size());
        for (std::uint64_t b : probe_sizes) at_size_probes.emplace_back(b);

        // ------------------------------------------------- probes and workloads
        // A workload is timed `repeats` steps a round; every probe runs
        // beside every workload, often enough for `repeats` samples a round.
        // (A DRAM probe sampled twice a round against 30 steps of the large
        // model's decode fell below that decode's best in 4 of 6 runs on the
        // loaded Xeon of the README, and the row was refused.)
        const int count = static_cast<int>(workloads.size());
        const int probe_runs = (repeats + count - 1) / count;  // per workload per round
        Limits limits;
        std::vector<Samples> step(workloads.size(), Samples{false, {}});
        {
            Progress progress("bench: workload");
            for (int round = 0; round < rounds; ++round)
                for (int i = 0; i < count; ++i) {
                    const Workload& w = workloads[i]->workload();
                    progress.update(round * count + i, rounds * count,
                                    "(round " + std::to_string(round + 1) + ", " + w.shape + ": " +
                                        w.what + ")");
                    limits.sample(probe_runs, at_size_probes, dram_probe);
                    step[i].values.push_back(
                        workloads[i]->best_step_seconds(repeats, kRoundSecondsPerWorkload));
                }
        }
        const double peak = limits.mul_add.best();  // the kernels' own arithmetic
        const double dram = limits.dram.best();
        auto read_at = [&](std::uint64_t bytes) {  // the read of that size, 0 if not probed
            for (std::size_t p = 0; p < probe_sizes.size(); ++p)
                if (probe_sizes[p] == bytes) return limits.at_size[p].best();
            return 0.0;
        };

        // --------------------------------------------------------- the rows
        std::vector<Row> rows;
        for (int i = 0; i < count; ++i) {
            Row r;
            r.workload = workloads[i]->workload();
            r.name = r.workload.shape + ": " + r.workload.what;
            r.cost = step_cost(workloads[i]->config(), r.workload);
            r.bytes = row_bytes[i];
            r.seconds = step[i].best();
            r.tokens_per_second =
                r.workload.batch * (r.workload.prompt > 0 ? r.workload.prompt : 1) / r.seconds;
            r.read_at_size = read_at(r.bytes);
            r.fractions.from_last_level =
                bytes_from_last_level(r.bytes, caches.last_level, r.read_at_size, dram);
            r.roof = r.fractions.from_last_level ? r.read_at_size : dram;
            r.fractions.of_peak = r.cost.flops / r.seconds / peak;
            r.fractions.of_roof = double(r.bytes) / r.seconds / r.roof;
            r.memory_bound = double(r.bytes) / r.roof > r.cost.flops / peak;
            r.valid = valid_measurement(r.fractions);
            rows.push_back(r);
        }
        auto row_named = [&](const std::string& name) -> const Row& {
            for (const Row& r : rows)
                if (r.name == name) return r;
            throw std::logic_error("bench: no row " + name);
        };

        Table table({"shape", "measurement", "step ms", "tokens/s", "GFLOP/s", "% of peak",
                     "MiB read", "GB/s", "from", "% of roof", "bound by", "spread %"});
        std::vector<std::string> failed;
        std::vector<Json> failed_json;
        Json rows_json;
        for (std::size_t i = 0; i < rows.size(); ++i) {
            const Row& r = rows[i];
            const RowFractions& f = r.fractions;
            const double flops_rate = r.cost.flops / r.seconds;
            const double bytes_rate = double(r.bytes) / r.seconds;
            rows_json.add_raw(
                r.name, Json()
                            .add("step_seconds", r.seconds)
                            .add("step_seconds_spread", step[i].spread())
                            .add("step_seconds_rounds", step[i].values)
                            .add("tokens_per_second", r.tokens_per_second)
                            .add("flops", r.cost.flops)
                            .add("weight_bytes", r.cost.weight_bytes)
                            .add("cache_bytes", r.cost.cache_bytes)
                            .add("gflops", flops_rate / 1e9)
                            .add("fraction_of_peak", f.of_peak)
                            .add("read_gbs", bytes_rate / 1e9)
                            .add("working_set_bytes", r.bytes)
                            .add("read_gbs_at_working_set", r.read_at_size / 1e9)
                            .add("bytes_from", f.from_last_level ? "last-level cache" : "DRAM")
                            .add("roof_gbs", r.roof / 1e9)
                            .add("fraction_of_roof", f.of_roof)
                            .add("memory_bound", r.memory_bound)
                            .add("valid", r.valid)
                            .str());
            if (!r.valid) {
                failed.push_back(r.name + ": " + percent(f.of_peak) + " % of peak arithmetic, " +
                                 percent(f.of_roof) +
                                 " % of the read bandwidth: above a measured limit, so the " +
                                 "limit or the time was measured wrong");
                failed_json.push_back(Json()
                                          .add("row", r.name)
                                          .add("fraction_of_peak", f.of_peak)
                                          .add("fraction_of_roof", f.of_roof));
                continue;
            }
            table.add_row({r.workload.shape, r.workload.what, Cell(1e3 * r.seconds, 3),
                           Cell(r.tokens_per_second, 0), Cell(flops_rate / 1e9, 1),
                           Cell(100 * f.of_peak, 1), Cell(double(r.bytes) / double(1 << 20), 1),
                           Cell(bytes_rate / 1e9, 1), f.from_last_level ? "LLC" : "DRAM",
                           Cell(100 * f.of_roof, 1), r.memory_bound ? "bandwidth" : "arithmetic",
                           Cell(100 * step[i].spread(), 1)});
        }

        // ------------------------------------------------------ the targets
        const std::vector<Target> targets = {
            {"demo: decode, batch 1", Against::memory_roof, 0.80},
            {"cache-resident: decode, batch 1", Against::memory_roof, 0.80},
            {"large: decode, batch 1", Against::memory_roof, 0.80},
            {"demo: decode, batch 16", Against::peak, 0.60},
            {"demo: prefill, 128 tokens", Against::peak, 0.60},
        };
        Table goals({"target", "measured %", "goal %", "met"});
        std::vector<Json> targets_json;
        int met = 0;
        for (const Target& t : targets) {
            const Row& r = row_named(t.row);
            const std::string of = t.against == Against::peak    ? "multiply-then-add peak"
                                   : r.fractions.from_last_level ? "LLC bandwidth at its size"
                                                                 : "DRAM bandwidth";
            const double fraction = target_fraction(r.fractions, t.against);
            const bool ok = target_met(r.fractions, t.against, t.goal);
            met += ok;
            goals.add_row({t.row + ", of " + of, r.valid ? Cell(100 * fraction, 1) : Cell("failed"),
                           Cell(100 * t.goal, 0), ok ? "yes" : "no"});
            targets_json.push_back(Json()
                                       .add("row", t.row)
                                       .add("of", of)
                                       .add("fraction", fraction)
                                       .add("goal", t.goal)
                                       .add("row_valid", r.valid)
                                       .add("met", ok));
        }

        std::vector<Json> reads_json;
        for (std::size_t p = 0; p < probe_sizes.size(); ++p)
            reads_json.push_back(Json()
                                     .add("bytes", at_size_probes[p].bytes())
                                     .add("working_set_bytes", probe_sizes[p])
                                     .add("read_gbs", samples_json(limits.at_size[p], 1e9))
                                     .add("faster_than_dram",
                                          read_faster_than_dram(limits.at_size[p].best(), dram)));

        Json json;
        json.add("instruction_set", instruction_set())
            .add("fused_multiply_add_in_this_build", has_fused_multiply_add())
            .add("peak_fma_gflops", samples_json(limits.fma, 1e9))
            .add("peak_mul_add_gflops", samples_json(limits.mul_add, 1e9))
            .add("reads_at_row_sizes", reads_json)
            .add("dram_read_gbs", samples_json(limits.dram, 1e9))
            .add("dram_probe_bytes", dram_probe.bytes())
            .add("l1d_bytes", caches.l1d)
            .add("l2_bytes", caches.l2)
            .add("last_level_cache_bytes", caches.last_level)
            .add("rounds", rounds)
            .add("repeats", repeats)
            .add("probe_runs_per_workload", probe_runs)
            .add("rows", rows_json)
            .add("table", table)
            .add("failed_measurements", failed_json)
            .add("targets", targets_json)
            .add("targets_met", met)
            .add("targets_total", std::int64_t(targets.size()));
        if (emit(out, json)) return 0;

        const std::size_t samples = limits.mul_add.values.size();
        std::printf("This build: %s, fused multiply-add %s\n\n", instruction_set().c_str(),
                    has_fused_multiply_add() ? "yes" : "no");
        std::printf(
            "Limits of one core, in thread CPU time: the best of %zu samples each, %d beside\n",
            samples, probe_runs);
        std::printf(
            "each workload in each of %d rounds. Spread: how much longer the slowest sample\n",
            rounds);
        std::printf(
            "took than the fastest (slowest / fastest - 1); a row's, between the fastest\n");
        std::printf("steps of its %d rounds.\n", rounds);
        std::printf("  peak float32 FMA:            %6.1f GFLOP/s  spread %4.1f %%%s\n",
                    limits.fma.best() / 1e9, 100 * limits.fma.spread(),
                    has_fused_multiply_add() ? "" : "  (no FMA in this build: multiply then add)");
        std::printf(
            "  peak multiply then add:      %6.1f GFLOP/s  spread %4.1f %%  "
            "(the kernels' arithmetic: -ffp-contract=off)\n",
            limits.mul_add.best() / 1e9, 100 * limits.mul_add.spread());
        std::printf("  read from DRAM:              %6.1f GB/s     spread %4.1f %%  over %s\n",
                    limits.dram.best() / 1e9, 100 * limits.dram.spread(),
                    format_bytes(dram_probe.bytes()).c_str());
        for (std::size_t p = 0; p < probe_sizes.size(); ++p) {
            const double rate = limits.at_size[p].best();
            std::printf("  read of a row's %-12s %6.1f GB/s     spread %4.1f %%  %.2f x DRAM: %s\n",
                        (format_bytes(probe_sizes[p]) + ":").c_str(), rate / 1e9,
                        100 * limits.at_size[p].spread(), rate / dram,
                        read_faster_than_dram(rate, dram) ? "the last-level cache"
                                                          : "DRAM (no more than 1.2 x)");
        }
        std::printf("  caches (cpu0, as reported):  L1d %s, L2 %s, last level %s\n",
                    format_bytes(caches.l1d).c_str(), format_bytes(caches.l2).c_str(),
                    format_bytes(caches.last_level).c_str());
        std::printf(
            "  a row's bytes come from the LLC, at the rate read at its size, if they fit in\n"
            "  the reported last level and that read was more than 1.2 x DRAM's; else DRAM\n\n");
        table.print(std::cout);
        for (const std::string& f : failed) std::cout << "  FAILED MEASUREMENT " << f << "\n";
        std::cout << "\n";
        goals.print(std::cout);
        std::printf("\n%d of %zu targets met\n", met, targets.size());
        return 0;
    });
}
