// What chapter 07 prints: how many conversations fit, the price of the block
// table, the queue under each way of managing memory.
#pragma once

#include <cstdint>
#include <string>

#include "../../common/kit/output.h"
#include "../../common/kit/report.h"
#include "../../common/lab/queue_flags.h"  // workload_cell, step_cost_cell
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
        t.add_row({i.context, Cell(format_duration(i.contiguous_s), i.contiguous_s),
                   Cell(format_duration(i.paged_s), i.paged_s), Cell(i.ratio(), 3)});
    return t;
}

inline Table queue_table(const Results& r, std::uint64_t mib) {
    Table t({"memory", "side", "requests", "ttft p50", "ttft p99", "tokens/s", "batch",
             "preemptions", "recomputed", "swapped"});
    for (const QueueRun& q : r.runs)
        if (q.budget_mib == mib)
            t.add_row({q.memory, q.engine ? "engine" : "simulator", q.requests,
                       Cell(q.summary.ttft_median, 2), Cell(q.summary.ttft_p99, 2),
                       Cell(q.summary.tokens_per_second, 0), Cell(q.summary.mean_batch, 1),
                       q.preemptions, Cell(std::uint64_t(q.positions_recomputed)),
                       q.bytes_swapped ? bytes_cell(q.bytes_swapped) : Cell("-")});
    return t;
}

inline int report(const Results& r, const OutputOptions& out) {
    const Setup& s = r.setup;
    const std::uint64_t mib = r.budget.bytes >> 20;
    const std::string at = std::to_string(mib) + " MiB";
    const FitCount& paged = r.paged_at(s.block_size);
    const Summary &before = r.run(kReserve, mib).summary,
                  &after = r.run(kPagedRecompute, mib).summary;

    Findings f("Chapter 07: the paged KV cache");
    f.line("model", "model", s.model.describe())
        .line("workload", "workload", workload_cell(workload_of(s.queue, s.seed), r.queue))
        .line("memory", "memory",
              at + " of KV cache = " + with_commas(r.budget.tokens) + " positions of " +
                  format_bytes(r.budget.bytes_per_token) +
                  "; continuous batching with the cache, batch " + std::to_string(s.queue.batch))
        .line("step_cost", "step cost", step_cost_cell(r.pricing))
        .text("")
        .table("fit",
               "How many conversations fit at once, each at its last step, in arrival order:",
               fit_table(r))
        .text("")
        .table("indirection",
               "The price of the block table: a decode step of " +
                   std::to_string(s.indirection_batch) +
                   " sequences (median of the thread's CPU time):",
               indirection_table(r))
        .text("")
        .table("queue_at_budget",
               "The queue at " + at + ", blocks of " + std::to_string(s.block_size) +
                   " positions, watermark " + fixed(100 * s.watermark, 0) + "% (times in s):",
               queue_table(r, mib))
        .text("")
        .table("queue_tight",
               "The queue at " + std::to_string(s.tight_budget_mib) +
                   " MiB, where memory runs out (times in s; the engine's steps timed by the "
                   "thread's CPU time):",
               queue_table(r, s.tight_budget_mib))
        .line("swap_bytes_per_second", "swaps priced in the simulator at",
              Cell(fixed(r.swap_bytes_per_second / 1e9, 1) + " GB/s", r.swap_bytes_per_second))
        .text("recomputed: positions prefilled again")
        .data("indirection_batch", s.indirection_batch)  // the timed step's sequences
        .data("kv_budget_mib", mib)
        .data("block_size", s.block_size)
        .data("conversations_reserved", r.reserved.conversations)
        .data("conversations_paged", paged.conversations)
        .data("unused_reserved", Cell(r.reserved.unused_fraction(), 3))
        .data("unused_paged", Cell(paged.unused_fraction(), 3))
        .headline("paged KV cache: " + std::to_string(paged.conversations) +
                  " conversations fit in " + at + " where reserving the whole context fit " +
                  std::to_string(r.reserved.conversations) + "; median time to first token " +
                  fixed(before.ttft_median, 1) + " s -> " + fixed(after.ttft_median, 1) + " s");
    emit(out, f);
    return 0;
}

}  // namespace kv::ch07
