// What chapter 07 prints: how many conversations fit, the price of the
// block table, the queue under each way of managing memory, and the
// headline; or all of it as one JSON object.
#pragma once

#include <iostream>
#include <string>

#include "../../common/kit/output.h"
#include "../../common/kit/report.h"
#include "../../common/lab/queue_flags.h"  // describe_workload, step_cost_text
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

inline int report(const Results& r, const OutputOptions& out) {
    const Setup& s = r.setup;
    const std::uint64_t mib = r.budget.bytes >> 20;
    const FitCount& paged = r.paged_at(s.block_size);
    const QueueRun &before = r.run(kReserve, mib), &after = r.run(kPagedRecompute, mib);
    const Table fits = fit_table(r), costs = indirection_table(r);
    const Table at_budget = queue_table(r, mib), tight = queue_table(r, s.tight_budget_mib);
    const std::string headline =
        "paged KV cache: " + std::to_string(paged.conversations) + " conversations fit in " +
        std::to_string(mib) + " MiB where reserving the whole context fit " +
        std::to_string(r.reserved.conversations) + "; median time to first token " +
        fixed(before.summary.ttft_median, 1) + " s -> " + fixed(after.summary.ttft_median, 1) +
        " s";

    Json json = Json()
                    .add("model", s.model.describe())
                    .add("step_cost", step_cost_json(r.pricing))
                    .add("kv_budget_mib", mib)
                    .add("block_size", s.block_size)
                    .add("watermark", s.watermark)
                    .add("tight_budget_mib", s.tight_budget_mib)
                    .add("fit", fits)
                    .add("conversations_reserved", r.reserved.conversations)
                    .add("conversations_paged", paged.conversations)
                    .add("indirection_batch", s.indirection_batch)
                    .add("indirection", costs)
                    .add("swap_bytes_per_second", r.swap_bytes_per_second)
                    .add("queue_at_budget", at_budget)
                    .add("queue_tight", tight)
                    .add("headline_side", "simulator")
                    .add("ttft_median_reserved_s", before.summary.ttft_median)
                    .add("ttft_median_paged_s", after.summary.ttft_median)
                    .add("headline", headline);
    if (emit(out, json)) return 0;

    std::cout << "Chapter 07: the paged KV cache\n\n"
              << "model: " << s.model.describe() << "\n"
              << describe_workload(workload_of(s.queue, s.seed), r.queue) << "\n"
              << "memory: " << mib << " MiB of KV cache = " << with_commas(r.budget.tokens)
              << " positions of " << format_bytes(r.budget.bytes_per_token)
              << "; continuous batching with the cache, batch " << s.queue.batch << "\n"
              << step_cost_text(r.pricing)
              << "\nHow many conversations fit at once, each at its last step, in arrival order:\n";
    fits.print(std::cout);
    std::cout << "\nThe price of the block table: a decode step of " << s.indirection_batch
              << " sequences (median of the thread's CPU time):\n";
    costs.print(std::cout);
    std::cout << "\nThe queue at " << mib << " MiB, blocks of " << s.block_size
              << " positions, watermark " << fixed(100 * s.watermark, 0) << "% (times in s):\n";
    at_budget.print(std::cout);
    std::cout << "\nThe queue at " << s.tight_budget_mib
              << " MiB, where memory runs out (times in s; the engine's steps timed by the "
                 "thread's CPU time):\n";
    tight.print(std::cout);
    std::cout << "swaps priced at " << fixed(r.swap_bytes_per_second / 1e9, 1)
              << " GB/s in the simulator; recomputed: positions prefilled again\n\n"
              << "the waits below: the simulator's, continuous batching at " << mib << " MiB\n"
              << headline << "\n";
    return 0;
}

}  // namespace kv::ch07
