// What make bench prints: the limits, one table row per workload, the
// failed measurements and the targets; or all of it as one JSON object.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "../../common/fast/machine_probes.h"
#include "../../common/kit/files.h"  // as_typed
#include "../../common/kit/output.h"
#include "../../common/kit/report.h"
#include "experiment.h"
#include "measurement_rules.h"

namespace kv::bench {

// What this build's vectors compile to, from the compiler's own macros.
inline std::string instruction_set() {
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

// A goal for one row's fraction of a limit.
struct Target {
    std::string row;
    Against against;
    double goal;
};

inline std::string percent(double fraction) {
    return fixed(100 * fraction, 1);
}

inline Json samples_json(const Samples& s, double scale) {
    std::vector<double> v;
    for (double x : s.values) v.push_back(x / scale);
    return Json().add("best", s.best() / scale).add("spread", s.spread()).add("samples", v);
}

// Prints the results (or their JSON). Returns the exit status: 0.
inline int report(const Results& res, const OutputOptions& out) {
    const std::vector<Row>& rows = res.rows;
    const std::vector<Samples>& step = res.steps;
    const Limits& limits = res.limits;
    const CacheSizes& caches = res.caches;
    const std::vector<std::uint64_t>& probe_sizes = res.probe_sizes;
    const int rounds = res.rounds, repeats = res.repeats, probe_runs = res.probe_runs;
    const double dram = limits.dram.best();
    auto row_named = [&](const std::string& name) -> const Row& {
        for (const Row& r : rows)
            if (r.name == name) return r;
        throw std::logic_error("bench: no row " + name);
    };

    Table table({"shape", "measurement", "step ms", "tokens/s", "GFLOP/s", "% of peak", "MiB read",
                 "GB/s", "from", "roof GB/s", "% of roof", "bound by", "spread %"});
    std::vector<std::string> failed;
    std::vector<Json> failed_json;
    Json rows_json;
    // A share, or the words that say its probe failed (never a share above 100 %).
    auto share_cell = [](const Share& s) {
        return s.probe_failed() ? Cell("probe failed") : Cell(100 * s.share(), 1);
    };
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const Row& r = rows[i];
        const RowFractions& f = r.fractions;
        const double flops_rate = r.cost.flops / r.seconds;
        const double bytes_rate = double(r.bytes) / r.seconds;
        rows_json.add_raw(r.name, Json()
                                      .add("step_seconds", r.seconds)
                                      .add("step_seconds_spread", step[i].spread())
                                      .add("step_seconds_rounds", step[i].values)
                                      .add("tokens_per_second", r.tokens_per_second)
                                      .add("flops", r.cost.flops)
                                      .add("weight_bytes", r.cost.weight_bytes)
                                      .add("cache_bytes", r.cost.cache_bytes)
                                      .add("gflops", flops_rate / 1e9)
                                      .add("fraction_of_peak", f.of_peak.share())
                                      .add("read_gbs", bytes_rate / 1e9)
                                      .add("working_set_bytes", r.bytes)
                                      .add("read_gbs_at_working_set", r.read_at_size / 1e9)
                                      .add("bytes_from", f.level)
                                      .add("roof_gbs", r.roof / 1e9)
                                      .add("fraction_of_roof", f.of_roof.share())
                                      .add("peak_probe_failed", f.of_peak.probe_failed())
                                      .add("roof_probe_failed", f.of_roof.probe_failed())
                                      .add("limits_measured_again", r.measured_again)
                                      .add("memory_bound", r.memory_bound)
                                      .add("valid", r.valid)
                                      .str());
        if (!r.valid) {
            std::string what;
            if (f.of_roof.probe_failed())
                what = "read " + fixed(bytes_rate / 1e9, 1) + " GB/s, faster than every read of " +
                       format_bytes(r.bytes) + " or more (best " + fixed(r.roof / 1e9, 1) +
                       " GB/s)";
            if (f.of_peak.probe_failed())
                what += std::string(what.empty() ? "" : " and ") + "ran " +
                        fixed(flops_rate / 1e9, 1) + " GFLOP/s, faster than the peak";
            failed.push_back(r.name + ": the step " + what + ", after measuring the limits " +
                             std::to_string(r.measured_again) +
                             " more times: the probe, not the step, is wrong; no share is shown");
            failed_json.push_back(Json()
                                      .add("row", r.name)
                                      .add("peak_probe_failed", f.of_peak.probe_failed())
                                      .add("roof_probe_failed", f.of_roof.probe_failed())
                                      .add("step_over_peak", f.of_peak.ratio)
                                      .add("step_over_roof", f.of_roof.ratio));
        }
        table.add_row({r.workload.shape, r.workload.what, Cell(1e3 * r.seconds, 3),
                       Cell(r.tokens_per_second, 0), Cell(flops_rate / 1e9, 1),
                       share_cell(f.of_peak), Cell(double(r.bytes) / double(1 << 20), 1),
                       Cell(bytes_rate / 1e9, 1), f.level, Cell(r.roof / 1e9, 1),
                       share_cell(f.of_roof), r.memory_bound ? "bandwidth" : "arithmetic",
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
    struct Goal {
        std::string name, of;
        double fraction, goal;
        bool at_most;  // met at or below the goal, not at or above
        bool valid, met;
        bool ratio;  // of two steps (shown as "1.05 x"), not a fraction of a limit ("83.0 %")
    };
    std::vector<Goal> all_goals;
    for (const Target& t : targets) {
        const Row& r = row_named(t.row);
        const std::string of = t.against == Against::peak
                                   ? "multiply-then-add peak"
                                   : "read bandwidth at its size (" + r.fractions.level + ")";
        all_goals.push_back({t.row, of, target_fraction(r.fractions, t.against), t.goal, false,
                             r.valid, target_met(r.fractions, t.against, t.goal), false});
    }
    // The comparisons: ratios of two steps of this run, each the fastest of its rounds.
    const Comparisons& cmp = res.comparisons;
    auto ratio_goal = [&](const std::string& name, const std::string& of, double ratio, double goal,
                          bool at_most) {
        const bool valid = ratio > 0 && std::isfinite(ratio);
        all_goals.push_back({name, of, ratio, goal, at_most, valid,
                             valid && (at_most ? ratio <= goal : ratio >= goal), true});
    };
    for (const Comparisons::Peer& p : cmp.peers)
        ratio_goal(p.shape + ": decode, batch 1", "the plain peer's tokens/s", p.ratio(), 1.0,
                   false);
    ratio_goal("demo: decode, batch 2 step", "batch 1's step",
               cmp.batch2_seconds / cmp.batch1_seconds, 1.0, false);
    ratio_goal("demo: paged decode step, batch 8, context 511, blocks of 16", "the contiguous one",
               cmp.paged_seconds / cmp.contiguous_seconds, 1.10, true);

    Table goals({"target", "measured", "goal", "met"});
    std::vector<Json> targets_json;
    int met = 0;
    for (const Goal& g : all_goals) {
        met += g.met;
        auto shown = [&](double v) {
            return g.ratio ? fixed(v, 2) + " x" : fixed(100 * v, 1) + " %";
        };
        goals.add_row(
            {g.name + ", of " + g.of,
             g.valid ? Cell(shown(g.fraction)) : Cell(g.ratio ? "failed" : "probe failed"),
             (g.at_most ? "<= " : ">= ") + shown(g.goal), g.met ? "yes" : "no"});
        targets_json.push_back(Json()
                                   .add("row", g.name)
                                   .add("of", g.of)
                                   .add("fraction", g.fraction)
                                   .add("goal", g.goal)
                                   .add("at_most", g.at_most)
                                   .add("row_valid", g.valid)
                                   .add("met", g.met));
    }

    std::vector<Json> reads_json;
    for (std::size_t p = 0; p < probe_sizes.size(); ++p)
        reads_json.push_back(Json()
                                 .add("bytes", res.probe_bytes[p])
                                 .add("working_set_bytes", probe_sizes[p])
                                 .add("read_gbs", samples_json(limits.at_size[p], 1e9))
                                 .add("level", memory_level_name(probe_sizes[p], caches,
                                                                 limits.at_size[p].best(), dram)));

    std::vector<Json> besides_json, peers_json, plans_json;
    for (const Beside& b : res.besides)
        besides_json.push_back(Json()
                                   .add("name", b.name)
                                   .add("step_seconds", b.steps.best())
                                   .add("step_seconds_rounds", b.steps.values));
    for (const Comparisons::Peer& p : cmp.peers)
        peers_json.push_back(Json()
                                 .add("shape", p.shape)
                                 .add("engine_step_seconds", p.engine_seconds)
                                 .add("peer_step_seconds", p.peer_seconds)
                                 .add("ratio", p.ratio()));
    for (const KernelPlan& p : res.plans)
        plans_json.push_back(Json()
                                 .add("shape", p.key)
                                 .add("one", p.matmul.one->name)
                                 .add("few", p.matmul.few->name)
                                 .add("many", p.matmul.many->name)
                                 .add("how", p.how)
                                 .add("planning_seconds", p.seconds));

    Json json;
    json.add("instruction_set", instruction_set())
        .add("fused_multiply_add_in_this_build", has_fused_multiply_add())
        .add("peak_fma_gflops", samples_json(limits.fma, 1e9))
        .add("peak_mul_add_gflops", samples_json(limits.mul_add, 1e9))
        .add("reads_at_row_sizes", reads_json)
        .add("dram_read_gbs", samples_json(limits.dram, 1e9))
        .add("dram_probe_bytes", res.dram_probe_bytes)
        .add("l1d_bytes", caches.l1d)
        .add("l2_bytes", caches.l2)
        .add("last_level_cache_bytes", caches.last_level)
        .add("cache_sizes_from", caches.source)
        .add("rounds", rounds)
        .add("repeats", repeats)
        .add("probe_runs_per_workload", probe_runs)
        .add("rows", rows_json)
        .add("table", table)
        .add("failed_measurements", failed_json)
        .add("besides", besides_json)
        .add("plain_peer", peers_json)
        .add("kernel_plan_file", res.plan_file)
        .add("kernel_plans", plans_json)
        .add("targets", targets_json)
        .add("targets_met", met)
        .add("targets_total", std::int64_t(all_goals.size()));
    if (emit(out, json)) return 0;

    const std::size_t samples = limits.mul_add.values.size();
    std::printf("This build: %s, fused multiply-add %s\n\n", instruction_set().c_str(),
                has_fused_multiply_add() ? "yes" : "no");
    std::printf("Limits of one core, in thread CPU time: the best of %zu samples each, %d beside\n",
                samples, probe_runs);
    std::printf("each workload in each of %d rounds. Spread: how much longer the slowest sample\n",
                rounds);
    std::printf("took than the fastest (slowest / fastest - 1); a row's, between the fastest\n");
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
                format_bytes(res.dram_probe_bytes).c_str());
    for (std::size_t p = 0; p < probe_sizes.size(); ++p) {
        const double rate = limits.at_size[p].best();
        std::printf("  read of a row's %-12s %6.1f GB/s     spread %4.1f %%  %.2f x DRAM: %s\n",
                    (format_bytes(probe_sizes[p]) + ":").c_str(), rate / 1e9,
                    100 * limits.at_size[p].spread(), rate / dram,
                    memory_level_name(probe_sizes[p], caches, rate, dram).c_str());
    }
    std::printf("  caches (cpu0): %s\n", describe(caches).c_str());
    std::printf(
        "  a row's roof is the fastest read of its own size or larger, measured above; the\n"
        "  reported caches only name its level: the smallest that holds it, if the read\n"
        "  was more than 1.2 x DRAM's, else DRAM (\"%s\" where none is reported).\n"
        "  A row above a limit has the limit measured again (up to %d times); still above,\n"
        "  it is a probe failure, not a share.\n\n",
        kMeasuredAtItsSize.c_str(), kMeasureAgainTries);
    table.print(std::cout);
    for (const std::string& f : failed) std::cout << "  PROBE FAILURE " << f << "\n";
    std::cout << "\n";
    std::printf("Beside the rows, in the same rounds (each the fastest step of its rounds):\n");
    for (const Comparisons::Peer& p : cmp.peers)
        std::printf(
            "  %-15s one token: engine %8.3f ms, plain peer (-Ofast) %8.3f ms: %.2f x its "
            "tokens/s\n",
            (p.shape + ":").c_str(), 1e3 * p.engine_seconds, 1e3 * p.peer_seconds, p.ratio());
    std::printf(
        "  demo:           decode step, batch 1 %.3f ms, batch 2 %.3f ms: batch 2 takes %.2f x\n",
        1e3 * cmp.batch1_seconds, 1e3 * cmp.batch2_seconds,
        cmp.batch2_seconds / cmp.batch1_seconds);
    std::printf(
        "  demo:           decode step of %d at context %d, contiguous %.3f ms, paged (blocks of "
        "%d) %.3f ms: %.2f x\n\n",
        Comparisons::kPagedBatch, Comparisons::kPagedContext, 1e3 * cmp.contiguous_seconds,
        Comparisons::kPagedBlock, 1e3 * cmp.paged_seconds,
        cmp.paged_seconds / cmp.contiguous_seconds);
    std::printf(
        "The kernel plan (common/fast/kernel_plan.h): the matrix-product kernel of each row "
        "class\n");
    std::printf("that measured fastest here, for each shape; %s\n",
                res.plan_file.empty() ? "kept in memory only"
                                      : ("kept in " + as_typed(res.plan_file)).c_str());
    for (const KernelPlan& p : res.plans)
        std::printf("  %s: one row %s, a few rows %s, many rows %s (%s)\n", p.key.c_str(),
                    p.matmul.one->name, p.matmul.few->name, p.matmul.many->name,
                    p.how == "measured" ? ("measured now, " + fixed(p.seconds, 2) + " s").c_str()
                                        : p.how.c_str());
    std::cout << "\n";
    goals.print(std::cout);
    std::printf("\n%d of %zu targets met\n", met, all_goals.size());
    return 0;
}

}  // namespace kv::bench
