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
        // Every read at a row's size gets the same two uncounted passes.
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
    CacheSizes caches;                       // as Linux reports them
    std::uint64_t dram_probe_bytes = 0;      // the DRAM probe's buffer
    std::vector<std::uint64_t> probe_sizes;  // the row sizes read at their own size
    std::vector<std::uint64_t> probe_bytes;  // those probes' buffers (rounded to whole steps)
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
        const ReadBandwidthProbe dram_probe(dram_probe_bytes(caches));
        res.dram_probe_bytes = dram_probe.bytes();

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

        // Beside the rows: the plain peer after each shape's batch-1 decode
        // (the same weights, borrowed), a batch-2 decode after the demo's
        // batch 1, and the demo's decode of 8 sequences at context 511 on
        // contiguous and on paged caches, one after the other.
        std::vector<std::unique_ptr<PeerStep>> peers;
        std::vector<std::unique_ptr<TimedWorkload>> extra;
        std::vector<Beside>& besides = res.besides;
        for (int i = 0; i < static_cast<int>(workloads.size()); ++i) {
            const TimedWorkload& w = *workloads[std::size_t(i)];
            if (w.workload().what != "decode, batch 1") continue;
            peers.push_back(
                std::make_unique<PeerStep>(w.config(), w.weights(), w.workload().context));
            PeerStep* peer = peers.back().get();
            besides.push_back({w.workload().shape + ": plain peer, one token", i,
                               [peer](int r, double b) { return peer->best_step_seconds(r, b); }});
            if (w.workload().shape != "demo") continue;
            const Config& c = w.config();
            using C = Comparisons;
            const std::vector<Workload> more = {
                {"demo", "decode, batch 2", 2, 64, 0},
                {"demo", "decode, batch 8, context 511, contiguous", C::kPagedBatch,
                 C::kPagedContext, 0},
                {"demo", "decode, batch 8, context 511, paged", C::kPagedBatch, C::kPagedContext, 0,
                 C::kPagedBlock}};
            for (const Workload& m : more) {
                extra.push_back(std::make_unique<TimedWorkload>(c, m));
                TimedWorkload* t = extra.back().get();
                besides.push_back({m.shape + ": " + m.what, i,
                                   [t](int r, double b) { return t->best_step_seconds(r, b); }});
            }
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
        for (std::uint64_t b : probe_sizes) {
            at_size_probes.emplace_back(b);
            res.probe_bytes.push_back(at_size_probes.back().bytes());
        }
        res.probe_sizes = probe_sizes;

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
                    limits.sample(probe_runs, at_size_probes, dram_probe);
                    step[i].values.push_back(
                        workloads[i]->best_step_seconds(repeats, kRoundSecondsPerWorkload));
                    for (Beside& b : besides)
                        if (b.after == i)
                            b.steps.values.push_back(
                                b.best_step(repeats, kRoundSecondsPerWorkload));
                }
        }
        const double peak = limits.mul_add.best();  // the kernels' own arithmetic
        const double dram = limits.dram.best();
        std::vector<double> at_size_best;  // the best read at each of probe_sizes
        for (const Samples& s : limits.at_size) at_size_best.push_back(s.best());

        // --------------------------------------------------------- the rows
        for (int i = 0; i < count; ++i) {
            Row r;
            r.workload = workloads[i]->workload();
            r.name = r.workload.shape + ": " + r.workload.what;
            r.cost = step_cost(workloads[i]->config(), r.workload);
            r.bytes = row_bytes[i];
            r.seconds = step[i].best();
            r.tokens_per_second =
                r.workload.batch * (r.workload.prompt > 0 ? r.workload.prompt : 1) / r.seconds;
            r.read_at_size = read_at_size(r.bytes, probe_sizes, at_size_best);
            r.fractions.from_last_level =
                reads_from_last_level(r.bytes, caches.last_level, r.read_at_size, dram);
            r.roof = memory_roof(r.bytes, caches.last_level, r.read_at_size, dram);
            r.fractions.of_peak = r.cost.flops / r.seconds / peak;
            r.fractions.of_roof = double(r.bytes) / r.seconds / r.roof;
            r.memory_bound = double(r.bytes) / r.roof > r.cost.flops / peak;
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
                cmp.peers.push_back({r.workload.shape, r.seconds,
                                     beside(r.workload.shape + ": plain peer, one token")});
        for (const Row& r : res.rows)
            if (r.name == "demo: decode, batch 1") cmp.batch1_seconds = r.seconds;
        cmp.batch2_seconds = beside("demo: decode, batch 2");
        cmp.contiguous_seconds = beside("demo: decode, batch 8, context 511, contiguous");
        cmp.paged_seconds = beside("demo: decode, batch 8, context 511, paged");
        res.plan_file = plan_file;
        res.plans = kernel_plans_used();
        return res;
    }
};

}  // namespace kv::bench
