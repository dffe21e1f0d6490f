// What chapter 07 prints: how many conversations fit, the price of the
// block table, the queue under each way of managing memory (and its first
// requests on the real engine's pool), a plot and the headline; or all of
// it as one JSON object.
#pragma once

#include <iostream>
#include <string>
#include <vector>

#include "../../common/kit/output.h"
#include "../../common/kit/queue_flags.h"  // describe_workload
#include "../../common/kit/report.h"
#include "../../common/kit/svg_plot.h"
#include "experiment.h"

namespace kv::ch07 {

inline Table fit_table(const Results& r) {
    Table t({"memory", "block size", "conversations", "positions filled", "positions charged",
             "unused (%)", "bound on unused"});
    auto row = [&](const std::string& name, const FitCount& f) {
        t.add_row({name, f.block_size ? Cell(f.block_size) : Cell("-"), f.conversations,
                   f.positions_filled, f.positions_charged, Cell(100 * f.unused_fraction(), 1),
                   f.block_size ? Cell(f.unused_bound()) : Cell("-")});
    };
    row(kReserve, r.reserved);
    for (const FitCount& f : r.paged) row("paged", f);
    return t;
}

inline Table indirection_table(const Results& r) {
    Table t({"context", "contiguous", "paged", "paged / contiguous"});
    for (const IndirectionRow& i : r.indirection)
        t.add_row({i.context, format_duration(i.contiguous_s), format_duration(i.paged_s),
                   Cell(i.ratio(), 3)});
    return t;
}

inline Table queue_table(const Results& r, std::uint64_t mib) {
    Table t({"memory", "side", "requests", "ttft p50", "ttft p99", "tokens/s", "batch",
             "preemptions", "recomputed", "swapped"});
    for (const QueueRun& q : r.runs) {
        if (q.budget_mib != mib) continue;
        t.add_row({q.memory, q.engine ? "engine" : "simulator", q.requests,
                   Cell(q.summary.ttft_median, 2), Cell(q.summary.ttft_p99, 2),
                   Cell(q.summary.tokens_per_second, 0), Cell(q.summary.mean_batch, 1),
                   q.preemptions, Cell(std::uint64_t(q.positions_recomputed)),
                   q.bytes_swapped ? Cell(format_bytes(q.bytes_swapped)) : Cell("-")});
    }
    return t;
}

inline std::string fit_plot(const Results& r, const std::string& dir) {
    SvgPlot plot("Conversations that fit in the KV budget", "block size (positions, log scale)",
                 "conversations at once");
    plot.set_log2_x(true);
    std::vector<double> x, y;
    for (const FitCount& f : r.paged) {
        x.push_back(f.block_size);
        y.push_back(f.conversations);
    }
    plot.add_series("paged", x, y);
    plot.add_hline("reserving the whole context", r.reserved.conversations);
    return plot.write(dir + "/07_conversations_that_fit.svg");
}

inline Json queue_json(const QueueRun& q) {
    return Json()
        .add("memory", q.memory)
        .add("budget_mib", q.budget_mib)
        .add("side", q.engine ? "engine" : "simulator")
        .add("requests", q.requests)
        .add("ttft_median_s", q.summary.ttft_median)
        .add("ttft_p99_s", q.summary.ttft_p99)
        .add("tokens_per_second", q.summary.tokens_per_second)
        .add("mean_batch", q.summary.mean_batch)
        .add("total_s", q.summary.total_s)
        .add("preemptions", q.preemptions)
        .add("positions_recomputed", q.positions_recomputed)
        .add("bytes_swapped", q.bytes_swapped);
}

inline int report(const Results& r, const OutputOptions& out) {
    const std::uint64_t mib = r.budget.bytes >> 20;
    const FitCount& paged = r.paged_at(r.block_size);
    const QueueRun &before = r.run(kReserve, mib), &after = r.run(kPagedRecompute, mib);
    const Table fits = fit_table(r), costs = indirection_table(r);
    const Table at_budget = queue_table(r, mib), tight = queue_table(r, r.tight_budget_mib);
    const std::string plot = fit_plot(r, out.plot_dir);
    const StepCost& cost = r.pricing.cost;
    const std::string headline =
        "paged KV cache: " + std::to_string(paged.conversations) + " conversations fit in " +
        std::to_string(mib) + " MiB where reserving the whole context fit " +
        std::to_string(r.reserved.conversations) + "; median time to first token " +
        fixed(before.summary.ttft_median, 1) + " s -> " + fixed(after.summary.ttft_median, 1) +
        " s";

    std::vector<Json> each;
    for (const QueueRun& q : r.runs) each.push_back(queue_json(q));
    Json json = Json()
                    .add("chapter", "07_paged_kv_cache")
                    .add("model", r.model.describe())
                    .add("step_cost", Json()
                                          .add("source", cost.source)
                                          .add("fixed_s", cost.fixed)
                                          .add("per_row_s", cost.per_row)
                                          .add("per_sequence_s", cost.per_sequence)
                                          .add("per_pair_s", cost.per_pair)
                                          .add("per_position_s", cost.per_position))
                    .add("kv_budget_mib", mib)
                    .add("block_size", r.block_size)
                    .add("watermark", r.watermark)
                    .add("tight_budget_mib", r.tight_budget_mib)
                    .add("fit", fits)
                    .add("conversations_reserved", r.reserved.conversations)
                    .add("conversations_paged", paged.conversations)
                    .add("indirection_batch", r.indirection_batch)
                    .add("indirection", costs)
                    .add("swap_bytes_per_second", r.swap_bytes_per_second)
                    .add("queue_runs", each)
                    .add("headline_side", "simulator")
                    .add("ttft_median_reserved_s", before.summary.ttft_median)
                    .add("ttft_median_paged_s", after.summary.ttft_median)
                    .add("fit_plot", plot)
                    .add("headline", headline);
    if (emit(out, json)) return 0;

    std::cout << "Chapter 07: the paged KV cache\n\n"
              << "model: " << r.model.describe() << "\n"
              << describe_workload(r.work, r.queue) << "\n"
              << "memory: " << mib << " MiB of KV cache = " << with_commas(r.budget.tokens)
              << " positions of " << format_bytes(r.budget.bytes_per_token)
              << "; continuous batching with the cache, batch " << r.batch << "\n"
              << "step cost: " << format_duration(cost.fixed) << " + "
              << format_duration(cost.per_row) << " x rows + " << format_duration(cost.per_sequence)
              << " x sequences + " << fixed(cost.per_pair * 1e9, 1) << " ns x pairs + "
              << fixed(cost.per_position * 1e9, 1) << " ns x positions (" << cost.source << ")\n"
              << "\nHow many conversations fit at once, each at its last step, in arrival order:\n";
    fits.print(std::cout);
    std::cout << "A conversation leaves at most B - 1 positions of its last block unused.\n"
              << "plot: " << plot << "\n\n"
              << "The price of the block table: a decode step of " << r.indirection_batch
              << " sequences (median of the thread's CPU time):\n";
    costs.print(std::cout);
    std::cout << "\nThe queue at " << mib << " MiB, blocks of " << r.block_size
              << " positions, watermark " << fixed(100 * r.watermark, 0) << "% (times in s):\n";
    at_budget.print(std::cout);
    std::cout << "\nThe queue at " << r.tight_budget_mib
              << " MiB, where memory runs out (times in s; the engine's steps timed by the "
                 "thread's CPU time):\n";
    tight.print(std::cout);
    std::cout << "batch: mean requests per decode step; recomputed: positions prefilled again;\n"
              << "swapped: bytes moved out and back in, priced in the simulator at "
              << fixed(r.swap_bytes_per_second / 1e9, 1) << " GB/s\n\n"
              << "the waits below: the simulator's, continuous batching at " << mib << " MiB\n"
              << headline << "\n";
    return 0;
}

}  // namespace kv::ch07
