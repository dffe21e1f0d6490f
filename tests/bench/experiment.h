// make bench's experiment: the probes and the workloads, sampled in rounds
// beside each other, and the rows they make (each workload's best step
// against the limits, by the rules of measurement_rules.h). report.h prints
// them; main.cpp wires the two.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "../../common/fast/kernel_plan.h"
#include "../../common/fast/machine_probes.h"
#include "../../common/kit/flags.h"
#include "../../common/kit/program.h"  // Progress
#include "measurement_rules.h"
#include "peer_step.h"
#include "workloads.h"

namespace kv::bench {

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

// The machine's limits, sampled beside each workload. Every read is of
// one buffer (the probe's): the DRAM probe reads all of it, a read at a
// row's size its first that many bytes.
struct Limits {
    Samples fma, mul_add, dram;
    std::vector<Samples> at_size;  // a read of each row size (probe_sizes' order)

    // `runs` samples of each probe, DRAM's first: it empties the caches.
    void sample(int runs, const std::vector<std::uint64_t>& sizes, const ReadBandwidthProbe& probe,
                std::uint64_t dram_bytes) {
        for (int k = 0; k < runs; ++k) sample_dram(probe, dram_bytes);
        for (int k = 0; k < runs; ++k) sample_peaks();
        at_size.resize(sizes.size());
        for (std::size_t p = 0; p < sizes.size(); ++p) sample_at_size(runs, p, sizes[p], probe);
    }
    void sample_dram(const ReadBandwidthProbe& probe, std::uint64_t dram_bytes) {
        dram.values.push_back(probe.read_rate(dram_bytes, 1, dram_bytes));
    }
    void sample_peaks() {
        fma.values.push_back(peak_fused_flops(1, kPeakIterations));
        mul_add.values.push_back(peak_multiply_then_add_flops(1, kPeakIterations));
    }
    // Two passes first, not counted: after the DRAM probe, the pass after
    // the probe's own untimed one read 11.5 to 14.1 GB/s in four tries on
    // the Xeon of the README, most passes after it 21 to 28. Every read at
    // a row's size gets the same two uncounted passes.
    void sample_at_size(int runs, std::size_t p, std::uint64_t bytes,
                        const ReadBandwidthProbe& probe) {
        probe.read_rate(bytes, 1, bytes);
        for (int k = 0; k < runs; ++k)
            at_size[p].values.push_back(probe.read_rate(bytes, 1, bytes));
    }
};

// A row's limits measured again, each try a round of the row's step beside
// the peak and the read of its size, while the row is above one of them.
constexpr int kMeasureAgainTries = 3;

// One workload's best step against the limits.
struct Row {
    std::string name;  // "demo: decode, batch 1"
    Workload workload;
    StepCost cost;
    std::uint64_t bytes = 0;  // weights and keys and values read per step
    double seconds = 0;       // the best step
    double tokens_per_second = 0;
    double read_at_size = 0;  // bytes per second of a read of `bytes`
    double roof = 0;          // the fastest read of `bytes` or more (memory_level.h)
    int measured_again = 0;   // tries of kMeasureAgainTries it took (0: none needed)
    RowFractions fractions;
    bool memory_bound = false;  // bytes / roof takes longer than FLOPs / peak
    bool valid = false;         // measurement_rules.h
};

// A step timed beside the rows, right after row `after` in every round,
// for a comparison the rows do not make: the plain peer, batch 2, paged
// caches.
struct Beside {
    std::string name;  // "demo: plain peer, one token"
    int after = 0;     // the row it is timed after
    std::function<double(int repeats, double budget)> best_step;
    Samples steps{false, {}};  // its best step of each round
};

// The comparisons the report prints, from the rows and the steps beside them.
struct Comparisons {
    struct Peer {
        std::string shape;
        double engine_seconds = 0, peer_seconds = 0;  // a step of one token
        double ratio() const {
            return peer_seconds / engine_seconds;
        }  // engine's tokens/s over the peer's
    };
    std::vector<Peer> peers;
    double batch1_seconds = 0, batch2_seconds = 0;  // demo, context 64
    double contiguous_seconds = 0, paged_seconds = 0;
    static constexpr int kPagedBatch = 8, kPagedContext = 511, kPagedBlock = 16;
};

// Everything one run of the bench measured.
struct Results {
    int rounds = 0, repeats = 0;
    int probe_runs = 0;                      // samples of each probe beside each workload, a round
    CacheSizes caches;                       // as sysfs or CPUID report them: they name levels
    std::uint64_t dram_probe_bytes = 0;      // what the DRAM probe reads
    std::vector<std::uint64_t> probe_sizes;  // the row sizes read at their own size
    std::vector<std::uint64_t> probe_bytes;  // what those reads cover (rounded to whole steps)
    Limits limits;                           // every sample of every probe
    std::vector<Samples> steps;              // each workload's best step of each round
    std::vector<Row> rows;                   // one per workload
    std::vector<Beside> besides;             // timed beside the rows
    Comparisons comparisons;
    std::string plan_file;          // where the kernel plans were read and saved ("": none)
    std::vector<KernelPlan> plans;  // the plan of each shape, as this run used it
};

struct Experiment {
    int repeats = 10;       // timed steps per workload per round (fastest kept)
    int rounds = 5;         // probes and workloads, interleaved
    std::string plan_file;  // where the kernel plans are kept ("": in memory only)
    static constexpr bool draws_plots = false;

    void add_flags(Flags& flags) {
        flags.add("repeats", repeats, 1, 10000,
                  "timed steps per workload in each round (fewer once they take a second)");
        flags.add("rounds", rounds, 1, 100, "rounds of probes and workloads, interleaved");
    }
    void check() const {}

    Results run() const {
        Results res;
        res.rounds = rounds;
        res.repeats = repeats;

        // ---------------------------------------------------------- the probes
        const CacheSizes caches = res.caches = cache_sizes();
        const std::vector<BenchShape> shapes = bench_shapes();

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

        // Beside the rows: each shape's batch-1 decode once more, then (the
        // demo's) a batch-2 decode, then the plain peer (the same weights,
        // borrowed), so that the steps compared meet the caches alike: the
        // row's own steps come right after the probes have emptied them.
        // Last, the demo's decode of 8 sequences at context 511 on
        // contiguous and on paged caches, one after the other.
        std::vector<std::unique_ptr<PeerStep>> peers;
        std::vector<std::unique_ptr<TimedWorkload>> extra;
        std::vector<Beside>& besides = res.besides;
        auto add_beside = [&](const Config& c, const Workload& m, int after) {
            extra.push_back(std::make_unique<TimedWorkload>(c, m));
            TimedWorkload* t = extra.back().get();
            besides.push_back({m.shape + ": " + m.what, after,
                               [t](int r, double b) { return t->best_step_seconds(r, b); }});
        };
        for (int i = 0; i < static_cast<int>(workloads.size()); ++i) {
            const TimedWorkload& w = *workloads[std::size_t(i)];
            if (w.workload().what != "decode, batch 1") continue;
            TimedWorkload* again = workloads[std::size_t(i)].get();
            besides.push_back(
                {w.workload().shape + ": engine, one token", i,
                 [again](int r, double b) { return again->best_step_seconds(r, b); }});
            const bool demo = w.workload().shape == "demo";
            using C = Comparisons;
            if (demo) add_beside(w.config(), {"demo", "decode, batch 2", 2, 64, 0}, i);
            peers.push_back(
                std::make_unique<PeerStep>(w.config(), w.weights(), w.workload().context));
            PeerStep* peer = peers.back().get();
            besides.push_back({w.workload().shape + ": plain peer, one token", i,
                               [peer](int r, double b) { return peer->best_step_seconds(r, b); }});
            if (!demo) continue;
            add_beside(w.config(),
                       {"demo", "decode, batch 8, context 511, contiguous", C::kPagedBatch,
                        C::kPagedContext, 0},
                       i);
            add_beside(w.config(),
                       {"demo", "decode, batch 8, context 511, paged", C::kPagedBatch,
                        C::kPagedContext, 0, C::kPagedBlock},
                       i);
        }

        // A read of each row's own working set, whatever the OS reports: its
        // roof (measurement_rules.h). One buffer serves them all and DRAM's.
        std::vector<std::uint64_t> row_bytes;
        for (const auto& w : workloads) {
            const StepCost cost = step_cost(w->config(), w->workload());
            row_bytes.push_back(static_cast<std::uint64_t>(cost.weight_bytes + cost.cache_bytes));
        }
        const std::vector<std::uint64_t> sizes = res.probe_sizes = probe_sizes(row_bytes);
        const ReadBandwidthProbe probe(std::max(dram_probe_bytes(caches), sizes.back()));
        const std::uint64_t dram_bytes = res.dram_probe_bytes =
            probe.readable(dram_probe_bytes(caches));
        for (std::uint64_t b : sizes) res.probe_bytes.push_back(probe.readable(b));

        // ------------------------------------------------- probes and workloads
        // A workload is timed `repeats` steps a round; every probe runs
        // beside every workload, often enough for `repeats` samples a round.
        // (A DRAM probe sampled twice a round against 30 steps of the large
        // model's decode fell below that decode's best in 4 of 6 runs on the
        // loaded Xeon of the README, and the row was refused.)
        const int count = static_cast<int>(workloads.size());
        // Samples of each probe beside each workload, each round.
        const int probe_runs = res.probe_runs = (repeats + count - 1) / count;
        Limits& limits = res.limits;
        std::vector<Samples>& step = res.steps;
        step.assign(workloads.size(), Samples{false, {}});
        {
            Progress progress("bench: workload");
            for (int round = 0; round < rounds; ++round)
                for (int i = 0; i < count; ++i) {
                    const Workload& w = workloads[i]->workload();
                    progress.update(round * count + i, rounds * count,
                                    "(round " + std::to_string(round + 1) + ", " + w.shape + ": " +
                                        w.what + ")");
                    limits.sample(probe_runs, sizes, probe, dram_bytes);
                    step[i].values.push_back(
                        workloads[i]->best_step_seconds(repeats, kRoundSecondsPerWorkload));
                    for (Beside& b : besides)
                        if (b.after == i)
                            b.steps.values.push_back(
                                b.best_step(repeats, kRoundSecondsPerWorkload));
                }
        }
        // --------------------------------------------------------- the rows
        // Every read this run measured, for the roofs.
        auto reads = [&] {
            std::vector<MeasuredRead> all{{dram_bytes, limits.dram.best()}};
            for (std::size_t p = 0; p < sizes.size(); ++p)
                all.push_back({res.probe_bytes[p], limits.at_size[p].best()});
            return all;
        };
        for (int i = 0; i < count; ++i) {
            Row r;
            r.workload = workloads[i]->workload();
            r.name = r.workload.shape + ": " + r.workload.what;
            r.cost = step_cost(workloads[i]->config(), r.workload);
            r.bytes = row_bytes[i];
            const std::size_t p =
                std::size_t(std::lower_bound(sizes.begin(), sizes.end(), r.bytes) - sizes.begin());
            // The row against its limits as measured so far.
            auto fractions = [&] {
                r.seconds = step[i].best();
                r.read_at_size = limits.at_size[p].best();
                r.roof = measured_roof(res.probe_bytes[p], reads());
                r.fractions.of_peak = share_of(r.cost.flops / r.seconds, limits.mul_add.best());
                r.fractions.of_roof = share_of(double(r.bytes) / r.seconds, r.roof);
                return valid_measurement(r.fractions);
            };
            // Above a limit: the limit, the read of its size and the step
            // once more each, best of all samples, before calling it a
            // probe failure.
            r.measured_again =
                measure_again_while([&] { return !fractions(); }, kMeasureAgainTries,
                                    [&] {
                                        limits.sample_peaks();
                                        limits.sample_at_size(1, p, sizes[p], probe);
                                        step[i].values.push_back(workloads[i]->best_step_seconds(
                                            repeats, kRoundSecondsPerWorkload));
                                    });
            fractions();
            r.tokens_per_second =
                r.workload.batch * (r.workload.prompt > 0 ? r.workload.prompt : 1) / r.seconds;
            r.fractions.level =
                memory_level_name(r.bytes, caches, r.read_at_size, limits.dram.best());
            r.memory_bound = double(r.bytes) / r.roof > r.cost.flops / limits.mul_add.best();
            r.valid = valid_measurement(r.fractions);
            res.rows.push_back(r);
        }

        // ------------------------------------------------- the comparisons
        auto beside = [&](const std::string& name) {
            for (const Beside& b : besides)
                if (b.name == name) return b.steps.best();
            return 0.0;
        };
        Comparisons& cmp = res.comparisons;
        for (const Row& r : res.rows)
            if (r.workload.what == "decode, batch 1")
                cmp.peers.push_back({r.workload.shape,
                                     beside(r.workload.shape + ": engine, one token"),
                                     beside(r.workload.shape + ": plain peer, one token")});
        cmp.batch1_seconds = beside("demo: engine, one token");
        cmp.batch2_seconds = beside("demo: decode, batch 2");
        cmp.contiguous_seconds = beside("demo: decode, batch 8, context 511, contiguous");
        cmp.paged_seconds = beside("demo: decode, batch 8, context 511, paged");
        res.plan_file = plan_file;
        res.plans = kernel_plans_used();
        return res;
    }
};

}  // namespace kv::bench
